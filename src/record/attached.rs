//! What a program attached on its real hook did under its trigger: the
//! events fired, its runs (the validation: a program that did not run, or
//! ran another number of times than the trigger calls for, is not timed),
//! the records it wrote to ring or perf buffers, and what the whole
//! object cost the workload that fired it (the trigger's slowdown).

use serde::{Deserialize, Serialize};

use crate::stats::Summary;

/// An attached program's events and runs, as validation counted them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttachedRun {
    /// Where it was attached, as a section names it.
    pub point: String,
    /// What entered it there ("tracepoint", "uprobe", "BPF trampoline", ...).
    pub mechanism: String,
    /// What one event is ("getppid()").
    pub trigger: String,
    #[serde(flatten)]
    pub counted: EventRuns,
    /// Ring and perf buffer records the object's buffers delivered while
    /// validating, and those the kernel dropped (a perf buffer's lost
    /// samples, a ring buffer's failed reservations are not seen).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records: Option<BufferRecords>,
    /// What the object cost the trigger: on the first program of each
    /// trigger (the whole object is attached for it, and detached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slowdown: Option<Slowdown>,
    /// A running tool's own cost (`bpfbench overhead`), on its first program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<ToolCost>,
}

impl AttachedRun {
    pub fn runs_per_event(&self) -> f64 {
        self.counted.runs as f64 / self.counted.events.max(1) as f64
    }
}

/// Events fired while validating, and the program's runs meanwhile, as
/// validation judges them (stored flat in the run).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EventRuns {
    pub events: u64,
    pub runs: u64,
    /// Runs per event the trigger calls for (None: at least one).
    pub expected_runs_per_event: Option<u32>,
}

/// Records read from the object's ring and perf buffers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BufferRecords {
    pub records: u64,
    pub lost: u64,
    /// The maps they came from.
    pub maps: Vec<String>,
}

/// The trigger's time per event with the object attached against without
/// it, in alternating phases on one CPU (ABBA), the statistics off: what
/// the workload pays, the attach mechanism included, which `bpf_stats`
/// cannot see.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slowdown {
    /// The programs attached during the attached phases (the whole object's).
    pub programs: Vec<String>,
    /// How the phases were made, in words ("30 pairs of 16170 events,
    /// alternating"; "4 rounds of opensnoop stopped and started again").
    pub phases: String,
    pub events_per_phase: u64,
    /// ns per event of each phase, attached and detached, in order.
    pub attached_ns: Vec<f64>,
    pub detached_ns: Vec<f64>,
    /// Each pair's attached less detached ns per event (a pair: adjacent
    /// phases, alternating which goes first).
    pub differences: Summary,
    /// The detached phases: the trigger's own ns per event.
    pub detached: Summary,
    /// How many pairs, those at the CPU's fastest speed level, the two
    /// summaries are of; None: all (and in runs stored before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairs_kept: Option<usize>,
    /// The median difference of each thread's kept pairs, when threads
    /// took turns firing the trigger (the attach path's cost moves with
    /// the firing thread); empty: one thread (a running tool's slowdown,
    /// runs stored before).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_thread_ns: Vec<f64>,
}

impl Slowdown {
    /// The median slowdown, ns per event.
    pub fn ns_per_event(&self) -> f64 {
        self.differences.median
    }
}

/// What a running tool itself cost per event (`bpfbench overhead`): its
/// own CPU time, on whatever CPU it ran (the programs' is in their rows,
/// the attach mechanism's in the slowdown).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCost {
    pub command: String,
    /// CPU time of the tool's threads per event, user and system.
    pub cpu_ns_per_event: f64,
    /// Lines the tool printed per event (a tracing tool prints one per event it reports).
    pub lines_per_event: f64,
}
