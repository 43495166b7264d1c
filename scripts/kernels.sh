#!/usr/bin/env bash
# Fetches Debian's kernel images for the guests bpfbench's tests and
# `bpfbench vm` boot: 5.10 (Debian 11), 6.1 (Debian 12), 6.12 (Debian 13).
# The packages are downloaded and extracted into a cache folder, never
# installed: the host's /boot and /lib/modules stay as they are.
#
#   scripts/kernels.sh [DIR]     (default: $BPFBENCH_KERNELS, else ~/.cache/bpfbench/kernels)
#
# Each kernel ends up as DIR/<release>/{vmlinuz,lib/modules/<release>}, and
# DIR/<suite> links to the newest release of that suite. Rerunning fetches
# only what is missing (or newer).
set -euo pipefail

dir=${1:-${BPFBENCH_KERNELS:-$HOME/.cache/bpfbench/kernels}}
suites=(bullseye bookworm trixie)
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
apt_dir="$dir/.apt"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/etc/preferences.d" "$apt_dir/etc/apt.conf.d"

# A sources list of our own, so the host's apt configuration is untouched.
: >"$apt_dir/sources.list"
for s in "${suites[@]}"; do
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $s main" >>"$apt_dir/sources.list"
  if [ "$s" != bullseye ]; then
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security $s-security main" >>"$apt_dir/sources.list"
  fi
done
apt_opts=(
  -o "Dir::Etc::SourceList=$apt_dir/sources.list"
  -o "Dir::Etc::SourceParts=-"
  -o "Dir::Etc::Preferences=$apt_dir/etc/preferences"
  -o "Dir::Etc::PreferencesParts=$apt_dir/etc/preferences.d"
  -o "Dir::State::Lists=$apt_dir/lists"
  -o "Dir::Cache=$apt_dir/cache"
  -o "Dir::State::Status=/dev/null"
  -o "APT::Architecture=amd64"
  -o "Debug::NoLocking=1"
  -o "APT::Sandbox::User=root"
)
echo "kernels.sh: reading Debian's package lists (${suites[*]})" >&2
apt-get "${apt_opts[@]}" update -qq

# The newest linux-image-<release>-amd64-unsigned of a suite whose kernel is
# the suite's series (5.10.0-32, 6.1.0-56, 6.12.117+deb13: naming changed in 13).
declare -A series=([bullseye]=5.10 [bookworm]=6.1 [trixie]=6.12)
for s in "${suites[@]}"; do
  want=${series[$s]}
  pkg=$(apt-cache "${apt_opts[@]}" pkgnames linux-image- \
    | grep -E "^linux-image-${want//./\\.}\.[0-9]+(-[0-9]+)?(\+deb[0-9]+)?-amd64-unsigned$" \
    | sort -V | tail -1)
  if [ -z "$pkg" ]; then
    echo "kernels.sh: no linux-image-$want.N-amd64-unsigned in Debian $s's lists" >&2
    exit 1
  fi
  release=${pkg#linux-image-}
  release=${release%-unsigned}
  if [ -f "$dir/$release/vmlinuz" ]; then
    echo "kernels.sh: $release (Debian $s) is here already" >&2
  else
    echo "kernels.sh: fetching $pkg (Debian $s)" >&2
    tmp=$(mktemp -d "$dir/.fetch.XXXXXX")
    (cd "$tmp" && apt-get "${apt_opts[@]}" download -qq "$pkg")
    dpkg-deb -x "$tmp"/*.deb "$tmp/root"
    mkdir -p "$tmp/out/lib"
    mv "$tmp/root/boot/vmlinuz-$release" "$tmp/out/vmlinuz"
    mv "$tmp/root/lib/modules" "$tmp/out/lib/modules" 2>/dev/null \
      || mv "$tmp/root/usr/lib/modules" "$tmp/out/lib/modules"
    cp "$tmp/root/boot/config-$release" "$tmp/out/config"
    rm -rf "${dir:?}/$release"
    mv "$tmp/out" "$dir/$release"
    rm -rf "$tmp"
  fi
  ln -sfn "$release" "$dir/$s"
done
echo "kernels.sh: kernels in $dir:" >&2
for s in "${suites[@]}"; do echo "  $s -> $(readlink "$dir/$s")" >&2; done
