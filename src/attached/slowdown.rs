//! The trigger's slowdown: its time per event with the programs attached
//! against without them, in short phases that alternate on one CPU (ABBA:
//! each pair's order flips), so that the CPU's changes of speed, which last
//! from 10 ms to minutes here, fall on both sides alike. The statistics are
//! off meanwhile (the caller's part): what is measured is what the
//! workload pays, the attach mechanism included. The pairs are fired from
//! several threads in turn: the attach path's cost moves with the thread
//! (see `trigger::threads`).

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result, bail};

use crate::harness::runner::Interrupted;
use crate::record::attached::Slowdown;
use crate::stats::{SPEED_LEVEL, Summary, makes_a_level};
use crate::trigger::{FIRING_THREADS, FiringThreads, Trigger};

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
    /// Threads the pairs are fired from in turn (see `trigger::threads`).
    pub threads: usize,
}

impl Default for SlowdownPlan {
    fn default() -> Self {
        // Phases of ~5 ms: a syscall's trigger reaches ±2 % in 20-30 pairs
        // here; a TCP connection's (28 µs, spread wide) needs more.
        SlowdownPlan {
            min_pairs: 32,
            max_pairs: 384,
            phase_ns: 5e6,
            precision: 0.02,
            floor_ns: 1.0,
            budget: std::time::Duration::from_secs(8),
            settle: std::time::Duration::from_secs(3),
            threads: FIRING_THREADS,
        }
    }
}

/// Times `trigger` in alternating phases, `set(true)` attaching the
/// `programs` before an attached phase and `set(false)` detaching them
/// before a detached one; leaves them attached. Pair `p` is fired from
/// thread `(p / 2) % threads`: each thread in both orders, and the
/// stopping rule looks only after whole turns of threads.
pub fn measure_slowdown(
    trigger: Trigger,
    programs: Vec<String>,
    set: &mut dyn FnMut(bool) -> Result<()>,
    plan: SlowdownPlan,
    stop: &AtomicBool,
) -> Result<Slowdown> {
    let threads = FiringThreads::start(plan.threads)?;
    let mut trigger = Some(trigger);
    // `events` from thread `thread`, ns per event.
    let mut fire = |thread: usize, events: u64| -> Result<f64> {
        let (back, timed) = threads.timed(thread, trigger.take().context("the trigger was lost")?, events);
        trigger = back;
        Ok(timed? as f64 / events as f64)
    };
    // The trigger each way, to size the phases by the slower (a few events, warmed once).
    let mut per_event = |attached: bool| -> Result<f64> {
        set(attached)?;
        fire(0, 16)?;
        fire(0, 64)
    };
    let slower = per_event(false)?.max(per_event(true)?);
    let events = ((plan.phase_ns / slower.max(1.0)) as u64).clamp(8, 1_000_000);
    let mut phase = |attached: bool, thread: usize| -> Result<f64> {
        if stop.load(Ordering::Relaxed) {
            return Err(Interrupted.into());
        }
        set(attached)?;
        fire(thread, events)
    };
    settle(&mut || phase(false, 0), plan.settle)?;
    // One of each first: caches and the attach path warmed.
    phase(true, 0)?;
    phase(false, 0)?;
    let turn = 2 * threads.count();
    let started = std::time::Instant::now();
    let (mut attached_ns, mut detached_ns, mut differences, mut thread_of) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for pair in 0..plan.max_pairs {
        let thread = (pair / 2) % threads.count();
        let (a, d) = if pair % 2 == 0 {
            let a = phase(true, thread)?;
            (a, phase(false, thread)?)
        } else {
            let d = phase(false, thread)?;
            (phase(true, thread)?, d)
        };
        attached_ns.push(a);
        detached_ns.push(d);
        differences.push(a - d);
        thread_of.push(thread);
        if (pair + 1) % turn != 0 {
            continue;
        }
        let kept = at_fastest_level(&attached_ns, &detached_ns, &thread_of);
        let enough = kept.len() >= plan.min_pairs && makes_a_level(kept.len(), attached_ns.len());
        if enough {
            let kept: Vec<f64> = kept.iter().map(|&i| differences[i]).collect();
            let s = Summary::of(&kept).context("pairs")?;
            let half = (s.median_ci95.1 - s.median_ci95.0) / 2.0;
            if half <= (plan.precision * s.median.abs()).max(plan.floor_ns) {
                break;
            }
        }
        // A CPU that spent the budget at a slower level is waited for, a while.
        let budget = match enough {
            true => plan.budget,
            false => plan.budget * SLOW_CPU_WAIT,
        };
        if pair + 1 >= plan.min_pairs && started.elapsed() >= budget {
            break;
        }
    }
    set(true)?;
    if attached_ns.is_empty() {
        bail!("no phase was timed");
    }
    // Too few pairs at one level to stand alone (or a spread, no level): all of them, said so.
    let kept = Some(at_fastest_level(&attached_ns, &detached_ns, &thread_of))
        .filter(|k| makes_a_level(k.len(), attached_ns.len()));
    let over_threads = match threads.count() {
        1 => String::new(),
        n => format!(", fired from {n} threads in turn"),
    };
    let (phases, pairs_kept, kept) = match kept {
        Some(k) => (
            format!(
                "{} of {} pairs of {events} events, alternating{over_threads}: those at the CPU's fastest speed level (within {:.0} % of the fastest phase: attached, of its thread; detached, of all)",
                k.len(),
                attached_ns.len(),
                (SPEED_LEVEL - 1.0) * 100.0
            ),
            Some(k.len()),
            k,
        ),
        None => (
            format!(
                "{} pairs of {events} events, alternating{over_threads} (too few at one speed level of the CPU to keep those alone)",
                attached_ns.len()
            ),
            None,
            (0..attached_ns.len()).collect(),
        ),
    };
    let of = |v: &[f64]| -> Vec<f64> { kept.iter().map(|&i| v[i]).collect() };
    let per_thread_ns = match threads.count() {
        1 => Vec::new(),
        n => (0..n)
            .filter_map(|thread| {
                let mine: Vec<f64> =
                    kept.iter().filter(|&&i| thread_of[i] == thread).map(|&i| differences[i]).collect();
                Summary::of(&mine).map(|s| s.median)
            })
            .collect(),
    };
    Ok(Slowdown {
        programs,
        phases,
        events_per_phase: events,
        differences: Summary::of(&of(&differences)).context("no pairs")?,
        detached: Summary::of(&of(&detached_ns)).context("no pairs")?,
        attached_ns,
        detached_ns,
        pairs_kept,
        per_thread_ns,
    })
}

/// The budget is stretched this many times while fewer than `min_pairs`
/// pairs, or a fifth, are at the fastest level: after idle the CPU here can
/// spend most of 8 s at a level 1.33 times slower, and a run that kept 19
/// of 192 pairs gave a slowdown 5 % above three others'.
const SLOW_CPU_WAIT: u32 = 3;

/// The pairs at the CPU's fastest speed level: both phases within
/// [`SPEED_LEVEL`] of the fastest phase of their side. The vCPUs here slow down
/// in bursts of 10-90 ms, most in the first seconds after idle, when the
/// slowdown is measured; the slowdown in ns scales with the level (the
/// attach path runs slower too), and a burst that falls on one phase of a
/// pair and not the other moves its difference by 60-130 ns. Four runs in
/// a row gave attach costs with a CV of 6-11 % from all pairs, 0.6-1.8 %
/// from these. An attached phase is held against the fastest of its own
/// thread (a thread whose placement costs more is no speed level), a
/// detached one against the fastest of all (the trigger alone costs the
/// same on every thread, and a thread whose phases all fell at a slower
/// level has no fast phase of its own: a run spent at a level 1.33 times
/// slower but for 10 pairs kept 65 of 96, and gave 186 ns instead of 145).
fn at_fastest_level(attached_ns: &[f64], detached_ns: &[f64], thread_of: &[usize]) -> Vec<usize> {
    let mut a = vec![f64::INFINITY; thread_of.iter().max().map_or(0, |m| m + 1)];
    for (i, &t) in thread_of.iter().enumerate() {
        a[t] = a[t].min(attached_ns[i]);
    }
    let d = detached_ns.iter().copied().fold(f64::INFINITY, f64::min);
    (0..detached_ns.len())
        .filter(|&i| attached_ns[i] <= a[thread_of[i]] * SPEED_LEVEL && detached_ns[i] <= d * SPEED_LEVEL)
        .collect()
}

/// A CPU idle before the run starts it at slower speed levels: on this
/// kind of VM, getppid() in 1.5 ms windows after 30 s idle took 232 ns
/// instead of 166 in a quarter of the windows of the first 1.7 s (bursts
/// of 10-90 ms), and in almost none after; a first run whose phases fell
/// there gave an attach cost 36 % high. So detached phases are fired
/// until `STEADY` of them in a row are within 5 % of the fastest, or
/// `at_most`.
fn settle(phase: &mut dyn FnMut() -> Result<f64>, at_most: std::time::Duration) -> Result<()> {
    const STEADY: usize = 80;
    let started = std::time::Instant::now();
    let mut times: Vec<f64> = Vec::new();
    while started.elapsed() < at_most {
        times.push(phase()?);
        let best = times.iter().copied().fold(f64::INFINITY, f64::min);
        if times.len() >= STEADY && times[times.len() - STEADY..].iter().all(|t| *t <= best * 1.05) {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::at_fastest_level;

    #[test]
    fn pairs_with_a_phase_on_a_slow_speed_level_are_set_aside() {
        // Fast levels ~310 attached, ~165 detached; bursts 1.35 times slower.
        let attached = [310.0, 312.0, 420.0, 315.0, 430.0, 311.0];
        let detached = [165.0, 226.0, 166.0, 167.0, 230.0, 164.0];
        assert_eq!(at_fastest_level(&attached, &detached, &[0; 6]), vec![0, 3, 5]);
    }

    #[test]
    fn a_thread_that_costs_more_is_held_against_its_own_fastest_phases() {
        // Thread 1's placement costs 40 ns more in every attached phase: not a speed level.
        let attached = [310.0, 350.0, 312.0, 352.0, 420.0, 470.0];
        let detached = [165.0, 166.0, 164.0, 165.0, 166.0, 165.0];
        assert_eq!(at_fastest_level(&attached, &detached, &[0, 1, 0, 1, 0, 1]), vec![0, 1, 2, 3]);
    }

    #[test]
    fn a_thread_whose_phases_all_fell_at_a_slower_level_is_set_aside() {
        // Thread 1 fired only while the CPU was 1.33 times slower: its own fastest is no level.
        let attached = [310.0, 412.0, 312.0, 415.0];
        let detached = [165.0, 222.0, 164.0, 224.0];
        assert_eq!(at_fastest_level(&attached, &detached, &[0, 1, 0, 1]), vec![0, 2]);
    }
}
