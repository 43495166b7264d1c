//! `bpfbench ab A B` as the user asks for it: what A and B are (two BPF
//! objects, two builds of a workload's object, one workload in two
//! runtimes, two bpfbench executables, one workload under two kernel
//! settings), checked before anything loads;
//! then the paired comparison timed, or both builds' instructions counted.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use super::paired::{LocalBuild, PairedObserver, PairedPlan, PairedRules, run};
use super::setting_build::SettingBuild;
use super::worker::{BootingWorker, Worker};
use super::{Plan, Quiet, Selection, builds};
use crate::compare::{RunNoise, compare_runs};
use crate::harness::runner::Profile;
use crate::harness::timing::BodyChoice;
use crate::harness::{ScenarioInfo, Workload};
use crate::record::paired::{NotCompared, PairedRecord};
use crate::record::{ComparisonRecord, Metric, RunRecord, Runtime};
use crate::system::guest::{self, GuestSpec};
use crate::system::sysctl::{SysctlGuard, SysctlPair};
use crate::system::{self, interrupt};

/// What A and B are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Builds {
    /// Two of the user's BPF objects (or spec files).
    Objects,
    /// Two builds of a built-in workload's BPF object.
    WorkloadObjects(String),
    /// One workload's own object in two runtimes (B/A = B's runtime over A's).
    Runtimes(String, Runtime, Runtime),
    /// Two bpfbench executables, each serving batches from a worker process.
    Executables,
    /// One workload (a built-in's name, or your object's path) loaded under
    /// two values of a kernel setting (`--sysctl`).
    Setting(String, SysctlPair),
    /// Two kernels (`--kernel A --kernel B`), a worker in a guest of each.
    Kernels(PathBuf, PathBuf),
    /// Two folders: two builds of a suite (a project's test objects, a
    /// corpus of spec files), compared case by case.
    Suites,
}

/// A paired comparison as asked for.
pub struct PairedRequest<'m> {
    pub a: PathBuf,
    pub b: PathBuf,
    /// `--workload`: A and B are builds (or runtimes) of this workload.
    pub workload: Option<String>,
    /// `--sysctl NAME=A,B`: A and B are one workload under two settings.
    pub sysctl: Option<String>,
    /// `--kernel A --kernel B`: A and B are two kernels.
    pub kernels: Vec<String>,
    /// With kernels: more command line for both guests, and for B's only.
    pub append: (Option<String>, Option<String>),
    /// `-s` and `-g`.
    pub select: Selection,
    pub rules: PairedRules,
    pub metric: Metric,
    pub cpu: Option<usize>,
    pub tag: Option<String>,
    /// Two executables: the arguments of `bpfbench run` both get.
    pub run_args: Vec<String>,
    /// Where A's and B's workloads come from.
    pub workloads: &'m dyn WorkloadSource,
}

/// Where workloads come from: the registry (`crate::workloads`, a layer
/// above this one) with the command line's workload options.
pub trait WorkloadSource {
    /// The workload `target` names (a workload's name, or a file one claims).
    fn build(&self, target: &str) -> Result<Box<dyn Workload>>;
    /// The workload `name` on `object`, a build of its own BPF source.
    fn build_with_object(&self, name: &str, object: &Path) -> Result<Box<dyn Workload>>;
}

/// The noise threshold of kernel A/B in TCG guests at least: each guest
/// carries an offset of its own for as long as it runs (its place in the
/// emulator's caches and memory), which rounds of fresh loads inside it do
/// not redraw. Measured here: two guests of one kernel, five times over
/// three scenarios, gave B/A 0.98-1.04 (every verdict uncertain).
const TCG_GUEST_SPREAD: f64 = 0.05;

/// A guest that has not booted, or has not answered a request, within this
/// is stopped.
const GUEST_BOUND: std::time::Duration = std::time::Duration::from_secs(600);

/// The paired comparison's default noise threshold, in percent: pairs
/// resolve about ±1% in a second (the whole-run default is 2%).
pub const THRESHOLD_PCT: &str = "1";

/// The workload whose options `ab` takes: --workload, else A when it is one
/// of your own programs (executables take theirs after --).
pub fn options_target(ab: &clap::ArgMatches) -> Option<String> {
    if let Some(w) = ab.get_one::<String>("workload") {
        return Some(w.clone());
    }
    let a = ab.get_one::<std::path::PathBuf>("a")?;
    (is_own_program(a) || a.is_dir()).then(|| a.display().to_string())
}

/// Whether `p` is one of the user's programs: a BPF object or a spec file
/// (else, for `ab`, an executable).
pub fn is_own_program(p: &Path) -> bool {
    // A missing `.o` is meant as an object too: its options then parse, and
    // the run says the file is missing (not that `--packet` is unknown).
    let missing_object = !p.exists() && p.extension().is_some_and(|e| e == "o");
    crate::kernel::object::is_bpf_elf(p) || p.extension().is_some_and(|e| e == "toml") || missing_object
}

impl PairedRequest<'_> {
    /// What A and B are, with every check that needs nothing loaded.
    pub fn builds(&self) -> Result<Builds> {
        if let Some(text) = &self.sysctl {
            return self.setting(text);
        }
        if !self.kernels.is_empty() {
            return self.kernels();
        }
        if let Some((ra, rb)) = self.runtimes()? {
            let name = self.workload.clone().expect("runtimes() checked");
            return Ok(Builds::Runtimes(name, ra, rb));
        }
        if self.a.is_dir() || self.b.is_dir() {
            return self.suites();
        }
        for p in [&self.a, &self.b] {
            if !p.exists() {
                bail!("{} does not exist; give two BPF objects or two bpfbench executables", p.display());
            }
            if !p.is_file() {
                bail!("{} is not a file; give two BPF objects or two bpfbench executables", p.display());
            }
        }
        let (a, b) = (is_own_program(&self.a), is_own_program(&self.b));
        if a != b {
            let (obj, other) = if a { (&self.a, &self.b) } else { (&self.b, &self.a) };
            bail!(
                "{} is a BPF object (or spec file) but {} is not; A and B must be of one kind",
                obj.display(),
                other.display()
            );
        }
        let builds = match (&self.workload, a) {
            (Some(w), true) => Builds::WorkloadObjects(w.clone()),
            (None, true) => Builds::Objects,
            (Some(_), false) => bail!(
                "--workload takes two BPF objects built from that workload's source; for two bpfbench executables name the workload after --"
            ),
            (None, false) => Builds::Executables,
        };
        if builds == Builds::Executables {
            builds::check_run_args(&self.run_args)?;
        } else if !self.run_args.is_empty() {
            bail!(
                "arguments after -- are for two bpfbench executables; with BPF objects give the options before A and B"
            );
        }
        Ok(builds)
    }

    /// `ab --sysctl NAME=A,B (--workload W | A.bpf.o)`.
    fn setting(&self, text: &str) -> Result<Builds> {
        let pair = SysctlPair::parse(text)?;
        let given = |p: &Path| !p.as_os_str().is_empty();
        if given(&self.b) || !self.run_args.is_empty() {
            bail!("--sysctl compares one workload under two settings: give one BPF object or --workload, not A and B");
        }
        if self.metric == Metric::Insns {
            bail!(
                "--sysctl changes how the kernel JITs; --metric insns counts in the userspace runtime, which it does not touch"
            );
        }
        let target = match (&self.workload, given(&self.a)) {
            (Some(_), true) => bail!("--sysctl takes --workload W or one BPF object, not both"),
            (Some(w), false) => w.clone(),
            (None, true) if is_own_program(&self.a) => self.a.display().to_string(),
            (None, true) => {
                bail!("{} is not a BPF object (or spec file); with --sysctl give one, or --workload", self.a.display())
            }
            (None, false) => bail!("--sysctl needs what to run: --workload W or one BPF object"),
        };
        Ok(Builds::Setting(target, pair))
    }

    /// `ab [--tests F] A_DIR B_DIR`: two builds of a suite.
    fn suites(&self) -> Result<Builds> {
        let (dir, other) = if self.a.is_dir() { (&self.a, &self.b) } else { (&self.b, &self.a) };
        if !other.exists() {
            bail!(
                "{} does not exist; to compare two builds of a suite give two folders (Cilium's test objects, or a corpus of spec files)",
                other.display()
            );
        }
        if !other.is_dir() {
            bail!(
                "{} is a folder and {} is not; give two folders (two builds of a suite) or two files (BPF objects, bpfbench executables)",
                dir.display(),
                other.display()
            );
        }
        if self.workload.is_some() || !self.run_args.is_empty() {
            bail!(
                "two folders are two builds of a suite: give its options (--tests cilium) before A and B, not --workload or --"
            );
        }
        Ok(Builds::Suites)
    }

    /// `ab --kernel A --kernel B -- RUN_ARGS`.
    fn kernels(&self) -> Result<Builds> {
        let [a, b] = self.kernels.as_slice() else {
            bail!(
                "--kernel takes two kernels, A's and B's (the same one twice with --append-b compares command lines)"
            );
        };
        if !self.a.as_os_str().is_empty() || self.workload.is_some() || self.sysctl.is_some() {
            bail!("--kernel compares two kernels: give the workload and its options after --, not A and B");
        }
        if self.metric == Metric::Insns {
            bail!("--metric insns counts in the userspace runtime, which is the same on every kernel");
        }
        builds::check_run_args(&self.run_args)?;
        Ok(Builds::Kernels(guest::resolve_image(a)?, guest::resolve_image(b)?))
    }

    /// `ab --workload W kernel user`: A and B name runtimes, not files.
    fn runtimes(&self) -> Result<Option<(Runtime, Runtime)>> {
        let word = |p: &Path| if p.exists() { None } else { p.to_str().and_then(Runtime::from_name) };
        match (word(&self.a), word(&self.b)) {
            (Some(a), Some(b)) if self.workload.is_some() => {
                if a == b {
                    bail!("A and B are both the {} runtime; compare kernel with user", a.label());
                }
                if self.metric == Metric::Insns {
                    bail!("--metric insns counts in the userspace runtime only; compare kernel with user by time");
                }
                Ok(Some((a, b)))
            }
            (Some(_), Some(_)) => {
                bail!("to compare runtimes name the workload: bpfbench ab --workload xdp-lb kernel user")
            }
            _ => Ok(None),
        }
    }

    /// The workload a BPF object build is.
    fn build(&self, builds: &Builds, object: &Path) -> Result<Box<dyn Workload>> {
        match builds {
            Builds::WorkloadObjects(name) => self.workloads.build_with_object(name, object),
            _ => self.workloads.build(&object.display().to_string()),
        }
    }

    fn plan(
        &self,
        workload: &str,
        labels: (String, String),
        scenarios: Vec<ScenarioInfo>,
        cpu: usize,
    ) -> PairedPlan<'static> {
        PairedPlan {
            workload: workload.to_string(),
            labels,
            scenarios,
            rules: self.rules.clone(),
            tag: self.tag.clone(),
            cpu,
            stop: interrupt::flag(),
            suite: false,
            left_out: Vec::new(),
        }
    }

    /// Times A against B, case by case, on one CPU (`--metric time`).
    pub fn compare(&self, builds: &Builds, observer: &mut dyn PairedObserver) -> Result<PairedRecord> {
        let cpu = system::prepare_for_timing(self.cpu)?;
        let labels = (self.a.display().to_string(), self.b.display().to_string());
        match builds {
            Builds::Objects | Builds::WorkloadObjects(_) | Builds::Suites => {
                let (wa, wb) = (self.build(builds, &self.a)?, self.build(builds, &self.b)?);
                let selected = super::select(wa.as_ref(), &self.select.scenarios, &self.select.groups)?;
                let plan = if wa.is_suite() {
                    let (both, left_out) = self.in_both(selected, wa.as_ref(), wb.as_ref())?;
                    for c in &left_out {
                        observer.note(&format!("{}: not compared ({})", c.name, c.why));
                    }
                    let mut plan = self.plan(wa.name(), labels, both, cpu);
                    (plan.suite, plan.left_out) = (true, left_out);
                    plan
                } else {
                    check_same_scenarios(&selected, wb.name(), wb.scenarios())?;
                    self.plan(wa.name(), labels, selected, cpu)
                };
                let (mut la, mut lb) = (LocalBuild::new(wa.as_ref(), cpu), LocalBuild::new(wb.as_ref(), cpu));
                run(plan, &mut la, &mut lb, observer)
            }
            Builds::Runtimes(name, ra, rb) => {
                let mut w = self.workloads.build(name)?;
                // The userspace runtime runs the body called: the kernel's side must too.
                w.set_body(BodyChoice::Call)?;
                let scenarios = super::select(w.as_ref(), &self.select.scenarios, &self.select.groups)?;
                let labels = (ra.label().to_string(), rb.label().to_string());
                let (mut a, mut b) = (
                    LocalBuild::new(w.as_ref(), cpu).in_runtime(*ra),
                    LocalBuild::new(w.as_ref(), cpu).in_runtime(*rb),
                );
                run(self.plan(w.name(), labels, scenarios, cpu), &mut a, &mut b, observer)
            }
            Builds::Setting(target, pair) => {
                let w = self.workloads.build(target)?;
                let scenarios = super::select(w.as_ref(), &self.select.scenarios, &self.select.groups)?;
                let guard = SysctlGuard::take(&pair.name)?;
                let labels = (pair.label(&pair.a), pair.label(&pair.b));
                let (mut a, mut b) = (
                    SettingBuild::new(LocalBuild::new(w.as_ref(), cpu), &guard, &pair.a),
                    SettingBuild::new(LocalBuild::new(w.as_ref(), cpu), &guard, &pair.b),
                );
                run(self.plan(w.name(), labels, scenarios, cpu), &mut a, &mut b, observer)
            }
            Builds::Kernels(ia, ib) => {
                guest::check_tools()?;
                let accel = guest::accelerator(ia);
                // Each guest has one CPU; both run on this process's CPU.
                let mut run_args = self.run_args.clone();
                run_args.extend(["--cpu".to_string(), "0".to_string()]);
                let (both, only_b) = &self.append;
                let append_b = [both.as_deref(), only_b.as_deref()].into_iter().flatten().collect::<Vec<_>>().join(" ");
                let spec = |image: &Path, append: Option<String>| GuestSpec {
                    image: image.to_path_buf(),
                    append: append.filter(|a| !a.is_empty()),
                    bound: GUEST_BOUND,
                    cpus: 1,
                    plugin: None,
                };
                let labels = (format!("kernel A ({})", self.kernels[0]), format!("kernel B ({})", self.kernels[1]));
                // Both boot at once.
                let booting_a = BootingWorker::boot(&labels.0, &spec(ia, both.clone()), accel, &run_args)?;
                let booting_b = BootingWorker::boot(&labels.1, &spec(ib, Some(append_b)), accel, &run_args)?;
                let (mut a, mut b) = (booting_a.ready()?, booting_b.ready()?);
                let scenarios =
                    super::select_from(&a.workload, &a.scenarios, &self.select.scenarios, &self.select.groups)?;
                check_same_scenarios(&scenarios, &b.workload, &b.scenarios)?;
                let name = a.workload.clone();
                let mut plan = self.plan(&name, labels, scenarios, cpu);
                if accel == guest::Accelerator::Tcg && plan.rules.threshold < TCG_GUEST_SPREAD {
                    observer.note(&format!(
                        "the guests run under TCG: noise threshold raised from {:.1}% to {:.0}%, as two guests of one kernel differ by up to 4% here (docs/src/guide/kernels.md)",
                        plan.rules.threshold * 100.0,
                        TCG_GUEST_SPREAD * 100.0
                    ));
                    plan.rules.threshold = TCG_GUEST_SPREAD;
                }
                let mut record = run(plan, &mut a, &mut b, observer)?;
                record.guests = [a.guest.take(), b.guest.take()].into_iter().flatten().collect();
                Ok(record)
            }
            Builds::Executables => {
                let mut run_args = self.run_args.clone();
                run_args.extend(["--cpu".to_string(), cpu.to_string()]);
                let mut a = Worker::spawn(&self.a, &run_args)?;
                let mut b = Worker::spawn(&self.b, &run_args)?;
                let scenarios =
                    super::select_from(&a.workload, &a.scenarios, &self.select.scenarios, &self.select.groups)?;
                check_same_scenarios(&scenarios, &b.workload, &b.scenarios)?;
                let name = a.workload.clone();
                run(self.plan(&name, labels, scenarios, cpu), &mut a, &mut b, observer)
            }
        }
    }

    /// Of two builds of a suite: the selected cases B has too, and the
    /// cases only one of them has (B's counted where its group was
    /// selected, or all when nothing was).
    fn in_both(
        &self,
        selected: Vec<ScenarioInfo>,
        wa: &dyn Workload,
        wb: &dyn Workload,
    ) -> Result<(Vec<ScenarioInfo>, Vec<NotCompared>)> {
        let has = |w: &dyn Workload, name: &str| w.scenarios().iter().any(|x| x.name == name);
        let (both, only_a): (Vec<ScenarioInfo>, Vec<ScenarioInfo>) =
            selected.into_iter().partition(|s| has(wb, &s.name));
        let whole = self.select.scenarios.is_empty() && self.select.groups.is_empty();
        let only_b = wb
            .scenarios()
            .iter()
            .filter(|s| !has(wa, &s.name) && (whole || self.select.groups.contains(&s.group.to_string())));
        let left_out: Vec<NotCompared> = only_a
            .iter()
            .map(|s| NotCompared {
                name: s.name.to_string(),
                why: format!("only in A ({})", self.a.display()),
                fails_on_b_only: false,
            })
            .chain(only_b.map(|s| NotCompared {
                name: s.name.to_string(),
                why: format!("only in B ({})", self.b.display()),
                fails_on_b_only: false,
            }))
            .collect();
        if both.is_empty() {
            bail!(
                "A ({}) and B ({}) have no case in common; two builds of a suite are compared on the cases both have",
                self.a.display(),
                self.b.display()
            );
        }
        Ok((both, left_out))
    }

    /// Counts A's and B's instructions per packet in the userspace runtime,
    /// after the same validation (`--metric insns`). Counts are exact, so
    /// one count a side is the comparison: no pairing, no statistics.
    pub fn count(&self, builds: &Builds) -> Result<ComparisonRecord> {
        if *builds == Builds::Suites {
            bail!(
                "--metric insns counts in the userspace runtime, which runs no suite's tests; two builds of a suite compare by time, each case with its entry's instructions beside it"
            );
        }
        if !matches!(builds, Builds::Objects | Builds::WorkloadObjects(_)) {
            bail!(
                "--metric insns compares two BPF objects; for two bpfbench executables run each with --metric insns and use 'bpfbench compare'"
            );
        }
        let (wa, wb) = (self.build(builds, &self.a)?, self.build(builds, &self.b)?);
        let scenarios = super::select(wa.as_ref(), &self.select.scenarios, &self.select.groups)?;
        check_same_scenarios(&scenarios, wb.name(), wb.scenarios())?;
        let count = |w: &dyn Workload| -> Result<RunRecord> {
            let plan = Plan {
                cpu: self.cpu,
                runtimes: vec![Runtime::User],
                metric: Metric::Insns,
                // Lines, so that the comparison can say which changed.
                profile: Profile::Lines,
                ..Plan::new(w, scenarios.clone())
            };
            let outcome = super::run(plan, &mut Quiet)?;
            let run = outcome.rounds.into_iter().next().expect("one round");
            if let Some(r) = run.results.iter().find(|r| r.failed()) {
                bail!("{}: {}", r.benchmark_name(), r.error.as_deref().unwrap_or("not counted"));
            }
            Ok(run)
        };
        let (ra, mut rb) = (count(wa.as_ref())?, count(wb.as_ref())?);
        // Cases match by name (check_same_scenarios): B's benchmarks take
        // A's workload name, which is each build's file name (before.bpf.o,
        // after.toml), so that they meet A's in the comparison.
        for r in &mut rb.results {
            r.workload = wa.name().to_string();
        }
        let (la, lb) = (self.a.display().to_string(), self.b.display().to_string());
        let cmp = compare_runs(&[ra], &la, &[rb], &lb, self.rules.threshold, &RunNoise::new());
        if cmp.counts(Metric::Insns).is_empty() {
            bail!("A and B counted no scenario in common");
        }
        Ok(cmp)
    }
}

/// Fails unless B offers every scenario of `selected` (cases are matched by name).
pub fn check_same_scenarios(selected: &[ScenarioInfo], b_name: &str, b_scenarios: &[ScenarioInfo]) -> Result<()> {
    for s in selected {
        if !b_scenarios.iter().any(|x| x.name == s.name) {
            let have: Vec<&str> = b_scenarios.iter().map(|x| x.name.as_ref()).collect();
            bail!(
                "B ({b_name}) has no case '{}' (it has: {}); A and B must offer the same cases",
                s.name,
                have.join(", ")
            );
        }
    }
    Ok(())
}
