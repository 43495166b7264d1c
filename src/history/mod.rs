//! The history store: every run in a database, an embedded SQLite file by
//! default or a PostgreSQL server that many machines share.
//!
//! A run is stored as its full JSON document (what `show` and `compare` read
//! back) plus one row per benchmark with its median (what `history` lists),
//! in one transaction: a run killed mid-write leaves nothing half-stored.
//! Every row names the testbed (machine) it came from. SQLite runs in WAL
//! mode with a busy timeout so that concurrent runs store side by side.

pub mod location;
mod pgpass;
pub mod schema;
pub mod sql;

use std::cell::RefCell;
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};

use crate::record::changes::Point;
use crate::record::live::{LiveRecord, parse_live};
use crate::record::paired::PairedRecord;
use crate::record::{BenchmarkId, Environment, RunRecord, RunStamp, RunSummary, parse_run};
pub use location::{Location, default_path};
pub use schema::DB_SCHEMA_VERSION;
use schema::testbed_values;
use sql::{Connection, Row, Value};

/// Which history database (`--db`).
#[derive(Debug, clap::Args, Clone, Default)]
pub struct DbOption {
    /// History database: a file path (SQLite), or postgres://USER:PASSWORD@HOST:PORT/DATABASE to share one
    /// history between machines [default: $XDG_DATA_HOME/bpfbench/history.sqlite or ~/.local/share/...].
    #[arg(long, value_name = "PATH|URL", env = "BPFBENCH_DB")]
    pub db: Option<String>,
}

impl DbOption {
    /// The database given, or the default one. An empty value counts as
    /// none: a CI job that sets `BPFBENCH_DB` from a secret it lacks keeps
    /// its results in the default history (SQLite would otherwise open a
    /// temporary database for an empty path and keep nothing).
    pub fn location(&self) -> Location {
        self.db
            .as_deref()
            .filter(|db| !db.trim().is_empty())
            .map_or_else(|| Location::Sqlite(default_path()), Location::parse)
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

/// Which stored runs a listing reads: in a history many machines share,
/// results compare only on the same testbed, kernel and CPU.
#[derive(Debug, clap::Args, Clone, Default)]
pub struct RunFilter {
    /// Only runs from this testbed (its name or id; see $BPFBENCH_TESTBED).
    #[arg(long, value_name = "NAME|ID")]
    pub testbed: Option<String>,
    /// Only runs on kernels of this release or series (6.1 takes 6.1.0-28-amd64, not 6.18).
    #[arg(long, value_name = "RELEASE")]
    pub kernel: Option<String>,
    /// Only runs on CPUs whose model name contains this.
    #[arg(long, value_name = "TEXT")]
    pub cpu_model: Option<String>,
}

impl RunFilter {
    /// What the selection admits, in words: "on testbed X with kernel 6.12".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(t) = &self.testbed {
            parts.push(format!("on testbed {t}"));
        }
        if let Some(k) = &self.kernel {
            parts.push(format!("with kernel {k}"));
        }
        if let Some(c) = &self.cpu_model {
            parts.push(format!("on a CPU named like '{c}'"));
        }
        if parts.is_empty() { "at all".into() } else { parts.join(" ") }
    }

    /// The condition on a table aliased `r` (runs, paired or live: each has
    /// the testbed, kernel and CPU columns), with its parameters numbered
    /// from `$first`.
    fn condition(&self, first: usize) -> (String, Vec<Value>) {
        let (t, k, c) = (first, first + 1, first + 2);
        (
            format!(
                "(CAST(${t} AS TEXT) IS NULL OR r.testbed_id = ${t} OR r.testbed_name = ${t}) \
                 AND (CAST(${k} AS TEXT) IS NULL OR r.kernel = ${k} OR r.kernel LIKE ${k} || '.%' OR r.kernel LIKE ${k} || '-%') \
                 AND (CAST(${c} AS TEXT) IS NULL OR r.cpu_model LIKE '%' || ${c} || '%')"
            ),
            vec![self.testbed.clone().into(), self.kernel.clone().into(), self.cpu_model.clone().into()],
        )
    }
}

/// What one series of medians shares: the benchmark, the testbed (id ""
/// and name "-" for runs from before testbeds) and the guest it ran in
/// (None: the host).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SeriesKey {
    pub benchmark: String,
    pub testbed_id: String,
    pub testbed_name: String,
    pub guest: Option<String>,
}

pub struct History {
    conn: RefCell<Connection>,
    location: Location,
}

/// What `import_from` copied, and what the history held already.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Imported {
    pub runs: usize,
    pub paired: usize,
    pub live: usize,
    pub already: usize,
}

/// What a history holds, for the message when there is none yet.
#[derive(Debug, Clone, Copy)]
pub enum Stored {
    Runs,
    Paired,
    Live,
}

/// How a kind of stored record is spoken of.
struct StoredNames {
    /// One record.
    noun: &'static str,
    /// The flag of `history` and `show` that selects the kind.
    flag: &'static str,
    stored_by: &'static str,
}

impl Stored {
    /// The kind `history` and `show` mean: runs, or with `--ab` paired
    /// comparisons, or with `--live` live runs (the command line keeps the
    /// two flags apart).
    pub fn chosen(ab: bool, live: bool) -> Stored {
        match (ab, live) {
            (true, _) => Stored::Paired,
            (false, true) => Stored::Live,
            (false, false) => Stored::Runs,
        }
    }

    fn names(self) -> StoredNames {
        let (noun, flag, stored_by) = match self {
            Stored::Runs => ("run", "", "'bpfbench run' stores its runs"),
            Stored::Paired => ("paired comparison", " --ab", "'bpfbench ab' stores its comparisons"),
            Stored::Live => ("live run", " --live", "'bpfbench live' stores its runs"),
        };
        StoredNames { noun, flag, stored_by }
    }

    /// A record's id as the user gave it to `show`.
    pub fn parse_id(self, id: &str) -> Result<i64> {
        let StoredNames { noun, flag, .. } = self.names();
        id.parse().map_err(|_| anyhow!("'{id}' is not a {noun}'s id; 'bpfbench history{flag}' lists them"))
    }
}

impl History {
    /// Opens a history that must exist already: reading commands do not
    /// create an empty one where a user mistyped `--db`.
    pub fn open_existing(location: &Location, what: Stored) -> Result<History> {
        if !location.exists() {
            let by = what.names().stored_by;
            bail!("no history yet at {location}; {by} there unless --no-store is given");
        }
        History::open(location.clone())
    }

    /// Opens the database (creating an SQLite file if needed) and brings
    /// its tables to this bpfbench's version.
    pub fn open(location: impl Into<Location>) -> Result<History> {
        let location = location.into();
        let mut conn = Connection::open(&location)?;
        schema::migrate(&mut conn, &location)?;
        Ok(History { conn: RefCell::new(conn), location })
    }

    pub fn location(&self) -> &Location {
        &self.location
    }

    fn query(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>> {
        self.conn.borrow_mut().query(sql, params)
    }

    /// Stores a run; returns its id.
    pub fn store(&mut self, report: &RunRecord) -> Result<i64> {
        let json = serde_json::to_string(report)?;
        let env = &report.environment;
        let [testbed_id, testbed_name] = testbed_values(env.testbed.as_ref());
        let location = &self.location;
        self.conn
            .get_mut()
            .transaction(|c| {
                let id = c
                    .query(
                        "INSERT INTO runs (tag, started_at, git_commit, kernel, cpu_model, report_json, testbed_id, testbed_name, guest)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
                        &[
                            report.tag.clone().into(),
                            (env.started_at as i64).into(),
                            (&env.git_commit).into(),
                            (&env.kernel).into(),
                            (&env.cpu_model).into(),
                            json.into(),
                            testbed_id,
                            testbed_name,
                            env.guest.as_ref().map(guest_label).into(),
                        ],
                    )?[0]
                    .int(0)?;
                for r in &report.results {
                    let s = r.measurement().map(|m| &m.summary);
                    c.execute(
                        "INSERT INTO results (run_id, benchmark, median_ns, ci_low_ns, ci_high_ns, samples, program_tag)
                         VALUES ($1, $2, $3, $4, $5, $6, $7)
                         ON CONFLICT (run_id, benchmark) DO UPDATE SET median_ns = excluded.median_ns,
                             ci_low_ns = excluded.ci_low_ns, ci_high_ns = excluded.ci_high_ns,
                             samples = excluded.samples, program_tag = excluded.program_tag",
                        &[
                            id.into(),
                            r.benchmark_name().into(),
                            s.map(|s| s.median).into(),
                            s.map(|s| s.median_ci95.0).into(),
                            s.map(|s| s.median_ci95.1).into(),
                            s.map(|s| s.n as i64).into(),
                            r.program.as_ref().map(|p| p.tag.clone()).into(),
                        ],
                    )?;
                }
                Ok(id)
            })
            .with_context(|| format!("storing the run in {location}"))
    }

    /// The run with this id.
    pub fn load(&self, id: i64) -> Result<RunRecord> {
        let json = self
            .query("SELECT report_json FROM runs WHERE id = $1", &[id.into()])?
            .first()
            .map(|r| r.text(0))
            .transpose()?
            .with_context(|| format!("no run {id} in {}; see 'bpfbench history'", self.location))?;
        parse_run(&json).with_context(|| format!("run {id} in {}", self.location))
    }

    /// Up to `limit` runs with this tag, newest first.
    pub fn runs_with_tag(&self, tag: &str, limit: usize) -> Result<Vec<i64>> {
        self.runs_with_tag_in(tag, limit, &RunFilter::default())
    }

    /// Up to `limit` runs with this tag among those `selection` admits, newest first.
    pub fn runs_with_tag_in(&self, tag: &str, limit: usize, selection: &RunFilter) -> Result<Vec<i64>> {
        let (cond, mut params) = selection.condition(3);
        params.splice(0..0, [tag.into(), (limit as i64).into()]);
        let sql = format!("SELECT r.id FROM runs r WHERE r.tag = $1 AND {cond} ORDER BY r.id DESC LIMIT $2");
        self.query(&sql, &params)?.iter().map(|r| r.int(0)).collect()
    }

    /// Up to `limit` runs with this tag made on testbed `testbed_id` (or
    /// stored before testbeds: on this machine, then), newest first.
    pub fn runs_with_tag_on_testbed(&self, tag: &str, limit: usize, testbed_id: &str) -> Result<Vec<i64>> {
        self.query(
            "SELECT id FROM runs WHERE tag = $1 AND (testbed_id IS NULL OR testbed_id = $3) ORDER BY id DESC LIMIT $2",
            &[tag.into(), (limit as i64).into(), testbed_id.into()],
        )?
        .iter()
        .map(|r| r.int(0))
        .collect()
    }

    /// Runs, newest first; with `benchmarks`, a row per run and benchmark
    /// it measured, with its median.
    pub fn list(&self, benchmarks: &[String], limit: usize) -> Result<Vec<RunSummary>> {
        self.list_in(benchmarks, limit, &RunFilter::default())
    }

    /// Runs `selection` admits, newest first; with `benchmarks`, a row per
    /// run and benchmark it measured (runs that measured none are left out).
    pub fn list_in(&self, benchmarks: &[String], limit: usize, selection: &RunFilter) -> Result<Vec<RunSummary>> {
        let (cond, mut params) = selection.condition(2);
        params.insert(0, (limit as i64).into());
        let first = params.len() + 1;
        let listed: Vec<String> = (first..first + benchmarks.len()).map(|i| format!("${i}")).collect();
        params.extend(benchmarks.iter().map(|b| b.as_str().into()));
        // Without benchmarks the result columns are NULLs of their own types
        // (PostgreSQL types a bare NULL as text): a join that matches nothing.
        let (join, chosen) = match benchmarks {
            [] => ("LEFT JOIN results x ON 1 = 0".to_string(), String::new()),
            _ => (
                "JOIN results x ON x.run_id = r.id".to_string(),
                format!(" AND x.benchmark IN ({})", listed.join(", ")),
            ),
        };
        let sql = format!(
            "SELECT r.id, r.tag, r.started_at, r.git_commit, r.kernel, r.testbed_name,
                    (SELECT count(*) FROM results c WHERE c.run_id = r.id),
                    x.median_ns, x.ci_low_ns, x.ci_high_ns, x.samples, x.benchmark
             FROM runs r {join}
             WHERE {cond}{chosen}
             ORDER BY r.id DESC, x.benchmark LIMIT $1"
        );
        self.query(&sql, &params)?
            .iter()
            .map(|r| {
                Ok(RunSummary {
                    stamp: RunStamp {
                        run: r.int(0)?,
                        tag: r.opt_text(1)?,
                        started_at: r.int(2)? as u64,
                        git_commit: r.text(3)?,
                        kernel: r.text(4)?,
                    },
                    testbed: r.opt_text(5)?,
                    benchmarks: r.int(6)? as usize,
                    median_ns: r.opt_real(7)?,
                    ci95_ns: match (r.opt_real(8)?, r.opt_real(9)?) {
                        (Some(lo), Some(hi)) => Some((lo, hi)),
                        _ => None,
                    },
                    samples: r.opt_int(10)?.map(|n| n as usize),
                    benchmark: r.opt_text(11)?,
                })
            })
            .collect()
    }

    /// How much the median of `benchmark` varies between stored runs of
    /// identical code (same program tag) on the same kernel and CPU model
    /// (and testbed, where the run names one): the noise a single run's own
    /// samples cannot show. Returns the coefficient of variation of those
    /// medians and how many runs it rests on.
    pub fn run_to_run_noise(
        &self,
        benchmark: &str,
        program_tag: &str,
        kernel: &str,
        cpu_model: &str,
        testbed_id: Option<&str>,
    ) -> Result<Option<(f64, usize)>> {
        let medians: Vec<f64> = self
            .query(
                "SELECT x.median_ns FROM results x JOIN runs r ON r.id = x.run_id
                 WHERE x.benchmark = $1 AND x.program_tag = $2 AND r.kernel = $3 AND r.cpu_model = $4
                   AND (CAST($5 AS TEXT) IS NULL OR r.testbed_id = $5) AND x.median_ns IS NOT NULL",
                &[benchmark.into(), program_tag.into(), kernel.into(), cpu_model.into(), testbed_id.into()],
            )?
            .iter()
            .filter_map(|r| r.opt_real(0).transpose())
            .collect::<Result<_>>()?;
        Ok(crate::stats::two_sample::spread_of_medians(&medians).map(|cv| (cv, medians.len())))
    }

    /// Stores a paired comparison; returns its id.
    pub fn store_paired(&mut self, rec: &PairedRecord) -> Result<i64> {
        let json = serde_json::to_string(rec)?;
        let own = [("a", (&rec.a).into()), ("b", (&rec.b).into())];
        self.store_record("paired", rec.tag.as_ref(), &rec.environment, &own, json, "comparison")
    }

    /// The paired comparison with this id.
    pub fn load_paired(&self, id: i64) -> Result<PairedRecord> {
        self.load_record("paired", id, "paired comparison", "--ab", |t| Ok(serde_json::from_str(t)?))
    }

    /// Paired comparisons, newest first: (id, record).
    pub fn list_paired(&self, limit: usize) -> Result<Vec<(i64, PairedRecord)>> {
        self.list_paired_in(limit, &RunFilter::default())
    }

    /// The newest `limit` paired comparisons made where `selection` admits.
    pub fn list_paired_in(&self, limit: usize, selection: &RunFilter) -> Result<Vec<(i64, PairedRecord)>> {
        self.list_records("paired", limit, selection, "paired comparison", |t| Ok(serde_json::from_str(t)?))
    }

    /// Stores a live run; returns its id.
    pub fn store_live(&mut self, rec: &LiveRecord) -> Result<i64> {
        let json = serde_json::to_string(rec)?;
        let own = [("program", (&rec.program).into())];
        self.store_record("live", rec.tag.as_ref(), &rec.environment, &own, json, "live run")
    }

    /// Inserts a record of a table of whole records (paired, live): the
    /// columns every such table has, `own` (the table's own columns)
    /// between them; returns its id.
    fn store_record(
        &mut self,
        table: &str,
        tag: Option<&String>,
        env: &Environment,
        own: &[(&str, Value)],
        json: String,
        what: &str,
    ) -> Result<i64> {
        let [testbed_id, testbed_name] = testbed_values(env.testbed.as_ref());
        let mut columns = vec!["tag", "started_at"];
        let mut values: Vec<Value> = vec![tag.cloned().into(), (env.started_at as i64).into()];
        for (column, value) in own {
            columns.push(column);
            values.push(value.clone());
        }
        columns.extend(["kernel", "cpu_model", "record_json", "testbed_id", "testbed_name"]);
        values.extend([(&env.kernel).into(), (&env.cpu_model).into(), json.into(), testbed_id, testbed_name]);
        let places: Vec<String> = (1..=columns.len()).map(|i| format!("${i}")).collect();
        let sql = format!("INSERT INTO {table} ({}) VALUES ({}) RETURNING id", columns.join(", "), places.join(", "));
        self.insert_returning_id(&sql, &values, what)
    }

    /// The live run with this id.
    pub fn load_live(&self, id: i64) -> Result<LiveRecord> {
        self.load_record("live", id, "live run", "--live", parse_live)
    }

    /// Live runs, newest first: (id, record).
    pub fn list_live(&self, limit: usize) -> Result<Vec<(i64, LiveRecord)>> {
        self.list_live_in(limit, &RunFilter::default())
    }

    /// The newest `limit` live runs made where `selection` admits.
    pub fn list_live_in(&self, limit: usize, selection: &RunFilter) -> Result<Vec<(i64, LiveRecord)>> {
        self.list_records("live", limit, selection, "live run", parse_live)
    }

    /// Runs an `INSERT … RETURNING id` of one record (a `what`).
    fn insert_returning_id(&mut self, sql: &str, params: &[Value], what: &str) -> Result<i64> {
        let location = &self.location;
        let rows =
            self.conn.get_mut().query(sql, params).with_context(|| format!("storing the {what} in {location}"))?;
        rows[0].int(0)
    }

    /// The record stored as JSON in row `id` of `table` (a `what`, which
    /// `bpfbench history FLAG` lists), read by `parse` (which reads older
    /// versions of its schema too).
    fn load_record<T>(&self, table: &str, id: i64, what: &str, flag: &str, parse: fn(&str) -> Result<T>) -> Result<T> {
        let json = self
            .query(&format!("SELECT record_json FROM {table} WHERE id = $1"), &[id.into()])?
            .first()
            .map(|r| r.text(0))
            .transpose()?
            .with_context(|| format!("no {what} {id} in {}; see 'bpfbench history {flag}'", self.location))?;
        parse(&json).with_context(|| format!("{what} {id} in {}", self.location))
    }

    /// The newest `limit` records of `table` that `selection` admits: (id, record).
    fn list_records<T>(
        &self,
        table: &str,
        limit: usize,
        selection: &RunFilter,
        what: &str,
        parse: fn(&str) -> Result<T>,
    ) -> Result<Vec<(i64, T)>> {
        let (cond, mut params) = selection.condition(2);
        params.insert(0, (limit as i64).into());
        let sql = format!("SELECT r.id, r.record_json FROM {table} r WHERE {cond} ORDER BY r.id DESC LIMIT $1");
        let rows = self.query(&sql, &params)?;
        rows.iter()
            .map(|r| {
                let id = r.int(0)?;
                Ok((id, parse(&r.text(1)?).with_context(|| format!("{what} {id}"))?))
            })
            .collect()
    }

    /// Every stored median of the runs `selection` admits, oldest run
    /// first, with where it was measured.
    pub fn series_points(&self, selection: &RunFilter) -> Result<Vec<(SeriesKey, Point)>> {
        let (cond, params) = selection.condition(1);
        let sql = format!(
            "SELECT r.testbed_id, r.testbed_name, x.benchmark, r.id, r.started_at, r.git_commit, r.tag, r.kernel,
                    x.median_ns, x.ci_low_ns, x.ci_high_ns, r.guest
             FROM results x JOIN runs r ON r.id = x.run_id
             WHERE x.median_ns IS NOT NULL AND {cond}
             ORDER BY r.started_at, r.id"
        );
        self.query(&sql, &params)?
            .iter()
            .map(|r| {
                let point = Point {
                    stamp: RunStamp {
                        run: r.int(3)?,
                        started_at: r.int(4)? as u64,
                        git_commit: r.text(5)?,
                        tag: r.opt_text(6)?,
                        kernel: r.text(7)?,
                    },
                    median_ns: r.opt_real(8)?.unwrap_or(f64::NAN),
                    ci95_ns: r.opt_real(9)?.zip(r.opt_real(10)?),
                };
                let key = SeriesKey {
                    benchmark: r.text(2)?,
                    testbed_id: r.opt_text(0)?.unwrap_or_default(),
                    testbed_name: r.opt_text(1)?.unwrap_or_else(|| "-".into()),
                    guest: r.opt_text(11)?,
                };
                Ok((key, point))
            })
            .collect()
    }

    /// Copies into this history every run, paired comparison and live run
    /// of `source` that it does not hold yet (the same record stored at the
    /// same time), oldest first so that ids keep the order the records
    /// were made in. Records keep the testbed they were made on (none for
    /// those from before testbeds).
    pub fn import_from(&mut self, source: &History) -> Result<Imported> {
        let mut done = Imported::default();
        let run_ids = source.query("SELECT id FROM runs ORDER BY id", &[])?;
        let runs = run_ids.iter().map(|r| source.load(r.int(0)?)).collect::<Result<Vec<_>>>()?;
        done.runs = self.import_records(&runs, &mut done.already)?;
        let paired: Vec<_> = source.list_paired(usize::MAX >> 1)?.into_iter().rev().map(|(_, r)| r).collect();
        done.paired = self.import_records(&paired, &mut done.already)?;
        let live: Vec<_> = source.list_live(usize::MAX >> 1)?.into_iter().rev().map(|(_, r)| r).collect();
        done.live = self.import_records(&live, &mut done.already)?;
        Ok(done)
    }

    /// Stores each of `records` (oldest first) that its table does not hold
    /// yet; returns how many, and counts the others in `already`.
    fn import_records<T: StoredRecord>(&mut self, records: &[T], already: &mut usize) -> Result<usize> {
        let mut stored = 0;
        for rec in records {
            if self.holds(rec)? {
                *already += 1;
            } else {
                T::store(self, rec)?;
                stored += 1;
            }
        }
        Ok(stored)
    }

    /// Whether `table` holds `rec`: a record stored at the same time that
    /// reads as the same record once both are read by this bpfbench (a
    /// record stored under an older schema is upgraded first, so its text
    /// differs from the same record's in the current schema).
    fn holds<T: StoredRecord>(&self, rec: &T) -> Result<bool> {
        let want = serde_json::to_value(rec)?;
        let sql = format!("SELECT {} FROM {} WHERE started_at = $1", T::JSON_COLUMN, T::TABLE);
        for row in self.query(&sql, &[(rec.environment().started_at as i64).into()])? {
            if let Ok(stored) = T::parse(&row.text(0)?)
                && serde_json::to_value(&stored)? == want
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The stored benchmarks `name` names: its whole name, or its scenario
    /// in every runtime, timing mode, metric and parameters it was measured in.
    pub fn benchmarks_named(&self, name: &str) -> Result<Vec<String>> {
        let all = self.query("SELECT DISTINCT benchmark FROM results ORDER BY benchmark", &[])?;
        let mut named = Vec::new();
        for row in &all {
            let b = row.text(0)?;
            if BenchmarkId::parse(&b).is_some_and(|id| id.matches(name)) {
                named.push(b);
            }
        }
        Ok(named)
    }
}

/// A kind of record the history keeps in a table of its own, as JSON.
trait StoredRecord: serde::Serialize + Sized {
    const TABLE: &'static str;
    const JSON_COLUMN: &'static str;
    fn parse(text: &str) -> Result<Self>;
    fn environment(&self) -> &Environment;
    fn store(history: &mut History, record: &Self) -> Result<i64>;
}

/// Each kind's table, JSON column, reader and writer.
macro_rules! stored_records {
    ($($record:ty: $table:literal, $column:literal, $parse:expr, $store:path;)*) => {$(
        impl StoredRecord for $record {
            const TABLE: &'static str = $table;
            const JSON_COLUMN: &'static str = $column;
            fn parse(text: &str) -> Result<Self> {
                ($parse)(text)
            }
            fn environment(&self) -> &Environment {
                &self.environment
            }
            fn store(history: &mut History, record: &Self) -> Result<i64> {
                $store(history, record)
            }
        }
    )*};
}

stored_records! {
    RunRecord: "runs", "report_json", |t| Ok(parse_run(t)?), History::store;
    PairedRecord: "paired", "record_json", |t| Ok(serde_json::from_str(t)?), History::store_paired;
    LiveRecord: "live", "record_json", parse_live, History::store_live;
}

/// How a run's guest is named in its series: "an emulated (TCG) guest of
/// IMAGE" or "a KVM guest of IMAGE".
pub fn guest_label(g: &crate::record::Guest) -> String {
    if g.emulated() { format!("an emulated (TCG) guest of {}", g.image) } else { format!("a KVM guest of {}", g.image) }
}

/// Runs named on the command line, newest first, and how to call them: a
/// JSON file or a run id (one run), or a tag (up to `tag_runs` of its
/// newest runs that `selection` admits) in the database at `db`.
pub fn resolve_runs(
    spec: &str,
    db: &Location,
    tag_runs: usize,
    selection: &RunFilter,
) -> Result<(Vec<RunRecord>, String)> {
    let path = Path::new(spec);
    if path.is_file() {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {spec}"))?;
        let record = parse_run(&text).with_context(|| format!("{spec} cannot be compared"))?;
        return Ok((vec![record], spec.to_string()));
    }
    if !db.exists() {
        bail!("'{spec}' is not a file, and there is no history database at {db} to look it up in");
    }
    let h = History::open(db)?;
    if let Ok(id) = spec.parse::<i64>() {
        return Ok((vec![h.load(id)?], format!("run {id}")));
    }
    let ids = h.runs_with_tag_in(spec, tag_runs, selection)?;
    if ids.is_empty() {
        if !h.runs_with_tag_in(spec, 1, &RunFilter::default())?.is_empty() {
            bail!(
                "tag '{spec}' has runs in {db}, but none {}; see 'bpfbench history --tag {spec}'",
                selection.describe()
            );
        }
        bail!("'{spec}' is not a file, a run id or a tag in {db}; see 'bpfbench history'");
    }
    let label = match ids.as_slice() {
        [one] => format!("run {one} (tag {spec})"),
        many => format!("tag {spec}: {} runs, {}..{}", many.len(), many[many.len() - 1], many[0]),
    };
    let runs = ids.iter().map(|&id| h.load(id)).collect::<Result<Vec<_>>>()?;
    Ok((runs, label))
}
