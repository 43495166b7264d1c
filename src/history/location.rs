//! Where the history lives: an SQLite file (the embedded default) or a
//! PostgreSQL server that many machines share (`--db postgres://…`).

use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Sqlite(PathBuf),
    /// A libpq-style URL (`postgres://user:password@host:port/database`).
    Postgres(String),
}

impl Location {
    /// A `--db` value: a `postgres://` or `postgresql://` URL, else a path.
    pub fn parse(text: &str) -> Location {
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            Location::Postgres(text.to_string())
        } else {
            Location::Sqlite(PathBuf::from(text))
        }
    }

    /// Whether there is a history to read: a server is asked when opened;
    /// a file that is not there has no runs (and is not created by reading).
    pub fn exists(&self) -> bool {
        match self {
            Location::Sqlite(p) => p.exists(),
            Location::Postgres(_) => true,
        }
    }
}

impl From<&Path> for Location {
    fn from(p: &Path) -> Location {
        Location::Sqlite(p.to_path_buf())
    }
}

impl From<&PathBuf> for Location {
    fn from(p: &PathBuf) -> Location {
        Location::Sqlite(p.clone())
    }
}

impl From<&Location> for Location {
    fn from(l: &Location) -> Location {
        l.clone()
    }
}

/// The path, or the URL without its password (messages go to CI logs).
impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sqlite(p) => write!(f, "{}", p.display()),
            Location::Postgres(url) => f.write_str(&redact_password(url)),
        }
    }
}

/// `postgres://user:secret@host/db` → `postgres://user:***@host/db`.
fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

/// `$XDG_DATA_HOME/bpfbench/history.sqlite`, else `~/.local/share/...`.
pub fn default_path() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("bpfbench").join("history.sqlite")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_paths_and_shown_without_passwords() {
        assert_eq!(Location::parse("runs.sqlite"), Location::Sqlite("runs.sqlite".into()));
        let pg = Location::parse("postgres://ci:hunter2@db.lab:5433/bench?sslmode=disable");
        assert!(matches!(pg, Location::Postgres(_)));
        assert_eq!(pg.to_string(), "postgres://ci:***@db.lab:5433/bench?sslmode=disable");
        assert_eq!(Location::parse("postgresql://ci@db/bench").to_string(), "postgresql://ci@db/bench");
        // An '@' in the password does not leak its tail.
        assert_eq!(Location::parse("postgres://u:a@b@h/d").to_string(), "postgres://u:***@h/d");
    }
}
