//! Attached programs this machine's kernel cannot run — kprobes,
//! kretprobes, multi-kprobes, fentry, fexit, LSM — in a guest of Debian's 6.12, which has
//! them: each validated by its runs per event and timed by bpf_stats (an
//! emulator's times, marked as such), with the trigger's slowdown; and
//! libbpf-tools tools that attach kprobes and fentry, measured as they run there.

use crate::common;

use bpfbench::record::RunRecord;
use bpfbench::record::matrix::MatrixRecord;
use common::{bpfbench, guest, stderr, test_object};

/// `bpfbench vm --kernel trixie -- ARGS` as a matrix record.
fn in_trixie(args: &[&str]) -> Option<MatrixRecord> {
    in_trixie_with(&[], args)
}

/// `bpfbench vm --kernel trixie VM_OPTIONS -- ARGS` as a matrix record.
fn in_trixie_with(vm_options: &[&str], args: &[&str]) -> Option<MatrixRecord> {
    guest::kernel("trixie")?;
    let mut all = vec!["vm", "--kernel", "trixie", "--no-store", "--format", "json"];
    all.extend_from_slice(vm_options);
    all.push("--");
    all.extend_from_slice(args);
    let out = bpfbench(&all);
    assert!(out.status.success(), "{}", stderr(&out));
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

#[test]
fn kprobes_trampolines_and_lsm_programs_run_in_a_6_12_guest() {
    let _machine = common::machine_shared();
    let quick = ["--samples", "3", "--batch-ms", "1"];
    for (file, programs) in [
        ("kprobe_openat.bpf.o", [("on_openat", "kprobe"), ("on_openat_return", "kretprobe")]),
        (
            "kprobe_multi_openat.bpf.o",
            [("on_openat", "multi-kprobe (fprobe)"), ("on_openat_return", "multi-kretprobe (fprobe)")],
        ),
        ("fentry_openat.bpf.o", [("on_openat", "BPF trampoline"), ("on_openat_exit", "BPF trampoline")]),
        ("lsm_file_open.bpf.o", [("allow_open", "LSM hook (BPF trampoline)"); 2]),
    ] {
        let object = test_object(file).display().to_string();
        let mut args = vec![object.as_str()];
        args.extend(quick);
        let Some(m) = in_trixie(&args) else { return };
        let run = m.columns[0].run.as_ref().unwrap_or_else(|| panic!("{file}: {:?}", m.columns[0].error));
        assert!(run.environment.kernel.starts_with("6.12."), "{}", run.environment.kernel);
        for (name, mechanism) in programs {
            let r = run.results.iter().find(|r| r.name == name).unwrap_or_else(|| panic!("{file}: no {name}"));
            assert!(r.validated && r.error.is_none() && r.unavailable.is_none(), "{file}/{name}: {r:#?}");
            let a = r.attached.as_ref().expect("attached facts");
            assert_eq!(a.mechanism, mechanism, "{file}/{name}");
            assert!(
                a.counted.runs >= a.counted.events && a.counted.runs < a.counted.events + a.counted.events / 5,
                "{file}/{name}: {} runs, {} events",
                a.counted.runs,
                a.counted.events
            );
            assert!(r.measurement().is_some_and(|m| m.summary.median > 0.0), "{file}/{name}");
        }
        let slowdowns = run.results.iter().filter_map(|r| r.attached.as_ref()?.slowdown.as_ref()).count();
        assert_eq!(slowdowns, 1, "{file}: one slowdown per trigger");
    }
}

/// A libbpf-tools tool measured as it runs in trixie (`tool -- TOOL`), its
/// program `program` validated at `point` with a run per event at least.
fn tool_in_trixie(tool: &str, program: &str, point: &str) -> Option<RunRecord> {
    let m = in_trixie(&["tool", "--samples", "3", "--batch-ms", "1", "--rounds", "2", "--", tool])?;
    let run = m.columns[0].run.clone().unwrap_or_else(|| panic!("{tool}: {:?}", m.columns[0].error));
    let r = run.results.iter().find(|r| r.name == program).unwrap_or_else(|| panic!("{tool}: no {program}"));
    assert!(r.validated && r.error.is_none(), "{r:#?}");
    let a = r.attached.as_ref().unwrap();
    assert_eq!(a.point, point);
    assert!(a.counted.runs >= a.counted.events, "{a:?}");
    Some(run)
}

#[test]
fn a_libbpf_tools_tool_that_attaches_kprobes_runs_in_a_6_12_guest() {
    let _machine = common::machine_shared();
    let Some(run) = tool_in_trixie("/usr/sbin/tcpconnect", "tcp_v4_connect", "kprobe/tcp_v4_connect") else {
        return;
    };
    let tool = run.results.iter().find_map(|r| r.attached.as_ref()?.tool.as_ref()).expect("the tool's cost");
    assert!(tool.lines_per_event >= 0.9, "tcpconnect prints a line per connection: {tool:?}");
}

#[test]
fn a_libbpf_tools_tool_that_attaches_fentry_is_fired_at_its_functions_in_a_6_12_guest() {
    let _machine = common::machine_shared();
    // Its fentry links name their functions (the kernel's BTF), so a trigger fires them.
    tool_in_trixie("/usr/sbin/vfsstat", "fentry_vfs_read", "fentry/vfs_read");
}

#[test]
fn a_tracepoint_a_kprobe_and_fentry_on_openat_are_counted_with_their_attach_mechanism_named() {
    let _machine = common::machine_shared();
    for (file, mechanism_symbol) in [
        ("tp_openat.bpf.o", "perf_syscall_enter"),
        ("kprobe_openat.bpf.o", "kprobe_ftrace_handler"),
        ("fentry_openat.bpf.o", "__bpf_prog_enter_recur"),
    ] {
        let object = test_object(file).display().to_string();
        let Some(m) = in_trixie_with(&["--metric", "kernel-insns"], &[&object]) else { return };
        let run = m.columns[0].run.as_ref().unwrap_or_else(|| panic!("{file}: {:?}", m.columns[0].error));
        for r in &run.results {
            let k = r.kernel_insns().unwrap_or_else(|| panic!("{file}/{}: not counted: {:?}", r.name, r.error));
            let c = k.counts.as_ref().expect("attributed on the host");
            assert!(c.jit >= 1.0, "{file}/{}: its JIT image ran: {c:?}", r.name);
            let mechanism = c.mechanism.as_ref().unwrap_or_else(|| panic!("{file}/{}: no mechanism", r.name));
            assert!(mechanism.total > 50.0 && mechanism.total < 5000.0, "{file}/{}: {mechanism:?}", r.name);
            assert!(
                mechanism.symbols.iter().any(|(name, n)| name == mechanism_symbol && *n >= 1.0),
                "{file}/{}: {mechanism_symbol} in {:?}",
                r.name,
                mechanism.symbols
            );
        }
    }
}
