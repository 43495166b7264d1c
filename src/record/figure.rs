//! A scenario's figure: what measuring or counting it produced, one of the
//! metrics (see `metric`). A record holds at most one; reports, the history
//! and comparisons ask the figure, never which of several options is set.
//! A new metric (ns per run from `bpf_stats`, a trigger's slowdown) is a new
//! variant here and a row in `metric::METRICS`.

use serde::{Deserialize, Serialize};

use super::Metric;
use crate::stats::Summary;

/// What a scenario measured: serialised as `{"metric": NAME, ...its fields}`
/// (schema 4; older documents' three options are upgraded on read).
// A run holds one figure per scenario, tens at most: their size is no cost.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "metric", rename_all = "kebab-case")]
pub enum Figure {
    /// ns per operation, timed in batches (`--metric time`).
    Time(Measurement),
    /// BPF instructions per packet in the userspace runtime (`--metric insns`).
    Insns(InstructionCount),
    /// The kernel's native instructions per packet, counted under TCG
    /// (`--metric kernel-insns`): the guest records the regions, the host
    /// fills in the counts.
    KernelInsns(KernelInsns),
}

impl Figure {
    pub fn metric(&self) -> Metric {
        match self {
            Figure::Time(_) => Metric::Time,
            Figure::Insns(_) => Metric::Insns,
            Figure::KernelInsns(_) => Metric::KernelInsns,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Measurement {
    /// Timed iterations per BPF_PROG_TEST_RUN invocation.
    pub batch_iters: u32,
    pub calibration: Calibration,
    /// One value per batch: elapsed ns / iterations, as measured inside BPF.
    pub samples_ns: Vec<f64>,
    pub summary: Summary,
    /// The timing loop's own cost, measured in the same run; never subtracted.
    pub overhead: Overhead,
    /// What went wrong in measuring it (a failed proportionality check, a
    /// time cap reached): shown under every table.
    pub warnings: Vec<String>,
    /// How much its samples spread against the machine's own noise at the
    /// time (runs stored before it was kept have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<Noise>,
    /// Facts about the samples that `-v` shows (outliers, flagged and kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observations: Vec<String>,
}

/// A row's spread against the machine's: the machine's is the spread of
/// the run's empty timing loop, sampled in the same sweeps on the same CPU,
/// so whatever disturbed the row would have disturbed it too.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    /// The row's coefficient of variation.
    pub cv: f64,
    /// The empty loop's, in the same run.
    pub machine_cv: f64,
    /// Half the width of the median's 95 % interval, over the median.
    pub median_uncertainty: f64,
    /// The row spread more than [`Noise::FACTOR`] times the machine did
    /// and more than [`Noise::FLOOR`], so that its median is uncertain by
    /// more than [`Noise::UNCERTAIN`]: a figure not to trust as it is.
    pub noisier: bool,
}

impl Noise {
    /// How many times the machine's CV a row's may reach before it is called noisier.
    pub const FACTOR: f64 = 2.0;
    /// Spreads below this CV are never called noisy, whatever the loop's.
    pub const FLOOR: f64 = 0.05;
    /// A median known to within this (half its 95 % interval) is figure
    /// enough, however its samples spread: on an idle machine here, rows
    /// spread 2-4 times the empty loop in every run (their code's
    /// placement and hash seeds vary by design), yet their medians
    /// reproduced within 2 % run to run.
    pub const UNCERTAIN: f64 = 0.01;

    pub fn judge(cv: f64, machine_cv: f64, median_uncertainty: f64) -> Noise {
        let noisier = cv > Self::FLOOR && cv > Self::FACTOR * machine_cv && median_uncertainty > Self::UNCERTAIN;
        Noise { cv, machine_cv, median_uncertainty, noisier }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Calibration {
    pub estimate_ns_per_op: f64,
    /// Time of a 2N batch over time of an N batch taken next to it, the
    /// median over the pairs; 2.0 when cost is linear.
    pub proportionality_ratio: f64,
    /// The median's 95 % interval (runs stored before it was kept have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proportionality_ci: Option<(f64, f64)>,
    /// Pairs the ratio rests on (0 in runs stored before pairs were kept).
    #[serde(default)]
    pub proportionality_pairs: u32,
    /// False when the whole interval lies outside 2 ± 5 %.
    pub proportional: bool,
}

/// The harness's own cost: the same loop and reset block around an empty
/// body. Scenarios with the same `key` share one measurement per run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Overhead {
    pub key: String,
    pub batch_iters: u32,
    pub samples_ns: Vec<f64>,
    pub summary: Summary,
}

/// Instructions, helper calls and map operations per packet, counted by
/// the userspace runtime: the body's iterations less as many of the empty
/// loop, so the harness's own instructions drop out (a path that moves the
/// packet's head keeps the loop's restore of it, as its ns/op does).
/// Totals are kept, so two counts of the same packets differ exactly.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InstructionCount {
    /// Packets (iterations) counted.
    pub packets: u64,
    /// Instructions of the body's iterations, and of as many of the empty loop's.
    pub body_insns: u64,
    pub loop_insns: u64,
    /// Calls by helper, and operations by "map: helper", the body's less the loop's.
    pub helpers: std::collections::BTreeMap<String, i64>,
    pub map_ops: std::collections::BTreeMap<String, i64>,
    /// Instructions by source line, the body's less the loop's (`--profile`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<LineCount>,
    /// Where the time of timed batches went, sampled (`--profile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<TimeProfile>,
}

/// The sampling profiler's view of body batches timed in the userspace
/// JIT (`--profile`): samples by helper here, by line in [`LineCount`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimeProfile {
    /// Samples taken in the program's code or in what it called.
    pub samples: u64,
    /// Samples elsewhere (the runtime between batches), not in the shares.
    pub outside: u64,
    /// ns per packet of each batch sampled (the loop's own cost and the
    /// profiler's included).
    pub batches: crate::stats::Summary,
    /// Samples inside each helper (its map's code included), by helper name.
    pub helpers: std::collections::BTreeMap<String, u64>,
    /// Those of them whose call site shows the map, by "map: helper".
    #[serde(default)]
    pub map_ops: std::collections::BTreeMap<String, u64>,
}

/// Time samples of the userspace runtime's profiler attributed to lines and helpers.
#[derive(Debug, Clone, Default)]
pub struct SampledTime {
    /// Samples in the programs' code or in what they called.
    pub samples: u64,
    /// Samples elsewhere.
    pub outside: u64,
    /// Samples inside each helper, by name, and by "map: helper" where the call site shows the map.
    pub helpers: std::collections::BTreeMap<String, u64>,
    pub map_ops: std::collections::BTreeMap<String, u64>,
    /// Samples and text by line ("file:line").
    pub lines: std::collections::BTreeMap<String, (u64, String)>,
}

/// The instructions one source line executed (`--profile`), over all packets counted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LineCount {
    /// "file:line".
    pub at: String,
    /// The line's text, as the object's BTF keeps it.
    pub text: String,
    pub insns: i64,
    /// Time samples in the line's code, or in a helper it called (`--profile`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub samples: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl InstructionCount {
    /// Adds the sampled time over `batches` (each batch's ns/packet): its
    /// lines join the counted ones (a line of the loop may have samples but
    /// no instructions beyond the loop's).
    pub fn add_samples(&mut self, sampled: SampledTime, batches: crate::stats::Summary) {
        for (at, (samples, text)) in sampled.lines {
            match self.lines.iter_mut().find(|l| l.at == at) {
                Some(l) => l.samples = samples,
                None => self.lines.push(LineCount { at, text, insns: 0, samples }),
            }
        }
        self.time = Some(TimeProfile {
            samples: sampled.samples,
            outside: sampled.outside,
            batches,
            helpers: sampled.helpers,
            map_ops: sampled.map_ops,
        });
    }

    /// Instructions per packet.
    pub fn per_packet(&self) -> f64 {
        (self.body_insns as f64 - self.loop_insns as f64) / self.packets.max(1) as f64
    }
}

/// A scenario counted by the TCG plugin: the guest's bpfbench marks the
/// regions and names the JIT images; the host, which reads the plugin's
/// file, fills in the counts. Each round runs a batch of `iters` packets
/// and one of twice as many: their difference is `iters` packets' worth,
/// with what a batch costs once (the system call, the copies) left out.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct KernelInsns {
    /// Packets of the shorter batch of each pair.
    pub iters: u32,
    /// The plugin's numbers of the regions that ran the program: (the
    /// batch of `iters`, the batch of twice as many), a round each.
    pub body_regions: Vec<(u64, u64)>,
    /// ... and of those that ran the empty loop (the harness's own share).
    pub loop_regions: Vec<(u64, u64)>,
    /// ... and, for an attached program, of those that ran its trigger with
    /// nothing attached (the attach mechanism is the empty program's less these).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bare_regions: Vec<(u64, u64)>,
    /// The JIT images while the program's regions ran: their info's
    /// addresses, and kallsyms' BPF trampolines.
    pub jit_symbols: Vec<(u64, String)>,
    /// ... while the empty loop's (or empty program's) ran, and, for an
    /// attached program, the trigger's alone: each read while its kind was
    /// loaded and attached (the empty loop may load after the program's
    /// regions; attaching makes and frees trampolines). Empty in records
    /// of before: `jit_symbols` then held them all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loop_jit_symbols: Vec<(u64, String)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bare_jit_symbols: Vec<(u64, String)>,
    /// Per packet, from the plugin's counts (None until the host attributed them).
    #[serde(default)]
    pub counts: Option<KernelCounts>,
}

/// Native instructions per packet: of each batch size the round with the
/// fewest (an interrupt only adds), their difference per packet, the empty
/// loop's taken off.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct KernelCounts {
    /// In the program's JIT images (the timed program and its tail calls).
    pub jit: f64,
    /// In kernel functions (helpers, map operations, the test run's loop).
    pub kernel: f64,
    /// The empty loop's own, per packet (JIT and kernel), already taken off.
    pub harness: f64,
    /// Each round's whole count of the longer batch, for how exactly it repeats.
    pub round_totals: Vec<u64>,
    /// Per function, per packet, the loop's share included, most first:
    /// `bpf_prog_<tag>_<name>` for a JIT image.
    pub symbols: Vec<(String, f64)>,
    /// An attached program's attach mechanism per event: the empty
    /// program's count less the trigger's alone (None for a test run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mechanism: Option<MechanismCounts>,
    /// The data accesses of the same instructions (None from a plugin that
    /// did not count them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryCounts>,
}

/// What entering an attached program costs per event, in native
/// instructions: the empty program's batch less the trigger's alone, by
/// function (the tracepoint's or kprobe's path, the trampoline, the empty
/// program's few instructions).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MechanismCounts {
    pub total: f64,
    /// Per function, most first (those below 0.005 left out).
    pub symbols: Vec<(String, f64)>,
}

/// Data accesses per packet, counted like the instructions (the longer
/// batch less the shorter, the empty loop's taken off), with the lines a
/// simulated cache missed: D1 32 KiB 8-way, LL 8 MiB 16-way, 64-byte lines,
/// both empty when a region starts (tcg-counter/src/cache.rs).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MemoryCounts {
    /// In the JIT images and kernel functions together.
    pub total: DataAccesses,
    /// The empty loop's own, already taken off.
    pub harness: DataAccesses,
    /// Per function, the loop's share included, most D1 misses first, then most accesses.
    pub symbols: Vec<(String, DataAccesses)>,
    /// How far `total` moved between the rounds of one boot (the highest
    /// round's less the lowest's, per packet): a value below it is within
    /// what the method resolves (documents from before it was recorded:
    /// zeros).
    #[serde(default)]
    pub resolution: DataAccesses,
}

/// Reads, writes and cache misses per packet.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct DataAccesses {
    pub reads: f64,
    pub writes: f64,
    /// Accesses that missed the level-1 data cache.
    pub d1_misses: f64,
    /// ... and the last-level cache too.
    pub ll_misses: f64,
}

impl DataAccesses {
    /// The four fields, in order.
    pub fn fields(&self) -> [f64; 4] {
        [self.reads, self.writes, self.d1_misses, self.ll_misses]
    }

    pub fn from_fields([reads, writes, d1_misses, ll_misses]: [f64; 4]) -> DataAccesses {
        DataAccesses { reads, writes, d1_misses, ll_misses }
    }

    /// Each field at least zero: a count is never negative, and a
    /// difference of two batches below zero is a count within the
    /// method's resolution.
    pub fn at_least_zero(&self) -> DataAccesses {
        DataAccesses::from_fields(self.fields().map(|v| v.max(0.0)))
    }
}

impl KernelCounts {
    pub fn total(&self) -> f64 {
        self.jit + self.kernel
    }
}
