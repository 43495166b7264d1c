//! The history store: every run in an embedded SQLite database.
//!
//! A run is stored as its full JSON document (what `show` and `compare` read
//! back) plus one row per benchmark with its median (what `history` lists),
//! in one transaction: a run killed mid-write leaves nothing half-stored.
//! WAL mode and a busy timeout let concurrent runs store side by side.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use rusqlite::{Connection, OptionalExtension, params};

use crate::record::live::{LiveRecord, parse_live};
use crate::record::paired::PairedRecord;
use crate::record::{RunRecord, parse_run};

/// Which history database (`--db`).
#[derive(Debug, clap::Args, Clone, Default)]
pub struct DbOption {
    /// History database (default: $XDG_DATA_HOME/bpfbench/history.sqlite or ~/.local/share/...).
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

impl DbOption {
    /// The database given, or the default one.
    pub fn path(&self) -> PathBuf {
        self.db.clone().unwrap_or_else(default_path)
    }
}

/// Where a result goes: `run`, `ab` and `live` store theirs in the history.
#[derive(Debug, clap::Args, Clone)]
pub struct StoreOptions {
    /// Name the result in the history (e.g. a branch or commit).
    #[arg(long)]
    pub tag: Option<String>,
    /// Do not store the result in the history.
    #[arg(long)]
    pub no_store: bool,
    #[command(flatten)]
    pub db: DbOption,
}

/// How many of a tag's newest runs a comparison reads.
#[derive(Debug, clap::Args, Clone)]
pub struct TagRuns {
    /// A tag stands for up to this many of its newest runs.
    #[arg(long, default_value_t = 10, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub tag_runs: u64,
}

/// Version of the tables below; a database from a newer bpfbench is refused.
/// Version 2 added the `paired` table (paired comparisons, `bpfbench ab`),
/// version 3 the `live` table (`bpfbench live`).
pub const DB_SCHEMA_VERSION: i64 = 3;

pub struct History {
    conn: Connection,
    path: PathBuf,
}

/// One stored run, as `history` lists it.
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub id: i64,
    pub tag: Option<String>,
    pub started_at: u64,
    pub git_commit: String,
    pub kernel: String,
    pub benchmarks: usize,
    /// The scenario asked for, if the run measured it: median, its 95% CI, samples.
    pub median_ns: Option<f64>,
    pub ci95_ns: Option<(f64, f64)>,
    pub samples: Option<usize>,
}

/// `$XDG_DATA_HOME/bpfbench/history.sqlite`, else `~/.local/share/...`.
pub fn default_path() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("bpfbench").join("history.sqlite")
}

const TABLES: &str = "
    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        tag TEXT,
        started_at INTEGER NOT NULL,
        git_commit TEXT NOT NULL,
        kernel TEXT NOT NULL,
        cpu_model TEXT NOT NULL,
        report_json TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS results (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        benchmark TEXT NOT NULL,
        median_ns REAL,
        ci_low_ns REAL,
        ci_high_ns REAL,
        samples INTEGER,
        -- kernel tag of the timed program: equal tags mean identical BPF code
        program_tag TEXT,
        PRIMARY KEY (run_id, benchmark)
    );
    CREATE INDEX IF NOT EXISTS runs_by_tag ON runs(tag);
    CREATE TABLE IF NOT EXISTS paired (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        tag TEXT,
        started_at INTEGER NOT NULL,
        a TEXT NOT NULL,
        b TEXT NOT NULL,
        kernel TEXT NOT NULL,
        cpu_model TEXT NOT NULL,
        record_json TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS live (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        tag TEXT,
        started_at INTEGER NOT NULL,
        program TEXT NOT NULL,
        kernel TEXT NOT NULL,
        cpu_model TEXT NOT NULL,
        record_json TEXT NOT NULL
    );
";

impl History {
    /// Opens (creating if needed) the database at `path`.
    pub fn open(path: &Path) -> Result<History> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let conn =
            Connection::open(path).with_context(|| format!("opening the history database {}", path.display()))?;
        conn.busy_timeout(Duration::from_secs(30))?;
        let not_db = |e: rusqlite::Error| {
            anyhow::anyhow!("{} is not a bpfbench history database ({e}); choose another --db", path.display())
        };
        conn.pragma_update(None, "journal_mode", "WAL").map_err(not_db)?;
        let h = History { conn, path: path.to_path_buf() };
        h.migrate()?;
        Ok(h)
    }

    fn migrate(&self) -> Result<()> {
        let found: Option<String> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0))
            .optional()
            .or_else(|e| match e {
                // A fresh database has no meta table yet.
                rusqlite::Error::SqliteFailure(_, Some(ref m)) if m.starts_with("no such table") => Ok(None),
                e => Err(e),
            })
            .with_context(|| format!("reading the schema of {}", self.path.display()))?;
        match found.map(|v| v.parse::<i64>()) {
            Some(Ok(v)) if v > DB_SCHEMA_VERSION => bail!(
                "{} was written by a newer bpfbench (history schema {v}, this one knows {DB_SCHEMA_VERSION}); upgrade bpfbench or use --db with another path",
                self.path.display()
            ),
            Some(Ok(v)) if v < DB_SCHEMA_VERSION => {
                // Every change so far only added tables.
                self.conn.execute_batch(&format!(
                    "BEGIN IMMEDIATE; {TABLES} UPDATE meta SET value = '{DB_SCHEMA_VERSION}' WHERE key = 'schema_version'; COMMIT;"
                ))?;
                Ok(())
            }
            Some(Ok(_)) => Ok(()),
            Some(Err(_)) => {
                bail!("{} has an unreadable schema version; use --db with another path", self.path.display())
            }
            None => {
                self.conn.execute_batch(&format!(
                    "BEGIN IMMEDIATE; {TABLES} INSERT OR IGNORE INTO meta VALUES ('schema_version', '{DB_SCHEMA_VERSION}'); COMMIT;"
                ))?;
                Ok(())
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stores a run; returns its id.
    pub fn store(&mut self, report: &RunRecord) -> Result<i64> {
        let json = serde_json::to_string(report)?;
        let tx = self.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO runs (tag, started_at, git_commit, kernel, cpu_model, report_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                report.tag,
                report.environment.started_at as i64,
                report.environment.git_commit,
                report.environment.kernel,
                report.environment.cpu_model,
                json
            ],
        )?;
        let id = tx.last_insert_rowid();
        {
            let mut ins =
                tx.prepare("INSERT OR REPLACE INTO results (run_id, benchmark, median_ns, ci_low_ns, ci_high_ns, samples, program_tag) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")?;
            for r in &report.results {
                let s = r.measurement.as_ref().map(|m| &m.summary);
                ins.execute(params![
                    id,
                    r.benchmark_name(),
                    s.map(|s| s.median),
                    s.map(|s| s.median_ci95.0),
                    s.map(|s| s.median_ci95.1),
                    s.map(|s| s.n as i64),
                    r.program.as_ref().map(|p| p.tag.clone())
                ])?;
            }
        }
        tx.commit().with_context(|| format!("storing the run in {}", self.path.display()))?;
        Ok(id)
    }

    /// The run with this id.
    pub fn load(&self, id: i64) -> Result<RunRecord> {
        let json: String = self
            .conn
            .query_row("SELECT report_json FROM runs WHERE id = ?1", [id], |r| r.get(0))
            .optional()?
            .with_context(|| format!("no run {id} in {}; see 'bpfbench history'", self.path.display()))?;
        parse_run(&json).with_context(|| format!("run {id} in {}", self.path.display()))
    }

    /// Up to `limit` runs with this tag, newest first.
    pub fn runs_with_tag(&self, tag: &str, limit: usize) -> Result<Vec<i64>> {
        let mut q = self.conn.prepare("SELECT id FROM runs WHERE tag = ?1 ORDER BY id DESC LIMIT ?2")?;
        let rows = q.query_map(params![tag, limit as i64], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Runs, newest first, with the median of `benchmark` where given.
    pub fn list(&self, benchmark: Option<&str>, limit: usize) -> Result<Vec<RunSummary>> {
        let mut q = self.conn.prepare(
            "SELECT r.id, r.tag, r.started_at, r.git_commit, r.kernel,
                    (SELECT count(*) FROM results x WHERE x.run_id = r.id),
                    x.median_ns, x.ci_low_ns, x.ci_high_ns, x.samples
             FROM runs r LEFT JOIN results x ON x.run_id = r.id AND x.benchmark = ?1
             ORDER BY r.id DESC LIMIT ?2",
        )?;
        let rows = q.query_map(params![benchmark.unwrap_or(""), limit as i64], |r| {
            Ok(RunSummary {
                id: r.get(0)?,
                tag: r.get(1)?,
                started_at: r.get::<_, i64>(2)? as u64,
                git_commit: r.get(3)?,
                kernel: r.get(4)?,
                benchmarks: r.get::<_, i64>(5)? as usize,
                median_ns: r.get(6)?,
                ci95_ns: match (r.get::<_, Option<f64>>(7)?, r.get::<_, Option<f64>>(8)?) {
                    (Some(lo), Some(hi)) => Some((lo, hi)),
                    _ => None,
                },
                samples: r.get::<_, Option<i64>>(9)?.map(|n| n as usize),
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// How much the median of `benchmark` varies between stored runs of
    /// identical code (same program tag) on the same kernel and CPU model:
    /// the noise a single run's own samples cannot show. Returns the
    /// coefficient of variation of those medians and how many runs it rests on.
    pub fn run_to_run_noise(
        &self,
        benchmark: &str,
        program_tag: &str,
        kernel: &str,
        cpu_model: &str,
    ) -> Result<Option<(f64, usize)>> {
        let mut q = self.conn.prepare(
            "SELECT x.median_ns FROM results x JOIN runs r ON r.id = x.run_id
             WHERE x.benchmark = ?1 AND x.program_tag = ?2 AND r.kernel = ?3 AND r.cpu_model = ?4 AND x.median_ns IS NOT NULL",
        )?;
        let medians: Vec<f64> = q
            .query_map(params![benchmark, program_tag, kernel, cpu_model], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(crate::stats::two_sample::spread_of_medians(&medians).map(|cv| (cv, medians.len())))
    }

    /// Stores a paired comparison; returns its id.
    pub fn store_paired(&mut self, rec: &PairedRecord) -> Result<i64> {
        let env = &rec.environment;
        self.conn
            .execute(
                "INSERT INTO paired (tag, started_at, a, b, kernel, cpu_model, record_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![rec.tag, env.started_at as i64, rec.a, rec.b, env.kernel, env.cpu_model, serde_json::to_string(rec)?],
            )
            .with_context(|| format!("storing the comparison in {}", self.path.display()))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// The paired comparison with this id.
    pub fn load_paired(&self, id: i64) -> Result<PairedRecord> {
        self.load_record("paired", id, "paired comparison", "--ab", |t| Ok(serde_json::from_str(t)?))
    }

    /// Paired comparisons, newest first: (id, record).
    pub fn list_paired(&self, limit: usize) -> Result<Vec<(i64, PairedRecord)>> {
        self.list_records("paired", limit, "paired comparison", |t| Ok(serde_json::from_str(t)?))
    }

    /// Stores a live run; returns its id.
    pub fn store_live(&mut self, rec: &LiveRecord) -> Result<i64> {
        let env = &rec.environment;
        self.conn
            .execute(
                "INSERT INTO live (tag, started_at, program, kernel, cpu_model, record_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![rec.tag, env.started_at as i64, rec.program, env.kernel, env.cpu_model, serde_json::to_string(rec)?],
            )
            .with_context(|| format!("storing the live run in {}", self.path.display()))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// The live run with this id.
    pub fn load_live(&self, id: i64) -> Result<LiveRecord> {
        self.load_record("live", id, "live run", "--live", parse_live)
    }

    /// Live runs, newest first: (id, record).
    pub fn list_live(&self, limit: usize) -> Result<Vec<(i64, LiveRecord)>> {
        self.list_records("live", limit, "live run", parse_live)
    }

    /// The record stored as JSON in row `id` of `table` (a `what`, which
    /// `bpfbench history FLAG` lists), read by `parse` (which reads older
    /// versions of its schema too).
    fn load_record<T>(&self, table: &str, id: i64, what: &str, flag: &str, parse: fn(&str) -> Result<T>) -> Result<T> {
        let json: String = self
            .conn
            .query_row(&format!("SELECT record_json FROM {table} WHERE id = ?1"), [id], |r| r.get(0))
            .optional()?
            .with_context(|| format!("no {what} {id} in {}; see 'bpfbench history {flag}'", self.path.display()))?;
        parse(&json).with_context(|| format!("{what} {id} in {}", self.path.display()))
    }

    /// The newest `limit` records of `table`: (id, record).
    fn list_records<T>(
        &self,
        table: &str,
        limit: usize,
        what: &str,
        parse: fn(&str) -> Result<T>,
    ) -> Result<Vec<(i64, T)>> {
        let mut q = self.conn.prepare(&format!("SELECT id, record_json FROM {table} ORDER BY id DESC LIMIT ?1"))?;
        let rows = q.query_map([limit as i64], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?;
        let mut out = Vec::new();
        for row in rows {
            let (id, json) = row?;
            out.push((id, parse(&json).with_context(|| format!("{what} {id}"))?));
        }
        Ok(out)
    }

    /// Benchmark names that match `pattern` exactly or by scenario name.
    pub fn benchmarks_named(&self, pattern: &str) -> Result<Vec<String>> {
        let mut q = self.conn.prepare("SELECT DISTINCT benchmark FROM results WHERE benchmark = ?1 OR benchmark LIKE '%/' || ?1 ORDER BY benchmark")?;
        let rows = q.query_map([pattern], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

/// Runs named on the command line, newest first, and how to call them: a
/// JSON file or a run id (one run), or a tag (up to `tag_runs` of its
/// newest runs) in the database at `db`.
pub fn resolve_runs(spec: &str, db: &Path, tag_runs: usize) -> Result<(Vec<RunRecord>, String)> {
    let path = Path::new(spec);
    if path.is_file() {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {spec}"))?;
        let record = parse_run(&text).with_context(|| format!("{spec} cannot be compared"))?;
        return Ok((vec![record], spec.to_string()));
    }
    if !db.exists() {
        bail!("'{spec}' is not a file, and there is no history database at {} to look it up in", db.display());
    }
    let h = History::open(db)?;
    if let Ok(id) = spec.parse::<i64>() {
        return Ok((vec![h.load(id)?], format!("run {id}")));
    }
    let ids = h.runs_with_tag(spec, tag_runs)?;
    if ids.is_empty() {
        bail!("'{spec}' is not a file, a run id or a tag in {}; see 'bpfbench history'", db.display());
    }
    let label = match ids.as_slice() {
        [one] => format!("run {one} (tag {spec})"),
        many => format!("tag {spec}: {} runs, {}..{}", many.len(), many[many.len() - 1], many[0]),
    };
    let runs = ids.iter().map(|&id| h.load(id)).collect::<Result<Vec<_>>>()?;
    Ok((runs, label))
}
