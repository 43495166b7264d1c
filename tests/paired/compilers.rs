//! One C source built by two compilers, clang and GCC's BPF backend
//! (Debian's gcc-bpf, GCC 12), compared paired against the real kernel:
//! xdp_lpm (an LPM trie looked up from packets) validates on both builds
//! (verdict, and the global it leaves, read from `.bss` by BTF whatever
//! each file's name), the ratio and each build's instructions are
//! recorded; a source GCC turns into a library call is refused in one line.
//! Statistical checks use generous margins.

use crate::common;

use bpfbench::record::paired::PairedRecord;
use common::{assert_one_line_error, bpfbench, object, stderr, temp_dir};

/// The A/B guide's files: three prefixes of 69.0.0.0, and what the lookup leaves.
fn example(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/compilers").join(name)
}

#[test]
fn clang_and_gcc_builds_of_one_source_compare_paired() {
    let _machine = common::machine();
    let dir = temp_dir("ab-compilers");
    let clang = common::built_with("clang-19", "xdp_lpm", &dir, "lpm-clang.o");
    let gcc = common::built_with("bpf-gcc", "xdp_lpm", &dir, "lpm-gcc.o");
    let prefixes = example("prefixes.json");
    // The default frame's bytes 14-17 (45 00 00 ..) read as 69.0.0.x: the /24 wins.
    let (good, bad) = (example("last.json"), dir.join("wrong.json"));
    std::fs::write(&bad, r#"[{"key": 0, "value": {"last": 16000}}]"#).unwrap();
    let ab = |expected: &std::path::Path| {
        bpfbench(&[
            "ab",
            "--no-store",
            "--format",
            "json",
            "--min-rounds",
            "4",
            "--max-time",
            "2",
            clang.to_str().unwrap(),
            gcc.to_str().unwrap(),
            "--map",
            &format!("prefixes={}", prefixes.display()),
            "--expect",
            "XDP_PASS",
            "--expect-map",
            &format!(".bss={}", expected.display()),
        ])
    };
    let o = ab(&good);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rec: PairedRecord = serde_json::from_slice(&o.stdout).unwrap();
    let c = &rec.cases[0];
    assert!(c.ratio > 0.5 && c.ratio < 2.0 && c.round_ratios.len() >= 4, "{c:?}");
    assert_eq!(c.returns.as_deref(), Some("XDP_PASS"), "{c:?}");
    // Two compilers, two programs: each side's instructions, as the kernel loaded them.
    assert!(c.code_differs(), "{:?}", c.programs);
    let [a, b] = c.programs.as_ref().unwrap();
    assert!(a.size.xlated_bytes > 0 && b.size.xlated_bytes > 0);
    let shown = c.instructions().unwrap();
    assert!(shown.contains(" -> "), "{shown}");

    // The global is read on both builds: a wrong value fails validation, by name.
    let o = ab(&bad);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("last: expected"), "{err}");

    // GCC 12 has no BPF byte swap: fun_xdp's ntohl becomes a call to libgcc.
    let fun = common::built_with("bpf-gcc", "fun_xdp", &dir, "fun-gcc.o");
    assert_one_line_error(&["ab", "--no-store", &object("fun_xdp.bpf.o"), fun.to_str().unwrap()], "calls __bswapsi2");
}
