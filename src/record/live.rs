//! What a live run measured: the program on the interface, each step of
//! the sweep, the statistics' own cost, and for the built-in load balancer
//! the in-BPF figures set beside the live ones.

use serde::{Deserialize, Serialize};

use super::Environment;

pub const LIVE_SCHEMA: &str = "bpfbench.live/1";

/// A quantity a sweep varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SweepVar {
    /// Distinct UDP/TCP source ports (0: the packet's one port), as the
    /// Katran-on-userspace study varied them to move the LRU hit rate.
    SrcPorts,
    /// Frame size in bytes (without the FCS).
    Size,
    /// Distinct source addresses.
    Flows,
    /// Generator threads, one per CPU.
    Threads,
}

impl SweepVar {
    pub const ALL: [SweepVar; 4] = [SweepVar::SrcPorts, SweepVar::Size, SweepVar::Flows, SweepVar::Threads];

    pub fn name(self) -> &'static str {
        match self {
            SweepVar::SrcPorts => "src-ports",
            SweepVar::Size => "size",
            SweepVar::Flows => "flows",
            SweepVar::Threads => "threads",
        }
    }

    /// The axis label of a plot, with its unit.
    pub fn axis_label(self) -> &'static str {
        match self {
            SweepVar::SrcPorts => "distinct source ports",
            SweepVar::Size => "frame size (bytes)",
            SweepVar::Flows => "distinct source addresses",
            SweepVar::Threads => "generator threads",
        }
    }
}

/// What a veth's XDP did with the frames it received, summed over its
/// queues (the veth driver's `rx_queue_N_xdp_*` statistics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct XdpVerdicts {
    /// Frames the XDP program ran on.
    pub packets: u64,
    pub pass: u64,
    /// XDP_DROP and XDP_ABORTED (the driver counts them together).
    pub drop: u64,
    pub tx: u64,
    pub redirect: u64,
    /// Frames the program returned XDP_TX for that could not be sent back
    /// (longer than the peer's MTU, or its ring full); not in `tx`.
    pub tx_errors: u64,
}

impl XdpVerdicts {
    pub fn since(self, s: XdpVerdicts) -> XdpVerdicts {
        XdpVerdicts {
            packets: self.packets.saturating_sub(s.packets),
            pass: self.pass.saturating_sub(s.pass),
            drop: self.drop.saturating_sub(s.drop),
            tx: self.tx.saturating_sub(s.tx),
            redirect: self.redirect.saturating_sub(s.redirect),
            tx_errors: self.tx_errors.saturating_sub(s.tx_errors),
        }
    }
}

/// One `bpfbench live` run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LiveRecord {
    /// "bpfbench.live/N".
    pub schema: String,
    pub tag: Option<String>,
    pub environment: Environment,
    /// The program under test ("xdp-lb", "xdp_pass in pass.bpf.o").
    pub program: String,
    /// "native" or "generic" XDP on the receiving veth.
    pub xdp_mode: String,
    /// The base packet spec each step starts from.
    pub packet: String,
    pub flow_order: super::traffic::FlowOrder,
    /// The connection table's entries per CPU (load balancer).
    pub lru_size: Option<u64>,
    /// Seconds sent before each step's measurement (tables warm up).
    pub warmup_s: f64,
    /// Seconds each step is measured for.
    pub step_s: f64,
    /// The swept variable; None: one step.
    pub sweep: Option<SweepVar>,
    /// What the kernel's run-time statistics cost per packet, measured.
    pub stats_overhead: StatsOverhead,
    pub steps: Vec<LiveStep>,
    /// For the built-in load balancer: live beside in-BPF figures.
    pub cross_check: Option<CrossCheck>,
    /// Notes on the set-up (maps filled, pinned maps used).
    pub notes: Vec<String>,
    /// Ctrl-C or SIGTERM ended the run early; the steps so far are kept.
    pub interrupted: bool,
}

/// The cost of `bpf_stats` itself: the kernel reads the clock before and
/// after every run of every program while they are on.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StatsOverhead {
    /// Median extra ns per packet with the statistics on, over alternating
    /// on/off phases on one CPU (None: not measured, see `note`).
    pub ns_per_packet: Option<f64>,
    /// The same per program run: every program on the path pays it.
    pub ns_per_program_run: Option<f64>,
    /// Programs run per frame while it was measured.
    pub runs_per_frame: f64,
    /// Each on/off pair's difference, ns per packet.
    pub pairs_ns: Vec<f64>,
    pub note: String,
}

/// One step: traffic of one setting, measured for `elapsed_s`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LiveStep {
    /// The swept variable's value (None without a sweep).
    pub value: Option<u64>,
    pub packet: String,
    pub frame_bytes: usize,
    pub flows: u64,
    pub threads: usize,
    pub cpus: Vec<usize>,
    pub elapsed_s: f64,
    /// Frames the generator sent per second.
    pub offered_pps: f64,
    /// Frames the program under test ran on per second.
    pub received_pps: f64,
    /// Received frame bits per second.
    pub received_gbps: f64,
    /// Frames the generator's veth could not hand over (ring full).
    pub send_errors: Option<u64>,
    /// What the program did with them (the veth driver's counts).
    pub verdicts: XdpVerdicts,
    /// bpf_stats over the step: runs and nanoseconds.
    pub run_cnt: u64,
    pub run_time_ns: u64,
    /// run_time_ns / run_cnt.
    pub ns_per_packet: Option<f64>,
    /// The step cut into windows of `window_s`: how much the rate and
    /// ns/packet move within it.
    pub window_s: f64,
    pub windows: Vec<StepWindow>,
    /// Coefficients of variation over the windows (None: fewer than two).
    pub offered_pps_cv: Option<f64>,
    pub ns_per_packet_cv: Option<f64>,
    pub lru: Option<LruStep>,
}

/// One window of a step (the last one may be shorter).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StepWindow {
    pub offered_pps: f64,
    pub run_cnt: u64,
    pub ns_per_packet: Option<f64>,
}

/// The load balancer's connection table over a step.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LruStep {
    pub hits: u64,
    pub misses: u64,
    pub hit_rate: f64,
    /// What an LRU of this size predicts for uniformly random flows:
    /// min(1, entries / flows).
    pub predicted_hit_rate: f64,
}

/// Live ns/packet beside the in-BPF figures of the matching scenarios,
/// measured in the same run on the same CPU.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CrossCheck {
    pub hit_scenario: String,
    pub hit_ns: f64,
    /// The median's 95% interval (less the loop's median), and samples.
    pub hit_ci95: (f64, f64),
    pub hit_samples: usize,
    pub miss_scenario: String,
    pub miss_ns: f64,
    pub miss_ci95: (f64, f64),
    pub miss_samples: usize,
    /// Per step with a hit rate: in-BPF prediction h·hit + (1−h)·miss, and
    /// the live figure's excess over it.
    pub steps: Vec<CrossCheckStep>,
    /// Live ns/packet per unit of miss rate (a least-squares slope over
    /// the steps) against the in-BPF miss − hit.
    pub live_slope_ns: Option<f64>,
    pub in_bpf_slope_ns: f64,
    pub explanation: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CrossCheckStep {
    pub value: Option<u64>,
    pub hit_rate: f64,
    pub live_ns: f64,
    pub predicted_ns: f64,
    pub excess_ns: f64,
}
