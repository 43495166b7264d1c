//! A kernel matrix (`bpfbench vm`): one run record per kernel, each as that
//! kernel's bpfbench wrote it, with where it ran (`environment.guest`).

use serde::{Deserialize, Serialize};

use super::RunRecord;

pub const MATRIX_SCHEMA: &str = "bpfbench.matrix/1";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MatrixRecord {
    pub schema: String,
    /// One column per kernel, in the order they were asked for.
    pub columns: Vec<MatrixColumn>,
    /// Ctrl-C ended it; `columns` holds the kernels that were run.
    #[serde(default)]
    pub interrupted: bool,
}

impl MatrixRecord {
    /// 130 when interrupted, 1 when a kernel gave no run or a scenario of
    /// one failed, else 0.
    pub fn exit_code(&self) -> u8 {
        let failed = |c: &MatrixColumn| match &c.run {
            Some(run) => c.error.is_some() || run.results.iter().any(|r| r.failed()),
            None => true,
        };
        if self.interrupted {
            130
        } else if self.columns.iter().any(failed) {
            1
        } else {
            0
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MatrixColumn {
    /// The kernel as the command line named it (`bookworm`, a path, `host`).
    pub kernel: String,
    /// The run, or None where the guest did not produce one.
    pub run: Option<RunRecord>,
    /// Why there is no run (the guest did not boot, timed out, ...).
    pub error: Option<String>,
    /// The run's id in the history, where it was stored.
    pub stored_as: Option<i64>,
}

impl MatrixColumn {
    /// The column's heading: the kernel's release, marked when emulated.
    pub fn heading(&self) -> String {
        match &self.run {
            Some(r) if r.environment.emulated() => format!("{}*", r.environment.kernel),
            Some(r) if r.environment.guest.is_none() => format!("{} (host)", r.environment.kernel),
            Some(r) => r.environment.kernel.clone(),
            None => self.kernel.clone(),
        }
    }
}
