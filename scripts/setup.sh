#!/usr/bin/env bash
# Installs what bpfbench needs when it is missing, builds it, then runs either
# the default benchmark suite (no argument) or the test suite (`test`).
# Run as root: it installs Debian packages and loads BPF programs.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-bench}
case "$mode" in
  bench|test) ;;
  *) echo "usage: $0 [test]   (no argument: build and run the default suite)" >&2; exit 2 ;;
esac

if [ "$(id -u)" -ne 0 ]; then
  echo "setup.sh: run as root (sudo $0 $*): it installs packages and loads BPF programs" >&2
  exit 1
fi

# clang-19 compiles the BPF C; libelf/zlib/pkg-config build the bundled libbpf;
# libbpf-dev has the BPF headers (bpf/bpf_helpers.h) a user's object is compiled
# with; tshark checks that bpfbench's pcap files read cleanly; util-linux
# provides setpriv for the unprivileged-user test.
# iproute2 (ip) builds the namespaces and veths of bpfbench gen and live;
# fonts-dejavu-core has the font of live --plot's labels; bpftool generates the
# skeletons of the selftests' bench (measurements/seed-bench/build.sh).
# qemu-system-x86, kmod (depmod) and busybox-static boot the guests of other
# kernels the tests run in (with virtme-ng, from PyPI, below); postgresql is
# the server the shared-history tests start (each its own, in a temporary
# directory: the package's own cluster is not used); chromium opens the HTML
# report in the report's test (headless); linux-source-6.12 is the kernel tree
# whose selftests' programs the corpus builds (examples/corpus/build.sh --linux);
# libbpf-tools are the tools `bpfbench overhead` and the corpus measure as they run.
# llvm-19's llvm-objcopy strips an object's BTF in the legacy-maps test;
# python3-jsonschema checks BMF documents against Bencher's schema;
# gcc-bpf (GCC 12's BPF backend) builds the source the A/B guide compares by compiler.
packages=(clang-19 llvm-19 libelf-dev zlib1g-dev pkg-config libbpf-dev tshark util-linux iproute2 fonts-dejavu-core bpftool)
if [ "$mode" = test ]; then
  packages+=(qemu-system-x86 kmod busybox-static postgresql chromium linux-source-6.12 libbpf-tools python3-jsonschema gcc-bpf)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup.sh: installing ${missing[*]}" >&2
  apt-get update -qq
  # tshark asks whether non-root users may capture; the default (no) is right.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "setup.sh: Rust is missing: install a stable toolchain with rustup, then rerun" >&2
  exit 1
fi
rust_minor=$(rustc --version | awk '{split($2, v, "."); print v[2]}')
if [ "${rust_minor:-0}" -lt 88 ]; then
  echo "setup.sh: Rust $(rustc --version | awk '{print $2}') is too old: bpfbench needs 1.88 or newer (Cargo.toml rust-version) (rustup update stable)" >&2
  exit 1
fi

if [ "$mode" = test ]; then
  # The tree's habits first: one format, no clippy warning.
  if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
    rustup component add rustfmt clippy >/dev/null 2>&1 || {
      echo "setup.sh: cargo fmt and cargo clippy are missing: rustup component add rustfmt clippy, then rerun" >&2
      exit 1
    }
  fi
  cargo fmt --check
  cargo clippy --release --locked --all-targets -- -D warnings

  # Guests of Debian's 5.10, 6.1 and 6.12 kernels (tests/guests/debian.rs): virtme-ng
  # boots them with this machine's root shared read-only.
  if ! command -v vng >/dev/null 2>&1; then
    echo "setup.sh: installing virtme-ng (PyPI)" >&2
    python3 -m pip install -q virtme-ng || {
      echo "setup.sh: pip could not install virtme-ng; install it (pip install virtme-ng), then rerun" >&2
      exit 1
    }
    hash -r
  fi
  ./scripts/kernels.sh
fi

cargo build --release --locked
if [ "$mode" = test ]; then
  # Tests run side by side; a timed kernel test holds the machine alone
  # (tests/common/mod.rs: `machine`), so none shares the CPUs with it.
  cargo test --release --locked
else
  ./target/release/bpfbench run
fi
