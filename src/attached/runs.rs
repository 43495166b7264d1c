//! Validation of an attached program's runs against the events fired: a
//! program that did not run, or ran fewer times than its trigger calls
//! for, is not timed; more runs (other processes on the same hook) are said.

use anyhow::{Result, bail};

use crate::record::attached::EventRuns;
use crate::trigger::TriggerKind;

/// What validation says of a program's runs: its check line, and a note
/// where other processes added runs.
#[derive(Debug)]
pub struct RunsJudged {
    pub check: String,
    pub note: Option<String>,
}

/// Judges the runs of program `name` at `point` over events of `trigger`.
pub fn judge(name: &str, point: &str, trigger: &TriggerKind, counted: EventRuns) -> Result<RunsJudged> {
    let EventRuns { events, runs, expected_runs_per_event: expected } = counted;
    let what = trigger.describe();
    if runs == 0 {
        bail!("'{name}' did not run: {events} events of {what} at {point} gave it no run");
    }
    let (lower, said) = match expected {
        Some(n) => (events * u64::from(n), format!("{n} per event")),
        None => (events, "at least one per event".into()),
    };
    if runs < lower {
        bail!(
            "'{name}' ran {runs} times for {events} events of {what}: fewer than the {said} expected (--expect-runs sets what to expect)"
        );
    }
    let note = match expected {
        Some(n) if runs - lower > 16 + lower / 20 => Some(format!(
            "'{name}' ran {} times more than {n} per event: other processes fire {point} too (its ns per run counts their runs alike)",
            runs - lower
        )),
        _ => None,
    };
    Ok(RunsJudged {
        check: format!(
            "{events} events of {what}: '{name}' ran {runs} times ({:.2} per event; {said} expected)",
            runs as f64 / events as f64
        ),
        note,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trigger::SimpleSyscall;

    fn counted(events: u64, runs: u64, expected_runs_per_event: Option<u32>) -> EventRuns {
        EventRuns { events, runs, expected_runs_per_event }
    }

    #[test]
    fn runs_below_the_events_fail_and_extra_runs_are_said() {
        let t = TriggerKind::Syscall(SimpleSyscall::Getppid);
        assert!(judge("p", "tp/x/y", &t, counted(100, 0, Some(1))).unwrap_err().to_string().contains("did not run"));
        assert!(
            judge("p", "tp/x/y", &t, counted(100, 99, Some(1)))
                .unwrap_err()
                .to_string()
                .contains("fewer than the 1 per event")
        );
        let exact = judge("p", "tp/x/y", &t, counted(100, 100, Some(1))).unwrap();
        assert!(exact.note.is_none() && exact.check.contains("(1.00 per event"), "{}", exact.check);
        assert!(judge("p", "tp/x/y", &t, counted(1000, 1200, Some(1))).unwrap().note.is_some());
        assert!(judge("p", "tp/x/y", &t, counted(100, 900, None)).unwrap().note.is_none());
        assert!(judge("p", "tp/x/y", &t, counted(100, 150, Some(2))).is_err());
    }
}
