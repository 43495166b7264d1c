//! A live run's set-up: the topology built, the program under test attached to
//! the namespace's end of the veth, a sink on the generator's end, the
//! kernel's run-time statistics on, and steps measured one after another.
//!
//! Where the work runs: a veth hands an XDP frame to its peer's ring and
//! schedules the peer's NAPI on the sending CPU, so the program under test
//! runs in softirq on each generator thread's CPU, between the generator's
//! batches. Offered and received rates are therefore equal unless a ring
//! overflows, and a step's packet rate is the generator's and the
//! program's cost together; ns/packet (bpf_stats) is the program's alone.

use std::collections::BTreeMap;
use std::os::fd::{AsFd, OwnedFd};
use std::time::Duration;

use anyhow::{Context, Result};

use super::sweep::StepTraffic;
use super::{LiveProgram, sink};
use crate::kernel::bpf_stats::{self, RunStats, StatsEnabled};
use crate::record::live::XdpVerdicts;
use crate::record::live::{LiveStep, StatsOverhead, StepRates, StepSpread, StepWindow};
use crate::record::traffic::FlowOrder;
use crate::system::ethtool;
use crate::system::interrupt;
use crate::traffic::topology::{Topology, XdpMode};
use crate::traffic::{FlowPlan, GenSettings, Generator};

/// How every step sends.
#[derive(Debug, Clone)]
pub struct LiveSettings {
    pub warmup: Duration,
    pub step: Duration,
    pub cpus: Option<Vec<usize>>,
    pub rate_pps: Option<f64>,
    pub batch_size: u32,
    pub flow_order: FlowOrder,
    pub mode: XdpMode,
}

/// The windows a step is cut into for its spread.
const WINDOW: Duration = Duration::from_millis(100);
/// On/off pairs the statistics' cost is measured over, and each phase's length.
const OVERHEAD_PAIRS: usize = 4;
const OVERHEAD_PHASE: Duration = Duration::from_millis(250);

/// Where `kernel.bpf_stats_enabled` says whether someone keeps the statistics on.
const STATS_SYSCTL: &str = "/proc/sys/kernel/bpf_stats_enabled";

pub struct Attached<'p> {
    // Fields drop in order: links first, then the topology they sit on.
    _dut_link: OwnedFd,
    _sink_link: OwnedFd,
    _sink: OwnedFd,
    stats: Option<StatsEnabled>,
    program: &'p mut dyn LiveProgram,
    topology: Topology,
    settings: LiveSettings,
}

/// The interface counters a step reads before and after.
struct Counters {
    run: RunStats,
    verdicts: XdpVerdicts,
    /// The program's own, by name.
    program: BTreeMap<String, u64>,
}

impl<'p> Attached<'p> {
    /// Builds the topology and attaches `program`; the statistics go on.
    pub fn start(program: &'p mut dyn LiveProgram, settings: LiveSettings) -> Result<Attached<'p>> {
        let topology = Topology::create()?;
        let dut_link = topology
            .attach_inner(program.prog(), settings.mode)
            .with_context(|| format!("attaching {} to the veth", program.label()))?;
        let sink = sink::load_drop_program()?;
        let sink_link = topology.attach_outer(sink.as_fd(), XdpMode::Native)?;
        let stats = Some(bpf_stats::enable()?);
        Ok(Attached { _dut_link: dut_link, _sink_link: sink_link, _sink: sink, stats, program, topology, settings })
    }

    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    fn counters(&self) -> Result<Counters> {
        let inner = self.topology.inner.clone();
        Ok(Counters {
            run: RunStats::read(self.program.prog())?,
            verdicts: self.topology.in_netns(move || ethtool::xdp_verdicts(&inner))?,
            program: self.program.counters()?,
        })
    }

    fn generator(&self, traffic: &StepTraffic) -> Result<(Generator, FlowPlan)> {
        let plan = FlowPlan::new(&traffic.spec)?;
        let generator = Generator::new(&self.topology.outer, std::slice::from_ref(&plan), self.settings.flow_order)?;
        Ok((generator, plan))
    }

    fn gen_settings(&self, threads: usize, duration: Duration) -> GenSettings {
        GenSettings {
            threads,
            cpus: self.settings.cpus.clone(),
            rate_pps: self.settings.rate_pps,
            duration: Some(duration),
            count: None,
            batch_size: self.settings.batch_size,
            interval: Duration::from_secs(1),
        }
    }

    /// Sends `traffic` for the warm-up, then measures it for a step.
    pub fn measure(&mut self, value: Option<u64>, traffic: &StepTraffic) -> Result<LiveStep> {
        self.program.reset()?;
        let (generator, plan) = self.generator(traffic)?;
        if !self.settings.warmup.is_zero() {
            generator.run(&self.gen_settings(traffic.threads, self.settings.warmup), |_| {})?;
        }
        let before = self.counters()?;
        // Each window reads the program's statistics again: the step's
        // spread, at the cost of one syscall per window.
        let prog = self.program.prog();
        let mut windows = Vec::new();
        let mut last = before.run;
        let mut settings = self.gen_settings(traffic.threads, self.settings.step);
        settings.interval = WINDOW;
        let sent = generator.run(&settings, |interval| {
            if let Ok(now) = RunStats::read(prog) {
                let d = now.since(last);
                windows.push(StepWindow {
                    offered_pps: interval.rate.pps,
                    run_cnt: d.run_cnt,
                    ns_per_packet: d.ns_per_run(),
                });
                last = now;
            }
        })?;
        let after = self.counters()?;
        // A short last window says little; the step's totals include it.
        let full: Vec<&StepWindow> = windows.iter().filter(|w| w.run_cnt > 0).collect();
        let cv = |xs: Vec<f64>| crate::stats::Summary::of(&xs).filter(|s| s.n >= 2).map(|s| s.cv);
        let run = after.run.since(before.run);
        let verdicts = after.verdicts.since(before.verdicts);
        let elapsed = sent.elapsed_s.max(1e-9);
        let counters: BTreeMap<String, u64> = after
            .program
            .iter()
            .map(|(name, &n)| (name.clone(), n.saturating_sub(before.program.get(name).copied().unwrap_or(0))))
            .collect();
        let ratios = self.program.ratios(&counters, plan.flows);
        Ok(LiveStep {
            value,
            packet: traffic.spec.to_string(),
            frame_bytes: plan.template.len(),
            flows: plan.flows,
            threads: traffic.threads,
            cpus: sent.cpus.clone(),
            rates: StepRates {
                elapsed_s: elapsed,
                offered_pps: sent.rate.pps,
                received_pps: verdicts.packets as f64 / elapsed,
                received_gbps: verdicts.packets as f64 * plan.template.len() as f64 * 8.0 / elapsed / 1e9,
                send_errors: sent.rate.errors,
            },
            verdicts,
            run_cnt: run.run_cnt,
            run_time_ns: run.run_time_ns,
            ns_per_packet: run.ns_per_run(),
            spread: StepSpread {
                window_s: WINDOW.as_secs_f64(),
                offered_pps_cv: cv(full.iter().map(|w| w.offered_pps).collect()),
                ns_per_packet_cv: cv(full.iter().filter_map(|w| w.ns_per_packet).collect()),
                windows,
            },
            counters,
            ratios,
        })
    }

    /// Measures what the statistics cost per packet: the time per frame
    /// with them on minus with them off, in alternating phases on one
    /// generator thread (so on one CPU, within one speed level mostly).
    pub fn stats_overhead(&mut self, traffic: &StepTraffic) -> Result<StatsOverhead> {
        let claim = "two clock reads per program run";
        if std::fs::read_to_string(STATS_SYSCTL).is_ok_and(|v| v.trim() == "1") {
            return Ok(StatsOverhead {
                ns_per_packet: None,
                ns_per_program_run: None,
                runs_per_frame: 0.0,
                pairs_ns: Vec::new(),
                note: format!(
                    "not measured: {STATS_SYSCTL} is 1, so the statistics cannot be turned off; they cost {claim}"
                ),
            });
        }
        self.program.reset()?;
        let single = StepTraffic { spec: traffic.spec.clone(), threads: 1 };
        let (generator, _) = self.generator(&single)?;
        let settings = self.gen_settings(1, OVERHEAD_PHASE);
        generator.run(&settings, |_| {})?;
        let before = self.counters()?.verdicts;
        let mut pairs = Vec::new();
        for i in 0..OVERHEAD_PAIRS {
            let mut ns_per_frame = [0.0; 2];
            // Alternate which goes first, so a drift in speed favours neither.
            let order = if i % 2 == 0 { [true, false] } else { [false, true] };
            for on in order {
                self.stats = if on { Some(bpf_stats::enable()?) } else { None };
                let r = generator.run(&settings, |_| {})?;
                ns_per_frame[usize::from(on)] = r.elapsed_s * 1e9 / r.rate.sent.max(1) as f64;
                if interrupt::interrupted() {
                    break;
                }
            }
            if interrupt::interrupted() {
                break;
            }
            pairs.push(ns_per_frame[1] - ns_per_frame[0]);
        }
        self.stats = Some(bpf_stats::enable()?);
        let median = crate::stats::median(&pairs);
        // Programs run per frame: the generator's, the one under test, and
        // the sink's for each frame sent back.
        let v = self.counters()?.verdicts.since(before);
        let runs_per_frame = 2.0 + v.tx as f64 / v.packets.max(1) as f64;
        Ok(StatsOverhead {
            ns_per_packet: median,
            ns_per_program_run: median.map(|m| m / runs_per_frame),
            runs_per_frame,
            pairs_ns: pairs,
            note: format!(
                "{claim}: time per frame with the statistics on minus off, {OVERHEAD_PAIRS} alternating pairs of {} ms on one CPU, \
                 over {runs_per_frame:.2} program runs per frame (generator, program under test, return-path sink)",
                OVERHEAD_PHASE.as_millis()
            ),
        })
    }
}
