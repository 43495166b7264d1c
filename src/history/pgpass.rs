//! A PostgreSQL password kept off the command line, where libpq's users
//! keep it: `$PGPASSWORD`, else the password file (`$PGPASSFILE`, default
//! `~/.pgpass`). A URL on the command line is visible to every user of the
//! machine in `ps`; these are not.
//!
//! The file's lines are `host:port:database:user:password`; `*` matches
//! anything, `\:` and `\\` stand for `:` and `\`, `#` starts a comment, and
//! the first matching line wins. As libpq does, a file that others can read
//! is ignored (with a warning saying so).

use std::path::PathBuf;

/// What a connection is to: the fields a password file line matches.
pub struct Target<'a> {
    pub host: &'a str,
    pub port: u16,
    pub database: &'a str,
    pub user: &'a str,
}

/// The password for `target` from the environment or the password file.
pub fn password(target: &Target) -> Option<String> {
    if let Ok(p) = std::env::var("PGPASSWORD")
        && !p.is_empty()
    {
        return Some(p);
    }
    let path = file()?;
    let text = std::fs::read_to_string(&path).ok()?;
    if readable_by_others(&path) {
        eprintln!("bpfbench: warning: ignoring password file {}: others can read it; chmod 0600 it", path.display());
        return None;
    }
    text.lines().find_map(|line| matching_password(line, target))
}

fn file() -> Option<PathBuf> {
    match std::env::var_os("PGPASSFILE") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pgpass")),
    }
}

fn readable_by_others(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).map(|m| m.permissions().mode() & 0o077 != 0).unwrap_or(true)
}

/// The line's password if its first four fields match `target`.
fn matching_password(line: &str, target: &Target) -> Option<String> {
    if line.starts_with('#') || line.trim().is_empty() {
        return None;
    }
    let fields = split_fields(line);
    let [host, port, database, user, password] = fields.as_slice() else { return None };
    let port_text = target.port.to_string();
    let wanted = [(host, target.host), (port, port_text.as_str()), (database, target.database), (user, target.user)];
    wanted.iter().all(|(field, value)| field.as_str() == "*" || field.as_str() == *value).then(|| password.clone())
}

/// The line's fields, split at unescaped colons, escapes resolved.
fn split_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut().unwrap().extend(chars.next()),
            ':' => fields.push(String::new()),
            c => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    const TARGET: Target = Target { host: "db.lab", port: 5432, database: "bpfbench", user: "bench" };

    #[test]
    fn the_first_line_that_matches_gives_the_password() {
        assert_eq!(matching_password("db.lab:5432:bpfbench:bench:s3cret", &TARGET).as_deref(), Some("s3cret"));
        assert_eq!(matching_password("*:*:*:bench:any", &TARGET).as_deref(), Some("any"));
        assert_eq!(matching_password("db.lab:5433:bpfbench:bench:other-port", &TARGET), None);
        assert_eq!(matching_password("db.lab:*:bpfbench:alice:other-user", &TARGET), None);
        assert_eq!(matching_password("# db.lab:5432:bpfbench:bench:commented", &TARGET), None);
        assert_eq!(matching_password("db.lab:5432:bpfbench", &TARGET), None, "too few fields");
    }

    #[test]
    fn escaped_colons_and_backslashes_belong_to_their_field() {
        assert_eq!(matching_password(r"*:*:*:bench:a\:b\\c", &TARGET).as_deref(), Some(r"a:b\c"));
    }
}
