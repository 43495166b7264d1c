//! Rendering results for people (tables) and machines (JSON).

pub mod environment;
pub mod export;
pub mod map_table;
pub mod model;
pub mod table;

use anyhow::Result;

use model::RunReport;

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

pub fn render(report: &RunReport, format: Format, verbose: bool) -> Result<String> {
    Ok(match format {
        Format::Table if report.results.iter().all(|r| r.params.contains_key("map")) && !report.results.is_empty() => {
            map_table::render_map_run(report, verbose)
        }
        Format::Table => table::render_run(report, verbose),
        Format::Bmf => serde_json::to_string_pretty(&export::bmf(report))? + "\n",
        Format::Gobench => export::gobench(report),
        Format::Csv => export::csv(report)?,
        Format::Json => serde_json::to_string_pretty(report)? + "\n",
    })
}
