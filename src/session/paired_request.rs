//! `bpfbench ab A B` as the user asks for it: what A and B are (two BPF
//! objects, two builds of a workload's object, one workload in two
//! runtimes, two bpfbench executables, one workload under two kernel
//! settings), checked before anything loads;
//! then the paired comparison timed, or both builds' instructions counted.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use super::paired::{LocalBuild, PairedObserver, PairedPlan, run};
use super::setting_build::SettingBuild;
use super::worker::Worker;
use super::{Plan, Quiet, builds};
use crate::compare::{RunNoise, compare_runs};
use crate::harness::paired::PairedSettings;
use crate::harness::runner::Profile;
use crate::harness::{ScenarioInfo, Workload};
use crate::record::paired::PairedRecord;
use crate::record::{ComparisonRecord, Metric, RunRecord, Runtime};
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
}

/// A paired comparison as asked for.
pub struct PairedRequest<'m> {
    pub a: PathBuf,
    pub b: PathBuf,
    /// `--workload`: A and B are builds (or runtimes) of this workload.
    pub workload: Option<String>,
    /// `--sysctl NAME=A,B`: A and B are one workload under two settings.
    pub sysctl: Option<String>,
    /// `-s` and `-g`.
    pub scenarios: Vec<String>,
    pub groups: Vec<String>,
    pub settings: PairedSettings,
    /// Relative change below which a difference counts as noise.
    pub threshold: f64,
    pub allow_different_output: bool,
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

/// Whether `p` is one of the user's programs: a BPF object or a spec file
/// (else, for `ab`, an executable).
pub fn is_own_program(p: &Path) -> bool {
    crate::kernel::object::is_bpf_elf(p) || p.extension().is_some_and(|e| e == "toml")
}

impl PairedRequest<'_> {
    /// What A and B are, with every check that needs nothing loaded.
    pub fn builds(&self) -> Result<Builds> {
        if let Some(text) = &self.sysctl {
            return self.setting(text);
        }
        if let Some((ra, rb)) = self.runtimes()? {
            let name = self.workload.clone().expect("runtimes() checked");
            return Ok(Builds::Runtimes(name, ra, rb));
        }
        for p in [&self.a, &self.b] {
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

    /// `ab --workload W kernel user`: A and B name runtimes, not files.
    fn runtimes(&self) -> Result<Option<(Runtime, Runtime)>> {
        use clap::ValueEnum;
        let word = |p: &Path| if p.exists() { None } else { p.to_str().and_then(|s| Runtime::from_str(s, true).ok()) };
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
            settings: self.settings.clone(),
            threshold: self.threshold,
            allow_different_output: self.allow_different_output,
            tag: self.tag.clone(),
            cpu,
            stop: interrupt::flag(),
        }
    }

    /// Times A against B, case by case, on one CPU (`--metric time`).
    pub fn compare(&self, builds: &Builds, observer: &mut dyn PairedObserver) -> Result<PairedRecord> {
        let cpu = system::prepare_for_timing(self.cpu)?;
        let labels = (self.a.display().to_string(), self.b.display().to_string());
        match builds {
            Builds::Objects | Builds::WorkloadObjects(_) => {
                let (wa, wb) = (self.build(builds, &self.a)?, self.build(builds, &self.b)?);
                let scenarios = super::select(wa.as_ref(), &self.scenarios, &self.groups)?;
                check_same_scenarios(&scenarios, wb.name(), wb.scenarios())?;
                let (mut la, mut lb) = (LocalBuild::new(wa.as_ref(), cpu), LocalBuild::new(wb.as_ref(), cpu));
                run(self.plan(wa.name(), labels, scenarios, cpu), &mut la, &mut lb, observer)
            }
            Builds::Runtimes(name, ra, rb) => {
                let w = self.workloads.build(name)?;
                let scenarios = super::select(w.as_ref(), &self.scenarios, &self.groups)?;
                let labels = (ra.label().to_string(), rb.label().to_string());
                let (mut a, mut b) = (
                    LocalBuild::new(w.as_ref(), cpu).in_runtime(*ra),
                    LocalBuild::new(w.as_ref(), cpu).in_runtime(*rb),
                );
                run(self.plan(w.name(), labels, scenarios, cpu), &mut a, &mut b, observer)
            }
            Builds::Setting(target, pair) => {
                let w = self.workloads.build(target)?;
                let scenarios = super::select(w.as_ref(), &self.scenarios, &self.groups)?;
                let guard = SysctlGuard::take(&pair.name)?;
                let labels = (pair.label(&pair.a), pair.label(&pair.b));
                let (mut a, mut b) = (
                    SettingBuild::new(LocalBuild::new(w.as_ref(), cpu), &guard, &pair.a),
                    SettingBuild::new(LocalBuild::new(w.as_ref(), cpu), &guard, &pair.b),
                );
                run(self.plan(w.name(), labels, scenarios, cpu), &mut a, &mut b, observer)
            }
            Builds::Executables => {
                let mut run_args = self.run_args.clone();
                run_args.extend(["--cpu".to_string(), cpu.to_string()]);
                let mut a = Worker::spawn(&self.a, &run_args)?;
                let mut b = Worker::spawn(&self.b, &run_args)?;
                let scenarios = super::select_from(&a.workload, &a.scenarios, &self.scenarios, &self.groups)?;
                check_same_scenarios(&scenarios, &b.workload, &b.scenarios)?;
                let name = a.workload.clone();
                run(self.plan(&name, labels, scenarios, cpu), &mut a, &mut b, observer)
            }
        }
    }

    /// Counts A's and B's instructions per packet in the userspace runtime,
    /// after the same validation (`--metric insns`). Counts are exact, so
    /// one count a side is the comparison: no pairing, no statistics.
    pub fn count(&self, builds: &Builds) -> Result<ComparisonRecord> {
        if matches!(builds, Builds::Executables | Builds::Runtimes(..) | Builds::Setting(..)) {
            bail!(
                "--metric insns compares two BPF objects; for two bpfbench executables run each with --metric insns and use 'bpfbench compare'"
            );
        }
        let (wa, wb) = (self.build(builds, &self.a)?, self.build(builds, &self.b)?);
        let scenarios = super::select(wa.as_ref(), &self.scenarios, &self.groups)?;
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
        let (ra, rb) = (count(wa.as_ref())?, count(wb.as_ref())?);
        let (la, lb) = (self.a.display().to_string(), self.b.display().to_string());
        let cmp = compare_runs(&[ra], &la, &[rb], &lb, self.threshold, &RunNoise::new());
        if cmp.instructions.is_empty() {
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
