//! The history's tables and how a database reaches the current version:
//! one migration per version, the same for SQLite and PostgreSQL, applied
//! in one transaction under a lock so that many writers opening one
//! database at once migrate it once.

use anyhow::{Context, Result, bail};

use super::location::Location;
use super::sql::{Connection, Value};
use crate::record::{ScenarioRecord, parse_run};

/// Version of the tables below; a database from a newer bpfbench is refused.
pub const DB_SCHEMA_VERSION: i64 = 5;

/// What each version added. `{id}` is the auto-numbered key and `{real}` a
/// double, which the two databases spell differently.
pub const MIGRATIONS: [&str; DB_SCHEMA_VERSION as usize] = [
    // 1: runs, one row per benchmark with its median.
    "CREATE TABLE IF NOT EXISTS runs (
        id {id},
        tag TEXT,
        started_at BIGINT NOT NULL,
        git_commit TEXT NOT NULL,
        kernel TEXT NOT NULL,
        cpu_model TEXT NOT NULL,
        report_json TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS results (
        run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        benchmark TEXT NOT NULL,
        median_ns {real},
        ci_low_ns {real},
        ci_high_ns {real},
        samples BIGINT,
        -- kernel tag of the timed program: equal tags mean identical BPF code
        program_tag TEXT,
        PRIMARY KEY (run_id, benchmark)
    );
    CREATE INDEX IF NOT EXISTS runs_by_tag ON runs(tag);",
    // 2: paired comparisons (`bpfbench ab`).
    "CREATE TABLE IF NOT EXISTS paired (
        id {id},
        tag TEXT,
        started_at BIGINT NOT NULL,
        a TEXT NOT NULL,
        b TEXT NOT NULL,
        kernel TEXT NOT NULL,
        cpu_model TEXT NOT NULL,
        record_json TEXT NOT NULL
    );",
    // 3: live runs (`bpfbench live`).
    "CREATE TABLE IF NOT EXISTS live (
        id {id},
        tag TEXT,
        started_at BIGINT NOT NULL,
        program TEXT NOT NULL,
        kernel TEXT NOT NULL,
        cpu_model TEXT NOT NULL,
        record_json TEXT NOT NULL
    );",
    // 4: the machine each result came from, for histories many machines
    // share, and the guest a run ran in (`bpfbench vm`), whose times are
    // another series than the host's.
    "ALTER TABLE runs ADD COLUMN testbed_id TEXT;
    ALTER TABLE runs ADD COLUMN testbed_name TEXT;
    ALTER TABLE runs ADD COLUMN guest TEXT;
    ALTER TABLE paired ADD COLUMN testbed_id TEXT;
    ALTER TABLE paired ADD COLUMN testbed_name TEXT;
    ALTER TABLE live ADD COLUMN testbed_id TEXT;
    ALTER TABLE live ADD COLUMN testbed_name TEXT;
    CREATE INDEX IF NOT EXISTS runs_by_testbed ON runs(testbed_id);",
    // 5: every result under its full identity (record::BenchmarkId: a map's
    // key and value size, the metric), renamed by `full_identities` below;
    // runs found by their start (import's duplicates, time ranges).
    "CREATE INDEX IF NOT EXISTS runs_by_start ON runs(started_at);
    CREATE INDEX IF NOT EXISTS paired_by_start ON paired(started_at);
    CREATE INDEX IF NOT EXISTS live_by_start ON live(started_at);",
];

/// The version whose migration renames stored results to their full identity.
const FULL_IDENTITIES: i64 = 5;

/// How versions 1 to 4 named a result: workload, scenario, runtime and
/// timing only (a map run of 16-byte keys had the 4-byte run's name).
fn name_before_identities(r: &ScenarioRecord) -> String {
    format!("{}/{}{}{}", r.workload, r.name, r.runtime.suffix(), r.timing.suffix())
}

/// Renames every stored result whose full identity differs from the name
/// it was stored under, from the run's own record.
fn full_identities(c: &mut Connection) -> Result<()> {
    for row in c.query("SELECT id, report_json FROM runs", &[])? {
        let (id, json) = (row.int(0)?, row.text(1)?);
        // A record this bpfbench cannot read keeps its names (it cannot be loaded either).
        let Ok(run) = parse_run(&json) else { continue };
        for r in &run.results {
            let (old, new) = (name_before_identities(r), r.benchmark_name());
            if old != new {
                c.execute(
                    "UPDATE results SET benchmark = $1 WHERE run_id = $2 AND benchmark = $3",
                    &[new.into(), id.into(), old.into()],
                )?;
            }
        }
    }
    Ok(())
}

/// Migration `n` (1-based) as `conn`'s database spells it.
pub fn migration_sql(conn: &Connection, version: i64) -> String {
    let (id, real) = if conn.is_postgres() {
        ("BIGSERIAL PRIMARY KEY", "DOUBLE PRECISION")
    } else {
        ("INTEGER PRIMARY KEY AUTOINCREMENT", "REAL")
    };
    MIGRATIONS[(version - 1) as usize].replace("{id}", id).replace("{real}", real)
}

/// Brings the database to [`DB_SCHEMA_VERSION`], or refuses one a newer
/// bpfbench wrote.
pub fn migrate(conn: &mut Connection, location: &Location) -> Result<()> {
    migrate_to(conn, location, DB_SCHEMA_VERSION)
}

/// Brings the database to `target` (tests make older databases with it).
pub fn migrate_to(conn: &mut Connection, location: &Location, target: i64) -> Result<()> {
    conn.transaction(|c| {
        if c.is_postgres() {
            // Held to the end of the transaction: one opener migrates, the
            // others then find the new version. (SQLite's BEGIN IMMEDIATE
            // already excludes other writers.)
            c.batch("SELECT pg_advisory_xact_lock(7346212953)")?;
        }
        let found = version(c).with_context(|| format!("reading the schema of {location}"))?;
        match found {
            Some(v) if v > DB_SCHEMA_VERSION => bail!(
                "{location} was written by a newer bpfbench (history schema {v}, this one knows {DB_SCHEMA_VERSION}); upgrade bpfbench or use --db with another database"
            ),
            Some(v) if v >= target => return Ok(()),
            _ => {}
        }
        let from = found.unwrap_or(0);
        for v in from + 1..=target {
            let sql = migration_sql(c, v);
            c.batch(&sql).with_context(|| format!("migrating {location} to history schema {v}"))?;
            if v == FULL_IDENTITIES {
                full_identities(c).with_context(|| format!("renaming {location}'s results to their full names"))?;
            }
        }
        if found.is_none() {
            c.execute("INSERT INTO meta (key, value) VALUES ('schema_version', $1)", &[target.to_string().into()])?;
        } else {
            c.execute("UPDATE meta SET value = $1 WHERE key = 'schema_version'", &[target.to_string().into()])?;
        }
        Ok(())
    })
}

/// The stored schema version; None for an empty database.
fn version(c: &mut Connection) -> Result<Option<i64>> {
    let has_meta = if c.is_postgres() {
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'meta'"
    } else {
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
    };
    if c.query(has_meta, &[])?[0].int(0)? == 0 {
        c.batch("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")?;
        return Ok(None);
    }
    match c.query_opt("SELECT value FROM meta WHERE key = 'schema_version'", &[])? {
        None => Ok(None),
        Some(row) => match row.text(0)?.parse::<i64>() {
            Ok(v) => Ok(Some(v)),
            Err(_) => bail!("an unreadable schema version; use --db with another database"),
        },
    }
}

/// A value for a testbed column (kept here beside the columns it fills).
pub fn testbed_values(t: Option<&crate::record::Testbed>) -> [Value; 2] {
    [t.map(|t| t.id.as_str()).into(), t.map(|t| t.name.as_str()).into()]
}
