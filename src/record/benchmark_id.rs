//! A benchmark's identity: what a figure is of. Two figures compare (in
//! `compare`, `changes`, a history's series, `ab`'s names) only when their
//! identities are equal, so the identity holds everything that changes what
//! is measured: the workload and scenario, the parameters a scenario's name
//! does not carry (a map's key and value size, ...), the runtime, how it was
//! timed and the metric.
//!
//! Its text form is the name the history stores and users type:
//! `xdp-lb/tcp-v4-ch`, `xdp-lb/tcp-v4-ch@user@inline`,
//! `maps/hash/lookup/10000[key=16,value=64]`, `xdp-lb/tcp-v4-ch@user@insns`.
//! Names of benchmarks without parameters read as they always did.

use std::fmt;

use super::{Metric, Runtime, ScenarioFacts, ScenarioRecord, Timing};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BenchmarkId {
    pub workload: String,
    /// The scenario's name ("tcp-v4-ch", "hash/lookup/10000").
    pub scenario: String,
    /// What changes the figure and the name does not say, as (name, value)
    /// in a fixed order; a flag has an empty value.
    pub params: Vec<(String, String)>,
    pub runtime: Runtime,
    /// How it was timed, as its suffix names it ("inline", "bpf-loop");
    /// `None` for the may_goto loop with the body called.
    pub timing: Option<String>,
    pub metric: Metric,
}

/// The timing modes' suffixes (see [`Timing::suffix`]), for parsing.
const TIMINGS: [&str; 6] = ["inline", "bpf-loop", "bounded", "chain", "per-call-host", "per-call"];

impl BenchmarkId {
    /// The identity of a scenario's figures.
    pub fn of(r: &ScenarioRecord) -> BenchmarkId {
        // A kernel count is named as its time is, as it always was: the
        // comparisons pair a count only with a count.
        let metric = match r.metric() {
            Some(Metric::Insns) => Metric::Insns,
            Some(Metric::Time | Metric::KernelInsns) | None => Metric::Time,
        };
        BenchmarkId {
            workload: r.workload.clone(),
            scenario: r.name.clone(),
            params: params(&r.name, &r.facts),
            runtime: r.runtime,
            timing: timing_key(&r.timing),
            metric,
        }
    }

    /// A paired case's identity: `ab` times in the kernel, in ns.
    pub fn of_case(workload: &str, scenario: &str, facts: &ScenarioFacts, timing: &Timing) -> BenchmarkId {
        BenchmarkId {
            workload: workload.to_string(),
            scenario: scenario.to_string(),
            params: params(scenario, facts),
            runtime: Runtime::Kernel,
            timing: timing_key(timing),
            metric: Metric::Time,
        }
    }

    /// Parses the text form; `None` for text no benchmark has
    /// (no `workload/` in front).
    pub fn parse(text: &str) -> Option<BenchmarkId> {
        let mut rest = text;
        let (mut runtime, mut timing, mut metric) = (Runtime::Kernel, None, Metric::Time);
        // Suffixes from the right, each at most once, in the order written.
        if let Some(r) = rest.strip_suffix("@insns") {
            (rest, metric) = (r, Metric::Insns);
        }
        if let Some((r, t)) = TIMINGS.iter().find_map(|t| Some((rest.strip_suffix(&format!("@{t}"))?, *t))) {
            (rest, timing) = (r, Some(t.to_string()));
        }
        if let Some(r) = rest.strip_suffix("@user") {
            (rest, runtime) = (r, Runtime::User);
        }
        let mut params = Vec::new();
        if let Some(open) = rest.strip_suffix(']').and_then(|r| r.rfind('[').map(|i| (i, r))) {
            let (i, r) = open;
            params = r[i + 1..]
                .split(',')
                .map(|p| match p.split_once('=') {
                    Some((k, v)) => (k.to_string(), v.to_string()),
                    None => (p.to_string(), String::new()),
                })
                .collect();
            rest = &r[..i];
        }
        let (workload, scenario) = rest.split_once('/')?;
        if workload.is_empty() || scenario.is_empty() {
            return None;
        }
        Some(BenchmarkId {
            workload: workload.to_string(),
            scenario: scenario.to_string(),
            params,
            runtime,
            timing,
            metric,
        })
    }

    /// Whether a user's `--scenario NAME` names this benchmark: its whole
    /// name, or its scenario in any runtime, timing, metric and parameters.
    pub fn matches(&self, name: &str) -> bool {
        self.scenario == name || self.to_string() == name
    }

    /// Whether this is scenario `scenario` of `workload`, however it was
    /// measured.
    pub fn is_scenario(&self, workload: &str, scenario: &str) -> bool {
        self.workload == workload && self.scenario == scenario
    }

    /// "workload/scenario[params]": what was measured, leaving out by what
    /// means (runtime, timing mode, metric); tables that set the means side
    /// by side (kernel against userspace, kernel against kernel) key rows by it.
    pub fn measured(&self) -> String {
        let mut out = format!("{}/{}", self.workload, self.scenario);
        if !self.params.is_empty() {
            let params: Vec<String> =
                self.params.iter().map(|(k, v)| if v.is_empty() { k.clone() } else { format!("{k}={v}") }).collect();
            out.push_str(&format!("[{}]", params.join(",")));
        }
        out
    }
}

impl fmt::Display for BenchmarkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.measured())?;
        f.write_str(self.runtime.suffix())?;
        if let Some(t) = &self.timing {
            write!(f, "@{t}")?;
        }
        if self.metric == Metric::Insns {
            f.write_str("@insns")?;
        }
        Ok(())
    }
}

/// The timing's key in a name: its suffix without the `@`.
fn timing_key(t: &Timing) -> Option<String> {
    t.suffix().strip_prefix('@').map(str::to_string)
}

/// The parameters of a map benchmark its name leaves out: key and value
/// size always, the entries where the name does not end in them (the
/// lpm-trie suite's single size), the prefix length, random keys, more than
/// one producer.
fn params(scenario: &str, facts: &ScenarioFacts) -> Vec<(String, String)> {
    let Some(m) = &facts.map else { return Vec::new() };
    let mut out = Vec::new();
    if !scenario.ends_with(&format!("/{}", m.entries)) {
        out.push(("entries".to_string(), m.entries.to_string()));
    }
    out.push(("key".to_string(), m.key_size.to_string()));
    out.push(("value".to_string(), m.value_size.to_string()));
    if let Some(p) = m.prefix_len {
        out.push(("prefix".to_string(), p.to_string()));
    }
    if m.random {
        out.push(("random".to_string(), String::new()));
    }
    if facts.producers > 1 {
        out.push(("producers".to_string(), facts.producers.to_string()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> BenchmarkId {
        BenchmarkId::parse(text).unwrap_or_else(|| panic!("{text} does not parse"))
    }

    #[test]
    fn every_form_reads_back_as_written() {
        for text in [
            "xdp-lb/tcp-v4-ch",
            "xdp-lb/tcp-v4-ch@user",
            "xdp-lb/tcp-v4-ch@inline",
            "xdp-lb/tcp-v4-ch@user@inline",
            "xdp-lb/tcp-v4-ch@user@insns",
            "obj/case@per-call-host",
            "maps/hash/lookup/10000[key=16,value=64]",
            "lpm-trie/lookup[entries=10000,key=8,value=8,prefix=24,random,producers=2]@bpf-loop",
        ] {
            assert_eq!(id(text).to_string(), text);
        }
        let m = id("maps/hash/lookup/10000[key=16,value=64]@user@bounded@insns");
        assert_eq!((m.workload.as_str(), m.scenario.as_str()), ("maps", "hash/lookup/10000"));
        assert_eq!(m.params, [("key".to_string(), "16".to_string()), ("value".to_string(), "64".to_string())]);
        assert_eq!((m.runtime, m.timing.as_deref(), m.metric), (Runtime::User, Some("bounded"), Metric::Insns));
        assert!(BenchmarkId::parse("no-workload").is_none());
    }

    #[test]
    fn a_scenario_matches_in_any_mode_and_no_longer_name_does() {
        assert!(id("xdp-lb/tcp-v4-ch@user@inline").matches("tcp-v4-ch"));
        assert!(id("maps/hash/lookup/10000[key=4,value=8]").matches("hash/lookup/10000"));
        assert!(id("xdp-lb/tcp-v4-ch@inline").matches("xdp-lb/tcp-v4-ch@inline"));
        assert!(!id("xdp-lb/tcp-v4-ch-diverse").matches("tcp-v4-ch"));
        assert!(!id("xdp-lb/tcp-v4-ch@inline").matches("xdp-lb/tcp-v4-ch"));
        assert!(id("xdp-lb/tcp-v4-ch@user").is_scenario("xdp-lb", "tcp-v4-ch"));
        assert!(!id("maps/tcp-v4-ch").is_scenario("xdp-lb", "tcp-v4-ch"));
    }
}
