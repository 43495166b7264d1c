//! Kernel settings a paired comparison may change (`ab --sysctl`), and the
//! promise to put them back: on success, error, Ctrl-C and SIGTERM (the
//! guard's drop, or the handler's exit path on a second signal), and after
//! a SIGKILL by the next run, which finds the original value where the
//! guard wrote it before changing anything.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result, bail};

/// The settings `ab --sysctl` accepts, with the values each may take. Only
/// settings the BPF JIT reads when a program loads: each side's programs
/// then run as the setting made them, whatever it is while they run.
pub const ALLOWED: [(&str, &[&str], &str); 2] = [
    ("net.core.bpf_jit_harden", &["0", "1", "2"], "constant blinding: 0 off, 1 unprivileged programs, 2 all"),
    ("net.core.bpf_jit_enable", &["0", "1"], "0 interprets (refused where the JIT is always on), 1 JITs"),
];

/// Where a changed setting's original value waits until it is restored.
fn state_dir() -> PathBuf {
    std::env::var_os("BPFBENCH_STATE_DIR").map_or_else(|| PathBuf::from("/run/bpfbench/sysctl"), PathBuf::from)
}

/// `name=a,b` as the command line gives it, checked against [`ALLOWED`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysctlPair {
    pub name: String,
    pub a: String,
    pub b: String,
}

impl SysctlPair {
    pub fn parse(text: &str) -> Result<SysctlPair> {
        let listed = || ALLOWED.iter().map(|(n, _, _)| *n).collect::<Vec<_>>().join(", ");
        let Some((name, values)) = text.split_once('=') else {
            bail!("--sysctl {text}: give NAME=A,B (for example net.core.bpf_jit_harden=0,2)");
        };
        let Some((_, allowed, _)) = ALLOWED.iter().find(|(n, _, _)| *n == name) else {
            bail!("--sysctl {name}: not a setting bpfbench changes; it changes {}", listed());
        };
        let Some((a, b)) = values.split_once(',') else {
            bail!("--sysctl {text}: give two values, A's and B's, as in {name}=0,2");
        };
        for v in [a, b] {
            if !allowed.contains(&v) {
                bail!("--sysctl {name}: '{v}' is not one of its values ({})", allowed.join(", "));
            }
        }
        if a == b {
            bail!("--sysctl {name}: A and B both get {a}; give two different values");
        }
        Ok(SysctlPair { name: name.to_string(), a: a.to_string(), b: b.to_string() })
    }

    /// The side's label in outputs: `net.core.bpf_jit_harden=2`.
    pub fn label(&self, value: &str) -> String {
        format!("{}={value}", self.name)
    }
}

fn proc_path(name: &str) -> PathBuf {
    Path::new("/proc/sys").join(name.replace('.', "/"))
}

fn read(name: &str) -> Result<String> {
    Ok(std::fs::read_to_string(proc_path(name)).with_context(|| format!("reading {name}"))?.trim().to_string())
}

fn write(name: &str, value: &str) -> Result<()> {
    std::fs::write(proc_path(name), value).with_context(|| format!("the kernel refused {name}={value}"))
}

/// Originals of settings changed now, for the signal handler's exit path.
static CHANGED: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// Puts back every setting a guard of this process changed: the path the
/// second Ctrl-C takes, which exits without running drops.
pub fn restore_now() {
    if let Ok(changed) = CHANGED.lock() {
        for (name, original) in changed.iter() {
            let _ = write(name, original);
            let _ = std::fs::remove_file(state_dir().join(name));
        }
    }
}

/// A setting this process may change; its original value comes back when
/// the guard drops.
pub struct SysctlGuard {
    name: String,
    original: String,
}

impl SysctlGuard {
    /// Records `name`'s value, with this process as its owner, where a
    /// later run finds it, then allows changes. Refused while another
    /// bpfbench changes the same setting.
    pub fn take(name: &str) -> Result<SysctlGuard> {
        let path = state_dir().join(name);
        if let Some((_, owner)) = recorded(&path)
            && super::other_bpfbench_alive(owner)
        {
            bail!("another bpfbench (pid {owner}) is comparing values of {name} now; wait until it ends");
        }
        restore_leftovers()?;
        let original = read(name)?;
        std::fs::create_dir_all(state_dir()).with_context(|| format!("creating {}", state_dir().display()))?;
        std::fs::write(&path, format!("{original} {}\n", std::process::id()))
            .with_context(|| format!("recording {name}'s value"))?;
        CHANGED.lock().expect("not poisoned").push((name.to_string(), original.clone()));
        Ok(SysctlGuard { name: name.to_string(), original })
    }

    /// Sets the value, unless it is set already.
    pub fn set(&self, value: &str) -> Result<()> {
        if read(&self.name)? != value {
            write(&self.name, value)?;
        }
        Ok(())
    }
}

impl Drop for SysctlGuard {
    fn drop(&mut self) {
        if let Err(e) = write(&self.name, &self.original) {
            eprintln!("bpfbench: could not restore {}={}: {}", self.name, self.original, crate::record::error_line(&e));
            return;
        }
        let _ = std::fs::remove_file(state_dir().join(&self.name));
        if let Ok(mut changed) = CHANGED.lock() {
            changed.retain(|(n, _)| *n != self.name);
        }
    }
}

/// The original value a state file holds, and the pid of the bpfbench
/// that changed the setting (0 where the file names none).
fn recorded(path: &Path) -> Option<(String, u32)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut words = text.split_whitespace();
    let value = words.next()?.to_string();
    Some((value, words.next().and_then(|p| p.parse().ok()).unwrap_or(0)))
}

/// Restores the settings a killed run left changed, and says which. A
/// setting whose bpfbench still runs is that run's to restore.
pub fn restore_leftovers() -> Result<Vec<String>> {
    let dir = state_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else { return Ok(Vec::new()) };
    let mut restored = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        // Only settings of the list: the folder is ours, but never write blindly.
        if !ALLOWED.iter().any(|(n, _, _)| *n == name) {
            continue;
        }
        let Some((original, owner)) = recorded(&entry.path()) else { continue };
        if owner == std::process::id() || super::other_bpfbench_alive(owner) {
            continue;
        }
        write(&name, &original)?;
        std::fs::remove_file(entry.path())?;
        restored.push(format!("{name}={original}"));
    }
    for what in &restored {
        eprintln!("bpfbench: restored {what}, which a run that was killed had changed");
    }
    Ok(restored)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_checked_against_the_list() {
        let p = SysctlPair::parse("net.core.bpf_jit_harden=0,2").unwrap();
        assert_eq!((p.a.as_str(), p.b.as_str()), ("0", "2"));
        assert_eq!(p.label("2"), "net.core.bpf_jit_harden=2");
        for (bad, why) in [
            ("kernel.panic=0,1", "not a setting bpfbench changes"),
            ("net.core.bpf_jit_harden=0", "give two values"),
            ("net.core.bpf_jit_harden=0,3", "'3' is not one of its values"),
            ("net.core.bpf_jit_harden=1,1", "both get 1"),
            ("net.core.bpf_jit_harden", "give NAME=A,B"),
        ] {
            let e = SysctlPair::parse(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
