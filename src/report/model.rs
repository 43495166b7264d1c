//! The results data model: what a run measured, serialised as JSON.
//! Later layers (history, comparison, exports) read this, not the harness.

use serde::{Deserialize, Serialize};

pub use super::environment::Environment;
use crate::stats::Summary;

/// Schema name and version; `parse_report` accepts this version and older.
pub const SCHEMA_NAME: &str = "bpfbench.run";
pub const SCHEMA_VERSION: u32 = 2;

pub fn schema() -> String {
    format!("{SCHEMA_NAME}/{SCHEMA_VERSION}")
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    /// "bpfbench.run/N".
    pub schema: String,
    /// The name given with --tag.
    #[serde(default)]
    pub tag: Option<String>,
    pub environment: Environment,
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
    /// The program that was timed, as the kernel loaded it.
    #[serde(default)]
    pub program: Option<ProgramRecord>,
    pub measurement: Option<Measurement>,
}

impl ScenarioRecord {
    /// The name benchmarks are matched and exported by: "workload/scenario".
    pub fn benchmark_name(&self) -> String {
        format!("{}/{}", self.workload, self.name)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProgramRecord {
    pub name: String,
    /// The kernel's tag (hash of the program's instructions), hex.
    pub tag: String,
    pub xlated_bytes: u32,
    pub jited_bytes: u32,
}

/// Why a JSON document is not a run this bpfbench can read.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("not valid JSON ({0})")]
    Json(serde_json::Error),
    #[error("not a bpfbench result: no \"schema\" field naming {SCHEMA_NAME}/N")]
    Foreign,
    #[error("written by a newer bpfbench (schema {0}; this one reads up to {SCHEMA_NAME}/{SCHEMA_VERSION}); upgrade bpfbench")]
    Newer(String),
    #[error("schema {0} is too old for this bpfbench (it reads {SCHEMA_NAME}/{SCHEMA_VERSION}); re-run the benchmark")]
    Older(String),
    #[error("a {SCHEMA_NAME}/{SCHEMA_VERSION} document with a missing or malformed field ({0})")]
    Malformed(serde_json::Error),
}

/// Reads a run from JSON, naming what is wrong when it is not one.
pub fn parse_report(text: &str) -> Result<RunReport, ReportError> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(ReportError::Json)?;
    let schema = value.get("schema").and_then(|s| s.as_str()).ok_or(ReportError::Foreign)?;
    let version = schema
        .strip_prefix(SCHEMA_NAME)
        .and_then(|v| v.strip_prefix('/'))
        .and_then(|v| v.parse::<u32>().ok())
        .ok_or(ReportError::Foreign)?;
    if version > SCHEMA_VERSION {
        return Err(ReportError::Newer(schema.to_string()));
    }
    if version < SCHEMA_VERSION {
        return Err(ReportError::Older(schema.to_string()));
    }
    serde_json::from_value(value).map_err(ReportError::Malformed)
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
