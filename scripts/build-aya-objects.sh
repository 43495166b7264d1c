#!/usr/bin/env bash
# Rebuilds the Aya test objects (tests/objects/aya/) from examples/aya/ as
# Aya builds them: aya-ebpf with #[map] (0.1.1, legacy 'maps' section) and
# #[btf_map] (0.2.1, '.maps'), bpf-linker with --btf; and with
# fun-xdp's fibonacci feature (13 values matched) and its fib-loop (the
# regression the Aya guide catches), and with its log feature (aya-log's
# info! for every packet, into the AYA_LOGS perf event array). The objects
# are kept in the tree, so tests and CI never need this toolchain.
#
# Usage: scripts/build-aya-objects.sh [OBJECT ...]  (default: every object;
# e.g. fun-xdp-log rebuilds tests/objects/aya/fun-xdp-log.o alone)
#
# The toolchain, on Debian 12: Debian 13's rustc 1.85 (LLVM 19), cargo and
# rust-src, fetched with apt-get download from a trixie entry of this
# script's own and extracted (their binaries pointed at trixie's libc with
# patchelf); bpf-linker 0.9.15 from the crate registry against bookworm's
# LLVM 19. aya-ebpf 0.2.1 declares Rust 1.87: on 1.85 it builds with the
# four library features it uses enabled (RUSTC_BOOTSTRAP=1).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=${AYA_WORK:-/tmp/bpfbench-aya}
mkdir -p "$work/apt/lists" "$work/apt/archives/partial" "$work/root" "$work/debs"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" >"$work/apt/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$work/apt/lists" -o "Dir::Cache=$work/apt" -o "Dir::Cache::Archives=$work/apt/archives")
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq patchelf llvm-19-dev libpolly-19-dev libzstd-dev >/dev/null
apt-get "${apt_opts[@]}" update -qq
(cd "$work/debs" && apt-get "${apt_opts[@]}" download -qq rustc cargo rust-src libstd-rust-1.85 libstd-rust-dev \
  libc6 libstdc++6 libgcc-s1 libllvm19 libssl3t64 libcurl4t64 libgit2-1.9 libssh2-1t64 libz3-4 libxml2 libedit2 \
  libffi8 libtinfo6 libzstd1 zlib1g libnghttp2-14 libnghttp3-9 libngtcp2-16 libngtcp2-crypto-gnutls8 librtmp1 \
  libpsl5t64 libgnutls30t64 libidn2-0 libunistring5 libnettle8t64 libhogweed6t64 libgmp10 libp11-kit0 libtasn1-6 \
  libbrotli1 libldap2 libsasl2-2 libgssapi-krb5-2 libkrb5-3 libk5crypto3 libcom-err2 libkrb5support0 libkeyutils1 \
  libmbedtls21 libmbedx509-7 libmbedcrypto16 libhttp-parser2.9 liblzma5 libicu76 libsqlite3-0)
for deb in "$work"/debs/*.deb; do dpkg-deb -x "$deb" "$work/root"; done
lib="$work/root/usr/lib/x86_64-linux-gnu"
for bin in rustc cargo; do
  patchelf --set-interpreter "$lib/ld-linux-x86-64.so.2" --force-rpath --set-rpath "$lib" "$work/root/usr/bin/$bin"
done
for so in "$lib"/librustc_driver*.so; do patchelf --force-rpath --set-rpath "$lib" "$so"; done
LLVM_SYS_191_PREFIX=/usr/lib/llvm-19 cargo install -q bpf-linker --version 0.9.15 --no-default-features \
  --features llvm-19 --root "$work/bpf-linker"

export PATH="$work/root/usr/bin:$work/bpf-linker/bin:/usr/bin:/bin" RUSTC="$work/root/usr/bin/rustc"
export CARGO_HOME="$work/cargo-home" RUSTC_BOOTSTRAP=1
export RUSTFLAGS="-C linker=bpf-linker -C debuginfo=2 -C link-arg=--btf"
unstable=(-Zprofile-rustflags
  --config 'profile.release.package.aya-build.rustflags=["-Zcrate-attr=feature(let_chains)","-Zcrate-attr=feature(os_str_display)"]'
  --config 'profile.release.package.aya-ebpf.rustflags=["-Zcrate-attr=feature(unsigned_is_multiple_of)","-Zcrate-attr=feature(integer_sign_cast)"]')
# OBJECT CRATE [FEATURES]: each object from its crate, as cargo builds it.
while read -r object crate crate_features; do
  if [ "$#" -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$object"; then
    continue
  fi
  dir="$here/examples/aya/$crate"
  (cd "$dir" && cargo build -q --locked --ignore-rust-version -Z build-std=core "${unstable[@]}" \
    ${crate_features:+--features "$crate_features"} --target bpfel-unknown-none --release --target-dir "$work/target-$object")
  cp "$work/target-$object/bpfel-unknown-none/release/$crate" "$here/tests/objects/aya/$object.o"
  echo "built tests/objects/aya/$object.o"
done <<'OBJECTS'
fun-xdp-map fun-xdp
fun-xdp-btf-map fun-xdp-btf
fun-xdp-fib fun-xdp fibonacci
fun-xdp-fib-loop fun-xdp fib-loop
fun-xdp-log fun-xdp log
OBJECTS
