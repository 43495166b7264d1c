//! Where a command's result goes: `--format` and `--output`, the one group
//! of options every command that writes a record takes.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use crate::compare::{Gate, GateDecision};
use crate::record::paired::PairedRecord;
use crate::report::{Format, compare_table, paired_table};

#[derive(Debug, Clone, clap::Args)]
pub struct OutputArgs {
    /// How to write the result: a table, json for machines, csv, markdown
    /// for a pull request comment, bmf (Bencher) or gobench (benchstat); a
    /// form a command cannot write is refused in one line naming those it can.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the result to this file (whole or not at all) instead of standard output.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

impl OutputArgs {
    /// Writes `text` where the user asked.
    pub fn emit(&self, text: &str) -> Result<()> {
        emit(text, self.output.as_deref())
    }

    /// Whether the table goes to the terminal (progress lines may join it there).
    pub fn table_on_stdout(&self) -> bool {
        self.format == Format::Table && self.output.is_none()
    }
}

/// Writes `text` to `path` (whole or not at all), or to standard output.
pub fn emit(text: &str, path: Option<&Path>) -> Result<()> {
    let Some(p) = path else {
        print!("{text}");
        return Ok(());
    };
    // Written beside the target and renamed over it, so a reader never
    // sees half a file; errors name the file asked for.
    let dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !dir.is_dir() {
        bail!(
            "cannot write {}: the folder {} does not exist; create it or give another path",
            p.display(),
            dir.display()
        );
    }
    let tmp = p.with_extension("partial");
    let written = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, p));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        bail!("cannot write {}: {e}", p.display());
    }
    eprintln!("bpfbench: wrote {}", p.display());
    Ok(())
}

/// What the gate says of a comparison of runs against `against`: a line
/// per benchmark cleared on re-measurement and per regression it confirmed.
pub fn gate_lines(decision: &GateDecision, gate: &Gate, against: &str) -> Vec<String> {
    let limit = gate.fail_on_regression.unwrap_or(0.0);
    let cleared = decision
        .cleared
        .iter()
        .map(|(name, round)| format!("{name}: not slower on re-measurement {round}; counted as noise"));
    let slower = decision.regressions.iter().map(|b| compare_table::regression_line(b, against, limit));
    let counted =
        decision.instruction_regressions.iter().map(|d| compare_table::instruction_regression_line(d, against, limit));
    cleared.chain(slower).chain(counted).collect()
}

/// The cases of a paired comparison confidently slower than --fail-on-regression allows, a line each.
pub fn paired_gate_lines(record: &PairedRecord, gate: &Gate) -> Vec<String> {
    let limit = gate.fail_on_regression.unwrap_or_default();
    let mut lines: Vec<String> =
        gate.paired_regressions(record).iter().map(|c| paired_table::regression_line(c, limit)).collect();
    // A suite's test that B broke is a regression whatever its speed.
    if gate.fail_on_regression.is_some() {
        lines.extend(
            record
                .not_compared
                .iter()
                .filter(|n| n.fails_on_b_only)
                .map(|n| format!("regression: {}: {}", n.name, n.why)),
        );
    }
    lines
}
