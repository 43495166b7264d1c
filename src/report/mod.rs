//! Rendering results for people (tables) and machines (JSON).

pub mod map_table;
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
        Format::Table if report.results.iter().all(|r| r.params.contains_key("map")) && !report.results.is_empty() => {
            map_table::render_map_run(report, verbose)
        }
        Format::Table => table::render_run(report, verbose),
        Format::Json => serde_json::to_string_pretty(report)? + "\n",
    })
}
