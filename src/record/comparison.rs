//! The record of a comparison between two runs (or sets of runs): one entry
//! per benchmark both measured, as `compare` decides it and reports render it.

use serde::{Deserialize, Serialize};

use crate::stats::two_sample::{Comparison, Verdict};

pub const COMPARISON_SCHEMA: &str = "bpfbench.compare/1";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ComparisonRecord {
    pub schema: String,
    /// How A and B were named on the command line ("run 3", "tag main", a file).
    pub a: String,
    pub b: String,
    /// Relative change below which a difference counts as noise.
    pub threshold: f64,
    pub benchmarks: Vec<BenchmarkComparison>,
    /// Geometric mean of the ratios B/A over the benchmarks compared.
    pub geomean_ratio: Option<f64>,
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
    /// Environment facts that differ between A and B ("kernel: x -> y").
    pub environment_changes: Vec<String>,
}

/// What the comparison of one benchmark rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Per-run medians, several runs a side: run-to-run shifts are in the data.
    Runs,
    /// The newest runs' samples, the interval widened by run-to-run noise.
    Samples,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Runs => "runs",
            Method::Samples => "samples",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchmarkComparison {
    pub benchmark: String,
    pub method: Method,
    /// Units compared on each side (runs or samples, per `method`).
    pub n_a: usize,
    pub n_b: usize,
    /// Stored runs the run-to-run noise estimate rests on (0: unknown).
    #[serde(default)]
    pub noise_runs: usize,
    #[serde(flatten)]
    pub result: Comparison,
}

impl ComparisonRecord {
    /// How many benchmarks got verdict `v`.
    pub fn count(&self, v: Verdict) -> usize {
        self.benchmarks.iter().filter(|b| b.result.verdict == v).count()
    }
}
