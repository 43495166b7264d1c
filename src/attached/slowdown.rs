//! The trigger's slowdown: its time per event with the programs attached
//! against without them, in short phases that alternate on one CPU (ABBA:
//! each pair's order flips), so that the CPU's changes of speed, which last
//! from 10 ms to minutes here, fall on both sides alike. The statistics are
//! off meanwhile (the caller's part): what is measured is what the
//! workload pays, the attach mechanism included.

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result, bail};

use crate::harness::runner::Interrupted;
use crate::record::attached::Slowdown;
use crate::stats::Summary;
use crate::trigger::Trigger;

/// How the slowdown is sampled.
#[derive(Debug, Clone, Copy)]
pub struct SlowdownPlan {
    /// Pairs of phases (one attached, one detached) at least, and at most.
    pub min_pairs: usize,
    pub max_pairs: usize,
    /// Wall time a phase aims at.
    pub phase_ns: f64,
    /// Pairs are added until the median's 95 % interval is within this
    /// share of it (or `floor_ns`), or `budget` runs out.
    pub precision: f64,
    pub floor_ns: f64,
    pub budget: std::time::Duration,
    /// At most this long firing the trigger before the first phase, until
    /// its time per event stops falling (see [`settle`]).
    pub settle: std::time::Duration,
}

impl Default for SlowdownPlan {
    fn default() -> Self {
        // Phases of ~5 ms: a syscall's trigger reaches ±2 % in 20-30 pairs
        // here; a TCP connection's (28 µs, spread wide) needs more.
        SlowdownPlan {
            min_pairs: 20,
            max_pairs: 400,
            phase_ns: 5e6,
            precision: 0.02,
            floor_ns: 1.0,
            budget: std::time::Duration::from_secs(8),
            settle: std::time::Duration::from_secs(3),
        }
    }
}

/// Times `trigger` in alternating phases, `set(true)` attaching the
/// `programs` before an attached phase and `set(false)` detaching them
/// before a detached one; leaves them attached.
pub fn measure_slowdown(
    trigger: &mut Trigger,
    programs: Vec<String>,
    set: &mut dyn FnMut(bool) -> Result<()>,
    plan: SlowdownPlan,
    stop: &AtomicBool,
) -> Result<Slowdown> {
    // The trigger each way, to size the phases by the slower (a few events, warmed once).
    let mut per_event = |attached: bool| -> Result<f64> {
        set(attached)?;
        trigger.fire(16)?;
        Ok(trigger.timed(64)? as f64 / 64.0)
    };
    let slower = per_event(false)?.max(per_event(true)?);
    let events = ((plan.phase_ns / slower.max(1.0)) as u64).clamp(8, 1_000_000);
    let mut phase = |attached: bool| -> Result<f64> {
        if stop.load(Ordering::Relaxed) {
            return Err(Interrupted.into());
        }
        set(attached)?;
        Ok(trigger.timed(events)? as f64 / events as f64)
    };
    settle(&mut || phase(false), plan.settle)?;
    // One of each first: caches and the attach path warmed.
    phase(true)?;
    phase(false)?;
    let started = std::time::Instant::now();
    let (mut attached_ns, mut detached_ns, mut differences) = (Vec::new(), Vec::new(), Vec::new());
    for pair in 0..plan.max_pairs {
        let (a, d) = if pair % 2 == 0 {
            let a = phase(true)?;
            (a, phase(false)?)
        } else {
            let d = phase(false)?;
            (phase(true)?, d)
        };
        attached_ns.push(a);
        detached_ns.push(d);
        differences.push(a - d);
        if pair + 1 >= plan.min_pairs {
            let s = Summary::of(&differences).context("pairs")?;
            let half = (s.median_ci95.1 - s.median_ci95.0) / 2.0;
            if half <= (plan.precision * s.median.abs()).max(plan.floor_ns) || started.elapsed() >= plan.budget {
                break;
            }
        }
    }
    set(true)?;
    if attached_ns.is_empty() {
        bail!("no phase was timed");
    }
    Ok(Slowdown {
        programs,
        phases: format!("{} pairs of {events} events, alternating", attached_ns.len()),
        events_per_phase: events,
        differences: Summary::of(&differences).context("no pairs")?,
        detached: Summary::of(&detached_ns).context("no pairs")?,
        attached_ns,
        detached_ns,
    })
}

/// A CPU idle before the run starts it at a slower speed level (on this
/// kind of VM the first of four runs in a row took 226 ns a getppid()
/// where the others took 168): fires detached phases until none of the
/// last `STEADY` has beaten the fastest by more than 1 %, or `at_most`.
fn settle(phase: &mut dyn FnMut() -> Result<f64>, at_most: std::time::Duration) -> Result<()> {
    const STEADY: usize = 40;
    let started = std::time::Instant::now();
    let (mut best, mut since_best) = (f64::INFINITY, 0);
    while since_best < STEADY && started.elapsed() < at_most {
        let t = phase()?;
        if t < best * 0.99 {
            since_best = 0;
        } else {
            since_best += 1;
        }
        best = best.min(t);
    }
    Ok(())
}
