//! A kernel matrix as tables (scenario × kernel: ns/op with the timing
//! mode, then the program as each kernel's verifier and JIT made it, then
//! instructions per packet where counted) and as CSV rows.

use std::fmt::Write as _;

use anyhow::Result;

use crate::record::matrix::MatrixRecord;
use crate::record::{Runtime, ScenarioRecord};

/// A row: one scenario of one workload in one runtime, on every kernel.
type RowKey = (String, String, Runtime);

fn key(r: &ScenarioRecord) -> RowKey {
    (r.workload.clone(), r.name.clone(), r.runtime)
}

/// The scenarios of every column, in the order they first appear.
fn rows(m: &MatrixRecord) -> Vec<RowKey> {
    let mut out: Vec<RowKey> = Vec::new();
    for r in m.columns.iter().filter_map(|c| c.run.as_ref()).flat_map(|run| &run.results) {
        if !out.contains(&key(r)) {
            out.push(key(r));
        }
    }
    out
}

fn find<'m>(m: &'m MatrixRecord, col: usize, k: &RowKey) -> Option<&'m ScenarioRecord> {
    m.columns[col].run.as_ref()?.results.iter().find(|r| key(r) == *k)
}

fn row_label((workload, name, runtime): &RowKey) -> String {
    let user = if *runtime == Runtime::User { " (user)" } else { "" };
    format!("{workload}/{name}{user}")
}

/// A cell per scenario and kernel.
fn scenario_cells(
    m: &MatrixRecord,
    keys: &[RowKey],
    cell: impl Fn(&ScenarioRecord) -> Option<String>,
) -> Vec<Vec<String>> {
    keys.iter()
        .map(|k| {
            (0..m.columns.len())
                .map(|c| match find(m, c, k) {
                    None => "-".to_string(),
                    Some(r) if r.unavailable.is_some() => "N/A".to_string(),
                    Some(r) if r.failed() => "failed".to_string(),
                    Some(r) => cell(r).unwrap_or_else(|| "-".to_string()),
                })
                .collect()
        })
        .collect()
}

/// One table, `labels` down and the kernels across, or nothing if no cell has a value.
fn grid(m: &MatrixRecord, title: &str, labels: &[String], cells: &[Vec<String>]) -> String {
    if cells.iter().flatten().all(|c| c == "-" || c == "N/A" || c == "failed") {
        return String::new();
    }
    let headings: Vec<String> = m.columns.iter().map(|c| c.heading()).collect();
    let label_w = labels.iter().map(String::len).max().unwrap_or(8).max(8);
    let widths: Vec<usize> = (0..m.columns.len())
        .map(|c| cells.iter().map(|row| row[c].len()).chain([headings[c].len()]).max().unwrap_or(8))
        .collect();
    let mut out = format!("{title}\n{:label_w$}", "");
    for (h, w) in headings.iter().zip(&widths) {
        let _ = write!(out, "  {h:>w$}");
    }
    out.push('\n');
    for (label, row) in labels.iter().zip(cells) {
        let _ = write!(out, "{label:label_w$}");
        for (v, w) in row.iter().zip(&widths) {
            let _ = write!(out, "  {v:>w$}");
        }
        out.push('\n');
    }
    out.push('\n');
    out
}

pub fn table(m: &MatrixRecord) -> String {
    let mut out = format!("Kernel matrix: {} kernel(s)", m.columns.len());
    if m.columns.iter().any(|c| c.run.as_ref().is_some_and(|r| r.environment.emulated())) {
        out.push_str(
            "; * a guest under QEMU's TCG: its ns/op are the emulator's, not the hardware's (programs and counts are exact)",
        );
    }
    out.push_str("\n\n");
    let keys = rows(m);
    let labels: Vec<String> = keys.iter().map(row_label).collect();
    let ns = scenario_cells(m, &keys, |r| {
        let s = &r.measurement()?.summary;
        let (lo, hi) = s.median_ci95;
        Some(format!("{:.1} [{lo:.1}, {hi:.1}] {}", s.median, r.timing.mode_name()))
    });
    out.push_str(&grid(m, "ns/op (p50 [95% interval], timing mode)", &labels, &ns));
    out.push_str(&sample_counts(m));
    out.push_str(&programs(m));
    let insns = scenario_cells(m, &keys, |r| {
        let c = r.instructions()?;
        Some(super::insns_table::per_packet(c.body_insns as f64 - c.loop_insns as f64, c.packets))
    });
    out.push_str(&grid(m, "BPF instructions per packet", &labels, &insns));
    let kernel = scenario_cells(m, &keys, |r| {
        let c = r.kernel_insns()?.counts.as_ref()?;
        let entered = c.mechanism.as_ref().map(|m| format!("; attach {:.1}", m.total)).unwrap_or_default();
        Some(format!("{:.1} = {:.1} JIT + {:.1} kernel (loop {:.1}{entered})", c.total(), c.jit, c.kernel, c.harness))
    });
    out.push_str(&grid(
        m,
        "kernel instructions per packet (TCG plugin; the empty loop's own taken off, shown in brackets)",
        &labels,
        &kernel,
    ));
    let memory = scenario_cells(m, &keys, |r| {
        let c = r.kernel_insns()?.counts.as_ref()?.memory.as_ref()?;
        Some(data_accesses(&c.total, &c.resolution))
    });
    out.push_str(&grid(
        m,
        "data accesses per packet (TCG plugin, the empty loop's taken off; misses of a simulated D1 32 KiB and LL 8 MiB)",
        &labels,
        &memory,
    ));
    out.push_str(&kernel_profiles(m, &keys));
    let mut problems = Vec::new();
    for c in &m.columns {
        match (&c.run, &c.error) {
            (_, Some(e)) => problems.push(format!("{}: {e}", c.kernel)),
            (Some(run), None) => {
                for r in run.results.iter().filter(|r| r.failed()) {
                    let why = r.error.as_deref().unwrap_or("not measured");
                    problems.push(format!("{}: {}: {why}", c.heading(), row_label(&key(r))));
                }
            }
            (None, None) => {}
        }
    }
    if !problems.is_empty() {
        out.push_str("not run or failed:\n");
        for p in problems {
            let _ = writeln!(out, "  {p}");
        }
    }
    let stored: Vec<String> =
        m.columns.iter().filter_map(|c| Some(format!("{} as run {}", c.heading(), c.stored_as?))).collect();
    if !stored.is_empty() {
        let _ = writeln!(out, "stored: {} ('bpfbench compare ID ID' compares two of them)", stored.join(", "));
    }
    out
}

/// Each row's kernel counts on each kernel that has them, row by row,
/// with the row's label.
fn kernel_counts<'m>(
    m: &'m MatrixRecord,
    keys: &[RowKey],
) -> Vec<(String, &'m crate::record::matrix::MatrixColumn, &'m crate::record::KernelCounts)> {
    let mut out = Vec::new();
    for k in keys {
        for (c, col) in m.columns.iter().enumerate() {
            if let Some(counts) = find(m, c, k).and_then(|r| r.kernel_insns()?.counts.as_ref()) {
                out.push((row_label(k), col, counts));
            }
        }
    }
    out
}

/// Where each counted scenario's kernel instructions go, per kernel: its
/// functions with the most per packet (a JIT image is `bpf_prog_<tag>_<name>`).
fn kernel_profiles(m: &MatrixRecord, keys: &[RowKey]) -> String {
    const TOP: usize = 6;
    let mut out = String::new();
    for (k, col, counts) in kernel_counts(m, keys) {
        let top: Vec<String> = counts.symbols.iter().take(TOP).map(|(name, n)| format!("{name} {n:.1}")).collect();
        let totals: Vec<String> = counts.round_totals.iter().map(u64::to_string).collect();
        let _ = writeln!(out, "  {} on {}: {} (rounds: {})", k, col.heading(), top.join(", "), totals.join(", "));
        // Where the D1 misses are, when there are any to place.
        let missing = counts.memory.iter().flat_map(|m| &m.symbols).filter(|(_, a)| a.d1_misses >= 0.05);
        let misses: Vec<String> = missing.take(TOP).map(|(name, a)| format!("{name} {:.2}", a.d1_misses)).collect();
        if !misses.is_empty() {
            let _ = writeln!(out, "    D1 misses: {}", misses.join(", "));
        }
        if let Some(m) = &counts.mechanism {
            let top: Vec<String> = m.symbols.iter().take(TOP).map(|(name, n)| format!("{name} {n:.1}")).collect();
            let _ = writeln!(out, "    the attach mechanism, {:.1} an event: {}", m.total, top.join(", "));
        }
    }
    if out.is_empty() {
        out
    } else {
        format!("per function, per packet, the loop's share included (most first; each round's whole count):\n{out}\n")
    }
}

/// Reads, writes and cache misses per packet, as a cell; a value within
/// `resolution` (how far the rounds of one boot spread), or below zero in
/// a record from before counts were kept at zero or more, as "<R".
pub fn data_accesses(a: &crate::record::DataAccesses, resolution: &crate::record::DataAccesses) -> String {
    let cell = |v: f64, r: f64, digits: usize| {
        let bound = r.max(-v);
        match v < bound && bound >= 0.5 * 10f64.powi(-(digits as i32)) {
            true => format!("<{bound:.digits$}"),
            false => format!("{:.digits$}", v.max(0.0)),
        }
    };
    format!(
        "{} r + {} w, D1 miss {}, LL miss {}",
        cell(a.reads, resolution.reads, 1),
        cell(a.writes, resolution.writes, 1),
        cell(a.d1_misses, resolution.d1_misses, 2),
        cell(a.ll_misses, resolution.ll_misses, 2)
    )
}

/// The samples behind each column's figures ("5", or "3-200" where they differ).
fn sample_counts(m: &MatrixRecord) -> String {
    let counts: Vec<String> = m
        .columns
        .iter()
        .filter_map(|c| {
            let run = c.run.as_ref()?;
            let ns = run.results.iter().filter_map(|r| Some(r.measurement()?.summary.n));
            let (lo, hi) = ns.fold((usize::MAX, 0), |(lo, hi), n| (lo.min(n), hi.max(n)));
            match (lo, hi) {
                (_, 0) => None,
                (lo, hi) if lo == hi => Some(format!("{} {lo}", c.heading())),
                (lo, hi) => Some(format!("{} {lo}-{hi}", c.heading())),
            }
        })
        .collect();
    if counts.is_empty() { String::new() } else { format!("samples per figure: {}\n\n", counts.join(", ")) }
}

/// The timed programs as each kernel's verifier and JIT made them: a row
/// per program (xdp-lb's 24 scenarios time one), a cell per kernel. A
/// program is its workload, name and tag: a corpus's specs may hold
/// programs whose names the kernel cuts alike (15 characters), which are
/// then told apart by the first scenario that timed each.
fn programs(m: &MatrixRecord) -> String {
    // (workload, name, tag, first scenario).
    let mut keys: Vec<(&str, &str, &str, &str)> = Vec::new();
    for r in m.columns.iter().filter_map(|c| c.run.as_ref()).flat_map(|run| &run.results) {
        if let Some(p) = &r.program
            && !keys.iter().any(|k| (k.0, k.1, k.2) == (r.workload.as_str(), p.name.as_str(), p.tag.as_str()))
        {
            keys.push((&r.workload, &p.name, &p.tag, &r.name));
        }
    }
    let cells: Vec<Vec<String>> = keys
        .iter()
        .map(|&(workload, name, tag, _)| {
            m.columns
                .iter()
                .map(|c| {
                    let p = c.run.as_ref().and_then(|run| {
                        run.results.iter().find_map(|r| {
                            r.program.as_ref().filter(|p| r.workload == workload && p.name == name && p.tag == tag)
                        })
                    });
                    match p {
                        None => "-".to_string(),
                        Some(p) => {
                            let processed = p.verifier.as_ref().and_then(|v| v.processed_insns);
                            let processed = processed.map_or("-".into(), |n| n.to_string());
                            format!("{} / {} / {processed}", p.size.xlated_bytes, p.size.jited_bytes)
                        }
                    }
                })
                .collect()
        })
        .collect();
    let labels: Vec<String> = keys
        .iter()
        .map(|&(w, n, _, first)| {
            if keys.iter().filter(|k| (k.0, k.1) == (w, n)).count() > 1 {
                format!("{w}: {n} ({first})")
            } else {
                format!("{w}: {n}")
            }
        })
        .collect();
    grid(
        m,
        "programs: xlated bytes / jited bytes / verifier's processed instructions (- where the kernel does not say)",
        &labels,
        &cells,
    )
}

/// One row per scenario and kernel.
pub fn csv(m: &MatrixRecord) -> Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "kernel",
        "release",
        "emulated",
        "benchmark",
        "mode",
        "status",
        "median_ns",
        "ci_low_ns",
        "ci_high_ns",
        "xlated_bytes",
        "jited_bytes",
        "processed_insns",
        "insns_per_packet",
        "error",
    ])?;
    let opt = |v: Option<String>| v.unwrap_or_default();
    for c in &m.columns {
        let Some(run) = &c.run else {
            let mut row = vec![c.kernel.clone(); 1];
            row.extend(std::iter::repeat_n(String::new(), 12));
            row.push(c.error.clone().unwrap_or_default());
            w.write_record(&row)?;
            continue;
        };
        for r in &run.results {
            let status = if r.unavailable.is_some() {
                "unavailable"
            } else if r.failed() {
                "failed"
            } else {
                "ok"
            };
            let s = r.measurement().map(|m| &m.summary);
            let p = r.program.as_ref();
            w.write_record([
                c.kernel.clone(),
                run.environment.kernel.clone(),
                run.environment.emulated().to_string(),
                row_label(&key(r)),
                r.timing.mode_name().to_string(),
                status.to_string(),
                opt(s.map(|s| format!("{:.3}", s.median))),
                opt(s.map(|s| format!("{:.3}", s.median_ci95.0))),
                opt(s.map(|s| format!("{:.3}", s.median_ci95.1))),
                opt(p.map(|p| p.size.xlated_bytes.to_string())),
                opt(p.map(|p| p.size.jited_bytes.to_string())),
                opt(p.and_then(|p| p.verifier.as_ref()?.processed_insns).map(|n| n.to_string())),
                opt(r.instructions().map(|c| format!("{:.4}", c.per_packet()))),
                opt(r.error.clone().or_else(|| r.unavailable.clone())),
            ])?;
        }
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// Every counted function of every scenario on every kernel, Cachegrind's
/// function list per packet (`vm --profile`): instructions (with their
/// share of the batch's), reads, writes, D1 and LL misses. The figures are
/// the program's batch's, the loop's own functions included.
pub fn kernel_profile(m: &MatrixRecord) -> String {
    let mut out = String::new();
    for (k, col, counts) in kernel_counts(m, &rows(m)) {
        let _ = write!(
            out,
            "{} on {}: {:.1} instructions a packet ({:.1} JIT + {:.1} kernel, the loop's {:.1} taken off)",
            k,
            col.heading(),
            counts.total(),
            counts.jit,
            counts.kernel,
            counts.harness
        );
        let memory = counts.memory.as_ref();
        if let Some(m) = memory {
            let _ = write!(out, "; {}", data_accesses(&m.total, &m.resolution));
        }
        out.push('\n');
        let batch: f64 = counts.symbols.iter().map(|(_, n)| n).sum();
        let accesses = |name: &str| memory.and_then(|m| m.symbols.iter().find(|(n, _)| n == name)).map(|(_, a)| *a);
        use super::grid::{Grid, left, right};
        let mut g = Grid::new(vec![
            right("insns"),
            right("%"),
            right("reads"),
            right("writes"),
            right("D1 miss"),
            right("LL miss"),
            left("function"),
        ]);
        for (name, n) in &counts.symbols {
            let a = accesses(name).unwrap_or_default();
            let share = if batch > 0.0 { format!("{:.1}", 100.0 * n / batch) } else { "-".into() };
            // Counts are at least zero (older records: a difference below it is shown as 0).
            let z = |v: f64| if v < 0.005 { "0".to_string() } else { format!("{v:.2}") };
            g.row(vec![
                format!("{n:.2}"),
                share,
                z(a.reads),
                z(a.writes),
                z(a.d1_misses),
                z(a.ll_misses),
                name.clone(),
            ]);
        }
        out.push_str(&g.plain());
        out.push('\n');
    }
    if out.is_empty() {
        return out;
    }
    format!("per function, per packet (the program's batch, the loop's own functions included):\n\n{out}")
}

#[cfg(test)]
mod tests {
    use crate::record::DataAccesses;

    #[test]
    fn a_count_within_its_resolution_is_shown_as_such_and_never_below_zero() {
        let a = DataAccesses { reads: 12.34, writes: 0.0, d1_misses: 0.01, ll_misses: -0.02 };
        let res = DataAccesses { reads: 0.05, writes: 0.0, d1_misses: 0.04, ll_misses: 0.0 };
        assert_eq!(super::data_accesses(&a, &res), "12.3 r + 0.0 w, D1 miss <0.04, LL miss <0.02");
        assert_eq!(super::data_accesses(&a, &DataAccesses::default()), "12.3 r + 0.0 w, D1 miss 0.01, LL miss <0.02");
    }
}
