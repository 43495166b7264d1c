//! The record of `bpfbench verifier`: what the kernel's verifier made of
//! each program of one or two objects.

use serde::{Deserialize, Serialize};

use super::{ProgramSize, VerifierStats};

pub const VERIFIER_SCHEMA: &str = "bpfbench.verifier/1";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VerifierReport {
    pub schema: String,
    /// One object, or two to compare (A then B).
    pub objects: Vec<ObjectVerification>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ObjectVerification {
    pub path: String,
    pub programs: Vec<ProgramVerification>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProgramVerification {
    pub name: String,
    pub section: String,
    /// The kernel's name of its type ("xdp", "sched_cls", ...).
    pub prog_type: String,
    /// The verifier accepted it.
    pub loaded: bool,
    /// Why the kernel refused it (the verifier's last line), when it did.
    pub error: Option<String>,
    /// The verifier's figures (also for a refusal, as far as it got).
    pub stats: VerifierStats,
    /// Where it loaded.
    #[serde(flatten)]
    pub size: Option<ProgramSize>,
}
