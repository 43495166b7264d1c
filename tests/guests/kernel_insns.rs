//! `bpfbench vm --metric kernel-insns`: the kernel's native instructions
//! per packet, counted in a guest under TCG by bpfbench's plugin
//! (tcg-counter/): the same on two boots, a one-instruction change counted
//! as exactly the instruction the JIT emits for it, attributed by symbol;
//! bad requests refused in one line.

use crate::common;

use bpfbench::record::matrix::MatrixRecord;
use bpfbench::record::{KernelCounts, Metric, RunRecord};
use common::{bpfbench, guest, stderr, temp_dir};

/// Scenario `name`'s counts in `run`.
fn counts<'r>(run: &'r RunRecord, name: &str) -> &'r KernelCounts {
    let r = run.results.iter().find(|r| r.name == name).unwrap_or_else(|| panic!("no {name}"));
    let k = r.kernel_insns().unwrap_or_else(|| panic!("{name}: not counted: {:?}", r.error));
    k.counts.as_ref().unwrap_or_else(|| panic!("{name}: no counts: {:?}", r.error))
}

#[test]
fn counts_repeat_on_two_boots_and_one_more_instruction_counts_one_per_packet() {
    let _machine = common::machine_shared();
    let Some(_) = guest::kernel("trixie") else { return };
    // Two spec files, one folder (one boot counts both): the program, and
    // the program with one more BPF instruction (a multiplication).
    let dir = temp_dir("kernel-insns");
    for (spec, object) in [("base", "xdp_one_insn.bpf.o"), ("more", "xdp_one_insn_more.bpf.o")] {
        let toml = format!(
            "object = \"{}\"\n[[case]]\nname = \"tx\"\npacket = \"eth/ipv4/udp\"\nexpect = \"XDP_TX\"\n",
            common::test_object(object).display()
        );
        std::fs::write(dir.join(format!("{spec}.toml")), toml).unwrap();
    }
    let folder = dir.to_str().unwrap();
    let out = bpfbench(&[
        "vm",
        "--kernel",
        "trixie",
        "--kernel",
        "trixie",
        "--metric",
        "kernel-insns",
        "--no-store",
        "--format",
        "json",
        "--",
        folder,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let m: MatrixRecord = serde_json::from_slice(&out.stdout).unwrap();
    let boots: Vec<&RunRecord> =
        m.columns.iter().map(|c| c.run.as_ref().unwrap_or_else(|| panic!("{:?}", c.error))).collect();
    for run in &boots {
        let (base, more) = (counts(run, "base/tx"), counts(run, "more/tx"));
        // The JIT emits one imul for the one BPF multiplication.
        assert_eq!(more.jit - base.jit, 1.0, "{base:?}\n{more:?}");
        // The program's JIT image is named among the functions.
        assert!(base.symbols.iter().any(|(s, _)| s.starts_with("bpf_prog_")), "{base:?}");
        assert!(base.jit > 0.0 && base.harness > 0.0, "{base:?}");
        // Data accesses are counted too: the loop's (a program whose
        // packet stays in registers makes none), and the multiplication
        // adds none.
        let (mb, mm) = (base.memory.as_ref().expect("data accesses"), more.memory.as_ref().expect("data accesses"));
        assert!(mb.harness.reads + mb.harness.writes > 0.0, "{mb:?}");
        assert!((mm.total.reads - mb.total.reads).abs() <= 0.25, "{mb:?}\n{mm:?}");
        assert!((mm.total.writes - mb.total.writes).abs() <= 0.25, "{mb:?}\n{mm:?}");
    }
    // Both boots count the same JIT instructions, and the same totals as
    // a comparison judges them (within 0.5 % or 0.25 a packet).
    for name in ["base/tx", "more/tx"] {
        let (a, b) = (counts(boots[0], name), counts(boots[1], name));
        assert_eq!(a.jit, b.jit, "{name}: {a:?}\n{b:?}");
        let d = bpfbench::record::InstructionDelta::between_kernels(name.into(), a, b);
        assert!(d.kernel_same(), "{name}: {a:?}\n{b:?}");
        let (ma, mb) = (&a.memory.as_ref().unwrap().total, &b.memory.as_ref().unwrap().total);
        assert!((ma.reads - mb.reads).abs() <= 0.25 && (ma.writes - mb.writes).abs() <= 0.25, "{ma:?}\n{mb:?}");
    }
    let table = bpfbench::report::render_as(&m, bpfbench::report::Format::Table).unwrap();
    assert!(table.contains("kernel instructions per packet") && table.contains("JIT +"), "{table}");
    assert!(table.contains("data accesses per packet") && table.contains("D1 miss"), "{table}");
}

/// `ab --metric kernel-insns` with `args`: its comparison.
fn ab_counts(args: &[&str]) -> bpfbench::record::ComparisonRecord {
    let out = bpfbench(&[&["ab", "--metric", "kernel-insns", "--format", "json"], args].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn ab_of_one_kernel_twice_counts_the_same() {
    let _machine = common::machine_shared();
    let Some(_) = guest::kernel("trixie") else { return };
    let cmp = ab_counts(&["--kernel", "trixie", "--kernel", "trixie", "--", "-s", "pass-non-ip", "-s", "tcp-v4-ch"]);
    assert_eq!(cmp.counts(Metric::KernelInsns).len(), 2, "{cmp:?}");
    for d in cmp.counts(Metric::KernelInsns) {
        assert!(d.kernel_same(), "{d:?}");
        assert!(d.a > 0.0, "{d:?}");
    }
}

#[test]
fn ab_of_a_setting_in_one_kernel_counts_constant_blinding() {
    let _machine = common::machine_shared();
    let Some(_) = guest::kernel("trixie") else { return };
    // One kernel, two guests: bpf_jit_harden 0 and 2 on their command lines.
    let cmp = ab_counts(&["--kernel", "trixie", "--sysctl", "net.core.bpf_jit_harden=0,2", "--", "-s", "tcp-v4-ch"]);
    assert!(cmp.a.contains("net.core.bpf_jit_harden=0") && cmp.b.contains("net.core.bpf_jit_harden=2"), "{cmp:?}");
    let [d] = cmp.counts(Metric::KernelInsns)[..] else { panic!("{cmp:?}") };
    // Blinding rewrites every instruction with a constant into three:
    // the JIT image grows, the kernel functions stay.
    let (a, b) = d.jit.unwrap();
    assert!(b > a + 50.0, "{d:?}");
    assert!(!d.kernel_same(), "{d:?}");
    // Counts are exact in an emulator: nothing says otherwise of them.
    assert!(!cmp.environment_changes.iter().any(|c| c.contains("emulator")), "{:?}", cmp.environment_changes);
}

#[test]
fn kernel_insns_outside_a_counting_guest_are_refused_in_one_line() {
    common::assert_one_line_error(
        &["vm", "--kernel", "host", "--metric", "kernel-insns", "--", "-s", "pass-non-ip"],
        "--metric kernel-insns counts in guests under QEMU's TCG; --kernel host runs without one",
    );
    common::assert_one_line_error(
        &["run", "--metric", "kernel-insns", "-s", "pass-non-ip"],
        "--metric kernel-insns is counted in a guest under QEMU's TCG by bpfbench's plugin: bpfbench vm",
    );
    common::assert_one_line_error(
        &["vm", "--kernel", "trixie", "--metric", "kernel-insns", "--", "--metric", "time"],
        "give --metric once",
    );
    common::assert_one_line_error(
        &["ab", "--kernel", "trixie", "--metric", "kernel-insns", "--", "-s", "pass-non-ip"],
        "--metric kernel-insns compares two kernels: give --kernel A --kernel B, or --kernel K --sysctl NAME=A,B",
    );
    common::assert_one_line_error(
        &[
            "ab",
            "--kernel",
            "trixie",
            "--kernel",
            "bookworm",
            "--sysctl",
            "net.core.bpf_jit_harden=0,2",
            "--metric",
            "kernel-insns",
        ],
        "--sysctl with --metric kernel-insns compares one kernel's two settings: give --kernel once",
    );
}

#[test]
fn a_plugin_the_installed_qemu_does_not_load_is_refused_in_one_line() {
    // A real shared library that is not a plugin: the installed QEMU
    // refuses it, and bpfbench says so with QEMU's words, before booting.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bpfbench"))
        .env("BPFBENCH_TCG_PLUGIN", "/lib/x86_64-linux-gnu/libz.so.1")
        .args(["vm", "--kernel", "trixie", "--metric", "kernel-insns", "--", "-s", "pass-non-ip"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("the installed QEMU does not load") && err.contains("undefined symbol"), "{err}");
}
