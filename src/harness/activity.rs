//! Long waits said while they last: a step that takes seconds before any
//! figure (the verifier walking a large program spliced into a driver)
//! reports what it is doing and the seconds so far, so that a run of large
//! programs is never silent for minutes. Short steps say nothing.
//!
//! The library does not print: the binary installs a reporter
//! ([`set_reporter`]); without one, nothing is said.

use std::sync::mpsc::{RecvTimeoutError, channel};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

type Reporter = Arc<dyn Fn(&str) + Send + Sync>;

static REPORTER: RwLock<Option<Reporter>> = RwLock::new(None);

/// A step is said once it has lasted this long (`BPFBENCH_SAY_AFTER_MS`
/// sets another, as the tests do), then again every `EVERY`.
const FIRST: Duration = Duration::from_secs(2);
const EVERY: Duration = Duration::from_secs(5);

fn first() -> Duration {
    std::env::var("BPFBENCH_SAY_AFTER_MS").ok().and_then(|v| v.parse().ok()).map_or(FIRST, Duration::from_millis)
}

/// Where the lines go (the binary's stderr): one line a call.
pub fn set_reporter(report: impl Fn(&str) + Send + Sync + 'static) {
    *REPORTER.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(report));
}

/// Runs `step`, saying `what` it is doing with the seconds so far while it
/// lasts past two seconds, and how long it took at its end.
pub fn during<T>(what: &str, step: impl FnOnce() -> T) -> T {
    let Some(report) = REPORTER.read().unwrap_or_else(|e| e.into_inner()).clone() else { return step() };
    let start = Instant::now();
    let first = first();
    let (done, wait) = channel::<()>();
    let line = what.to_string();
    let watcher = {
        let report = report.clone();
        std::thread::spawn(move || {
            let mut next = first;
            loop {
                match wait.recv_timeout(next.saturating_sub(start.elapsed())) {
                    Err(RecvTimeoutError::Timeout) => {
                        report(&format!("{line}: {} s so far", start.elapsed().as_secs()));
                        next += EVERY;
                    }
                    _ => return,
                }
            }
        })
    };
    let out = step();
    drop(done);
    let _ = watcher.join();
    let took = start.elapsed();
    if took >= first {
        report(&format!("{what}: done in {:.1} s", took.as_secs_f64()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn a_long_step_is_said_with_its_seconds_and_a_short_one_is_not() {
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink = lines.clone();
        set_reporter(move |l| sink.lock().unwrap().push(l.to_string()));
        assert_eq!(during("quick", || 1), 1);
        assert!(lines.lock().unwrap().is_empty());
        during("verifying a driver", || std::thread::sleep(Duration::from_millis(2300)));
        let said = lines.lock().unwrap().clone();
        assert_eq!(said.len(), 2, "{said:?}");
        assert_eq!(said[0], "verifying a driver: 2 s so far");
        assert!(said[1].starts_with("verifying a driver: done in 2."), "{said:?}");
    }
}
