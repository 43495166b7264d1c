//! The verifier's statistics, read from its log at level BPF_LOG_STATS:
//!
//! ```text
//! verification time 4521 usec
//! stack depth 64+0
//! processed 1203 insns (limit 1000000) max_states_per_insn 4 total_states 95 peak_states 95 mark_read 33
//! ```

use crate::record::VerifierStats;

/// The number after `key ` in `line`, if any.
fn after<T: std::str::FromStr>(line: &str, key: &str) -> Option<T> {
    let rest = &line[line.find(key)? + key.len()..];
    rest.split_whitespace().next()?.parse().ok()
}

/// Statistics found in a level-4 verifier log (fields the log lacks stay None).
pub fn parse_stats(log: &str) -> VerifierStats {
    let mut s = VerifierStats::default();
    for line in log.lines() {
        if line.starts_with("processed ") {
            s.processed_insns = after(line, "processed");
            s.max_states_per_insn = after(line, "max_states_per_insn");
            s.total_states = after(line, "total_states");
            s.peak_states = after(line, "peak_states");
        } else if line.starts_with("verification time ") {
            s.verification_time_us = after(line, "verification time");
        } else if let Some(depths) = line.strip_prefix("stack depth ") {
            s.stack_depth = Some(depths.trim().split('+').filter_map(|d| d.parse().ok()).collect());
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_figure_of_a_stats_log() {
        let log = "verification time 4521 usec\nstack depth 64+0+8\nprocessed 1203 insns (limit 1000000) max_states_per_insn 4 total_states 95 peak_states 90 mark_read 33\n";
        let s = parse_stats(log);
        assert_eq!(s.verification_time_us, Some(4521));
        assert_eq!(s.stack_depth, Some(vec![64, 0, 8]));
        assert_eq!(
            (s.processed_insns, s.max_states_per_insn, s.total_states, s.peak_states),
            (Some(1203), Some(4), Some(95), Some(90))
        );
        assert_eq!(parse_stats("garbage"), VerifierStats::default());
    }
}
