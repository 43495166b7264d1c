//! A real PostgreSQL server of the test's own: Debian's `postgresql`
//! binaries (scripts/setup.sh installs them), a cluster made by `initdb` in
//! a fresh directory, listening on a free loopback port. Dropping it stops
//! the server and removes the directory, also when the test fails; if the
//! test process itself is killed, the server dies with it (parent-death
//! signal) and the next fixture removes the directory left behind.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const DIR_PREFIX: &str = "bpfbench-test-pg-";
pub const USER: &str = "bpfbench";
pub const PASSWORD: &str = "bench-secret";

pub struct Postgres {
    dir: PathBuf,
    server: Child,
    pub port: u16,
}

/// The newest PostgreSQL's binaries directory.
fn bin_dir() -> PathBuf {
    let mut dirs: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, p)| p.join("postgres").exists())
        .collect();
    dirs.sort();
    dirs.pop().map(|(_, p)| p).expect("PostgreSQL is not installed: scripts/setup.sh test installs Debian's postgresql")
}

/// The server may not run as root: it runs as Debian's `postgres` user.
fn server_user() -> (u32, u32) {
    let name = std::ffi::CString::new("postgres").unwrap();
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    assert!(!pw.is_null(), "no 'postgres' user: Debian's postgresql package creates it");
    unsafe { ((*pw).pw_uid, (*pw).pw_gid) }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Directories of servers whose test process is gone (killed before its
/// fixture could clean up).
fn remove_leftovers() {
    for entry in std::fs::read_dir(std::env::temp_dir()).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix(DIR_PREFIX).and_then(|r| r.split('-').next()?.parse::<u32>().ok()) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Makes a CA and a certificate for 127.0.0.1 that it signed (openssl), in `dir`.
fn make_certificates(dir: &Path) {
    let openssl = |args: &[&str]| {
        let o = Command::new("openssl").args(args).current_dir(dir).output().expect("openssl");
        assert!(o.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    };
    openssl(
        &["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2"]
            .into_iter()
            .chain(["-subj", "/CN=bpfbench test CA"])
            .collect::<Vec<_>>(),
    );
    std::fs::write(dir.join("ext"), "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n").unwrap();
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "ext",
    ]);
}

impl Postgres {
    pub fn start() -> Postgres {
        Postgres::start_with(false)
    }

    /// A server that offers TLS with a certificate for 127.0.0.1 signed by
    /// the CA at [`Postgres::ca`], and logs each connection (with its TLS).
    pub fn start_tls() -> Postgres {
        Postgres::start_with(true)
    }

    /// The CA certificate (PEM) of a [`Postgres::start_tls`] server.
    pub fn ca(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    fn start_with(tls: bool) -> Postgres {
        remove_leftovers();
        static COUNT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("{DIR_PREFIX}{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (uid, gid) = server_user();
        std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).unwrap();
        let pwfile = dir.join("pw");
        std::fs::write(&pwfile, PASSWORD).unwrap();
        std::os::unix::fs::chown(&pwfile, Some(uid), Some(gid)).unwrap();
        let bin = bin_dir();
        let out = Command::new(bin.join("initdb"))
            .args(["-D", "data", "-U", USER, "-E", "UTF8", "--no-sync", "--auth-local=trust"])
            .args(["--auth-host=scram-sha-256", "--pwfile=pw"])
            .current_dir(&dir)
            .uid(uid)
            .gid(gid)
            .output()
            .unwrap();
        assert!(out.status.success(), "initdb failed: {}", String::from_utf8_lossy(&out.stderr));
        let log = std::fs::File::create(dir.join("server.log")).unwrap();
        std::os::unix::fs::chown(dir.join("server.log"), Some(uid), Some(gid)).unwrap();
        let port = free_port();
        let mut cmd = Command::new(bin.join("postgres"));
        cmd.args(["-D", "data", "-p", &port.to_string(), "-k"]).arg(&dir).args([
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "fsync=off",
            "-c",
            "max_connections=40",
        ]);
        if tls {
            make_certificates(&dir);
            for f in ["server.key", "server.pem"] {
                std::os::unix::fs::chown(dir.join(f), Some(uid), Some(gid)).unwrap();
            }
            std::fs::set_permissions(dir.join("server.key"), std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .unwrap();
            cmd.args(["-c", "ssl=on", "-c", "ssl_cert_file=../server.pem", "-c", "ssl_key_file=../server.key"])
                .args(["-c", "log_connections=on"]);
        }
        cmd.current_dir(&dir).stdout(Stdio::null()).stderr(log).uid(uid).gid(gid);
        // Set after the uid change (which clears it): the server dies with us.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let server = cmd.spawn().expect("starting postgres");
        let mut pg = Postgres { dir, server, port };
        pg.wait_ready();
        pg
    }

    fn wait_ready(&mut self) {
        let start = Instant::now();
        loop {
            if postgres::Client::connect(&self.url("postgres"), postgres::NoTls).is_ok() {
                return;
            }
            if let Ok(Some(status)) = self.server.try_wait() {
                panic!("postgres exited ({status}): {}", self.log());
            }
            assert!(start.elapsed() < Duration::from_secs(60), "postgres did not start: {}", self.log());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    /// A URL of database `db` with the superuser's credentials.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://{USER}:{PASSWORD}@127.0.0.1:{}/{db}", self.port)
    }

    /// A new, empty database; its URL.
    pub fn database(&self, name: &str) -> String {
        self.client().batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
        self.url(name)
    }

    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.url("postgres"), postgres::NoTls).unwrap()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // SIGINT is PostgreSQL's fast shutdown: open sessions are ended.
        unsafe { libc::kill(self.server.id() as i32, libc::SIGINT) };
        let start = Instant::now();
        while matches!(self.server.try_wait(), Ok(None)) {
            if start.elapsed() > Duration::from_secs(20) {
                let _ = self.server.kill();
                let _ = self.server.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
