//! The built-in load balancer's live figures beside its in-BPF ones: the
//! suite's LRU-hit and LRU-miss scenarios timed in the same run on the
//! same CPU, and each live step's ns/packet set against what its measured
//! hit rate predicts from them.

use anyhow::{Context, Result, bail};

use super::XdpLb;
use crate::record::live::{CrossCheck, CrossCheckStep, LRU_HIT_RATE, LiveStep};
use crate::record::{RunRecord, Sampling};
use crate::session::{self, Plan, Quiet};

/// The suite's scenarios a live run's figures are set beside: an LRU hit,
/// an LRU miss (consistent hash and insert), both IPv4 UDP as the live
/// default packet is.
pub const HIT_SCENARIO: &str = "udp-v4-lru-hit";
pub const MISS_SCENARIO: &str = "udp-v4-lru-miss";

/// Samples per in-BPF scenario: enough for a median within about 1%.
const SAMPLES: u64 = 60;

/// One in-BPF figure: the scenario's median less its loop's own median
/// (the live figure has no loop), the median's 95% interval shifted alike,
/// and the samples it came from.
#[derive(Debug, Clone, Copy)]
pub struct NetFigure {
    pub ns: f64,
    pub ci95: (f64, f64),
    pub samples: usize,
}

/// The in-BPF figures the live ones are set beside.
#[derive(Debug, Clone, Copy)]
pub struct InBpf {
    pub hit: NetFigure,
    pub miss: NetFigure,
}

/// Times the hit and miss scenarios on `cpu`.
pub fn measure_in_bpf(cpu: usize) -> Result<InBpf> {
    let workload = XdpLb::default();
    let scenarios = session::select(&workload, &[HIT_SCENARIO.to_string(), MISS_SCENARIO.to_string()], &[])?;
    let plan = Plan {
        sampling: Sampling { samples: SAMPLES, max_scenario_s: 3.0, ..Sampling::default() },
        cpu: Some(cpu),
        ..Plan::new(&workload, scenarios)
    };
    let outcome = session::run(plan, &mut Quiet)?;
    let net = |run: &RunRecord, name: &str| -> Result<NetFigure> {
        let s = run.results.iter().find(|r| r.name == name).with_context(|| format!("the in-BPF run has no {name}"))?;
        if let Some(e) = &s.error {
            bail!("in-BPF {name}: {e}");
        }
        let m = s.measurement().with_context(|| format!("in-BPF {name} was not measured"))?;
        let loop_ns = m.overhead.summary.median;
        let (lo, hi) = m.summary.median_ci95;
        Ok(NetFigure { ns: m.summary.median - loop_ns, ci95: (lo - loop_ns, hi - loop_ns), samples: m.summary.n })
    };
    let run = outcome.last();
    Ok(InBpf { hit: net(run, HIT_SCENARIO)?, miss: net(run, MISS_SCENARIO)? })
}

/// Sets each step with a hit rate and a live figure against the in-BPF prediction.
pub fn cross_check(in_bpf: InBpf, steps: &[LiveStep]) -> CrossCheck {
    let rows: Vec<CrossCheckStep> = steps
        .iter()
        .filter_map(|s| {
            let (hit_rate, live) = (s.ratio(LRU_HIT_RATE)?.value, s.ns_per_packet?);
            let predicted = hit_rate * in_bpf.hit.ns + (1.0 - hit_rate) * in_bpf.miss.ns;
            Some(CrossCheckStep {
                value: s.value,
                hit_rate,
                live_ns: live,
                predicted_ns: predicted,
                excess_ns: live - predicted,
            })
        })
        .collect();
    let points: Vec<(f64, f64)> = rows.iter().map(|r| (1.0 - r.hit_rate, r.live_ns)).collect();
    CrossCheck {
        hit_scenario: HIT_SCENARIO.into(),
        hit_ns: in_bpf.hit.ns,
        hit_ci95: in_bpf.hit.ci95,
        hit_samples: in_bpf.hit.samples,
        miss_scenario: MISS_SCENARIO.into(),
        miss_ns: in_bpf.miss.ns,
        miss_ci95: in_bpf.miss.ci95,
        miss_samples: in_bpf.miss.samples,
        steps: rows,
        live_slope_ns: crate::stats::slope(&points),
        in_bpf_slope_ns: in_bpf.miss.ns - in_bpf.hit.ns,
        explanation: "in-BPF figures are medians less the timing loop's own cost, with one packet hot in cache; \
            live figures are bpf_stats' run_time_ns / run_cnt, which add the entry from the driver (a call and a \
            return, ~8-9 ns each way with Safe-RET here), half the statistics' clock reads, and frames \
            fresh from the page pool rather than one packet in cache: a fixed excess. What the hit rate \
            changes, the LRU lookup against a consistent-hash pick and insert, should move both alike: \
            compare the slopes."
            .into(),
    }
}
