//! Rendering results for people (tables) and machines (JSON).

pub mod model;
pub mod table;

use anyhow::Result;

use model::RunReport;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
}

pub fn render(report: &RunReport, format: Format, verbose: bool) -> Result<String> {
    Ok(match format {
        Format::Table => table::render_run(report, verbose),
        Format::Json => serde_json::to_string_pretty(report)? + "\n",
    })
}
