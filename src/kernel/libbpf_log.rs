//! libbpf's messages (verifier logs among them), kept for error reports
//! instead of scrolling past on stderr.

use std::sync::Mutex;

use libbpf_rs::PrintLevel;

static LOG: Mutex<String> = Mutex::new(String::new());
/// The warnings alone: the reason of a refusal, without the debug lines
/// libbpf writes after it.
static WARNINGS: Mutex<String> = Mutex::new(String::new());

fn collect(level: PrintLevel, msg: String) {
    if let Ok(mut log) = LOG.lock() {
        log.push_str(&msg);
    }
    if level == PrintLevel::Warn
        && let Ok(mut warnings) = WARNINGS.lock()
    {
        warnings.push_str(&msg);
    }
    if level == PrintLevel::Warn && std::env::var_os("BPFBENCH_LIBBPF_DEBUG").is_some() {
        eprint!("{msg}");
    }
}

/// Routes libbpf's messages into this module's buffer.
pub fn capture() {
    libbpf_rs::set_print(Some((PrintLevel::Debug, collect)));
}

/// Takes what libbpf logged since the last call.
pub fn take() -> String {
    if let Ok(mut w) = WARNINGS.lock() {
        w.clear();
    }
    LOG.lock().map(|mut l| std::mem::take(&mut *l)).unwrap_or_default()
}

/// The last `lines` warnings since the last [`take`], and clears the log.
pub fn warnings_tail(lines: usize) -> String {
    let warnings = WARNINGS.lock().map(|mut w| std::mem::take(&mut *w)).unwrap_or_default();
    take();
    let all: Vec<&str> = warnings.lines().filter(|l| !l.trim().is_empty()).collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The last `lines` non-empty lines of what libbpf logged (and clears it).
pub fn tail(lines: usize) -> String {
    let log = take();
    let all: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Why libbpf refused to open an object, in one line: `err` (the errno)
/// and libbpf's last warnings since the last [`take`]. Never an empty reason.
pub fn open_refusal(err: &dyn std::fmt::Display) -> String {
    let said = warnings_tail(3).lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ");
    let reason = match said.is_empty() {
        true => "libbpf said no more (BPFBENCH_LIBBPF_DEBUG=1 prints all it says)".to_string(),
        false => said,
    };
    format!("({err}): {reason}")
}
