#!/bin/sh
# Builds the corpus's BPF objects from checkouts you supply, into
# examples/corpus/build/ (never committed), the way each project's own
# build compiles them (Debian's clang-19), and writes the map files that
# are too large to keep (Katran's consistent-hash ring).
#
#   examples/corpus/build.sh --katran ~/src/katran --xdp-tools ~/src/xdp-tools --cilium ~/src/cilium
#   bpfbench run examples/corpus/katran-balancer.toml
#
# Cilium's BPF unit tests (bpf/tests/*.c), each built into OUT/NAME.o with
# the flags of Cilium's bpf/tests/Makefile, for `bpfbench run --tests cilium OUT`:
#
#   examples/corpus/build.sh --cilium ~/src/cilium --cilium-tests OUT
#
# --cilium also takes the Go module's zip (v1.18.4.zip) as it is.
#
# The kernel selftests' programs the corpus runs (test_l4lb.c,
# test_xdp_noinline.c, bpf_flow.c), from a kernel tree or from the tarball
# Debian's linux-source-6.12 package installs, with the selftests' flags:
#
#   apt-get install linux-source-6.12
#   examples/corpus/build.sh --linux /usr/src/linux-source-6.12.tar.xz
#
# --out DIR writes the objects there instead of examples/corpus/build/.
#
# The compiler and its flags: BPF_CLANG names the compiler (default
# clang-19), BPF_CFLAGS adds flags after each project's own, so that they
# win (-mcpu=v4 over the -mcpu=v3 of Cilium's and the selftests' builds).
# Two builds of the corpus, or of Cilium's tests, compared paired:
#
#   BPF_CLANG=clang-22 examples/corpus/build.sh --cilium v1.18.4.zip --cilium-tests after
#   bpfbench ab --tests cilium before after
#
# A project left out is skipped; its spec files then fail to find their
# object. Tested with katran 19f08fec, xdp-tools f0b4ac2 and cilium
# v1.18.4 (a checkout, or the module the Go proxy serves:
# https://proxy.golang.org/github.com/cilium/cilium/@v/v1.18.4.zip).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$here/build
clang=${BPF_CLANG:-clang-19}
extra=${BPF_CFLAGS:-}
command -v "$clang" >/dev/null || { echo "build.sh: no compiler '$clang' (BPF_CLANG); install it (apt-get install $clang) or name another" >&2; exit 1; }
katran=
xdp_tools=
cilium=
cilium_tests=
linux=
while [ $# -gt 0 ]; do
    case "$1" in
        --cilium-tests) cilium_tests=$2; shift 2 ;;
        --katran) katran=$2; shift 2 ;;
        --xdp-tools) xdp_tools=$2; shift 2 ;;
        --cilium) cilium=$2; shift 2 ;;
        --linux) linux=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *)
            echo "build.sh: unknown argument '$1'; give --katran DIR, --xdp-tools DIR and/or --cilium DIR (checkouts of those projects), --linux DIR|TARBALL (a kernel tree), and --cilium-tests OUT to build Cilium's unit tests" >&2
            exit 2
            ;;
    esac
done
if [ -z "$katran$xdp_tools$cilium$linux" ]; then
    echo "usage: build.sh [--katran DIR] [--xdp-tools DIR] [--cilium DIR|ZIP [--cilium-tests OUT]] [--linux DIR|TARBALL] [--out DIR]" >&2
    exit 2
fi
if [ -n "$cilium_tests" ] && [ -z "$cilium" ]; then
    echo "build.sh: --cilium-tests needs --cilium DIR (a checkout) or --cilium FILE.zip (the Go module)" >&2
    exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case "$cilium" in
    *.zip)
        # The Go module proxy's zip: github.com/cilium/cilium@vX.Y.Z/...
        unzip -q "$cilium" '*/bpf/*' -d "$tmp/module"
        cilium=$(dirname "$(find "$tmp/module" -path '*/bpf/bpf_xdp.c' | head -n 1)")
        cilium=$(dirname "$cilium")
        ;;
esac
mkdir -p "$out"
out=$(cd "$out" && pwd)
cc() { # source, object, flags...
    src=$1
    obj=$2
    shift 2
    echo "build.sh: $obj"
    # shellcheck disable=SC2086
    "$clang" -O2 -g -target bpf -D__TARGET_ARCH_x86 -I/usr/include/x86_64-linux-gnu "$@" $extra -c "$src" -o "$out/$obj"
}
if [ -n "$katran" ]; then
    [ -f "$katran/katran/lib/bpf/balancer.bpf.c" ] || { echo "build.sh: $katran is not a katran checkout (no katran/lib/bpf/balancer.bpf.c)" >&2; exit 1; }
    # Katran's includes are relative to the checkout's root; balancer.bpf.c
    # pulls in glibc's headers, which need the target's word size.
    cc "$katran/katran/lib/bpf/balancer.bpf.c" balancer.bpf.o -D__x86_64__ -I"$katran"
    # The root program of Katran's shared mode: tail-calls its prog array's slots in turn.
    cc "$katran/katran/lib/bpf/xdp_root.c" xdp_root.bpf.o -I"$katran/katran/lib/linux_includes"
    # One VIP (vip_num 0): all of its 65,537 ring positions on real 1.
    python3 -c "
import json, sys
json.dump([{'key': i, 'value': 1} for i in range(65537)], open(sys.argv[1], 'w'))" "$out/katran-ch-rings.json"
fi
if [ -n "$xdp_tools" ]; then
    [ -d "$xdp_tools/xdp-filter" ] || { echo "build.sh: $xdp_tools is not an xdp-tools checkout (no xdp-filter/)" >&2; exit 1; }
    # The flags of xdp-tools' lib/defines.mk that matter to these programs.
    flags="-std=gnu2x -DHAVE_LIBBPF_BPF_PROGRAM__TYPE -I$xdp_tools/headers -I$xdp_tools/lib/util"
    # shellcheck disable=SC2086
    cc "$xdp_tools/xdp-filter/xdpfilt_alw_all.c" xdpfilt_alw_all.bpf.o $flags
    # shellcheck disable=SC2086
    cc "$xdp_tools/xdp-forward/xdp_forward.bpf.c" xdp_forward.bpf.o $flags
fi
if [ -n "$cilium" ]; then
    [ -f "$cilium/bpf/bpf_xdp.c" ] || { echo "build.sh: $cilium is not a cilium checkout (no bpf/bpf_xdp.c)" >&2; exit 1; }
    # Cilium's objects are made for its own loader; two things keep libbpf
    # from opening them, and both are mended here without touching the
    # checkout. Its maps pin with Cilium's own values (CILIUM_PIN_REPLACE,
    # 16, which libbpf refuses): a copy of bpf/ is built with a
    # bpf/loader.h whose pinning values are 0 (a benchmark pins nothing).
    # Its tail-call programs are static functions (libbpf loads no static
    # program): their symbols are made global in the object. Their
    # sections (xdp/entry, xdp/tail) are Cilium's too: the spec says
    # program-type = "xdp".
    cp -r "$cilium/bpf" "$tmp/bpf"
    cat >"$tmp/bpf/include/bpf/loader.h" <<'SHIM'
/* bpfbench's build of Cilium: bpf/loader.h with pinning values libbpf takes. */
#pragma once
#include <linux/types.h>
#define __uint(name, val) int(*(name))[val]
#define __type(name, val) typeof(val) *(name)
#define __array(name, val) typeof(val) *(name)[]
#define LIBBPF_PIN_BY_NAME 0
#define CILIUM_PIN_REPLACE 0
SHIM
    # Cilium's Makefile.bpf flags; its XDP program with NodePort acceleration (the XDP load balancer).
    echo "build.sh: cilium_xdp.bpf.o"
    # shellcheck disable=SC2086
    "$clang" -I"$tmp/bpf" -I"$tmp/bpf/include" -O2 -g --target=bpf -std=gnu89 -nostdinc \
        -ftrap-function=__undefined_trap -Wno-address-of-packed-member -Wno-unknown-warning-option \
        -Wno-gnu-variable-sized-type-not-at-end -mcpu=v3 \
        -DENABLE_IPV4=1 -DENABLE_IPV6=1 -DENABLE_NODEPORT=1 -DENABLE_NODEPORT_ACCELERATION=1 $extra \
        -c "$tmp/bpf/bpf_xdp.c" -o "$tmp/cilium_xdp.o"
    globalize=$(llvm-objdump-19 -t "$tmp/cilium_xdp.o" | awk '$NF != "" && ($0 ~ / xdp\/tail/ || $0 ~ / xdp\/entry/) {printf "--globalize-symbol=%s ", $NF}')
    # shellcheck disable=SC2086
    llvm-objcopy-19 $globalize "$tmp/cilium_xdp.o" "$out/cilium_xdp.bpf.o"
fi
if [ -n "$linux" ]; then
    selftests=tools/testing/selftests/bpf
    case "$linux" in
        *.tar.*)
            [ -f "$linux" ] || { echo "build.sh: $linux: no such file (apt-get install linux-source-6.12 installs /usr/src/linux-source-6.12.tar.xz)" >&2; exit 1; }
            # Only what the four programs and the helper definitions need.
            # Its top folder is named as the file is (linux-source-6.12, linux-6.12).
            top=$(basename "$linux" | sed 's/\.tar\..*//')
            # (gnu/stubs.h: the selftests' empty one, which lets glibc's
            # headers be included for --target=bpf.)
            tar xf "$linux" -C "$tmp" "$top/$selftests/progs" "$top/$selftests/gnu" \
                "$top/$selftests/test_iptunnel_common.h" "$top/tools/include/uapi" "$top/tools/lib/bpf" \
                "$top/scripts/bpf_doc.py"
            linux=$tmp/$top
            ;;
    esac
    [ -f "$linux/$selftests/progs/bpf_flow.c" ] || { echo "build.sh: $linux is not a kernel tree (no $selftests/progs/bpf_flow.c)" >&2; exit 1; }
    # The selftests' Makefile: libbpf's headers from the tree, with the
    # helper definitions generated from its UAPI bpf.h as libbpf's build
    # generates them; -I the selftests' folder and the tree's UAPI;
    # -mcpu=v3 (CLANG_BPF_BUILD_RULE); test_xdp_noinline with -fno-inline.
    mkdir -p "$tmp/libbpf/bpf"
    cp "$linux"/tools/lib/bpf/bpf_helpers.h "$linux"/tools/lib/bpf/bpf_endian.h "$tmp/libbpf/bpf/"
    python3 "$linux/scripts/bpf_doc.py" --header --file "$linux/tools/include/uapi/linux/bpf.h" >"$tmp/libbpf/bpf/bpf_helper_defs.h"
    selftest() { # program, extra flags...
        name=$1
        shift
        echo "build.sh: $name.bpf.o"
        # shellcheck disable=SC2086
        "$clang" -g -Wall -Werror -D__TARGET_ARCH_x86 -I"$tmp/libbpf" -I"$linux/$selftests" \
            -I"$linux/tools/include/uapi" -I/usr/include/x86_64-linux-gnu -Wno-compare-distinct-pointer-types \
            "$@" -O2 --target=bpf -mcpu=v3 $extra -c "$linux/$selftests/progs/$name.c" -o "$out/$name.bpf.o"
    }
    selftest test_l4lb
    selftest test_xdp_noinline -fno-inline
    selftest bpf_flow
    selftest test_cls_redirect
fi
if [ -n "$cilium_tests" ]; then
    # Cilium's bpf/tests/Makefile: -I bpf -I bpf/include -g, the loader's
    # standard flags (pkg/datapath/loader/compile.go) and -mcpu=v3; each
    # test #includes the datapath it drives. Built from the copy with the
    # mended loader.h (above); bpfbench makes the static tail programs
    # global in memory when it opens each object.
    mkdir -p "$cilium_tests"
    cilium_tests=$(cd "$cilium_tests" && pwd)
    flags="-I$tmp/bpf -I$tmp/bpf/include -g -O2 --target=bpf -std=gnu99 -nostdinc -ftrap-function=__undefined_trap \
-Wall -Wextra -Werror -Wshadow -Wno-address-of-packed-member -Wno-unknown-warning-option \
-Wno-gnu-variable-sized-type-not-at-end -Wimplicit-int-conversion -Wenum-conversion -Wimplicit-fallthrough -mcpu=v3 $extra"
    export clang flags cilium_tests
    # Every CPU at once: ~1-5 s a file.
    # From bpf/tests, the file by its name alone, as the Makefile's
    # pattern rule: each log line of a CHECK starts with __FILE__, and
    # its length must fit the one byte the framework gives it.
    cd "$tmp/bpf/tests"
    find . -maxdepth 1 -name '*.c' | sort | xargs -P "$(nproc)" -I{} sh -c '
        name=$(basename {} .c)
        # shellcheck disable=SC2086
        "$clang" $flags -c "$name.c" -o "$cilium_tests/$name.o" || echo "build.sh: $name.c did not compile" >&2'
    cd - >/dev/null
    echo "build.sh: $(find "$cilium_tests" -maxdepth 1 -name '*.o' | wc -l) test objects in $cilium_tests"
fi
