//! The regression decision, shared by `run --compare-to`, `compare` and `ab`:
//! which benchmarks are confidently slower than allowed, and whether a
//! re-measurement confirms them.

use anyhow::Result;

use crate::record::paired::{PairedCase, PairedRecord};
use crate::record::{BenchmarkComparison, ComparisonRecord, InstructionDelta, Metric};
use crate::stats::two_sample::Verdict;

/// The comparison settings a user gives: noise threshold and failure limit.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct Gate {
    /// Changes smaller than this many percent count as noise.
    #[arg(long = "threshold", value_name = "PCT", default_value_t = 2.0, value_parser = percentage)]
    pub threshold_pct: f64,
    /// Exit with status 1 when any benchmark is confidently slower by more than PCT percent.
    #[arg(long, value_name = "PCT", value_parser = percentage)]
    pub fail_on_regression: Option<f64>,
}

fn percentage(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("must be a percentage of at least 0, got '{s}'")),
    }
}

impl Default for Gate {
    fn default() -> Self {
        Gate { threshold_pct: 2.0, fail_on_regression: None }
    }
}

/// What the gate decided.
#[derive(Debug, Clone, Default)]
pub struct GateDecision {
    /// The comparisons of each re-measurement, in order.
    pub confirmations: Vec<ComparisonRecord>,
    /// Suspects a re-measurement did not confirm: (benchmark, re-measurement number).
    pub cleared: Vec<(String, u32)>,
    /// Regressions every measurement confirmed, as the last one saw them.
    pub regressions: Vec<BenchmarkComparison>,
    /// Instruction counts that grew by more than allowed (exact: never re-measured).
    pub instruction_regressions: Vec<InstructionDelta>,
}

impl GateDecision {
    pub fn failed(&self) -> bool {
        !self.regressions.is_empty() || !self.instruction_regressions.is_empty()
    }
}

impl Gate {
    /// The noise threshold as a fraction.
    pub fn threshold(&self) -> f64 {
        self.threshold_pct / 100.0
    }

    /// Benchmarks confidently slower by more than --fail-on-regression: a
    /// significant difference, and the whole interval above 1 + PCT/100.
    pub fn regressions<'a>(&self, cmp: &'a ComparisonRecord) -> Vec<&'a BenchmarkComparison> {
        let Some(pct) = self.fail_on_regression else { return Vec::new() };
        cmp.times()
            .filter(|b| b.result.verdict == Verdict::Slower && b.result.ratio_ci95.0 > 1.0 + pct / 100.0)
            .collect()
    }

    /// Cases of a paired comparison (`ab`) confidently slower by more than
    /// --fail-on-regression percent: B slower, and the whole interval of
    /// B/A above 1 + PCT/100.
    pub fn paired_regressions<'a>(&self, record: &'a PairedRecord) -> Vec<&'a PairedCase> {
        let Some(pct) = self.fail_on_regression else { return Vec::new() };
        record.cases.iter().filter(|c| c.verdict == Verdict::Slower && c.ratio_ci95.0 > 1.0 + pct / 100.0).collect()
    }

    /// Instruction counts per packet that grew by more than
    /// --fail-on-regression percent (any growth at 0).
    pub fn instruction_regressions<'a>(&self, cmp: &'a ComparisonRecord) -> Vec<&'a InstructionDelta> {
        let Some(pct) = self.fail_on_regression else { return Vec::new() };
        cmp.counts(Metric::Insns).into_iter().filter(|d| d.b > d.a && d.ratio() > 1.0 + pct / 100.0).collect()
    }

    /// Decides on `first`. A whole run can land in a slow state of a shared
    /// machine; a real regression survives re-measuring, a bad run does not.
    /// So each suspect is re-measured up to `confirm` times
    /// (`remeasure(suspects, number)` returns the comparison of a fresh
    /// measurement of them), and only those every re-measurement confirms fail.
    pub fn decide(
        &self,
        first: &ComparisonRecord,
        confirm: u32,
        mut remeasure: impl FnMut(&[String], u32) -> Result<ComparisonRecord>,
    ) -> Result<GateDecision> {
        let mut decision = GateDecision {
            instruction_regressions: self.instruction_regressions(first).into_iter().cloned().collect(),
            ..Default::default()
        };
        let mut suspects: Vec<BenchmarkComparison> = self.regressions(first).into_iter().cloned().collect();
        for round in 1..=confirm {
            if suspects.is_empty() {
                break;
            }
            let names: Vec<String> = suspects.iter().map(|b| b.benchmark.clone()).collect();
            let cmp = remeasure(&names, round)?;
            let still: Vec<BenchmarkComparison> =
                self.regressions(&cmp).into_iter().filter(|b| names.contains(&b.benchmark)).cloned().collect();
            for gone in names.iter().filter(|n| !still.iter().any(|b| &b.benchmark == *n)) {
                decision.cleared.push((gone.clone(), round));
            }
            decision.confirmations.push(cmp);
            suspects = still;
        }
        decision.regressions = suspects;
        Ok(decision)
    }
}
