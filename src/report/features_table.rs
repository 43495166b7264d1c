//! `bpfbench features`: what the running kernel accepts, feature by
//! feature, with what each enables and, where refused, the kernel's reason.

use std::fmt::Write;

use crate::record::probes::Capabilities;

/// One row per feature: its name, the kernel it came with, what bpfbench
/// does with it, and yes or the refusal.
pub fn render(kernel: &str, caps: &Capabilities) -> String {
    let rows: [(&str, &str, &str, &Result<(), String>); 7] = [
        ("may_goto loops", "6.9", "in-BPF batches, uncapped, ~1.5 ns/iteration (timing mode may-goto)", &caps.may_goto),
        ("bpf_loop helper", "5.17", "in-BPF batches, one indirect call per iteration (bpf-loop)", &caps.bpf_loop),
        ("bounded loops", "5.3", "in-BPF batches of at most 256 iterations (bounded)", &caps.bounded_loops),
        (
            "global subprogram changing packet data",
            "-",
            "a timed body that resizes the packet, reached through a call",
            &caps.global_subprog_changes_packet,
        ),
        ("XDP live frames", "5.18", "gen and live", &caps.xdp_live_frames),
        ("BPF_ENABLE_STATS", "5.8", "live's ns/packet (bpf_stats)", &caps.bpf_stats),
        ("kernel BTF", "5.4", "CO-RE relocations of your own objects", &caps.btf),
    ];
    let mut out = format!("kernel {kernel}\n");
    for (name, since, enables, status) in rows {
        let status = match status {
            Ok(()) => "yes".to_string(),
            Err(why) => format!("no: {why}"),
        };
        let _ = writeln!(out, "  {name:<40} {since:>5}  {status}\n  {:<40}        enables: {enables}", "");
    }
    let mode = caps.best_loop().map_or("per call (your own objects only)", |c| c.as_str());
    let _ = writeln!(out, "timing mode of runs here (--timing-mode auto): {mode}");
    out
}
