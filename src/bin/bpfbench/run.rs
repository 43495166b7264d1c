//! `bpfbench run` and `list`: choose a workload and its scenarios, time
//! them, print, store and (with --compare-to) compare the result.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use bpfbench::cli::RunArgs;
use bpfbench::compare::{CompareReport, RunNoise, compare_runs, run_noise_from_history};
use bpfbench::harness::runner::{RunOptions, Runner};
use bpfbench::harness::{ScenarioInfo, Workload, groups, system};
use bpfbench::history::History;
use bpfbench::report::model::{Environment, RunOptionsRecord, RunReport, ScenarioRecord, schema};
use bpfbench::report::{self, Format};
use bpfbench::workloads;
use bpfbench::workloads::maps::{MapBench, MapKind, MapParams, Suite};

use crate::stored::emit;

fn find_workload(name: &str) -> Result<Box<dyn Workload>> {
    workloads::all()
        .into_iter()
        .find(|w| w.name() == name)
        .with_context(|| format!("unknown workload '{name}'; valid workloads: {}", workloads::names().join(", ")))
}

/// The workload `args` names, configured by its options.
fn configured_workload(args: &RunArgs) -> Result<Box<dyn Workload>> {
    let name = args.workload.as_deref().unwrap_or("xdp-lb");
    let suite = match name {
        "lpm-trie" => Suite::LpmTrie,
        "maps" => Suite::Maps,
        _ => {
            if args.maps.any() {
                bail!("--op, --map, --entries, --prefix-len, --key-size, --value-size, --random and --producers apply to the lpm-trie and maps workloads, not to {name}");
            }
            return find_workload(name);
        }
    };
    let m = &args.maps;
    if suite == Suite::LpmTrie && m.maps.iter().any(|&k| k != MapKind::LpmTrie) {
        bail!("the lpm-trie workload runs on lpm_trie maps only; use 'bpfbench run maps --map ...' for other types");
    }
    let mut p = MapParams::defaults(suite);
    if !m.ops.is_empty() {
        p.ops = m.ops.clone();
        p.ops_explicit = true;
    }
    if !m.maps.is_empty() {
        p.maps = m.maps.clone();
    }
    if !m.entries.is_empty() {
        p.entries = m.entries.clone();
    }
    p.prefix_len = m.prefix_len.unwrap_or(p.prefix_len);
    p.key_size = m.key_size.unwrap_or(p.key_size);
    p.value_size = m.value_size.unwrap_or(p.value_size);
    p.random = m.random;
    p.producers = m.producers.unwrap_or(p.producers);
    Ok(Box::new(MapBench::new(suite, p)?))
}

pub fn list(workload: Option<String>) -> Result<()> {
    let ws = match workload {
        Some(name) => vec![find_workload(&name)?],
        None => workloads::all(),
    };
    for w in ws {
        println!("{}", w.name());
        for g in groups(w.scenarios()) {
            println!("  {g}");
            for s in w.scenarios().iter().filter(|s| s.group == g) {
                println!("    {:<24} {}", s.name, s.description);
            }
        }
    }
    Ok(())
}

/// The scenarios named by --scenario/--group (all when neither is given).
fn select(w: &dyn Workload, args: &RunArgs) -> Result<Vec<ScenarioInfo>> {
    let all = w.scenarios();
    for name in &args.scenarios {
        if !all.iter().any(|s| s.name == name.as_str()) {
            let names: Vec<&str> = all.iter().map(|s| s.name.as_ref()).collect();
            bail!("unknown scenario '{name}' for {}; valid scenarios: {}", w.name(), names.join(", "));
        }
    }
    let gs = groups(all);
    for g in &args.groups {
        if !gs.iter().any(|x| x.eq_ignore_ascii_case(g)) {
            bail!("unknown group '{g}' for {}; valid groups: {}", w.name(), gs.iter().map(|g| format!("'{g}'")).collect::<Vec<_>>().join(", "));
        }
    }
    Ok(all
        .iter()
        .filter(|s| {
            (args.scenarios.is_empty() && args.groups.is_empty())
                || args.scenarios.iter().any(|n| *n == s.name)
                || args.groups.iter().any(|g| g.eq_ignore_ascii_case(&s.group))
        })
        .cloned()
        .collect())
}

fn positive(name: &str, v: f64) -> Result<f64> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        bail!("--{name} must be a positive number of seconds/milliseconds, got {v}")
    }
}

/// Prepares the process for timing: privileges, kernel, pinning, logging.
pub fn prepare(cpu: Option<usize>) -> Result<usize> {
    system::check_privileges()?;
    system::check_kernel()?;
    let cpu = match cpu {
        Some(c) => c,
        None => system::default_cpu()?,
    };
    system::pin_to_cpu(cpu)?;
    system::capture_libbpf_log();
    system::install_interrupt_handler();
    Ok(cpu)
}

pub fn run(args: RunArgs) -> Result<ExitCode> {
    let mut w = configured_workload(&args)?;
    let selected = select(w.as_ref(), &args)?;
    let opts = RunOptions {
        samples: args.samples as usize,
        batch_ms: positive("batch-ms", args.batch_ms)?,
        warmup: Duration::from_secs_f64(if args.warmup == 0.0 { 0.0 } else { positive("warmup", args.warmup)? }),
        max_scenario_time: Duration::from_secs_f64(positive("max-time", args.max_time)?),
        baseline_samples: (args.samples as usize / 4).max(20),
        progress: std::io::stderr().is_terminal(),
    };
    system::check_privileges()?;
    // Open the history and find the baseline before spending minutes measuring.
    let mut history = if args.no_store && args.compare_to.is_none() { None } else { Some(History::open(&args.db.path())?) };
    let baseline = match (&args.compare_to, &history) {
        (Some(tag), Some(h)) => {
            let ids = h.runs_with_tag(tag, args.gate.tag_runs as usize)?;
            if ids.is_empty() {
                bail!("no stored run has tag '{tag}' in {}; run once with --tag {tag} first", h.path().display());
            }
            let label = format!("tag {tag} ({} run{})", ids.len(), if ids.len() == 1 { "" } else { "s" });
            Some((label, ids.iter().map(|&id| h.load(id)).collect::<Result<Vec<_>>>()?))
        }
        _ => None,
    };
    let cpu = prepare(args.cpu)?;
    w.setup(cpu)?;

    let mut runner = Runner::new(opts.clone());
    let options = RunOptionsRecord {
        samples: opts.samples,
        batch_ms: opts.batch_ms,
        warmup_s: opts.warmup.as_secs_f64(),
        max_scenario_s: opts.max_scenario_time.as_secs_f64(),
    };
    // Rounds, newest first (the order comparisons take).
    let mut rounds: Vec<RunReport> = Vec::new();
    for round in 1..=args.repeat {
        if args.repeat > 1 && opts.progress {
            eprintln!("round {round} of {}", args.repeat);
        }
        let environment = Environment::capture(cpu);
        let results = measure(&mut runner, w.as_mut(), &selected, opts.progress);
        let report = RunReport { schema: schema(), tag: args.tag.clone(), environment, options: options.clone(), results, interrupted: system::interrupted() };
        if !report.interrupted
            && let Some(h) = history.as_mut().filter(|_| !args.no_store)
        {
            let id = h.store(&report)?;
            eprintln!("bpfbench: stored as run {id} in {}", h.path().display());
        }
        rounds.insert(0, report);
        if system::interrupted() {
            break;
        }
    }
    let report = &rounds[0];
    emit(&report::render(report, args.format, args.verbose)?, args.output.as_deref())?;
    if report.interrupted {
        return Ok(ExitCode::from(130));
    }
    let mut code = ExitCode::SUCCESS;
    if let Some((label, base)) = baseline {
        let noise = match &history {
            Some(h) => run_noise_from_history(h, &base[0])?,
            None => Default::default(),
        };
        let gate = Gate { args: &args, base: &base, base_label: &label, noise: &noise };
        if gate.fails(&rounds, &mut runner, w.as_mut(), &selected)? {
            code = ExitCode::FAILURE;
        }
    }
    let failed = report.results.iter().filter(|r| r.measurement.is_none() && r.unavailable.is_none()).count();
    if failed > 0 {
        eprintln!("bpfbench: {failed} scenario(s) failed; see above");
        return Ok(ExitCode::FAILURE);
    }
    Ok(code)
}

/// Validates and times every selected scenario once; what Ctrl-C cut short
/// is left out.
fn measure(runner: &mut Runner, w: &mut dyn Workload, selected: &[ScenarioInfo], progress: bool) -> Vec<ScenarioRecord> {
    let mut results = Vec::new();
    for (i, s) in selected.iter().enumerate() {
        if system::interrupted() {
            break;
        }
        if progress {
            eprintln!("[{}/{}] {}", i + 1, selected.len(), s.name);
        }
        results.push(runner.run_scenario(w, s));
    }
    if system::interrupted() {
        results.retain(|r| r.error.as_deref().is_none_or(|e| !e.contains("interrupted")));
    }
    results
}

/// The CI gate of `run --compare-to`: compare, then re-measure suspected
/// regressions before failing.
struct Gate<'a> {
    args: &'a RunArgs,
    base: &'a [RunReport],
    base_label: &'a str,
    noise: &'a RunNoise,
}

impl Gate<'_> {
    fn compare(&self, runs: &[RunReport], label: &str) -> CompareReport {
        compare_runs(self.base, self.base_label, runs, label, self.args.gate.threshold / 100.0, self.noise)
    }

    fn suspects(&self, cmp: &CompareReport) -> Vec<String> {
        match self.args.gate.fail_on_regression {
            Some(pct) => cmp.regressions(pct).iter().map(|b| b.benchmark.clone()).collect(),
            None => Vec::new(),
        }
    }

    fn fails(&self, rounds: &[RunReport], runner: &mut Runner, w: &mut dyn Workload, selected: &[ScenarioInfo]) -> Result<bool> {
        let label = if rounds.len() == 1 { "this run".to_string() } else { format!("this run ({} rounds)", rounds.len()) };
        let cmp = self.compare(rounds, &label);
        let text = cmp.render();
        // Keep standard output machine-readable when a format other than table was asked for.
        if self.args.format == Format::Table && self.args.output.is_none() { print!("\n{text}") } else { eprint!("{text}") }
        let mut suspects = self.suspects(&cmp);
        // A whole run can land in a slow state of a shared machine; a real
        // regression survives re-measuring, a bad run does not.
        for round in 1..=self.args.gate.confirm {
            if suspects.is_empty() || system::interrupted() {
                break;
            }
            eprintln!("bpfbench: confirming {} suspected regression(s), re-measurement {round} of {}", suspects.len(), self.args.gate.confirm);
            let workload = w.name();
            let rerun: Vec<ScenarioInfo> =
                selected.iter().filter(|s| suspects.iter().any(|b| *b == format!("{workload}/{}", s.name))).cloned().collect();
            let mut again = rounds[0].clone();
            again.results = measure(runner, w, &rerun, false);
            let cmp = self.compare(std::slice::from_ref(&again), &format!("re-measurement {round}"));
            let still = self.suspects(&cmp);
            for gone in suspects.iter().filter(|b| !still.contains(b)) {
                eprintln!("bpfbench: {gone}: not slower on re-measurement {round}; counted as noise");
            }
            if !still.is_empty() {
                eprint!("{}", cmp.render());
            }
            suspects = still;
        }
        for b in &suspects {
            eprintln!(
                "bpfbench: regression: {b} is slower than {} beyond --fail-on-regression {}%",
                self.base_label,
                self.args.gate.fail_on_regression.unwrap_or(0.0)
            );
        }
        Ok(!suspects.is_empty())
    }
}
