//! Instruction counts (`run --metric insns`): per packet, the BPF
//! instructions the userspace runtime executed, helper calls and map
//! operations; with -v, each helper and map operation.

use std::fmt::Write as _;

use crate::record::{InstructionCount, RunRecord, ScenarioRecord};

/// A count per packet, whole numbers without decimals (most paths).
pub fn per_packet(total: f64, packets: u64) -> String {
    let v = total / packets.max(1) as f64;
    if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v:.4}") }
}

fn insns(c: &InstructionCount) -> String {
    per_packet(c.body_insns as f64 - c.loop_insns as f64, c.packets)
}

fn row(out: &mut String, r: &ScenarioRecord) {
    match &r.instructions {
        Some(c) => {
            let helpers: i64 = c.helpers.values().sum();
            let ops: i64 = c.map_ops.values().sum();
            let _ = writeln!(
                out,
                "  {:<30} {:>8} {:>14} {:>14} {:>14}",
                r.name,
                c.packets,
                insns(c),
                per_packet(helpers as f64, c.packets),
                per_packet(ops as f64, c.packets)
            );
        }
        None => {
            let why = match (&r.unavailable, &r.error) {
                (Some(u), _) => format!("N/A ({u})"),
                (None, Some(e)) => e.clone(),
                (None, None) => "not counted".into(),
            };
            let _ = writeln!(out, "  {:<30} {why}", r.name);
        }
    }
}

/// The whole run as text.
pub fn render_run(run: &RunRecord, verbose: bool) -> String {
    let mut out = format!(
        "bpfbench {}: BPF instructions per packet, counted by the userspace runtime (the same on every run and machine)\n",
        run.environment.bpfbench_version
    );
    let mut groups: Vec<&str> = Vec::new();
    for r in &run.results {
        if !groups.contains(&r.group.as_str()) {
            groups.push(&r.group);
        }
    }
    for g in groups {
        let _ = writeln!(out, "\n{g}\n  {:<30} {:>8} {:>14} {:>14} {:>14}", "scenario", "packets", "insns/packet", "helpers/packet", "map ops/packet");
        for r in run.results.iter().filter(|r| r.group == g) {
            row(&mut out, r);
            if verbose && let Some(c) = &r.instructions {
                for (name, n) in c.helpers.iter().chain(&c.map_ops) {
                    let _ = writeln!(out, "      {name:<40} {:>10} /packet", per_packet(*n as f64, c.packets));
                }
            }
        }
    }
    out.push_str("\ninsns/packet: instructions of N iterations of the body (2N less N), less as many of the empty loop; paths that move the packet head include the loop's restore of it.\n");
    if run.interrupted {
        out.push_str("\ninterrupted: the results above are those finished before Ctrl-C\n");
    }
    out
}
