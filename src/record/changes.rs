//! The change points `bpfbench changes` found in stored history: per
//! benchmark and testbed, where its per-run medians shifted, by how much,
//! and what else changed at that point.

use serde::{Deserialize, Serialize};

use super::RunStamp;

pub const CHANGES_SCHEMA: &str = "bpfbench.changes/1";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChangesRecord {
    pub schema: String,
    /// Which runs were read ("all runs", "testbed ci-large, kernel 6.1").
    pub selection: String,
    /// How changes were found, and at what significance.
    pub method: String,
    pub alpha: f64,
    pub min_segment: usize,
    /// Every series read, with or without changes.
    pub series: Vec<Series>,
}

/// One benchmark's per-run medians on one testbed, oldest first.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Series {
    pub benchmark: String,
    /// The testbed's name ("-" for runs stored before testbeds).
    pub testbed: String,
    /// The guest the runs ran in (`bpfbench vm`); None: on the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest: Option<String>,
    pub points: Vec<Point>,
    pub changes: Vec<Change>,
}

/// One run's result in a series.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Point {
    #[serde(flatten)]
    pub stamp: RunStamp,
    pub median_ns: f64,
    /// The run's own 95 % interval of its median.
    pub ci95_ns: Option<(f64, f64)>,
}

/// A shift: the series differs from run `after.run` on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Change {
    /// Index into the series' points of the first run after the change.
    pub index: usize,
    /// The last run before and the first run after.
    pub before: Point,
    pub after: Point,
    /// Medians of the per-run medians of the segments on either side
    /// (from the previous change, to the next).
    pub median_before: f64,
    pub median_after: f64,
    /// Runs in those segments.
    pub runs_before: usize,
    pub runs_after: usize,
    /// How much the runs' medians spread within each segment: the standard
    /// deviation of their logarithms (about the CV); None under 3 runs.
    #[serde(default)]
    pub spread_before: Option<f64>,
    #[serde(default)]
    pub spread_after: Option<f64>,
    /// median_after / median_before.
    pub ratio: f64,
    /// The permutation test's p-value for the split.
    pub p_value: f64,
    /// What differs between the two runs besides the code's speed: commit,
    /// kernel, CPU, JIT, the program's tag.
    pub environment_changes: Vec<String>,
    /// Paired comparisons (`bpfbench ab`) of this benchmark stored between
    /// the two runs: the precise measure of the step, where one was made.
    pub paired: Vec<PairedEvidence>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PairedEvidence {
    pub id: i64,
    pub a: String,
    pub b: String,
    pub ratio: f64,
    pub ratio_ci95: (f64, f64),
    /// What the interval rests on: fresh loads of both builds, and pairs of batches in all.
    pub rounds: usize,
    pub pairs: usize,
    pub verdict: String,
}

impl Series {
    /// "lab-1", or "lab-1, in an emulated (TCG) guest of IMAGE".
    pub fn place(&self) -> String {
        match &self.guest {
            Some(g) => format!("{}, in {g}", self.testbed),
            None => self.testbed.clone(),
        }
    }
}

impl ChangesRecord {
    pub fn change_count(&self) -> usize {
        self.series.iter().map(|s| s.changes.len()).sum()
    }
}
