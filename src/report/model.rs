//! The results data model: what a run measured, serialised as JSON.
//! Later layers (history, comparison, exports) read this, not the harness.

use serde::{Deserialize, Serialize};

use crate::stats::Summary;

pub const SCHEMA: &str = "bpfbench.run/1";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    pub schema: String,
    pub bpfbench_version: String,
    pub kernel: String,
    pub cpu_model: String,
    /// The CPU every batch ran on.
    pub cpu: usize,
    /// Seconds since the Unix epoch when the run started.
    pub started_at: u64,
    pub options: RunOptionsRecord,
    pub results: Vec<ScenarioRecord>,
    /// Ctrl-C ended the run early; `results` holds what was finished.
    pub interrupted: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunOptionsRecord {
    pub samples: usize,
    pub batch_ms: f64,
    pub warmup_s: f64,
    pub max_scenario_s: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScenarioRecord {
    pub workload: String,
    pub name: String,
    pub group: String,
    pub description: String,
    /// The scenario's parameters (map type, entries, ...), as the workload names them.
    #[serde(default)]
    pub params: std::collections::BTreeMap<String, String>,
    /// Why the scenario could not run on this machine ("N/A"); not a failure.
    #[serde(default)]
    pub unavailable: Option<String>,
    /// Return code, output packet and counters all matched before timing.
    pub validated: bool,
    pub verdict: Option<String>,
    pub checks: Vec<String>,
    pub notes: Vec<String>,
    /// Why the scenario failed validation or measurement.
    pub error: Option<String>,
    pub measurement: Option<Measurement>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Measurement {
    /// Timed iterations per BPF_PROG_TEST_RUN invocation (+1 untimed for validation).
    pub batch_iters: u32,
    pub calibration: Calibration,
    /// One value per batch: elapsed ns / iterations, as measured inside BPF.
    pub samples_ns: Vec<f64>,
    pub summary: Summary,
    /// The loop's own cost, measured in the same run; never subtracted.
    pub overhead: Baseline,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Calibration {
    pub estimate_ns_per_op: f64,
    /// Time of a 2N batch over time of an N batch; 2.0 when cost is linear.
    pub proportionality_ratio: f64,
    pub proportional: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Baseline {
    pub key: String,
    pub batch_iters: u32,
    pub samples_ns: Vec<f64>,
    pub summary: Summary,
}
