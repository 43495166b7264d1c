//! The command-line options of `run` and `ab` (clap), beside the session
//! they configure, and what they mean for it.

use std::path::PathBuf;

use clap::Args;

use super::Selection;
use super::paired::PairedRules;
use super::paired_request::{PairedRequest, WorkloadSource};
use crate::compare::Gate;
use crate::harness::paired::PairedSettings;
use crate::harness::runner::Profile;
use crate::harness::timing::TimingChoice;
use crate::history::{StoreOptions, TagRuns};
use crate::record::{DEFAULT_SWEEPS, MeasuredIn, Metric, Runtime, Sampling, batch_ms, non_negative, positive};

/// How scenarios are sampled, as the command line gives it ([`Sampling`] is what a run records).
#[derive(Debug, Clone, Args)]
pub struct SamplingArgs {
    /// Samples (timed batches) per scenario.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(2..=100_000))]
    pub samples: u64,
    /// Target duration of one batch, in milliseconds (at most 1000).
    #[arg(long, value_name = "MS", default_value_t = 10.0, value_parser = batch_ms, allow_negative_numbers = true)]
    pub batch_ms: f64,
    /// Warm-up per scenario, in seconds.
    #[arg(long = "warmup", value_name = "S", default_value_t = 0.1, value_parser = non_negative, allow_negative_numbers = true)]
    pub warmup_s: f64,
    /// Stop sampling a scenario after this many seconds.
    #[arg(long = "max-time", value_name = "S", default_value_t = 10.0, value_parser = positive, allow_negative_numbers = true)]
    pub max_scenario_s: f64,
    /// Sweeps over the selected scenarios: each scenario's samples are
    /// taken in this many turns, interleaved with the other scenarios', so
    /// that a slow phase of the machine falls on every scenario alike.
    #[arg(long, default_value_t = DEFAULT_SWEEPS, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub sweeps: u32,
}

impl SamplingArgs {
    pub fn sampling(&self) -> Sampling {
        let SamplingArgs { samples, batch_ms, warmup_s, max_scenario_s, sweeps } = *self;
        Sampling { samples, batch_ms, warmup_s, max_scenario_s, sweeps }
    }
}

/// `--metric` as the command line spells it, from the metrics' table (the
/// record's enum knows no clap).
impl clap::ValueEnum for Metric {
    fn value_variants<'a>() -> &'a [Self] {
        &Metric::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let d = self.def();
        Some(clap::builder::PossibleValue::new(d.name).help(d.help))
    }
}

#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    /// Workload to run (default: xdp-lb); see 'bpfbench list'.
    pub workload: Option<String>,
    #[command(flatten)]
    pub select: Selection,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// How batches are timed: auto takes the best the kernel has (may-goto,
    /// else bpf-loop, else bounded); the others force one, and refuse where
    /// the kernel or the workload lacks it (per-call: your own objects).
    #[arg(long, value_enum, default_value_t = TimingChoice::Auto)]
    pub timing_mode: TimingChoice,
    /// Pin the run to this CPU (default: the last CPU this process may use).
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Where the programs run: the kernel, bpfbench's userspace runtime (the
    /// same relocated instructions, same validation and timing), or both
    /// side by side with their ratio [default: kernel; user with --metric insns].
    #[arg(long, value_enum)]
    pub runtime: Option<RuntimeChoice>,
    /// What to measure: time per operation, or the BPF instructions,
    /// helper calls and map operations per packet, counted by the userspace
    /// runtime (deterministic: a noise-free figure for CI).
    #[arg(long, value_enum, default_value_t = Metric::Time)]
    pub metric: Metric,
    /// Show where each packet's instructions go: per source line (where the
    /// object has line records), per helper and per map operation, counted
    /// by the userspace runtime. Implies --metric insns.
    #[arg(long)]
    pub profile: bool,
    /// Show validation, calibration, proportionality and a histogram per scenario.
    #[arg(short, long)]
    pub verbose: bool,
    #[command(flatten)]
    pub out: super::output::OutputArgs,
    #[command(flatten)]
    pub store: StoreOptions,
    /// After the run, compare it against the stored runs with this tag.
    #[arg(long, value_name = "TAG")]
    pub compare_to: Option<String>,
    /// Measure the selection N times over (each round stored as a run);
    /// comparisons then work on per-run medians. The output shows the last round.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    #[command(flatten)]
    pub gate: Gate,
    /// With --compare-to: re-measure a suspected regression up to N times
    /// and fail only if every re-measurement confirms it.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub confirm: u32,
    #[command(flatten)]
    pub tags: TagRuns,
}

/// `--runtime`'s values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RuntimeChoice {
    Kernel,
    User,
    Both,
}

impl RunArgs {
    /// The session these options ask for: `workload`'s `scenarios`, stored in
    /// `history` (opened unless --no-store without --compare-to) and compared
    /// with the runs --compare-to names.
    pub fn plan<'a>(
        &self,
        workload: &'a dyn crate::harness::Workload,
        scenarios: Vec<crate::harness::ScenarioInfo>,
        history: Option<&'a mut crate::history::History>,
        progress: bool,
    ) -> anyhow::Result<super::Plan<'a>> {
        let reference = match (&self.compare_to, &history) {
            (Some(tag), Some(h)) => Some(super::Reference::tagged(h, tag, self.tags.tag_runs as usize)?),
            _ => None,
        };
        Ok(super::Plan {
            sampling: self.sampling.sampling(),
            cpu: self.cpu,
            runtimes: self.runtimes()?,
            metric: self.metric(),
            profile: if self.profile { Profile::LinesAndTime } else { Profile::Off },
            rounds: self.repeat,
            tag: self.store.tag.clone(),
            history,
            store: !self.store.no_store,
            reference,
            gate: self.gate.clone(),
            confirm: self.confirm,
            progress,
            ..super::Plan::new(workload, scenarios)
        })
    }

    /// Whether the session needs the history: to store, or to find --compare-to's runs.
    pub fn needs_history(&self) -> bool {
        !self.store.no_store || self.compare_to.is_some()
    }

    /// What is measured: `--profile` counts instructions.
    pub fn metric(&self) -> Metric {
        if self.profile { Metric::Insns } else { self.metric }
    }

    /// The runtimes each scenario runs in, in order; refuses what
    /// `--metric` cannot be measured in.
    pub fn runtimes(&self) -> anyhow::Result<Vec<Runtime>> {
        if self.profile && matches!(self.runtime, Some(RuntimeChoice::Kernel | RuntimeChoice::Both)) {
            anyhow::bail!("--profile counts in the userspace runtime only; drop --runtime or use --runtime user");
        }
        let metric = self.metric();
        let asked: &[Runtime] = match self.runtime {
            None => &metric.runtimes()[..1],
            Some(RuntimeChoice::Kernel) => &[Runtime::Kernel],
            Some(RuntimeChoice::User) => &[Runtime::User],
            Some(RuntimeChoice::Both) => &[Runtime::Kernel, Runtime::User],
        };
        let measured_in = metric.def().measured_in;
        if asked.iter().any(|r| !metric.runtimes().contains(r)) {
            match measured_in {
                MeasuredIn::UserspaceRuntime => anyhow::bail!(
                    "--metric {} counts in the userspace runtime only; drop --runtime or use --runtime user",
                    metric.name()
                ),
                MeasuredIn::CountingGuest => {
                    anyhow::bail!("--metric {} counts the kernel's instructions; drop --runtime", metric.name())
                }
                MeasuredIn::AnyRuntime => unreachable!("measured in every runtime"),
            }
        }
        if measured_in == MeasuredIn::CountingGuest && !crate::system::tcg_counter::plugin_loaded() {
            anyhow::bail!(
                "--metric {0} is counted in a guest under QEMU's TCG by bpfbench's plugin: bpfbench vm --kernel KERNEL --metric {0} -- [run arguments]",
                metric.name()
            );
        }
        Ok(asked.to_vec())
    }
}

#[derive(Debug, Args, Clone)]
pub struct PairedArgs {
    /// The reference build (A): a BPF object (FILE.bpf.o) or a bpfbench
    /// executable; with --workload, also a runtime (kernel, user) to compare
    /// that workload's own object in two runtimes. With --sysctl: the one
    /// object both sides load (or give --workload).
    #[arg(required_unless_present_any = ["sysctl", "kernels"])]
    pub a: Option<PathBuf>,
    /// The candidate build (B), of the same kind as A (none with --sysctl
    /// or --kernel).
    #[arg(required_unless_present_any = ["sysctl", "kernels"])]
    pub b: Option<PathBuf>,
    /// A and B are builds of this workload's own BPF object (xdp-lb, maps,
    /// lpm-trie), run with its setup, scenarios and validation. With
    /// --sysctl: the workload both sides run, on its built-in object.
    #[arg(long)]
    pub workload: Option<String>,
    /// A/B of a kernel setting on this kernel: NAME=A,B loads A's programs
    /// under the first value and B's under the second (the JIT applies it at
    /// load time), and puts the original back afterwards. Settings:
    /// net.core.bpf_jit_harden (0, 1, 2), net.core.bpf_jit_enable (0, 1).
    #[arg(long, value_name = "NAME=A,B")]
    pub sysctl: Option<String>,
    /// A/B of two kernels (give it twice: A's, then B's), each booted as a
    /// guest running this bpfbench's worker with the run arguments after
    /// --: a vmlinuz path or a kernel scripts/kernels.sh fetched (bullseye,
    /// bookworm, trixie). The same kernel twice with --append-b compares
    /// two command lines.
    #[arg(long = "kernel", value_name = "KERNEL", num_args = 1)]
    pub kernels: Vec<String>,
    /// With --kernel: more kernel command line for both guests.
    #[arg(long, value_name = "CMDLINE", requires = "kernels")]
    pub append: Option<String>,
    /// With --kernel: more kernel command line for B's guest only (e.g.
    /// spec_rstack_overflow=off: what does the mitigation cost?).
    #[arg(long, value_name = "CMDLINE", requires = "kernels")]
    pub append_b: Option<String>,
    #[command(flatten)]
    pub select: Selection,
    #[command(flatten)]
    pub paired: PairedSettings,
    #[command(flatten)]
    pub gate: Gate,
    /// Time A and B even where their verdicts or output packets differ.
    #[arg(long)]
    pub allow_different_output: bool,
    /// insns: compare BPF instructions per packet, counted by the userspace
    /// runtime, with exact deltas (no pairing or statistics needed).
    #[arg(long, value_enum, default_value_t = Metric::Time)]
    pub metric: Metric,
    /// Run on this CPU (default: the last CPU this process may use).
    #[arg(long)]
    pub cpu: Option<usize>,
    /// bmf: B's latency and the B/A ratio with its interval; with --metric
    /// insns or --whole-runs, table or json only.
    #[command(flatten)]
    pub out: super::output::OutputArgs,
    #[command(flatten)]
    pub store: StoreOptions,
    /// Two executables only: compare medians of whole interleaved runs
    /// (builds from before paired A/B, which have no 'ab-worker').
    #[arg(long)]
    pub whole_runs: bool,
    /// With --whole-runs: runs of each build.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(3..=100), requires = "whole_runs")]
    pub rounds: u64,
    /// Two executables: the arguments of 'bpfbench run' both get (after --),
    /// e.g. -- maps --map hash -s hash/lookup/1000
    #[arg(last = true)]
    pub run_args: Vec<String>,
}

impl PairedArgs {
    /// The paired request these options make, workloads taken from `workloads`.
    pub fn request<'m>(&self, workloads: &'m dyn WorkloadSource) -> PairedRequest<'m> {
        PairedRequest {
            a: self.a.clone().unwrap_or_default(),
            b: self.b.clone().unwrap_or_default(),
            workload: self.workload.clone(),
            sysctl: self.sysctl.clone(),
            kernels: self.kernels.clone(),
            append: (self.append.clone(), self.append_b.clone()),
            select: self.select.clone(),
            rules: PairedRules {
                settings: self.paired.clone(),
                threshold: self.gate.threshold(),
                allow_different_output: self.allow_different_output,
            },
            metric: self.metric,
            cpu: self.cpu,
            tag: self.store.tag.clone(),
            run_args: self.run_args.clone(),
            workloads,
        }
    }
}

impl PairedArgs {
    /// `--whole-runs`: the older mode for two executables, whole runs
    /// interleaved and their per-run medians compared. `on_round` hears of
    /// each run as it starts.
    pub fn compare_whole_runs(
        &self,
        on_round: impl FnMut(usize, &std::path::Path),
    ) -> anyhow::Result<crate::record::ComparisonRecord> {
        let rounds = self.rounds as usize;
        let (Some(a), Some(b)) = (&self.a, &self.b) else {
            anyhow::bail!("--whole-runs compares two bpfbench executables: give A and B");
        };
        let cpu = match self.cpu {
            Some(c) => c,
            None => crate::system::cpu::default_cpu()?,
        };
        let (runs_a, runs_b) = super::builds::interleave(a, b, rounds, &self.run_args, cpu, on_round)?;
        let cmp = crate::compare::compare_runs(
            &runs_a,
            &format!("{} ({rounds} runs)", a.display()),
            &runs_b,
            &format!("{} ({rounds} runs, interleaved)", b.display()),
            self.gate.threshold(),
            &crate::compare::RunNoise::new(),
        );
        if cmp.times().next().is_none() {
            anyhow::bail!("the two builds measured no benchmark in common");
        }
        Ok(cmp)
    }

    /// `--kernel A --kernel B --metric kernel-insns`: each kernel booted
    /// once, its counts taken (as `vm --metric kernel-insns`), and A's and
    /// B's compared count for count: they repeat, so one each decides.
    /// `progress` hears a line as each guest starts and ends.
    pub fn compare_kernel_counts(
        &self,
        progress: &mut dyn FnMut(&str),
    ) -> anyhow::Result<crate::record::ComparisonRecord> {
        // Two kernels, or one kernel under a setting's two values (each
        // guest gets its value on the kernel command line: `sysctl.NAME=V`).
        let (a, b, setting) = match (self.kernels.as_slice(), &self.sysctl) {
            ([a, b], None) => (a, b, None),
            ([k], Some(text)) => (k, k, Some(crate::system::sysctl::SysctlPair::parse(text)?)),
            ([_, _], Some(_)) => anyhow::bail!(
                "--sysctl with --metric kernel-insns compares one kernel's two settings: give --kernel once"
            ),
            _ => anyhow::bail!(
                "--metric kernel-insns compares two kernels: give --kernel A --kernel B, or --kernel K --sysctl NAME=A,B"
            ),
        };
        if self.a.is_some() || self.b.is_some() {
            anyhow::bail!("--kernel compares two kernels: give the workload and its options after --, not A and B");
        }
        let sysctl = |value: fn(&crate::system::sysctl::SysctlPair) -> &String| {
            setting.as_ref().map(|s| format!("sysctl.{}={}", s.name, value(s)))
        };
        let append_a = [self.append.clone(), sysctl(|s| &s.a)].into_iter().flatten().collect::<Vec<_>>();
        let append_b =
            [self.append.clone(), self.append_b.clone(), sysctl(|s| &s.b)].into_iter().flatten().collect::<Vec<_>>();
        let joined = |parts: Vec<String>| Some(parts.join(" ")).filter(|s| !s.is_empty());
        let kernels = if a == b { vec![a.clone()] } else { vec![a.clone(), b.clone()] };
        let (runs, targets) = super::kernel_run::KernelRuns::prepare(
            Metric::KernelInsns,
            std::time::Duration::from_secs(super::vm::GUEST_TIMEOUT_S),
            &self.run_args,
            &kernels,
        )?;
        let (ta, tb) = (&targets[0], targets.last().expect("one kernel at least"));
        let ra = runs
            .run(ta, joined(append_a).as_deref(), progress)
            .map_err(|e| anyhow::anyhow!("{a}: {reason}", reason = crate::record::error_line(&e)))?;
        let rb = runs
            .run(tb, joined(append_b).as_deref(), progress)
            .map_err(|e| anyhow::anyhow!("{b}: {reason}", reason = crate::record::error_line(&e)))?;
        let side = |k: &str, run: &crate::record::RunRecord, value: Option<&String>| match (&setting, value) {
            (Some(s), Some(v)) => format!("{} ({k}, {})", s.label(v), run.environment.kernel),
            _ => format!("kernel {k} ({})", run.environment.kernel),
        };
        let (la, lb) = (side(a, &ra, setting.as_ref().map(|s| &s.a)), side(b, &rb, setting.as_ref().map(|s| &s.b)));
        let cmp = crate::compare::compare_runs(
            &[ra],
            &la,
            &[rb],
            &lb,
            self.gate.threshold(),
            &crate::compare::RunNoise::new(),
        );
        if cmp.counts(Metric::KernelInsns).is_empty() {
            anyhow::bail!("the two kernels counted no scenario in common");
        }
        Ok(cmp)
    }
}
