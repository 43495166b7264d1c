//! The metrics a scenario is measured by, each described once: its name on
//! the command line and in records, where it can be measured and how two
//! figures of it are compared. The command line's help, the checks
//! of where a metric runs and the comparisons read this table.

use serde::{Deserialize, Serialize};

use super::Runtime;

/// What a scenario is measured by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Metric {
    /// ns per operation, timed in batches.
    #[default]
    Time,
    /// BPF instructions executed per packet, counted by the userspace
    /// runtime's interpreter: the same on every run and every machine.
    Insns,
    /// Native instructions the kernel executes per packet (the JIT image,
    /// the kernel functions it reaches), counted in a guest under QEMU's
    /// TCG by bpfbench's plugin (`vm --metric kernel-insns`).
    KernelInsns,
}

/// Where a metric's figures can be taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeasuredIn {
    /// In either runtime, on this machine or in a guest (a TCG guest's
    /// times are an emulator's, and say so).
    AnyRuntime,
    /// Only in bpfbench's userspace runtime, whose interpreter counts.
    UserspaceRuntime,
    /// Only in the kernel, in a guest under QEMU's TCG with bpfbench's
    /// counting plugin loaded (`bpfbench vm`).
    CountingGuest,
}

/// How two figures of a metric are told apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compared {
    /// Samples of a noisy quantity: medians with intervals, a verdict
    /// (faster, slower, same, uncertain) against the machine's noise.
    Statistically,
    /// Counts that repeat exactly run to run: their difference is the change.
    Exactly,
    /// Counts that repeat within a small spread (a guest's kernel work
    /// varies a little): a difference below a floor is the same.
    WithinAFloor,
}

/// One metric's description.
#[derive(Debug, Clone, Copy)]
pub struct MetricDef {
    pub metric: Metric,
    /// As `--metric` takes it and records name it.
    pub name: &'static str,
    /// What a figure is, for `--help`.
    pub help: &'static str,
    pub measured_in: MeasuredIn,
    pub compared: Compared,
}

/// Every metric, in `Metric`'s order.
pub const METRICS: [MetricDef; 3] = [
    MetricDef {
        metric: Metric::Time,
        name: "time",
        help: "ns per operation, timed in batches",
        measured_in: MeasuredIn::AnyRuntime,
        compared: Compared::Statistically,
    },
    MetricDef {
        metric: Metric::Insns,
        name: "insns",
        help: "BPF instructions executed per packet, counted by the userspace runtime's interpreter",
        measured_in: MeasuredIn::UserspaceRuntime,
        compared: Compared::Exactly,
    },
    MetricDef {
        metric: Metric::KernelInsns,
        name: "kernel-insns",
        help: "native instructions the kernel executes per packet (JIT image and kernel functions), counted in a guest under QEMU's TCG (bpfbench vm)",
        measured_in: MeasuredIn::CountingGuest,
        compared: Compared::WithinAFloor,
    },
];

impl Metric {
    pub const ALL: [Metric; 3] = [Metric::Time, Metric::Insns, Metric::KernelInsns];

    pub fn def(self) -> &'static MetricDef {
        &METRICS[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.def().name
    }

    /// The runtimes a figure of this metric can be taken in.
    pub fn runtimes(self) -> &'static [Runtime] {
        match self.def().measured_in {
            MeasuredIn::AnyRuntime => &[Runtime::Kernel, Runtime::User],
            MeasuredIn::UserspaceRuntime => &[Runtime::User],
            MeasuredIn::CountingGuest => &[Runtime::Kernel],
        }
    }

    /// Whether two runs are compared pair by pair in time (`ab`'s rounds),
    /// rather than run against run.
    pub fn sampled(self) -> bool {
        self.def().compared == Compared::Statistically
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_is_described_once_in_its_order() {
        for (i, m) in Metric::ALL.iter().enumerate() {
            assert_eq!(METRICS[i].metric, *m, "row {i}");
            assert_eq!(m.def().metric, *m);
            let by_serde = serde_json::to_value(m).unwrap();
            assert_eq!(by_serde, m.name(), "the record's name is the command line's");
        }
        let mut names: Vec<_> = METRICS.iter().map(|d| d.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), METRICS.len());
    }
}
