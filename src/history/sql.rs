//! One connection to either database, so the history's queries are written
//! once: statements use PostgreSQL's `$1` placeholders (rewritten to `?1`
//! for SQLite), values cross as four plain kinds, and a transaction either
//! commits whole or leaves nothing.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use postgres::types::{IsNull, ToSql, Type, to_sql_checked};

use super::location::Location;

/// A value bound to a statement or read from a row.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

/// Each plain Rust value as the kind it crosses as.
macro_rules! value_from {
    ($($t:ty => $kind:ident($convert:expr);)*) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Value {
                Value::$kind($convert(v))
            }
        }
    )*};
}

value_from! {
    i64 => Int(std::convert::identity);
    f64 => Real(std::convert::identity);
    &str => Text(str::to_string);
    String => Text(std::convert::identity);
    &String => Text(String::clone);
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

/// One row of a result, read by column index.
pub struct Row(Vec<Value>);

impl Row {
    pub fn int(&self, i: usize) -> Result<i64> {
        self.opt_int(i)?.ok_or_else(|| anyhow!("column {i} is empty"))
    }
    pub fn opt_int(&self, i: usize) -> Result<Option<i64>> {
        match &self.0[i] {
            Value::Null => Ok(None),
            Value::Int(v) => Ok(Some(*v)),
            other => Err(anyhow!("column {i} holds {other:?}, not an integer")),
        }
    }
    pub fn opt_real(&self, i: usize) -> Result<Option<f64>> {
        match &self.0[i] {
            Value::Null => Ok(None),
            Value::Real(v) => Ok(Some(*v)),
            Value::Int(v) => Ok(Some(*v as f64)),
            other => Err(anyhow!("column {i} holds {other:?}, not a number")),
        }
    }
    pub fn text(&self, i: usize) -> Result<String> {
        self.opt_text(i)?.ok_or_else(|| anyhow!("column {i} is empty"))
    }
    pub fn opt_text(&self, i: usize) -> Result<Option<String>> {
        match &self.0[i] {
            Value::Null => Ok(None),
            Value::Text(v) => Ok(Some(v.clone())),
            other => Err(anyhow!("column {i} holds {other:?}, not text")),
        }
    }
}

pub enum Connection {
    Sqlite(rusqlite::Connection),
    Postgres(Box<postgres::Client>),
}

/// How long a writer waits for another's lock, and for a server to answer
/// a connection, before giving up with an error.
const WAIT: Duration = Duration::from_secs(30);

/// Puts a SQLite database in WAL mode. Switching a new file to WAL takes
/// its exclusive lock, and SQLite answers "database is locked" at once,
/// without its busy handler, when another opener holds a shared lock at
/// that moment: so the switch is retried until `WAIT` is out.
fn wal_mode(conn: &rusqlite::Connection, path: &Path) -> Result<()> {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Ok(()) => return Ok(()),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(e.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(e.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) =>
            {
                bail!(
                    "{} stayed locked by another writer for {} s; try again when it is done",
                    path.display(),
                    WAIT.as_secs()
                )
            }
            Err(e) => bail!("{} is not a bpfbench history database ({e}); choose another --db", path.display()),
        }
    }
}

impl Connection {
    pub fn open(location: &Location) -> Result<Connection> {
        match location {
            Location::Sqlite(path) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
                }
                let conn = rusqlite::Connection::open(path)
                    .with_context(|| format!("opening the history database {}", path.display()))?;
                conn.busy_timeout(WAIT)?;
                wal_mode(&conn, path)?;
                Ok(Connection::Sqlite(conn))
            }
            Location::Postgres(url) => {
                let mut config: postgres::Config = url.parse().map_err(|e| {
                    anyhow!("--db {location} is not a PostgreSQL URL ({e}); write postgres://USER:PASSWORD@HOST:PORT/DATABASE")
                })?;
                if config.get_connect_timeout().is_none() {
                    config.connect_timeout(WAIT);
                }
                config.application_name("bpfbench");
                if config.get_password().is_none() {
                    let host = match config.get_hosts().first() {
                        Some(postgres::config::Host::Tcp(h)) => h.clone(),
                        _ => "localhost".to_string(),
                    };
                    let user = config.get_user().unwrap_or_default().to_string();
                    let target = super::pgpass::Target {
                        host: &host,
                        port: config.get_ports().first().copied().unwrap_or(5432),
                        database: config.get_dbname().unwrap_or(&user),
                        user: &user,
                    };
                    if let Some(p) = super::pgpass::password(&target) {
                        config.password(p);
                    }
                }
                let cannot = |e: postgres::Error| {
                    anyhow!(
                        "cannot open the history database {location}: {}; check the URL, the server and the credentials",
                        one_line(&e)
                    )
                };
                // TLS where the URL asks for it (sslmode=require), with the
                // server's certificate verified; else none, as libpq's
                // default (prefer) also settles for without checking.
                let client = if matches!(config.get_ssl_mode(), postgres::config::SslMode::Require) {
                    config.connect(tls_connector()?).map_err(cannot)?
                } else {
                    config.connect(postgres::NoTls).map_err(cannot)?
                };
                Ok(Connection::Postgres(Box::new(client)))
            }
        }
    }

    pub fn is_postgres(&self) -> bool {
        matches!(self, Connection::Postgres(_))
    }

    /// Runs a statement; returns the rows it changed.
    pub fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64> {
        match self {
            Connection::Sqlite(c) => {
                let n = c.execute(&sqlite_sql(sql), rusqlite::params_from_iter(params.iter().map(sqlite_value)))?;
                Ok(n as u64)
            }
            Connection::Postgres(c) => Ok(c.execute(sql, &pg_params(params)).map_err(|e| anyhow!(one_line(&e)))?),
        }
    }

    /// Runs statements separated by `;`, without parameters.
    pub fn batch(&mut self, sql: &str) -> Result<()> {
        match self {
            Connection::Sqlite(c) => Ok(c.execute_batch(sql)?),
            Connection::Postgres(c) => c.batch_execute(sql).map_err(|e| anyhow!(one_line(&e))),
        }
    }

    pub fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>> {
        match self {
            Connection::Sqlite(c) => {
                let mut stmt = c.prepare(&sqlite_sql(sql))?;
                let columns = stmt.column_count();
                let rows = stmt.query_map(rusqlite::params_from_iter(params.iter().map(sqlite_value)), |r| {
                    (0..columns).map(|i| r.get_ref(i).map(value_of_sqlite)).collect::<rusqlite::Result<Vec<_>>>()
                })?;
                Ok(rows.map(|r| r.map(Row)).collect::<rusqlite::Result<_>>()?)
            }
            Connection::Postgres(c) => {
                let rows = c.query(sql, &pg_params(params)).map_err(|e| anyhow!(one_line(&e)))?;
                rows.iter()
                    .map(|r| (0..r.len()).map(|i| value_of_pg(r, i)).collect::<Result<Vec<_>>>().map(Row))
                    .collect()
            }
        }
    }

    /// The first row, if any.
    pub fn query_opt(&mut self, sql: &str, params: &[Value]) -> Result<Option<Row>> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    /// Runs `work` in one transaction: committed if it succeeds, rolled back
    /// if it fails. SQLite takes the write lock at once (BEGIN IMMEDIATE),
    /// so two writers queue instead of failing half-way.
    pub fn transaction<T>(&mut self, work: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
        self.batch(if self.is_postgres() { "BEGIN" } else { "BEGIN IMMEDIATE" })?;
        match work(self) {
            Ok(v) => {
                self.batch("COMMIT")?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.batch("ROLLBACK");
                Err(e)
            }
        }
    }
}

/// Where a CA certificate the server's certificate chains to may be given
/// (PEM), beside the system's roots: a lab's own CA, a managed database's.
pub const CA_ENV: &str = "BPFBENCH_DB_CA";

/// A TLS connector that trusts the system's root certificates and those in
/// $BPFBENCH_DB_CA, and checks the server's name (rustls, with ring).
fn tls_connector() -> Result<tokio_postgres_rustls::MakeRustlsConnect> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    // A system without a bundle still connects with $BPFBENCH_DB_CA alone.
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    if let Some(path) = std::env::var_os(CA_ENV) {
        let shown = std::path::Path::new(&path).display().to_string();
        let certs = CertificateDer::pem_file_iter(&path)
            .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
            .map_err(|e| anyhow!("${CA_ENV}={shown} is not a PEM file of certificates ({e}); give the CA the server's certificate chains to"))?;
        if certs.is_empty() {
            return Err(anyhow!(
                "${CA_ENV}={shown} holds no certificate; give the CA the server's certificate chains to"
            ));
        }
        for cert in certs {
            roots.add(cert).map_err(|e| anyhow!("${CA_ENV}={shown}: {e}"))?;
        }
    }
    let config =
        rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| anyhow!("TLS: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// `$3` → `?3`: SQLite's numbered parameters (no statement here has a `$`
/// in a literal).
fn sqlite_sql(sql: &str) -> String {
    sql.replace('$', "?")
}

fn sqlite_value(v: &Value) -> rusqlite::types::Value {
    match v {
        Value::Null => rusqlite::types::Value::Null,
        Value::Int(i) => rusqlite::types::Value::Integer(*i),
        Value::Real(r) => rusqlite::types::Value::Real(*r),
        Value::Text(t) => rusqlite::types::Value::Text(t.clone()),
    }
}

fn value_of_sqlite(v: rusqlite::types::ValueRef<'_>) -> Value {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Real(r) => Value::Real(r),
        ValueRef::Text(t) | ValueRef::Blob(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
    }
}

fn pg_params(params: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

/// A value sent as the type the server infers for its parameter.
impl ToSql for Value {
    fn to_sql(&self, ty: &Type, out: &mut bytes::BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match (self, ty) {
            (Value::Null, _) => Ok(IsNull::Yes),
            (Value::Int(v), &Type::INT8) => v.to_sql(ty, out),
            (Value::Int(v), &Type::INT4) => i32::try_from(*v)?.to_sql(ty, out),
            (Value::Int(v), &Type::FLOAT8) => (*v as f64).to_sql(ty, out),
            (Value::Real(v), &Type::FLOAT8) => v.to_sql(ty, out),
            (Value::Text(v), _) => v.as_str().to_sql(ty, out),
            (v, ty) => Err(format!("{v:?} cannot be sent as {ty}").into()),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

fn value_of_pg(row: &postgres::Row, i: usize) -> Result<Value> {
    let ty = row.columns()[i].type_();
    let v = match *ty {
        Type::INT8 => row.get::<_, Option<i64>>(i).map(Value::Int),
        Type::INT4 => row.get::<_, Option<i32>>(i).map(|v| Value::Int(v.into())),
        Type::FLOAT8 => row.get::<_, Option<f64>>(i).map(Value::Real),
        Type::TEXT | Type::VARCHAR | Type::NAME => row.get::<_, Option<String>>(i).map(Value::Text),
        _ => return Err(anyhow!("column {} has type {ty}, which the history does not read", row.columns()[i].name())),
    };
    Ok(v.unwrap_or(Value::Null))
}

/// A PostgreSQL error on one line: the server's message where it sent one
/// (wrong password, missing database), else the client's with its cause.
fn one_line(e: &postgres::Error) -> String {
    let text = match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => {
            let mut s = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(cause) = source {
                s = format!("{s}: {cause}");
                source = cause.source();
            }
            s
        }
    };
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
