//! What the HTML report shows, read from a history: plain records that
//! `compare::page::gather` fills and `report::html` renders.

use super::RunRecord;
use super::changes::ChangesRecord;
use super::live::LiveRecord;
use super::paired::PairedRecord;

/// What the report shows, read from the history.
pub struct PageContents {
    /// Where it was read from, and which runs.
    pub source: String,
    pub selection: String,
    /// The newest run.
    pub latest: Option<(i64, RunRecord)>,
    /// The newest run on each kernel, newest kernel first (with the latest's
    /// benchmarks, a matrix).
    pub kernels: Vec<(i64, RunRecord)>,
    pub paired: Vec<(i64, PairedRecord)>,
    /// Live runs with a sweep, newest first.
    pub live: Vec<(i64, LiveRecord)>,
    pub changes: ChangesRecord,
}
