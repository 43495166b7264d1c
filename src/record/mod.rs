//! The results model: what a run measured, as the runner fills it and as
//! reports, the history and comparisons read it. Serialised as JSON under a
//! versioned schema (see `schema`).

pub mod attached;
mod benchmark_id;
pub mod changes;
pub mod comparison;
mod error_line;
mod facts;
mod figure;
pub mod live;
pub mod matrix;
mod metric;
mod outcome;
pub mod page;
pub mod paired;
pub mod probes;
mod schema;
pub mod traffic;
pub mod verifier;

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use benchmark_id::BenchmarkId;
pub use comparison::{
    BenchmarkComparison, ComparisonRecord, Delta, InstructionDelta, KERNEL_INSNS_FLOOR, KERNEL_INSNS_SAME, Method,
};
pub use error_line::{NO_REASON, error_line};
pub use facts::{Layout, MapFacts, ScenarioFacts, Unit};
pub use figure::{
    Calibration, DataAccesses, Figure, InstructionCount, KernelCounts, KernelInsns, LineCount, Measurement,
    MechanismCounts, MemoryCounts, Noise, Overhead, SampledTime, TimeProfile,
};
pub use metric::{Compared, METRICS, MeasuredIn, Metric, MetricDef};
pub use outcome::{Expected, Outcome, PacketBytes};
pub use schema::{RecordError, SCHEMA_NAME, SCHEMA_VERSION, parse_run, schema};

/// One run: every scenario measured once, with the environment.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    /// "bpfbench.run/N".
    pub schema: String,
    /// The name given with --tag.
    #[serde(default)]
    pub tag: Option<String>,
    pub environment: Environment,
    /// How the scenarios were sampled.
    pub options: Sampling,
    pub results: Vec<ScenarioRecord>,
    /// Ctrl-C ended the run early; `results` holds what was finished.
    pub interrupted: bool,
}

/// Which stored run a row comes from, and what it ran: the history's
/// listings and a series' points name runs so.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStamp {
    /// The run's id in the history.
    pub run: i64,
    pub started_at: u64,
    pub git_commit: String,
    pub tag: Option<String>,
    pub kernel: String,
}

/// One stored run, as `history` lists it.
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub stamp: RunStamp,
    /// The testbed's name (None for runs from before testbeds).
    pub testbed: Option<String>,
    pub benchmarks: usize,
    /// The benchmark asked for, which this row's figures are of.
    pub benchmark: Option<String>,
    /// Its median, the median's 95% CI, and samples (None: not measured).
    pub median_ns: Option<f64>,
    pub ci95_ns: Option<(f64, f64)>,
    pub samples: Option<usize>,
}

/// How scenarios are sampled: the run options, as given on the command line
/// (session::options::SamplingArgs) and recorded with every run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sampling {
    /// Samples (timed batches) per scenario.
    pub samples: u64,
    /// Target duration of one batch, in milliseconds.
    pub batch_ms: f64,
    /// Warm-up per scenario, in seconds.
    pub warmup_s: f64,
    /// Stop sampling a scenario after this many seconds.
    pub max_scenario_s: f64,
    /// Sweeps over the selected scenarios (each scenario's samples taken in
    /// this many turns, interleaved with the other scenarios').
    #[serde(default = "one_sweep")]
    pub sweeps: u32,
}

/// Sweeps of a run unless told (see `measurements/reproducibility-targets.sh`).
pub const DEFAULT_SWEEPS: u32 = 10;

/// Runs stored before sweeps were recorded took each scenario's samples in one stretch.
fn one_sweep() -> u32 {
    1
}

/// A command-line value that must be a positive number.
pub fn positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("must be a positive number, got '{s}'")),
    }
}

/// The longest batch `--batch-ms` takes: one batch is one test run, with
/// the CPU held by the timing loop for its whole length.
pub const MAX_BATCH_MS: f64 = 1000.0;

/// A command-line value for `--batch-ms`: positive, at most [`MAX_BATCH_MS`].
pub fn batch_ms(s: &str) -> Result<f64, String> {
    match positive(s)? {
        v if v <= MAX_BATCH_MS => Ok(v),
        _ => Err(format!("must be at most {MAX_BATCH_MS} (one batch holds the CPU for its whole length), got '{s}'")),
    }
}

/// A command-line value that must be a number of at least 0.
pub fn non_negative(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("must be a number of at least 0, got '{s}'")),
    }
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling { samples: 200, batch_ms: 10.0, warmup_s: 0.1, max_scenario_s: 10.0, sweeps: DEFAULT_SWEEPS }
    }
}

impl Sampling {
    pub fn warmup(&self) -> Duration {
        Duration::from_secs_f64(self.warmup_s)
    }

    pub fn max_scenario_time(&self) -> Duration {
        Duration::from_secs_f64(self.max_scenario_s)
    }

    /// Sweeps a run takes: as asked, but no more than there are samples
    /// (a sweep with no sample to take would only set scenarios up again).
    pub fn effective_sweeps(&self) -> u32 {
        self.sweeps.clamp(1, u32::try_from(self.samples).unwrap_or(u32::MAX).max(1))
    }

    /// Samples of each overhead measurement: a quarter of the scenario's, at least 20.
    pub fn overhead_samples(&self) -> usize {
        (self.samples as usize / 4).max(20)
    }
}

/// Where and with what a run was measured, so a comparison can tell a code
/// change from a machine or kernel change.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Environment {
    pub bpfbench_version: String,
    /// `git describe`-style commit of the bpfbench build ("unknown" outside a checkout).
    pub git_commit: String,
    /// clang that compiled the BPF programs, as `--version` prints its first line.
    pub clang_version: String,
    /// Extra BPF compile flags of this build (e.g. -DLB_EXTRA_WORK=4).
    #[serde(default)]
    pub bpf_cflags: String,
    pub kernel: String,
    pub cpu_model: String,
    pub host: String,
    /// net.core.bpf_jit_enable / bpf_jit_harden / bpf_jit_kallsyms, as read.
    pub jit: JitSettings,
    /// The CPU every batch ran on.
    pub cpu: usize,
    /// Seconds since the Unix epoch when the run started.
    pub started_at: u64,
    /// 1-, 5- and 15-minute load averages at the start.
    pub loadavg: [f64; 3],
    /// Share of CPU time stolen by the hypervisor while the run went on
    /// (None where /proc/stat has no steal column).
    pub steal_percent: Option<f64>,
    /// Share of the run's CPU's time that other tasks used while the run
    /// went on: its busy time less bpfbench's own (None in runs from
    /// before it was kept, or where too little time passed to tell).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others_percent: Option<f64>,
    /// What the kernel accepted when probed (absent in runs from before probing).
    #[serde(default)]
    pub features: Option<KernelFeatures>,
    /// The guest `bpfbench vm` booted for this run; None on the host itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest: Option<Guest>,
    /// The machine the run ran on (absent in runs from before testbeds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub testbed: Option<Testbed>,
}

/// The machine a result came from, as a history that many machines share
/// selects it: a stable id, and a name people read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Testbed {
    /// Derived from $BPFBENCH_TESTBED where set (machines that share a name
    /// are one testbed, e.g. a pool of identical CI runners), else from
    /// /etc/machine-id; hashed, never the machine id itself.
    pub id: String,
    /// $BPFBENCH_TESTBED, else the host name.
    pub name: String,
}

/// A guest kernel a run ran in (`bpfbench vm`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Guest {
    /// The kernel image booted.
    pub image: String,
    /// The guest kernel's command line, as /proc/cmdline gave it.
    pub cmdline: String,
    /// "kvm", or "tcg": QEMU's emulator.
    pub accelerator: String,
}

impl Guest {
    /// The command line less what virtme-ng itself puts there: what the
    /// kernel and the user (`--append`) add.
    pub fn own_cmdline(&self) -> String {
        const VIRTME: [&str; 8] =
            ["virtme", "nr_open=", "console=", "earlyprintk=", "quiet", "loglevel=", "panic=", "init="];
        let own: Vec<&str> =
            self.cmdline.split_whitespace().filter(|w| !VIRTME.iter().any(|v| w.starts_with(v))).collect();
        if own.is_empty() { "(virtme-ng's only)".into() } else { own.join(" ") }
    }

    /// Times taken under emulation are QEMU's, not the hardware's;
    /// validation, verifier and JIT figures and instruction counts stay exact.
    pub fn emulated(&self) -> bool {
        self.accelerator == "tcg"
    }
}

impl Environment {
    /// Whether this run's times are an emulator's.
    pub fn emulated(&self) -> bool {
        self.guest.as_ref().is_some_and(Guest::emulated)
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct JitSettings {
    pub enable: Option<i64>,
    pub harden: Option<i64>,
    pub kallsyms: Option<i64>,
}

/// One scenario of a run: what it is, whether it validated, what it measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScenarioRecord {
    pub workload: String,
    pub name: String,
    pub group: String,
    pub description: String,
    /// What the scenario is, in the terms reports need.
    pub facts: ScenarioFacts,
    /// How its samples were timed.
    #[serde(default)]
    pub timing: Timing,
    /// Why the scenario could not run on this machine ("N/A"); not a failure.
    #[serde(default)]
    pub unavailable: Option<String>,
    /// Return code, output packet and counters all matched before timing.
    pub validated: bool,
    pub verdict: Option<String>,
    /// Packet sizes in and out, and what the user expected (own objects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    pub checks: Vec<String>,
    pub notes: Vec<String>,
    /// Why the scenario failed validation or measurement.
    pub error: Option<String>,
    /// The program that was timed, as the kernel loaded it.
    #[serde(default)]
    pub program: Option<ProgramRecord>,
    /// Where the program ran: the kernel, or bpfbench's userspace runtime.
    #[serde(default)]
    pub runtime: Runtime,
    /// What it measured, in the run's metric; None where it was not
    /// measured (unavailable, failed, or stopped before it was).
    #[serde(default)]
    pub figure: Option<Figure>,
    /// Attached programs: the events, runs and buffer records validation
    /// counted, and the trigger's slowdown (None for test-run programs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attached: Option<attached::AttachedRun>,
}

/// Where a scenario's program runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Runtime {
    /// BPF_PROG_TEST_RUN: the kernel's JIT.
    #[default]
    Kernel,
    /// bpfbench's userspace runtime (src/uvm), the same instructions.
    User,
}

impl Runtime {
    /// Appended to benchmark names: kernel and userspace figures never compare.
    pub fn suffix(self) -> &'static str {
        match self {
            Runtime::Kernel => "",
            Runtime::User => "@user",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Runtime::Kernel => "kernel",
            Runtime::User => "userspace",
        }
    }

    /// The runtime a word names ("kernel", "user"; any case).
    pub fn from_name(word: &str) -> Option<Runtime> {
        match word.to_ascii_lowercase().as_str() {
            "kernel" => Some(Runtime::Kernel),
            "user" => Some(Runtime::User),
            _ => None,
        }
    }
}

impl ScenarioRecord {
    /// What its figures are of: they compare with another record's only
    /// when the identities are equal.
    pub fn id(&self) -> BenchmarkId {
        BenchmarkId::of(self)
    }

    /// The identity's text, as the history stores it and exports name it.
    pub fn benchmark_name(&self) -> String {
        self.id().to_string()
    }

    /// Neither measured nor counted (in either runtime) nor excused as unavailable.
    pub fn failed(&self) -> bool {
        let measured = match &self.figure {
            // In the guest, regions recorded are a result: the host counts
            // them (and says so in `error` where it cannot).
            Some(Figure::KernelInsns(k)) => k.counts.is_some() || (!k.body_regions.is_empty() && self.error.is_none()),
            Some(_) => true,
            None => false,
        };
        !measured && self.unavailable.is_none()
    }

    /// Its time, when it was timed.
    pub fn measurement(&self) -> Option<&Measurement> {
        match &self.figure {
            Some(Figure::Time(m)) => Some(m),
            _ => None,
        }
    }

    /// Its userspace runtime's count, when it was counted there.
    pub fn instructions(&self) -> Option<&InstructionCount> {
        match &self.figure {
            Some(Figure::Insns(c)) => Some(c),
            _ => None,
        }
    }

    /// Its kernel instructions, when it was counted in a guest.
    pub fn kernel_insns(&self) -> Option<&KernelInsns> {
        match &self.figure {
            Some(Figure::KernelInsns(k)) => Some(k),
            _ => None,
        }
    }

    /// The metric it was measured by, when it was.
    pub fn metric(&self) -> Option<Metric> {
        self.figure.as_ref().map(Figure::metric)
    }
}

/// The loop construct an in-BPF batch ran in: may_goto (6.9) where the
/// kernel has it, else bpf_loop (5.17), else a bounded loop the verifier
/// walks (5.3; batches of at most 256 iterations).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoopConstruct {
    #[default]
    MayGoto,
    BpfLoop,
    Bounded,
}

impl LoopConstruct {
    pub const ALL: [LoopConstruct; 3] = [LoopConstruct::MayGoto, LoopConstruct::BpfLoop, LoopConstruct::Bounded];

    pub fn as_str(self) -> &'static str {
        match self {
            LoopConstruct::MayGoto => "may-goto",
            LoopConstruct::BpfLoop => "bpf-loop",
            LoopConstruct::Bounded => "bounded",
        }
    }

    /// The suffix of a timed program's name in bpfbench's objects
    /// (`xdp_lb`, `xdp_lb_bpf_loop`, `xdp_lb_bounded`).
    pub fn program_suffix(self) -> &'static str {
        match self {
            LoopConstruct::MayGoto => "",
            LoopConstruct::BpfLoop => "_bpf_loop",
            LoopConstruct::Bounded => "_bounded",
        }
    }
}

/// Where the timed body sits in the batch loop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Body {
    /// A BPF-to-BPF call per iteration (a return: ~9 ns on CPUs with return thunks).
    #[default]
    Call,
    /// The body's instructions in the loop itself, its exits jumps back.
    Inline,
}

impl Body {
    pub fn as_str(self) -> &'static str {
        match self {
            Body::Call => "call",
            Body::Inline => "inline",
        }
    }
}

/// How a scenario's samples were timed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "kebab-case")]
pub enum Timing {
    /// Inside BPF: the batch loop runs the program once per iteration.
    InBpf {
        /// The loop construct (documents from before it was recorded: may_goto).
        #[serde(default, rename = "loop")]
        construct: LoopConstruct,
        /// Called from the loop, or inline in it (documents from before it
        /// was recorded: called).
        #[serde(default)]
        body: Body,
        /// Why the body was called where inline was asked for or possible.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        why_called: Option<String>,
    },
    /// Inside BPF, for a program that makes tail calls: the batch loop
    /// enters the chain by a tail call each iteration and gets its verdict
    /// back when its last program exits; a test run holds `per_run` timed
    /// iterations, within the tail calls the kernel allows a run (33 since
    /// 5.17, 32 before).
    Chain {
        /// Tail calls one pass makes, the loop's own included (0: not
        /// counted, the kernel counting per call of the loop's subprogram).
        tail_calls: u32,
        per_run: u32,
    },
    /// One BPF_PROG_TEST_RUN per packet, timed by the kernel around the
    /// program alone; slower than in-BPF figures by the test run's own cost,
    /// used when the program cannot be spliced into the batch loop.
    PerCall {
        /// Why the batch loop could not be used.
        reason: String,
        /// Timed by the host around each test run's system call, because
        /// the kernel reports no time for the program's type (raw
        /// tracepoint, syscall): the system call is in the figure.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        host_timed: bool,
    },
    /// By tracing programs, fentry/fexit on a kernel function the operation
    /// runs (maps' `free`: bpf_map_free_deferred); no loop is involved.
    Traced {
        /// The traced kernel function.
        function: String,
    },
    /// Attached on its hook and fired by a trigger, its runs timed by the
    /// kernel's run-time statistics (`bpf_stats`: run_time_ns over
    /// run_cnt, read before and after each batch of events).
    BpfStats {
        /// The attach point, as a section names it ("tp/syscalls/sys_enter_getppid").
        point: String,
        /// What one event of the trigger is ("getppid()").
        trigger: String,
    },
}

impl Default for Timing {
    fn default() -> Self {
        Timing::MAY_GOTO
    }
}

impl Timing {
    /// In BPF with the may_goto loop: every figure stored before modes were recorded.
    pub const MAY_GOTO: Timing = Timing::in_bpf(LoopConstruct::MayGoto);

    /// In BPF with `construct`, the body called.
    pub const fn in_bpf(construct: LoopConstruct) -> Timing {
        Timing::InBpf { construct, body: Body::Call, why_called: None }
    }

    /// The loop construct, when timed in BPF.
    pub fn construct(&self) -> Option<LoopConstruct> {
        match self {
            Timing::InBpf { construct, .. } => Some(*construct),
            _ => None,
        }
    }

    /// Whether the body ran inline in the loop.
    pub fn inline(&self) -> bool {
        matches!(self, Timing::InBpf { body: Body::Inline, .. })
    }

    /// Appended to benchmark names: results of different timing never
    /// compare as one benchmark (may_goto's called figures keep their
    /// names; an inline body's figure leaves out a call's cost, so it is
    /// its own benchmark).
    pub fn suffix(&self) -> &'static str {
        self.names().0
    }

    /// A short label for tables ("in BPF", "bpf_loop", "per call").
    pub fn label(&self) -> &'static str {
        self.names().1
    }

    /// Each timing's (suffix, label), in one table.
    fn names(&self) -> (&'static str, &'static str) {
        match self {
            Timing::InBpf { construct: LoopConstruct::MayGoto, body: Body::Call, .. } => ("", "in BPF"),
            Timing::InBpf { construct: LoopConstruct::MayGoto, body: Body::Inline, .. } => {
                ("@inline", "in BPF, inline")
            }
            Timing::InBpf { construct: LoopConstruct::BpfLoop, .. } => ("@bpf-loop", "bpf_loop"),
            Timing::InBpf { construct: LoopConstruct::Bounded, .. } => ("@bounded", "bounded loop"),
            Timing::Chain { .. } => ("@chain", "in BPF, chain"),
            Timing::PerCall { host_timed: true, .. } => ("@per-call-host", "per call, host-timed"),
            Timing::PerCall { .. } => ("@per-call", "per call"),
            // The same figure on any kernel that allows the probe: no suffix.
            Timing::Traced { .. } => ("", "fentry/fexit"),
            Timing::BpfStats { .. } => ("@bpf-stats", "attached, bpf_stats"),
        }
    }

    /// The mode's name as `--timing-mode` takes it.
    pub fn mode_name(&self) -> &'static str {
        match self {
            Timing::InBpf { construct, .. } => construct.as_str(),
            Timing::Chain { .. } => "chain",
            Timing::PerCall { .. } => "per-call",
            Timing::Traced { .. } => "traced",
            Timing::BpfStats { .. } => "bpf-stats",
        }
    }
}

/// What the running kernel accepted when bpfbench probed it, each by
/// loading (or running) the smallest program that needs the feature.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelFeatures {
    /// may_goto loops (6.9).
    pub may_goto: bool,
    /// The bpf_loop helper (5.17).
    pub bpf_loop: bool,
    /// Bounded loops (5.3).
    pub bounded_loops: bool,
    /// A global subprogram that changes packet data (bpf_xdp_adjust_head).
    pub global_subprog_changes_packet: bool,
    /// BPF_PROG_TEST_RUN with live frames (5.18): `gen` and `live`.
    pub xdp_live_frames: bool,
    /// BPF_ENABLE_STATS (5.8): `live`'s ns/packet.
    pub bpf_stats: bool,
    /// The kernel's own BTF (/sys/kernel/btf/vmlinux).
    pub btf: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProgramRecord {
    pub name: String,
    /// The kernel's tag (hash of the program's instructions), hex.
    pub tag: String,
    #[serde(flatten)]
    pub size: ProgramSize,
    /// What the verifier reported when it loaded the program, where known.
    #[serde(default)]
    pub verifier: Option<VerifierStats>,
}

/// A loaded program's size: its instructions as the verifier left them,
/// and its native code (stored flat where it is kept).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct ProgramSize {
    pub xlated_bytes: u32,
    pub jited_bytes: u32,
}

/// The verifier's statistics for one program (its log at level
/// BPF_LOG_STATS, and bpf_prog_info); None where the kernel did not say.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct VerifierStats {
    /// Instructions the verifier processed (its complexity, limit 1M).
    pub processed_insns: Option<u64>,
    pub total_states: Option<u64>,
    pub peak_states: Option<u64>,
    pub max_states_per_insn: Option<u64>,
    /// Stack bytes of each function, main first ("stack depth 64+0").
    pub stack_depth: Option<Vec<u32>>,
    pub verification_time_us: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scenario as a guest's run records it under `--metric kernel-insns`:
    /// regions, no counts yet.
    fn counted_in_a_guest() -> ScenarioRecord {
        serde_json::from_value(serde_json::json!({
            "workload": "spec", "name": "base/tx", "group": "base", "description": "",
            "facts": {"layout": "table", "producers": 1, "unit": "op", "map": null},
            "timing": {"mode": "in-bpf", "loop": "may-goto", "body": "inline"},
            "validated": true, "checks": [], "notes": [], "runtime": "kernel",
            "figure": {"metric": "kernel-insns", "iters": 1000, "body_regions": [[1, 2]], "loop_regions": [[3, 4]], "jit_symbols": [], "counts": null}
        }))
        .unwrap()
    }

    #[test]
    fn regions_a_guest_recorded_are_a_result_until_the_host_cannot_count_them() {
        let mut r = counted_in_a_guest();
        assert!(!r.failed(), "the guest's run does not call it failed");
        r.error = Some("counting kernel instructions failed: no region 2".into());
        assert!(r.failed());
        r.error = None;
        let Some(Figure::KernelInsns(k)) = r.figure.as_mut() else { panic!("{:?}", r.figure) };
        k.body_regions.clear();
        assert!(r.failed(), "nothing recorded");
    }
}
