//! Run-against-run comparison: benchmark by benchmark, with a verdict each
//! (see stats::two_sample for the statistics), and the environment
//! differences that could explain a change besides the code. The [`gate`]
//! turns a comparison into a pass or a fail.

pub mod changes;
pub mod gate;
pub mod page;

use std::collections::HashMap;

use crate::history::History;
use crate::record::comparison::COMPARISON_SCHEMA;
use crate::record::{BenchmarkComparison, ComparisonRecord, Delta, InstructionDelta, Method, RunRecord};
use crate::stats::two_sample::{MIN_RUNS_PER_SIDE, RunShift, compare_all_with_noise, geomean, spread_of_medians};

pub use gate::{Gate, GateDecision};

/// Run-to-run noise per benchmark: (CV of per-run medians, runs it rests on).
pub type RunNoise = HashMap<String, (f64, usize)>;

/// What the history knows of run-to-run noise for A's benchmarks: stored
/// runs of the same program (tag) on the same kernel and CPU model.
pub fn run_noise_from_history(h: &History, a: &RunRecord) -> anyhow::Result<RunNoise> {
    let mut out = RunNoise::new();
    for r in &a.results {
        let Some(p) = &r.program else { continue };
        if let Some(n) = h.run_to_run_noise(
            &r.benchmark_name(),
            &p.tag,
            &a.environment.kernel,
            &a.environment.cpu_model,
            a.environment.testbed.as_ref().map(|t| t.id.as_str()),
        )? {
            out.insert(r.benchmark_name(), n);
        }
    }
    Ok(out)
}

/// What differs between two runs' environments and programs, one line each.
fn environment_changes(a: &RunRecord, b: &RunRecord) -> Vec<String> {
    let (ea, eb) = (&a.environment, &b.environment);
    let mut out = Vec::new();
    let mut diff = |what: &str, x: String, y: String| {
        if x != y {
            out.push(format!("{what}: {x} -> {y}"));
        }
    };
    diff("bpfbench commit", ea.git_commit.clone(), eb.git_commit.clone());
    diff("BPF cflags", ea.bpf_cflags.clone(), eb.bpf_cflags.clone());
    diff("clang", ea.clang_version.clone(), eb.clang_version.clone());
    diff("kernel", ea.kernel.clone(), eb.kernel.clone());
    diff("CPU model", ea.cpu_model.clone(), eb.cpu_model.clone());
    diff("host", ea.host.clone(), eb.host.clone());
    let setting = |v: Option<i64>| v.map_or("unknown".to_string(), |v| v.to_string());
    diff("net.core.bpf_jit_enable", setting(ea.jit.enable), setting(eb.jit.enable));
    diff("net.core.bpf_jit_harden", setting(ea.jit.harden), setting(eb.jit.harden));
    diff("net.core.bpf_jit_kallsyms", setting(ea.jit.kallsyms), setting(eb.jit.kallsyms));
    let where_ran = |e: &crate::record::Environment| match &e.guest {
        Some(g) if g.emulated() => format!("an emulated guest (TCG) of {}", g.image),
        Some(g) => format!("a KVM guest of {}", g.image),
        None => "the host".to_string(),
    };
    diff("ran in", where_ran(ea), where_ran(eb));
    // Said of times only: counts are exact in any guest.
    for (side, run) in [("A", a), ("B", b)] {
        if run.environment.emulated() && run.results.iter().any(|r| r.measurement().is_some()) {
            out.push(format!("{side}'s times are an emulator's (QEMU TCG), not the hardware's"));
        }
    }
    // One line per changed program, however many benchmarks ran it.
    let mut programs: Vec<(String, usize)> = Vec::new();
    for rb in &b.results {
        let Some(ra) = a.results.iter().find(|r| r.benchmark_name() == rb.benchmark_name()) else { continue };
        if let (Some(pa), Some(pb)) = (&ra.program, &rb.program)
            && pa.tag != pb.tag
        {
            let line = format!(
                "program {} changed (tag {} -> {}, jited {} -> {} bytes)",
                pb.name, pa.tag, pb.tag, pa.size.jited_bytes, pb.size.jited_bytes
            );
            match programs.iter_mut().find(|(l, _)| *l == line) {
                Some((_, n)) => *n += 1,
                None => programs.push((line, 1)),
            }
        }
    }
    for (line, n) in programs {
        out.push(format!("{line}, in {n} benchmark{}", if n == 1 { "" } else { "s" }));
    }
    out.extend(timing_mode_changes(a, b));
    out
}

/// A warning per scenario the two runs timed in different modes (another
/// kernel, or --timing-mode): its figures are not compared, as each mode's
/// loop costs differently and the benchmarks carry the mode in their names.
fn timing_mode_changes(a: &RunRecord, b: &RunRecord) -> Vec<String> {
    let mut out = Vec::new();
    for rb in b.results.iter().filter(|r| r.measurement().is_some()) {
        let same_scenario = |ra: &&crate::record::ScenarioRecord| {
            ra.workload == rb.workload && ra.name == rb.name && ra.runtime == rb.runtime && ra.measurement().is_some()
        };
        if let Some(ra) = a.results.iter().find(same_scenario)
            && ra.timing.mode_name() != rb.timing.mode_name()
        {
            out.push(format!(
                "timing mode of {}/{}: {} -> {} (figures of different modes are not compared)",
                rb.workload,
                rb.name,
                ra.timing.mode_name(),
                rb.timing.mode_name()
            ));
        }
    }
    out
}

/// ... and together at least this many, so Mann-Whitney can reach p < 0.05.
const MIN_RUNS_TOTAL: usize = 8;

/// The medians of `benchmark` in each run (newest first) that measured it,
/// and the newest run's samples.
fn side(runs: &[RunRecord], benchmark: &str) -> (Vec<f64>, Option<Vec<f64>>) {
    let mut medians = Vec::new();
    let mut newest = None;
    for r in runs {
        if let Some(m) = r.results.iter().find(|s| s.benchmark_name() == benchmark).and_then(|s| s.measurement()) {
            medians.push(m.summary.median);
            newest.get_or_insert_with(|| m.samples_ns.clone());
        }
    }
    (medians, newest)
}

fn measured_names(r: Option<&RunRecord>) -> Vec<String> {
    r.map(|r| r.results.iter().filter(|s| s.measurement().is_some()).map(|s| s.benchmark_name()).collect())
        .unwrap_or_default()
}

/// Compares every benchmark measured in both sides. A side is one run or
/// several (newest first, e.g. all runs with a tag). With enough runs on
/// both sides the unit of comparison is the run (its median), which carries
/// run-to-run noise by construction. Otherwise it is the newest runs'
/// samples, with the interval widened by the run-to-run noise `noise` (from
/// the history) or, failing that, the spread of A's own runs.
pub fn compare_runs(
    a: &[RunRecord],
    a_label: &str,
    b: &[RunRecord],
    b_label: &str,
    threshold: f64,
    noise: &RunNoise,
) -> ComparisonRecord {
    let (names_a, names_b) = (measured_names(a.first()), measured_names(b.first()));
    let common: Vec<&String> = names_a.iter().filter(|n| names_b.contains(n)).collect();
    struct Side {
        name: String,
        xa: Vec<f64>,
        xb: Vec<f64>,
        method: Method,
        noise: Option<(f64, usize)>,
    }
    let sides: Vec<Side> = common
        .iter()
        .map(|name| {
            let (meds_a, newest_a) = side(a, name);
            let (meds_b, newest_b) = side(b, name);
            if meds_a.len() >= MIN_RUNS_PER_SIDE
                && meds_b.len() >= MIN_RUNS_PER_SIDE
                && meds_a.len() + meds_b.len() >= MIN_RUNS_TOTAL
            {
                Side { name: name.to_string(), xa: meds_a, xb: meds_b, method: Method::Runs, noise: None }
            } else {
                let own = spread_of_medians(&meds_a).map(|cv| (cv, meds_a.len()));
                Side {
                    name: name.to_string(),
                    xa: newest_a.unwrap_or_default(),
                    xb: newest_b.unwrap_or_default(),
                    method: Method::Samples,
                    noise: noise.get(*name).copied().or(own),
                }
            }
        })
        .collect();
    let pairs: Vec<(&[f64], &[f64])> = sides.iter().map(|p| (p.xa.as_slice(), p.xb.as_slice())).collect();
    let shifts: Vec<RunShift> = sides
        .iter()
        .map(|p| match (p.method, p.noise) {
            (Method::Runs, _) => RunShift::InData,
            (Method::Samples, Some((cv, _))) => RunShift::Known(cv),
            (Method::Samples, None) => RunShift::Unknown,
        })
        .collect();
    let results = compare_all_with_noise(&pairs, &shifts, threshold);
    let times: Vec<BenchmarkComparison> = sides
        .iter()
        .zip(results)
        .map(|(p, result)| BenchmarkComparison {
            benchmark: p.name.clone(),
            method: p.method,
            n_a: p.xa.len(),
            n_b: p.xb.len(),
            noise_runs: p.noise.map_or(0, |(_, runs)| runs),
            result,
        })
        .collect();
    let ratios: Vec<f64> = times.iter().map(|b| b.result.ratio).collect();
    let mut deltas: Vec<Delta> = times.into_iter().map(Delta::Time).collect();
    if let (Some(x), Some(y)) = (a.first(), b.first()) {
        deltas.extend(instruction_deltas(x, y).into_iter().map(Delta::Insns));
        deltas.extend(kernel_instruction_deltas(x, y).into_iter().map(Delta::KernelInsns));
    }
    ComparisonRecord {
        schema: COMPARISON_SCHEMA.into(),
        a: a_label.into(),
        b: b_label.into(),
        threshold,
        deltas,
        geomean_ratio: geomean(&ratios),
        only_in_a: names_a.iter().filter(|n| !names_b.contains(n)).cloned().collect(),
        only_in_b: names_b.iter().filter(|n| !names_a.contains(n)).cloned().collect(),
        environment_changes: match (a.first(), b.first()) {
            (Some(x), Some(y)) => environment_changes(x, y),
            _ => Vec::new(),
        },
    }
}

/// Kernel instruction counts of every benchmark both runs counted.
fn kernel_instruction_deltas(a: &RunRecord, b: &RunRecord) -> Vec<InstructionDelta> {
    let counts = |r: &crate::record::ScenarioRecord| r.kernel_insns()?.counts.clone();
    b.results
        .iter()
        .filter_map(|rb| {
            let cb = counts(rb)?;
            let ca = counts(a.results.iter().find(|ra| ra.benchmark_name() == rb.benchmark_name())?)?;
            Some(InstructionDelta::between_kernels(rb.benchmark_name(), &ca, &cb))
        })
        .collect()
}

/// Instruction counts of every benchmark both runs counted. Counts are
/// the same on every run, so the newest run of a side is the side.
fn instruction_deltas(a: &RunRecord, b: &RunRecord) -> Vec<InstructionDelta> {
    b.results
        .iter()
        .filter_map(|rb| {
            let cb = rb.instructions()?;
            let ca = a.results.iter().find(|ra| ra.benchmark_name() == rb.benchmark_name())?.instructions()?;
            Some(InstructionDelta::between(rb.benchmark_name(), ca, cb))
        })
        .collect()
}
