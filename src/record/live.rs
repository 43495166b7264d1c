//! What a live run measured: the program on the interface, each step of
//! the sweep, the statistics' own cost, and for the built-in load balancer
//! the in-BPF figures set beside the live ones.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Environment;

/// Version 2: a step's program figures are named counters and ratios
/// (version 1 had the load balancer's `lru` and the record its `lru_size`;
/// [`parse_live`] reads both).
pub const LIVE_SCHEMA: &str = "bpfbench.live/2";

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
    #[serde(flatten)]
    pub rates: StepRates,
    /// What the program did with them (the veth driver's counts).
    pub verdicts: XdpVerdicts,
    /// bpf_stats over the step: runs and nanoseconds.
    pub run_cnt: u64,
    pub run_time_ns: u64,
    /// run_time_ns / run_cnt.
    pub ns_per_packet: Option<f64>,
    #[serde(flatten)]
    pub spread: StepSpread,
    /// The program's own counters over the step, by name (the load
    /// balancer's `lru_hits` and `lru_misses`).
    #[serde(default)]
    pub counters: BTreeMap<String, u64>,
    /// Figures the program makes of them, each with its prediction.
    #[serde(default)]
    pub ratios: Vec<StepRatio>,
}

impl LiveStep {
    /// The ratio called `name`, if the program gave one for this step.
    pub fn ratio(&self, name: &str) -> Option<&StepRatio> {
        self.ratios.iter().find(|r| r.name == name)
    }
}

/// How fast frames went over a step (stored flat in the step).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StepRates {
    pub elapsed_s: f64,
    /// Frames the generator sent per second.
    pub offered_pps: f64,
    /// Frames the program under test ran on per second.
    pub received_pps: f64,
    /// Received frame bits per second.
    pub received_gbps: f64,
    /// Frames the generator's veth could not hand over (ring full).
    pub send_errors: Option<u64>,
}

/// The step cut into windows of `window_s`: how much the rate and
/// ns/packet move within it (stored flat in the step).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StepSpread {
    pub window_s: f64,
    pub windows: Vec<StepWindow>,
    /// Coefficients of variation over the windows (None: fewer than two).
    pub offered_pps_cv: Option<f64>,
    pub ns_per_packet_cv: Option<f64>,
}

/// One window of a step (the last one may be shorter).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StepWindow {
    pub offered_pps: f64,
    pub run_cnt: u64,
    pub ns_per_packet: Option<f64>,
}

/// A figure a program makes of its counters over a step (the load
/// balancer's LRU hit rate), and what the program predicts for it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StepRatio {
    /// What it is ("LRU hit rate").
    pub name: String,
    /// A fraction, 0 to 1.
    pub value: f64,
    pub predicted: Option<f64>,
    /// How the prediction is made ("entries / flows").
    pub prediction: Option<String>,
}

/// The name of the load balancer's LRU hit rate, in version 1 its `lru`.
pub const LRU_HIT_RATE: &str = "LRU hit rate";

/// Reads a live run's JSON document, of this version or an older one.
pub fn parse_live(text: &str) -> anyhow::Result<LiveRecord> {
    let mut doc: serde_json::Value = serde_json::from_str(text)?;
    let schema = doc.get("schema").and_then(|s| s.as_str()).unwrap_or_default().to_string();
    match schema.as_str() {
        LIVE_SCHEMA => {}
        "bpfbench.live/1" => upgrade_v1(&mut doc),
        other => anyhow::bail!(
            "'{other}' is not a live run this bpfbench reads (it reads {LIVE_SCHEMA} and bpfbench.live/1)"
        ),
    }
    Ok(serde_json::from_value(doc)?)
}

/// Version 1's `lru` of each step becomes counters and a ratio; the
/// record's `lru_size` a note.
fn upgrade_v1(doc: &mut serde_json::Value) {
    use serde_json::json;
    if let Some(n) = doc.get("lru_size").and_then(|n| n.as_u64()) {
        let note = json!(format!("connection tables of {n} entries per CPU"));
        match doc.get_mut("notes").and_then(|n| n.as_array_mut()) {
            Some(notes) => notes.insert(0, note),
            None => doc["notes"] = json!([note]),
        }
    }
    if let Some(steps) = doc.get_mut("steps").and_then(|s| s.as_array_mut()) {
        for step in steps {
            let Some(lru) = step.as_object_mut().and_then(|s| s.remove("lru")).filter(|l| !l.is_null()) else {
                continue;
            };
            step["counters"] = json!({"lru_hits": lru["hits"], "lru_misses": lru["misses"]});
            step["ratios"] = json!([{
                "name": LRU_HIT_RATE,
                "value": lru["hit_rate"],
                "predicted": lru["predicted_hit_rate"],
                "prediction": "entries / flows",
            }]);
        }
    }
    doc["schema"] = json!(LIVE_SCHEMA);
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
