//! Rendering records for people (tables) and machines (JSON, exports).
//! Everything here reads records; nothing measures or loads.

pub mod attached_table;
pub mod changes_table;
pub mod columns;
pub mod compare_table;
pub mod export;
pub mod features_table;
pub mod fuzz_table;
pub mod gen_table;
pub mod grid;
pub mod history_table;
pub mod html;
pub mod insns_table;
pub mod live_plot;
pub mod live_table;
pub mod loops_table;
pub mod matrix_table;
pub mod op_lines;
pub mod paired_table;
pub mod runtime_table;
pub mod table;
pub mod verifier_table;

use anyhow::{Result, bail};
use serde::Serialize;

use crate::record::changes::ChangesRecord;
use crate::record::live::LiveRecord;
use crate::record::matrix::MatrixRecord;
use crate::record::paired::PairedRecord;
use crate::record::traffic::GenRecord;
use crate::record::verifier::VerifierReport;
use crate::record::{ComparisonRecord, Layout, RunRecord};
use crate::stats::two_sample::Verdict;

/// Every form bpfbench writes its records in; each record says which of
/// them it has ([`Rendered::FORMATS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Tables for people.
    Table,
    /// The whole record (its schema is named in it: bpfbench.run/N, ...).
    Json,
    /// Bencher Metric Format: latency and throughput with CI bounds.
    Bmf,
    /// Go benchmark lines, one per sample, for benchstat.
    Gobench,
    /// Rows with summary statistics.
    Csv,
    /// A Markdown table a pull request comment can hold, with the verdicts
    /// and what they rest on.
    Markdown,
}

impl Format {
    /// As `--format` takes it.
    fn name(self) -> String {
        use clap::ValueEnum;
        self.to_possible_value().map(|v| v.get_name().to_string()).unwrap_or_default()
    }
}

/// A record bpfbench writes out in the forms it has.
pub trait Rendered: Serialize {
    /// What it is called in an error ("a live run").
    const NAME: &'static str;
    /// The forms it has; JSON is always one of them.
    const FORMATS: &'static [Format];
    /// The record in `format`: every form named, those it lacks by
    /// [`not_written_as`] (JSON is [`json`]).
    fn render_form(&self, format: Format) -> Result<String>;
}

/// The one line naming the forms `R` has, for a `format` it lacks.
pub fn not_written_as<R: Rendered>(format: Format) -> anyhow::Error {
    let forms: Vec<String> = R::FORMATS.iter().map(|f| f.name()).collect();
    anyhow::anyhow!("--format {}: {} is written as {}", format.name(), R::NAME, forms.join(", "))
}

/// Fails with one line naming the forms `R` has unless `format` is one;
/// commands check before they start, so no run ends in this error.
pub fn check_format<R: Rendered>(format: Format) -> Result<()> {
    if !R::FORMATS.contains(&format) {
        return Err(not_written_as::<R>(format));
    }
    Ok(())
}

/// Any record as JSON (its schema named in it).
pub fn json<R: Serialize>(record: &R) -> Result<String> {
    Ok(serde_json::to_string_pretty(record)? + "\n")
}

/// `rows` as CSV, a heading line of their fields first (nothing for none).
pub fn csv_of<T: Serialize>(rows: impl IntoIterator<Item = T>) -> Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows {
        w.serialize(r)?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// `record` in `format`, or one line naming the forms it has.
pub fn render_as<R: Rendered>(record: &R, format: Format) -> Result<String> {
    check_format::<R>(format)?;
    record.render_form(format)
}

/// The forms of a record written as a table, JSON or CSV.
const TABLE_JSON_CSV: &[Format] = &[Format::Table, Format::Json, Format::Csv];

/// `record` in one of [`TABLE_JSON_CSV`]'s forms, by its table and CSV writers.
fn table_json_or_csv<R: Rendered>(
    record: &R,
    format: Format,
    table: fn(&R) -> String,
    csv: fn(&R) -> Result<String>,
) -> Result<String> {
    match format {
        Format::Table => Ok(table(record)),
        Format::Csv => csv(record),
        Format::Json => json(record),
        Format::Bmf | Format::Gobench | Format::Markdown => Err(not_written_as::<R>(format)),
    }
}

impl Rendered for PairedRecord {
    const NAME: &'static str = "a paired comparison";
    const FORMATS: &'static [Format] = &[Format::Table, Format::Json, Format::Csv, Format::Bmf, Format::Markdown];
    fn render_form(&self, format: Format) -> Result<String> {
        Ok(match format {
            Format::Csv => paired_table::csv(self)?,
            Format::Markdown => paired_table::markdown(self),
            Format::Bmf => json(&paired_table::bmf(self))?,
            Format::Json => json(self)?,
            Format::Table => paired_table::table(self),
            Format::Gobench => return Err(not_written_as::<Self>(format)),
        })
    }
}

/// "1 slower, 0 faster, 2 same, 0 uncertain", from a record's count of each verdict.
pub(crate) fn verdict_counts(count: impl Fn(Verdict) -> usize) -> String {
    format!(
        "{} slower, {} faster, {} same, {} uncertain",
        count(Verdict::Slower),
        count(Verdict::Faster),
        count(Verdict::Same),
        count(Verdict::Uncertain)
    )
}

/// The geometric mean's row under [`columns::ratio_fields`].
pub(crate) fn geomean_cells(g: f64) -> Vec<String> {
    vec!["geomean".into(), String::new(), String::new(), format!("{g:.4}"), format!("({:+.2}%)", (g - 1.0) * 100.0)]
}

/// A verdict's cell: bold in Markdown, where a reader's eye looks for it.
pub(crate) fn verdict_cell(v: Verdict, markdown: bool) -> String {
    if markdown { format!("**{}**", v.as_str()) } else { v.as_str().to_string() }
}

/// Text for a Markdown table cell: a cell holds no `|` or line break of its own.
pub(crate) fn markdown_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

impl Rendered for ChangesRecord {
    const NAME: &'static str = "a list of change points";
    const FORMATS: &'static [Format] = &[Format::Table, Format::Json, Format::Markdown];
    fn render_form(&self, format: Format) -> Result<String> {
        Ok(match format {
            Format::Markdown => changes_table::markdown(self),
            Format::Table => changes_table::render(self),
            Format::Json => json(self)?,
            Format::Bmf | Format::Gobench | Format::Csv => return Err(not_written_as::<Self>(format)),
        })
    }
}

impl Rendered for ComparisonRecord {
    const NAME: &'static str = "a run-against-run comparison";
    const FORMATS: &'static [Format] = &[Format::Table, Format::Json, Format::Csv, Format::Markdown];
    fn render_form(&self, format: Format) -> Result<String> {
        Ok(match format {
            Format::Markdown => compare_table::markdown(self),
            Format::Csv => compare_table::csv(self)?,
            Format::Table => compare_table::render(self),
            Format::Json => json(self)?,
            Format::Bmf | Format::Gobench => return Err(not_written_as::<Self>(format)),
        })
    }
}

/// The records written as a table, JSON or CSV alone: each its name in an
/// error, and its table and CSV writers.
macro_rules! rendered_as_table_json_or_csv {
    ($($record:ty: $name:literal, $table:path, $csv:path;)*) => {$(
        impl Rendered for $record {
            const NAME: &'static str = $name;
            const FORMATS: &'static [Format] = TABLE_JSON_CSV;
            fn render_form(&self, format: Format) -> Result<String> {
                table_json_or_csv(self, format, $table, $csv)
            }
        }
    )*};
}

rendered_as_table_json_or_csv! {
    MatrixRecord: "a kernel matrix", matrix_table::table, matrix_table::csv;
    LiveRecord: "a live run", live_table::render, live_table::csv;
    GenRecord: "a gen run", gen_table::summary, gen_table::csv;
    VerifierReport: "a verifier report", verifier_table::render, verifier_table::csv;
}

/// Fails with one line unless a run can be written as `format`; `run` and
/// `show` check before they start.
pub fn check_run_format(format: Format) -> Result<()> {
    if format == Format::Markdown {
        bail!(
            "--format markdown: a run is written as table, json, bmf, gobench or csv; markdown is for 'ab' (a pull request's table)"
        );
    }
    Ok(())
}

pub fn render(run: &RunRecord, format: Format, verbose: bool) -> Result<String> {
    check_run_format(format)?;
    Ok(match format {
        Format::Markdown => unreachable!("refused above"),
        Format::Table
            if run.results.iter().any(|r| r.instructions().is_some())
                && run.results.iter().all(|r| r.measurement().is_none()) =>
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
        Format::Json => json(run)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each record's `FORMATS` and its `render_form` agree: every format is
    /// either listed and rendered, or refused by `not_written_as`, never
    /// both or neither (read from this file, as the layers test reads the tree).
    #[test]
    fn each_record_lists_the_formats_it_renders() {
        use clap::ValueEnum;
        let all: Vec<String> = Format::value_variants().iter().map(|f| format!("Format::{f:?}")).collect();
        let source = include_str!("mod.rs");
        let mut blocks: Vec<&str> = source.split("\nimpl Rendered for ").skip(1).collect();
        assert!(blocks.len() >= 3, "only {} records read", blocks.len());
        // The records of tables, JSON and CSV (the macro's) list the shared
        // forms and refuse the others in the shared renderer.
        let shared_records = source.split("rendered_as_table_json_or_csv! {\n").nth(1).unwrap();
        let shared_records = &shared_records[..shared_records.find("\n}").unwrap()];
        assert!(shared_records.lines().count() >= 4, "the macro's records were not read");
        blocks.extend(shared_records.lines().map(str::trim));
        let shared_forms = source.split("const TABLE_JSON_CSV: &[Format] = &[").nth(1).unwrap();
        let shared_forms = &shared_forms[..shared_forms.find(']').unwrap()];
        let shared_refusal = source.lines().find(|l| l.contains("=> Err(not_written_as::<R>(format))")).unwrap();
        for block in blocks {
            let shared = !block.contains('{');
            let name = block.split([' ', ':']).next().unwrap();
            let block = if shared { block } else { &block[..block.find("\n}\n").unwrap()] };
            let listed = match shared {
                true => shared_forms,
                false => {
                    let l = block.split("const FORMATS: &'static [Format] = &[").nth(1).unwrap();
                    &l[..l.find(']').unwrap()]
                }
            };
            let listed: Vec<&str> = listed.split(", ").collect();
            let refused = match shared {
                true => shared_refusal,
                false => block.lines().find(|l| l.contains("not_written_as::<Self>(format)")).unwrap_or(""),
            };
            let refused: Vec<&str> = refused.split("=>").next().unwrap().split('|').map(str::trim).collect();
            for f in &all {
                let (l, r) = (listed.contains(&f.as_str()), refused.contains(&f.as_str()));
                assert!(
                    l != r,
                    "{name}: {f} is {}",
                    if l { "listed and refused" } else { "neither listed nor refused" }
                );
            }
            assert!(listed.contains(&"Format::Json"), "{name}: JSON is always one of the forms");
        }
    }
}
