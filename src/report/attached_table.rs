//! The lines under a table of attached programs: for each trigger, what the
//! object cost the workload that fired it (the slowdown), and where that
//! went: each program's ns per run times its runs per event, the rest in
//! the attach mechanism. And the records its buffers delivered per event.

use std::fmt::Write as _;

use crate::record::ScenarioRecord;
use crate::record::attached::{AttachedRun, BufferRecords, Slowdown, ToolCost};

/// The legend and the per-trigger lines; empty for a run of no attached program.
pub fn render(results: &[ScenarioRecord]) -> String {
    let attached: Vec<(&ScenarioRecord, &AttachedRun)> =
        results.iter().filter_map(|r| Some((r, r.attached.as_ref()?))).collect();
    if attached.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "attached rows: p50 is the program's ns per run from bpf_stats (run_time_ns over run_cnt, per batch of events); loop p50 is an empty program's on the same hook under the same trigger (what bpf_stats reports for a run that does nothing), not subtracted; runs/event: the program's runs per event of the trigger, as validation counted them.\n",
    );
    // Each kind of line in the rows' order: the slowdowns, the tools, the buffers.
    let slowdowns = attached.iter().filter_map(|(r, a)| Some(slowdown_line(results, r, a, a.slowdown.as_ref()?)));
    let tools = attached.iter().filter_map(|(_, a)| Some(tool_line(a, a.tool.as_ref()?)));
    let records = attached.iter().filter_map(|(r, a)| Some(records_line(r, a, a.records.as_ref()?)));
    out.extend(slowdowns.chain(tools).chain(records));
    out
}

/// What the object cost the trigger, and where it went.
fn slowdown_line(results: &[ScenarioRecord], r: &ScenarioRecord, a: &AttachedRun, s: &Slowdown) -> String {
    let mut out = String::new();
    let (lo, hi) = s.differences.median_ci95;
    let with = match &a.tool {
        Some(t) => format!("{} running", t.command),
        None if s.programs.len() == 1 => format!("'{}' attached", s.programs[0]),
        None => format!("{} programs attached", s.programs.len()),
    };
    // The attach path's cost moves with the firing thread: its spread said.
    let t = &s.per_thread_ns;
    let threads = match t.iter().copied().reduce(f64::min).zip(t.iter().copied().reduce(f64::max)) {
        Some((least, most)) => format!(", the {} threads' medians {least:+.1} to {most:+.1}", t.len()),
        None => String::new(),
    };
    let _ = write!(
        out,
        "{}: {:+.1} ns per event with {with} (95% CI {lo:.1} to {hi:.1}, {}{threads}; {} alone: {:.1} ns per event)",
        a.trigger,
        s.ns_per_event(),
        s.phases,
        a.trigger,
        s.detached.median,
    );
    // Where it went: the programs of the group measured, at their runs per event.
    let shares: Vec<(String, RunTime, f64)> = results
        .iter()
        .filter(|o| o.group == r.group)
        .filter_map(|o| {
            let ns = RunTime::of(&o.measurement()?.samples_ns)?;
            Some((o.name.clone(), ns, o.attached.as_ref()?.runs_per_event()))
        })
        .collect();
    if shares.len() == s.programs.len() && !shares.is_empty() {
        let in_programs: f64 = shares.iter().map(|(_, ns, per)| ns.fastest * per).sum();
        let parts: Vec<String> = shares.iter().map(|(name, ns, per)| format!("{name} {ns} x {per:.2}")).collect();
        let rest = s.ns_per_event() - in_programs;
        let _ = write!(out, "; in BPF: {}", parts.join(" + "));
        match rest.abs() > (hi - lo) / 2.0 {
            true => {
                // As a share of the trigger alone too: a slower speed
                // level of the CPU scales both, the share stays.
                // (Where the trigger is a fraction of it, as a function
                // call under a uprobe, a share says nothing.)
                let share = 100.0 * rest / s.detached.median;
                let share = match share <= 100.0 {
                    true => format!(" ({share:.0}% of {} alone)", a.trigger),
                    false => String::new(),
                };
                let _ = write!(out, "; the other {rest:.1} ns{share} in the {} and around it", a.mechanism);
            }
            false => {
                let _ = write!(out, "; the rest ({rest:.1} ns) is within the slowdown's uncertainty");
            }
        }
    }
    out.push('\n');
    out
}

/// A running tool's own CPU time per event.
fn tool_line(a: &AttachedRun, t: &ToolCost) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "{}, under {}: {:.0} ns of CPU per event in the tool itself (its threads' user and system time, on any CPU)",
        t.command, a.trigger, t.cpu_ns_per_event
    );
    if t.lines_per_event.is_finite() {
        let _ = write!(out, ", {:.2} output lines per event", t.lines_per_event);
    }
    out.push('\n');
    out
}

/// The records a program's buffers delivered per event.
fn records_line(r: &ScenarioRecord, a: &AttachedRun, b: &BufferRecords) -> String {
    format!(
        "{}: {:.2} buffer records per event ({} of {} events, {} lost) from {}\n",
        r.name,
        b.records as f64 / a.counted.events.max(1) as f64,
        b.records,
        a.counted.events,
        b.lost,
        b.maps.join(", ")
    )
}

/// A program's ns per run for the split: the median of its batches at the
/// CPU's fastest speed level, as the slowdown's pairs are taken (a slower
/// level scales both, and the CPU here spends seconds at a time 1.17 times
/// slower: four runs gave p50s of 47.7-54.8 ns, these 46.9-47.1), beside
/// the p50 of all batches, the table's, when they differ.
struct RunTime {
    fastest: f64,
    kept: usize,
    all: usize,
    p50: f64,
}

impl RunTime {
    fn of(samples: &[f64]) -> Option<RunTime> {
        let p50 = crate::stats::median(samples)?;
        let kept = crate::stats::at_fastest_level(samples);
        if !crate::stats::makes_a_level(kept.len(), samples.len()) {
            return Some(RunTime { fastest: p50, kept: samples.len(), all: samples.len(), p50 });
        }
        Some(RunTime { fastest: crate::stats::median(&kept)?, kept: kept.len(), all: samples.len(), p50 })
    }
}

impl std::fmt::Display for RunTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.1} ns", self.fastest)?;
        if (self.p50 - self.fastest).abs() > 0.02 * self.fastest {
            write!(f, " ({} of {} batches at the fastest speed level; all: p50 {:.1})", self.kept, self.all, self.p50)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::RunTime;

    #[test]
    fn a_programs_time_for_the_split_is_at_the_fastest_speed_level() {
        // Seconds at a level 1.17 times slower, as after idle here.
        let mut samples: Vec<f64> = (0..24).map(|i| 54.5 + 0.1 * i as f64).collect();
        samples.extend((0..16).map(|i| 46.9 + 0.05 * i as f64));
        let t = RunTime::of(&samples).unwrap();
        assert_eq!((t.kept, t.all), (16, 40));
        assert!((t.fastest - 47.275).abs() < 1e-9, "{}", t.fastest);
        assert_eq!(t.to_string(), "47.3 ns (16 of 40 batches at the fastest speed level; all: p50 54.8)");
        // One level: said as the table's p50 is.
        assert_eq!(RunTime::of(&[47.0, 47.2, 46.9]).unwrap().to_string(), "47.0 ns");
        // No level (a wakeup's spread): its fastest batches are a tail, the p50 stays.
        let wide: Vec<f64> = (0..40).map(|i| 600.0 + 45.0 * i as f64).collect();
        assert_eq!(RunTime::of(&wide).unwrap().to_string(), "1477.5 ns");
    }
}
