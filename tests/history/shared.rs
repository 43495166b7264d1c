//! The history on a real PostgreSQL server the test starts itself, beside
//! the same checks on SQLite: storing and reading back, testbeds and
//! selections, migrating an older schema, many writers at once, a writer
//! killed mid-transaction, and the one-line errors of bad URLs, unreachable
//! servers, wrong credentials and newer databases.

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use bpfbench::history::schema::migrate_to;
use bpfbench::history::sql::Connection;
use bpfbench::history::{DB_SCHEMA_VERSION, History, Location, RunFilter};
use bpfbench::record::{RunRecord, Testbed};
use common::pg_server::{PASSWORD, Postgres, USER};
use common::{assert_one_line_error, bpfbench, run, stderr, temp_dir};

fn on_testbed(mut r: RunRecord, name: &str) -> RunRecord {
    r.environment.testbed = Some(Testbed { id: format!("id-{name}"), name: name.into() });
    r
}

fn json(r: &RunRecord) -> serde_json::Value {
    serde_json::to_value(r).unwrap()
}

/// A fresh SQLite file and a fresh database on `pg`, for checks both must pass.
fn both(pg: &Postgres, dir: &std::path::Path, name: &str) -> [Location; 2] {
    [Location::Sqlite(dir.join(format!("{name}.sqlite"))), Location::parse(&pg.database(name))]
}

#[test]
fn runs_come_back_whole_and_select_by_testbed_kernel_and_cpu() {
    let _machine = common::machine();
    let pg = Postgres::start();
    let dir = temp_dir("shared-store");
    for db in both(&pg, &dir, "store") {
        let mut h = History::open(&db).unwrap();
        let mut lab = on_testbed(run(Some("main"), 1.0), "lab-1");
        lab.environment.cpu_model = "AMD EPYC 7B13".into();
        let a = h.store(&lab).unwrap();
        let mut ci = on_testbed(run(Some("main"), 1.1), "ci-runner");
        ci.environment.kernel = "6.1.0-28-amd64".into();
        let b = h.store(&ci).unwrap();
        assert_eq!(json(&h.load(a).unwrap()), json(&lab), "{db}");
        assert_eq!(json(&h.load(b).unwrap()), json(&ci), "{db}");
        let select = |testbed: Option<&str>, kernel: Option<&str>, cpu: Option<&str>| RunFilter {
            testbed: testbed.map(Into::into),
            kernel: kernel.map(Into::into),
            cpu_model: cpu.map(Into::into),
        };
        let ids = |s: &RunFilter| h.list_in(&[], 10, s).unwrap().iter().map(|r| r.stamp.run).collect::<Vec<_>>();
        assert_eq!(ids(&RunFilter::default()), vec![b, a], "{db}");
        assert_eq!(ids(&select(Some("lab-1"), None, None)), vec![a], "{db}: by name");
        assert_eq!(ids(&select(Some("id-ci-runner"), None, None)), vec![b], "{db}: by id");
        assert_eq!(ids(&select(None, Some("6.1"), None)), vec![b], "{db}: by kernel prefix");
        assert_eq!(ids(&select(None, None, Some("EPYC"))), vec![a], "{db}: by CPU model");
        assert!(ids(&select(Some("lab-1"), Some("6.1"), None)).is_empty(), "{db}");
        assert_eq!(h.runs_with_tag_in("main", 10, &select(Some("ci-runner"), None, None)).unwrap(), vec![b]);
        let listed = h.list_in(&["xdp-lb/tcp-v4-lru-hit".to_string()], 10, &RunFilter::default()).unwrap();
        assert_eq!(listed[0].testbed.as_deref(), Some("ci-runner"));
        assert!(listed[0].median_ns.unwrap() > listed[1].median_ns.unwrap(), "{db}");
        assert_eq!(h.benchmarks_named("tcp-v4-lru-hit").unwrap(), vec!["xdp-lb/tcp-v4-lru-hit".to_string()]);
        // Paired comparisons and live runs select by where they were made too.
        for bed in ["lab-1", "ci-runner"] {
            let mut p = common::paired_record();
            p.environment.testbed = Some(Testbed { id: format!("id-{bed}"), name: bed.into() });
            h.store_paired(&p).unwrap();
        }
        let paired = h.list_paired_in(10, &select(Some("ci-runner"), None, None)).unwrap();
        assert_eq!(paired.len(), 1, "{db}");
        assert_eq!(paired[0].1.environment.testbed.as_ref().unwrap().name, "ci-runner");
        assert_eq!(h.list_paired_in(10, &RunFilter::default()).unwrap().len(), 2);
        // Reopening finds the current schema and changes nothing.
        drop(h);
        assert_eq!(History::open(&db).unwrap().list(&[], 10).unwrap().len(), 2);
    }
}

#[test]
fn an_older_schema_is_migrated_and_keeps_its_runs() {
    let _machine = common::machine();
    let pg = Postgres::start();
    let dir = temp_dir("shared-migrate");
    for db in both(&pg, &dir, "migrate") {
        // What bpfbench wrote at history schema 1: runs with no testbed columns.
        let mut conn = Connection::open(&db).unwrap();
        migrate_to(&mut conn, &db, 1).unwrap();
        let old = run(Some("old"), 1.0);
        conn.execute(
            "INSERT INTO runs (tag, started_at, git_commit, kernel, cpu_model, report_json) VALUES ('old', 1, 'abc', '6.18', 'cpu', $1)",
            &[serde_json::to_string(&old).unwrap().into()],
        )
        .unwrap();
        drop(conn);
        let mut h = History::open(&db).unwrap();
        let runs = h.list(&[], 10).unwrap();
        assert_eq!(runs.len(), 1, "{db}");
        assert_eq!(runs[0].testbed, None, "{db}: a run from before testbeds has none");
        assert_eq!(json(&h.load(runs[0].stamp.run).unwrap()), json(&old), "{db}");
        // The tables of versions 2 to 4 are there and take records.
        h.store(&on_testbed(run(Some("new"), 1.0), "lab-1")).unwrap();
        let mut conn = Connection::open(&db).unwrap();
        let version =
            conn.query("SELECT value FROM meta WHERE key = 'schema_version'", &[]).unwrap()[0].text(0).unwrap();
        assert_eq!(version, DB_SCHEMA_VERSION.to_string(), "{db}");
        assert_eq!(conn.query("SELECT count(*) FROM live", &[]).unwrap()[0].int(0).unwrap(), 0);
    }
}

/// 8 writers, each with its own connection as separate machines have,
/// store 50 runs each into one database at once.
fn eight_writers(db: &Location) -> Duration {
    History::open(db).unwrap();
    let start = Instant::now();
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut h = History::open(&db).unwrap();
                for i in 0..50 {
                    h.store(&on_testbed(run(Some(&format!("w{w}-r{i}")), 1.0), &format!("bed-{w}"))).unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    start.elapsed()
}

#[test]
fn eight_concurrent_writers_store_every_run_once() {
    let _machine = common::machine();
    let pg = Postgres::start();
    let dir = temp_dir("shared-writers");
    for db in both(&pg, &dir, "writers") {
        let took = eight_writers(&db);
        let mut conn = Connection::open(&db).unwrap();
        let mut count = |sql: &str| conn.query(sql, &[]).unwrap()[0].int(0).unwrap();
        assert_eq!(count("SELECT count(*) FROM runs"), 400, "{db}");
        assert_eq!(count("SELECT count(DISTINCT tag) FROM runs"), 400, "{db}: a run stored twice");
        assert_eq!(count("SELECT count(*) FROM results"), 800, "{db}: every run's two results");
        assert_eq!(count("SELECT count(DISTINCT testbed_id) FROM runs"), 8, "{db}");
        eprintln!("{db}: 8 writers x 50 runs stored in {:.2} s", took.as_secs_f64());
    }
}

/// Set in the child process of the test below: the database to write into.
const WRITER_ENV: &str = "BPFBENCH_TEST_PG_WRITER_DB";

#[test]
fn a_writer_killed_mid_transaction_leaves_nothing_half_stored() {
    if let Ok(url) = std::env::var(WRITER_ENV) {
        // Child: store one run; the parent holds the results table, so
        // this waits inside the transaction, its run row written. (Not
        // the machine: the parent holds it.)
        History::open(Location::parse(&url)).unwrap().store(&run(Some("half"), 1.0)).unwrap();
        return;
    }
    let _machine = common::machine();
    let pg = Postgres::start();
    let db = Location::parse(&pg.database("killed"));
    let Location::Postgres(url) = &db else { unreachable!() };
    History::open(&db).unwrap().store(&run(Some("before"), 1.0)).unwrap();
    let mut blocker = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let mut lock = blocker.transaction().unwrap();
    lock.batch_execute("LOCK TABLE results IN EXCLUSIVE MODE").unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "shared::a_writer_killed_mid_transaction_leaves_nothing_half_stored", "--nocapture"])
        .env(WRITER_ENV, url)
        .spawn()
        .unwrap();
    let mut watch = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let waiting = "SELECT pid FROM pg_stat_activity WHERE application_name = 'bpfbench' AND wait_event_type = 'Lock'";
    let start = Instant::now();
    let backend: i32 = loop {
        if let Some(row) = watch.query(waiting, &[]).unwrap().first() {
            break row.get(0);
        }
        assert!(start.elapsed() < Duration::from_secs(30), "the writer never reached the results table");
        std::thread::sleep(Duration::from_millis(20));
    };
    // Its run row is written (a row lock of its own transaction is held).
    child.kill().unwrap(); // SIGKILL mid-transaction
    child.wait().unwrap();
    lock.rollback().unwrap();
    // The server ends the dead client's session and rolls its transaction back.
    let start = Instant::now();
    while !watch.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1", &[&backend]).unwrap().is_empty() {
        assert!(start.elapsed() < Duration::from_secs(30), "the killed writer's session lingers");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut h = History::open(&db).unwrap();
    let runs = h.list(&[], 10).unwrap();
    assert_eq!(runs.iter().map(|r| r.stamp.tag.as_deref()).collect::<Vec<_>>(), vec![Some("before")]);
    let orphans = watch.query("SELECT count(*) FROM results WHERE run_id NOT IN (SELECT id FROM runs)", &[]).unwrap();
    assert_eq!(orphans[0].get::<_, i64>(0), 0);
    h.store(&run(Some("after"), 1.0)).unwrap();
}

#[test]
fn bad_urls_unreachable_servers_wrong_credentials_and_newer_databases_are_one_line_errors() {
    let _machine = common::machine();
    let pg = Postgres::start();
    let good = pg.database("errors");
    let closed_port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let cases = [
        ("postgres://bpfbench@127.0.0.1:notaport/x".to_string(), "is not a PostgreSQL URL"),
        (format!("postgres://{USER}:{PASSWORD}@127.0.0.1:{closed_port}/x"), "cannot open the history database"),
        (format!("postgres://{USER}:wrong@127.0.0.1:{}/errors", pg.port), "password authentication failed"),
        (format!("postgres://{USER}:{PASSWORD}@127.0.0.1:{}/nosuchdb", pg.port), "does not exist"),
        // This server has no TLS; the URL wants it.
        (format!("postgres://{USER}:{PASSWORD}@127.0.0.1:{}/errors?sslmode=require", pg.port), "TLS"),
    ];
    for (url, needle) in &cases {
        assert_one_line_error(&["history", "--db", url], needle);
        // The password never reaches the message.
        let err = stderr(&bpfbench(&["history", "--db", url]));
        assert!(!err.contains(PASSWORD) && !err.contains(":wrong@"), "{err}");
    }
    History::open(Location::parse(&good)).unwrap();
    let mut c = postgres::Client::connect(&good, postgres::NoTls).unwrap();
    c.execute("UPDATE meta SET value = $1 WHERE key = 'schema_version'", &[&(DB_SCHEMA_VERSION + 1).to_string()])
        .unwrap();
    assert_one_line_error(&["history", "--db", &good], "written by a newer bpfbench");
}

#[test]
fn the_password_comes_from_pgpassword_or_a_password_file_as_libpq_takes_it() {
    let _machine = common::machine();
    use std::os::unix::fs::PermissionsExt;
    let pg = Postgres::start();
    pg.database("secret");
    let dir = temp_dir("pgpass");
    // No password in the URL: nothing on the command line for `ps` to show.
    let url = format!("postgres://{USER}@127.0.0.1:{}/secret", pg.port);
    let history = |env: &[(&str, &str)]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_bpfbench"));
        cmd.args(["history", "--db", &url]).env_remove("PGPASSWORD").env_remove("PGPASSFILE");
        cmd.env("HOME", &*dir);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    };
    let o = history(&[]);
    assert!(stderr(&o).contains("password"), "without one: {}", stderr(&o));
    let o = history(&[("PGPASSWORD", PASSWORD)]);
    assert!(o.status.success(), "PGPASSWORD: {}", stderr(&o));
    // ~/.pgpass: the first line that matches, others skipped.
    let pgpass = dir.join(".pgpass");
    let port = pg.port;
    std::fs::write(&pgpass, format!("# ours\nother.host:*:*:*:no\n127.0.0.1:{port}:secret:{USER}:{PASSWORD}\n"))
        .unwrap();
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let o = history(&[]);
    assert!(o.status.success(), "~/.pgpass: {}", stderr(&o));
    // One others can read is ignored, and said so.
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = stderr(&history(&[]));
    assert!(err.contains("others can read it") && err.contains("password"), "{err}");
    // $PGPASSFILE names another file.
    let elsewhere = dir.join("pgpass-ci");
    std::fs::write(&elsewhere, format!("*:*:*:{USER}:{PASSWORD}\n")).unwrap();
    std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o600)).unwrap();
    let o = history(&[("PGPASSFILE", elsewhere.to_str().unwrap())]);
    assert!(o.status.success(), "$PGPASSFILE: {}", stderr(&o));
}

#[test]
fn a_real_run_stores_into_postgres_named_by_the_environment() {
    let _machine = common::machine();
    let pg = Postgres::start();
    let url = pg.database("cli");
    let o = Command::new(env!("CARGO_BIN_EXE_bpfbench"))
        .args(["run", "--scenario", "pass-non-ip", "--samples", "4", "--batch-ms", "2", "--tag", "pg-cli"])
        .env("BPFBENCH_DB", &url)
        .env("BPFBENCH_TESTBED", "bpfbench-test-bed")
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains(&format!("stored as run 1 in postgres://{USER}:***@")), "{err}");
    let listed = bpfbench(&["history", "--db", &url, "--testbed", "bpfbench-test-bed", "-s", "pass-non-ip"]);
    let table = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.status.success() && table.contains("pg-cli") && table.contains("bpfbench-test-bed"),
        "{table}{}",
        stderr(&listed)
    );
    let other = bpfbench(&["history", "--db", &url, "--testbed", "another-bed"]);
    assert_eq!(String::from_utf8_lossy(&other.stdout).lines().count(), 1, "only the header: no run of that testbed");
    let shown = bpfbench(&["show", "pg-cli", "--db", &url, "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(doc["environment"]["testbed"]["name"], "bpfbench-test-bed");
    // The readers of a history read it from the server too.
    let changes = bpfbench(&["changes", "--db", &url, "--format", "json"]);
    let doc: serde_json::Value =
        serde_json::from_slice(&changes.stdout).unwrap_or_else(|_| panic!("{}", stderr(&changes)));
    assert_eq!(doc["series"][0]["testbed"], "bpfbench-test-bed", "{doc}");
    let dir = temp_dir("shared-report");
    let html = dir.join("r.html");
    let o = bpfbench(&["report", "--db", &url, "-o", html.to_str().unwrap()]);
    assert!(o.status.success() && std::fs::read_to_string(&html).unwrap().contains("pg-cli"), "{}", stderr(&o));
}

#[test]
fn the_gate_compares_against_its_own_testbeds_runs_only() {
    let _machine = common::machine();
    use bpfbench::session::Reference;
    let dir = temp_dir("shared-gate");
    let db = Location::Sqlite(dir.join("gate.sqlite"));
    let mut h = History::open(&db).unwrap();
    // Another machine's run of the tag is no reference for this one.
    h.store(&on_testbed(run(Some("main"), 1.0), "elsewhere")).unwrap();
    let err = format!("{:#}", Reference::tagged(&h, "main", 10).err().expect("refused"));
    assert!(err.contains("no stored run has tag 'main' on this testbed"), "{err}");
    let mut here = run(Some("main"), 1.0);
    here.environment.testbed = Some(bpfbench::system::environment::testbed());
    let id = h.store(&here).unwrap();
    // A run from before testbeds was made here.
    let legacy = h.store(&run(Some("main"), 1.0)).unwrap();
    let reference = Reference::tagged(&h, "main", 10).unwrap();
    assert_eq!(reference.runs.len(), 2, "{}", reference.label);
    assert!(legacy > id);
}

#[test]
fn tls_is_used_where_the_url_asks_and_the_servers_certificate_is_checked() {
    let _machine = common::machine();
    let pg = Postgres::start_tls();
    let url = format!("{}?sslmode=require", pg.database("tls"));
    let history = |ca: Option<&std::path::Path>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_bpfbench"));
        cmd.args(["history", "--db", &url]).env_remove("BPFBENCH_DB_CA");
        if let Some(ca) = ca {
            cmd.env("BPFBENCH_DB_CA", ca);
        }
        cmd.output().unwrap()
    };
    // With the CA the server's certificate chains to: connected, over TLS.
    let o = history(Some(&pg.ca()));
    assert!(o.status.success(), "{}", stderr(&o));
    let log = pg.log();
    assert!(
        log.lines().any(|l| l.contains("connection authorized")
            && l.contains("application_name=bpfbench")
            && l.contains("SSL enabled")),
        "{log}"
    );
    // Without it the certificate is not trusted: refused, in one line.
    let o = history(None);
    let err = stderr(&o);
    assert!(
        !o.status.success() && err.contains("cannot open the history database") && err.contains("certificate"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    // A CA file that holds no certificate.
    let dir = temp_dir("shared-tls");
    let not_pem = dir.join("ca.pem");
    std::fs::write(&not_pem, "not a certificate\n").unwrap();
    let o = history(Some(&not_pem));
    let err = stderr(&o);
    assert!(!o.status.success() && err.contains("BPFBENCH_DB_CA") && err.trim_end().lines().count() == 1, "{err}");
}

#[test]
fn eight_openers_of_an_empty_database_migrate_it_once() {
    let _machine = common::machine();
    let pg = Postgres::start();
    let dir = temp_dir("shared-openers");
    for db in both(&pg, &dir, "openers") {
        // No one has opened it yet: all eight find it empty at once.
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
        let openers: Vec<_> = (0..8)
            .map(|i| {
                let (db, barrier) = (db.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    let mut h = History::open(&db).unwrap();
                    h.store(&run(Some(&format!("o{i}")), 1.0)).unwrap();
                })
            })
            .collect();
        for o in openers {
            o.join().unwrap();
        }
        let mut conn = Connection::open(&db).unwrap();
        let rows = conn.query("SELECT value FROM meta WHERE key = 'schema_version'", &[]).unwrap();
        assert_eq!(rows.len(), 1, "{db}: one version row");
        assert_eq!(rows[0].text(0).unwrap(), DB_SCHEMA_VERSION.to_string());
        assert_eq!(conn.query("SELECT count(*) FROM runs", &[]).unwrap()[0].int(0).unwrap(), 8, "{db}");
    }
}

#[test]
fn a_machines_history_is_imported_into_the_shared_one_once() {
    let _machine = common::machine();
    let pg = Postgres::start();
    let dir = temp_dir("shared-import");
    let local = dir.join("local.sqlite");
    let mut h = History::open(&local).unwrap();
    for i in 0..3 {
        let mut r = run(Some("main"), 1.0 + i as f64 / 100.0);
        r.environment.started_at = 1_800_000_000 + i * 60;
        h.store(&r).unwrap();
    }
    h.store(&on_testbed(run(Some("lab"), 1.0), "lab-1")).unwrap();
    h.store_paired(&common::paired_record()).unwrap();
    drop(h);
    let url = pg.database("import");
    let import = || bpfbench(&["import", local.to_str().unwrap(), "--db", &url]);
    let o = import();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("imported 4 run(s), 1 paired comparison(s) and 0 live run(s)")
            && err.contains("0 were there already"),
        "{err}"
    );
    // Twice: nothing twice.
    let err = stderr(&import());
    assert!(err.contains("imported 0 run(s), 0 paired comparison(s)") && err.contains("5 were there already"), "{err}");
    let shared = History::open(Location::parse(&url)).unwrap();
    let runs = shared.list(&[], 10).unwrap();
    assert_eq!(runs.len(), 4);
    // Oldest first, each with its own time and testbed (none from before testbeds).
    assert_eq!(runs[3].stamp.started_at, 1_800_000_000);
    assert_eq!(runs[0].testbed.as_deref(), Some("lab-1"));
    assert_eq!(runs[1].testbed, None);
    assert_eq!(
        json(&shared.load(runs[3].stamp.run).unwrap())["results"],
        json(&History::open(&local).unwrap().load(1).unwrap())["results"]
    );
    common::assert_one_line_error(&["import", &url, "--db", &url], "is the history to import into too");
    common::assert_one_line_error(
        &["import", dir.join("none.sqlite").to_str().unwrap(), "--db", &url],
        "no history yet",
    );
}
