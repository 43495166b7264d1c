//! Rendering records for people (tables) and machines (JSON, exports).
//! Everything here reads records; nothing measures or loads.

pub mod ab_table;
pub mod compare_table;
pub mod export;
pub mod gen_table;
pub mod insns_table;
pub mod live_plot;
pub mod live_table;
pub mod op_lines;
pub mod runtime_table;
pub mod table;
pub mod verifier_table;

use anyhow::Result;

use crate::record::{Layout, RunRecord};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Tables for people.
    Table,
    /// The full run (schema bpfbench.run/N).
    Json,
    /// Bencher Metric Format: latency and throughput with CI bounds.
    Bmf,
    /// Go benchmark lines, one per sample, for benchstat.
    Gobench,
    /// One row per scenario with summary statistics.
    Csv,
}

pub fn render(run: &RunRecord, format: Format, verbose: bool) -> Result<String> {
    Ok(match format {
        Format::Table
            if run.results.iter().any(|r| r.instructions.is_some())
                && run.results.iter().all(|r| r.measurement.is_none()) =>
        {
            insns_table::render_run(run, verbose)
        }
        Format::Table if !run.results.is_empty() && run.results.iter().all(|r| r.facts.layout == Layout::OpLines) => {
            op_lines::render_run(run, verbose)
        }
        Format::Table => table::render_run(run, verbose),
        Format::Bmf => serde_json::to_string_pretty(&export::bmf(run))? + "\n",
        Format::Gobench => export::gobench(run),
        Format::Csv => export::csv(run)?,
        Format::Json => serde_json::to_string_pretty(run)? + "\n",
    })
}
