//! A tool as it runs (`bpfbench overhead -- opensnoop`, or `--pid PID`):
//! the BPF programs it loaded, found from its file descriptors and
//! measured where it attached them, unmodified and unreloaded, under the
//! trigger their hooks call for. A row per program (its ns per run from
//! `bpf_stats`, beside an empty program's on the same hook, and its runs
//! per event); for each trigger, the tool's slowdown of it (the tool
//! stopped and started again in rounds) and the tool's own CPU time and
//! output per event.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Args, FromArgMatches};

use crate::attached::{EmptyOnHook, Triggers, judge_runs, runs_during, time_events};
use crate::harness::{
    BatchTiming, LoadedWorkload, NotRunnable, OverheadKey, PreparedScenario, ScenarioInfo, Validation, Variant,
    Workload,
};
use crate::kernel::attach_point::AttachPoint;
use crate::kernel::bpf_stats::{self, StatsEnabled};
use crate::kernel::object::attach::AttachContext;
use crate::kernel::prog_type::ProgKind;
use crate::kernel::running::{RunningProgram, programs_of};
use crate::record::Timing;
use crate::record::attached::{AttachedRun, EventRuns, Slowdown, ToolCost};
use crate::stats::Summary;
use crate::system::tool::{Tool, cpu_ns};
use crate::trigger::{Expected, TRIGGER_FUNCTION, TRIGGER_USDT, TriggerKind};
use crate::workloads::{Registration, no_files};

pub const REGISTRATION: Registration = Registration {
    names: &["tool"],
    about: "a running tool's BPF programs, measured as they run (bpfbench overhead -- CMD ARGS, or --pid PID)",
    claims: no_files,
    selected_by: None,
    options: ToolArgs::augment_args,
    build: |_, matches| {
        let args = ToolArgs::from_arg_matches(matches).map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(Box::new(ToolBench::new(args)?))
    },
    with_object: None,
};

/// How long a tool may take to load and attach its programs.
const READY_WITHIN: Duration = Duration::from_secs(30);
/// Its set of programs unchanged this long: it is done attaching.
const SETTLED: Duration = Duration::from_millis(500);
/// Wall time validation fires events for (at most 2,000 events).
const VALIDATION_NS: f64 = 100e6;
/// Wall time a timed batch may take.
const BATCH_WALL_NS: f64 = 10e6;
/// Validation fires a tool's events in chunks of this many, a pause after
/// each (at most 25,000 events a second), longer while the tool's output
/// still grows (at most `PACED_WAIT`): in a guest under TCG opensnoop
/// prints far slower than the trigger fires, and with pauses of 2 ms alone
/// it printed 0.41 lines per event however long it was then waited for
/// (the rest lost before it read them); with these, 1.02.
const PACED_CHUNK: u64 = 50;
const PACED_PAUSE: Duration = Duration::from_millis(2);
const PACED_WAIT: Duration = Duration::from_secs(1);
/// After validation's events, until the tool's output has not grown for
/// this long (at most `CATCH_UP_WAIT`).
const CATCH_UP_QUIET: Duration = Duration::from_millis(200);
const CATCH_UP_WAIT: Duration = Duration::from_secs(20);
/// Each slowdown phase: chunks of this wall time, the median taken.
const CHUNK_NS: f64 = 5e6;
const CHUNKS: usize = 20;

// Options for a running tool. A plain comment: a doc comment here would
// become the help text of the `run` command it joins.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "A running tool (bpfbench overhead -- CMD ARGS)")]
pub struct ToolArgs {
    /// Measure the programs of a process already running, by its pid (no phases without it: no slowdown).
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,
    /// What fires the tool's programs, by name (by default what their hooks call for): getpid, openat, fork-exec, tcp-connect, ... (see run --help).
    #[arg(long = "trigger", value_name = "NAME")]
    pub trigger: Option<String>,
    /// Rounds of the tool stopped and started again, for its slowdown.
    #[arg(long, value_name = "N", default_value_t = ToolArgs::default_rounds())]
    pub rounds: u32,
    /// What the tool must report: at least N output lines per event (a tracing tool prints one per event it sees).
    #[arg(long, value_name = "N")]
    pub expect_lines: Option<f64>,
    /// The tool's command line, after --.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// One program of the tool, as found when it first ran.
#[derive(Debug, Clone)]
struct ToolProgram {
    name: String,
    kind: ProgKind,
    point: AttachPoint,
    trigger: TriggerKind,
    expected: Expected,
}

pub struct ToolBench {
    args: ToolArgs,
    /// The tool's name in results (its command's file name).
    name: String,
    programs: Vec<ToolProgram>,
    /// Programs no trigger fires, and why (N/A).
    unfired: Vec<(String, String)>,
    infos: Vec<ScenarioInfo>,
}

/// A tool of the corpus (`examples/corpus/libbpf-tools-*.toml`): its
/// command and what it must report, with what the kernel must have.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    /// The project it belongs to (the corpus groups by it).
    pub project: Option<String>,
    /// What installs it, said when it is missing.
    pub build: Option<String>,
    /// Its command line.
    pub tool: Vec<String>,
    pub trigger: Option<String>,
    /// At least this many output lines per event.
    pub lines_per_event: Option<f64>,
    /// What the kernel must have for the tool to start: "kprobes" or "trampolines".
    pub needs: Option<String>,
}

impl ToolSpec {
    /// Whether the spec file at `path` is a tool's (it names `tool`).
    pub fn is_one(text: &str) -> bool {
        toml::from_str::<toml::Table>(text).is_ok_and(|t| t.contains_key("tool"))
    }

    pub fn read(path: &std::path::Path) -> Result<ToolSpec> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        toml::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }

    /// Why the tool cannot run here, if it cannot: not installed, or the
    /// kernel lacks what it attaches with.
    pub fn unavailable(&self) -> Option<String> {
        let program = self.tool.first()?;
        let installed = program.contains('/') && std::path::Path::new(program).exists()
            || std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()));
        if !installed {
            return Some(format!(
                "not installed: {program}; {}",
                self.build.as_deref().map_or_else(|| "install it".to_string(), |b| format!("install it with {b}"))
            ));
        }
        let guest = crate::kernel::object::attach::IN_A_GUEST.replace("FILE.bpf.o", "corpus");
        match self.needs.as_deref() {
            Some("kprobes") if !crate::kernel::object::attach::kprobes_built() => {
                Some(format!("{program} attaches kprobes, which this kernel lacks; {guest}"))
            }
            Some("trampolines") if crate::kernel::features::tracing_programs().is_err() => {
                Some(format!("{program} attaches fentry programs, which this kernel refuses; {guest}"))
            }
            _ => None,
        }
    }

    pub fn args(&self) -> Result<ToolArgs> {
        Ok(ToolArgs {
            pid: None,
            trigger: self.trigger.clone(),
            rounds: ToolArgs::default_rounds(),
            expect_lines: self.lines_per_event,
            command: self.tool.clone(),
        })
    }
}

impl ToolArgs {
    fn default_rounds() -> u32 {
        4
    }
}

impl ToolBench {
    pub fn new(args: ToolArgs) -> Result<ToolBench> {
        let (name, found) = match (args.pid, args.command.is_empty()) {
            (Some(_), false) => bail!("give the tool's command after -- or --pid PID, not both"),
            (None, true) => bail!("give the tool's command after --: bpfbench overhead -- opensnoop (or --pid PID)"),
            (Some(pid), true) => {
                let comm = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .with_context(|| format!("--pid {pid}: no such process"))?;
                (comm.trim().to_string(), wait_for_programs(pid, None)?)
            }
            (None, false) => {
                crate::system::tracefs::ensure()?;
                let mut tool = Tool::start(&args.command, &other_cpus()?)?;
                let found = wait_for_programs(tool.pid(), Some(&mut tool))?;
                // Stopped (dropped) until the set-up: a corpus finds every tool's programs first.
                (tool.name().to_string(), found)
            }
        };
        let given = args.trigger.as_deref().map(TriggerKind::parse).transpose()?;
        let (mut programs, mut unfired) = (Vec::new(), Vec::new());
        for p in &found {
            let Some(kind) = p.kind else {
                unfired.push((p.name.clone(), format!("a {} program, which bpfbench does not run", p.type_name)));
                continue;
            };
            // A tp_btf program's link is a raw tracepoint's.
            let section = match (kind, p.points.first()) {
                (ProgKind::Tracing, Some(s)) if s.starts_with("raw_tp/") => Some(s.replacen("raw_tp/", "tp_btf/", 1)),
                (_, s) => s.cloned(),
            };
            let Some(point) = section.and_then(|s| AttachPoint::parse(&s, kind).ok()) else {
                unfired.push((
                    p.name.clone(),
                    format!("attached at {} (no point bpfbench can fire)", p.points.join(", ")),
                ));
                continue;
            };
            let picked = crate::trigger::for_point(&point);
            let (trigger, expected) = match (&given, picked) {
                (Some(t), Some((k, e))) if &k == t => (t.clone(), e),
                // Another trigger than its hook calls for: it may fire the program, or not.
                (Some(t), _) => (t.clone(), Expected::AtLeastOne),
                (None, Some(picked)) => picked,
                (None, None) => {
                    unfired.push((
                        p.name.clone(),
                        format!("attached at {point}, which no trigger bpfbench knows fires (--trigger NAME)"),
                    ));
                    continue;
                }
            };
            programs.push(ToolProgram { name: p.name.clone(), kind, point, trigger, expected });
        }
        if programs.is_empty() {
            bail!(
                "{name} runs no program bpfbench can fire: {}",
                unfired.iter().map(|(n, why)| format!("{n}: {why}")).collect::<Vec<_>>().join("; ")
            );
        }
        let infos = programs
            .iter()
            .map(|p| ScenarioInfo {
                name: p.name.clone().into(),
                group: format!("{name}, fired by {}", p.trigger.describe()).into(),
                description: format!("{name}'s {} program at {}", p.kind.desc().label, p.point).into(),
                facts: crate::record::ScenarioFacts::TABLE_ROW,
            })
            .chain(unfired.iter().map(|(n, _)| ScenarioInfo {
                name: n.clone().into(),
                group: format!("{name}, not fired").into(),
                description: format!("{name}'s program {n}").into(),
                facts: crate::record::ScenarioFacts::TABLE_ROW,
            }))
            .collect();
        Ok(ToolBench { args, name, programs, unfired, infos })
    }
}

/// The CPUs a tool runs on: all but the timed one (the last allowed).
fn other_cpus() -> Result<Vec<usize>> {
    let timed = crate::system::cpu::default_cpu()?;
    Ok(crate::system::cpu::allowed_cpus()?.into_iter().filter(|c| *c != timed).collect())
}

/// The programs process `pid` has attached, once their set stops changing
/// (the tool has loaded and attached them all).
fn wait_for_programs(pid: u32, mut tool: Option<&mut Tool>) -> Result<Vec<RunningProgram>> {
    let started = Instant::now();
    let mut seen: Vec<u32> = Vec::new();
    let mut stable_since = Instant::now();
    loop {
        if let Some(t) = tool.as_deref_mut() {
            t.check_running()?;
        }
        let found = programs_of(pid)?;
        let ids: Vec<u32> = found.iter().filter(|p| !p.points.is_empty()).map(|p| p.id).collect();
        if ids != seen {
            seen = ids;
            stable_since = Instant::now();
        } else if !seen.is_empty() && stable_since.elapsed() >= SETTLED {
            return Ok(found.into_iter().filter(|p| !p.points.is_empty()).collect());
        }
        if started.elapsed() > READY_WITHIN {
            bail!("process {pid} attached no BPF program within {} s", READY_WITHIN.as_secs());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Workload for ToolBench {
    fn name(&self) -> &str {
        &self.name
    }

    fn scenarios(&self) -> &[ScenarioInfo] {
        &self.infos
    }

    fn setup(&self, cpu: usize) -> Result<Box<dyn LoadedWorkload + '_>> {
        let _ = cpu;
        crate::system::tracefs::ensure()?;
        let tool = match self.args.pid {
            Some(_) => None,
            None => Some(Tool::start(&self.args.command, &other_cpus()?)?),
        };
        let mut loaded = Loaded {
            empties: self.programs.iter().map(|_| None).collect(),
            triggers: Triggers::default(),
            stats: None,
            running: Vec::new(),
            tool,
            bench: self,
            slowdowns_done: Vec::new(),
            own_binary: std::fs::read_link("/proc/self/exe").context("reading /proc/self/exe")?,
        };
        loaded.find_running()?;
        loaded.stats = Some(bpf_stats::enable()?);
        Ok(Box::new(loaded))
    }
}

struct Loaded<'b> {
    // The empty programs detach before anything else goes.
    empties: Vec<Option<EmptyOnHook>>,
    triggers: Triggers,
    stats: Option<StatsEnabled>,
    /// The tool's programs as it runs now (ids change when it restarts).
    running: Vec<RunningProgram>,
    tool: Option<Tool>,
    bench: &'b ToolBench,
    slowdowns_done: Vec<TriggerKind>,
    own_binary: std::path::PathBuf,
}

impl Loaded<'_> {
    fn pid(&self) -> u32 {
        self.tool.as_ref().map_or_else(|| self.bench.args.pid.unwrap_or(0), Tool::pid)
    }

    /// The tool's programs now, by the names found first.
    fn find_running(&mut self) -> Result<()> {
        let pid = self.pid();
        self.running = wait_for_programs(pid, self.tool.as_mut())?;
        for p in &self.bench.programs {
            if !self.running.iter().any(|r| r.name == p.name) {
                bail!("{} runs no program '{}' now (it did when first started)", self.bench.name, p.name);
            }
        }
        Ok(())
    }

    fn running(&self, name: &str) -> Result<&RunningProgram> {
        self.running.iter().find(|r| r.name == name).with_context(|| format!("no program '{name}' running"))
    }

    /// Trigger ns per event in the tool's current state: the median of
    /// `CHUNKS` chunks of `events`.
    fn phase(&mut self, kind: &TriggerKind, events: u64) -> Result<f64> {
        let trigger = self.triggers.get(kind)?;
        let mut chunks = Vec::with_capacity(CHUNKS);
        for _ in 0..CHUNKS {
            chunks.push(trigger.timed(events)? as f64 / events as f64);
        }
        Ok(crate::stats::median(&chunks).expect("chunks"))
    }

    /// The slowdown of `kind` with the tool running against stopped: rounds
    /// of both, the order alternating, the statistics off.
    fn slowdown(&mut self, kind: &TriggerKind) -> Result<Option<Slowdown>> {
        if self.tool.is_none() {
            return Ok(None);
        }
        self.stats = None;
        let events = self.triggers.events_in(kind, CHUNK_NS, 8, 1_000_000)?;
        let (mut with, mut without, mut differences) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..self.bench.args.rounds.max(2) {
            if crate::system::interrupt::interrupted() {
                return Err(crate::harness::runner::Interrupted.into());
            }
            let tool_phase = |l: &mut Self| -> Result<f64> { l.phase(kind, events) };
            let (w, wo) = if round % 2 == 0 {
                let w = tool_phase(self)?;
                self.stop_tool();
                let wo = self.phase(kind, events)?;
                self.start_tool()?;
                (w, wo)
            } else {
                self.stop_tool();
                let wo = self.phase(kind, events)?;
                self.start_tool()?;
                (tool_phase(self)?, wo)
            };
            with.push(w);
            without.push(wo);
            differences.push(w - wo);
        }
        self.stats = Some(bpf_stats::enable()?);
        Ok(Some(Slowdown {
            programs: self.bench.programs.iter().map(|p| p.name.clone()).collect(),
            phases: format!(
                "{} rounds of {} running and stopped, {} events each",
                with.len(),
                self.bench.name,
                events * CHUNKS as u64
            ),
            events_per_phase: events * CHUNKS as u64,
            differences: Summary::of(&differences).context("rounds")?,
            detached: Summary::of(&without).context("rounds")?,
            attached_ns: with,
            detached_ns: without,
            // Rounds of a tool started and stopped: each its own medians, all kept.
            pairs_kept: None,
            per_thread_ns: Vec::new(),
        }))
    }

    fn stop_tool(&mut self) {
        self.running.clear();
        self.empties.iter_mut().flatten().for_each(EmptyOnHook::detach);
        self.tool = None;
    }

    fn start_tool(&mut self) -> Result<()> {
        self.tool = Some(Tool::start(&self.bench.args.command, &other_cpus()?)?);
        self.find_running()
    }

    /// The tool's output lines so far (0 for a tool not started by bpfbench).
    fn lines(&self) -> u64 {
        self.tool.as_ref().map_or(0, Tool::lines)
    }

    /// The tool's own CPU time and output lines over `events` (fired by
    /// the caller in `work`), after it caught up.
    fn tool_cost(&mut self, events: u64, work: impl FnOnce(&mut Self) -> Result<()>) -> Result<ToolCost> {
        let pid = self.pid();
        let lines0 = self.lines();
        let cpu0 = cpu_ns(pid)?;
        work(self)?;
        // The tool reads and prints behind the events: it catches up. In a
        // guest under TCG, at a fixed 200 ms opensnoop had printed 0.16
        // lines per event; waited for, 0.41 (before the paced waits).
        while_growing(|| self.lines(), CATCH_UP_QUIET, CATCH_UP_QUIET, CATCH_UP_WAIT);
        let cpu = cpu_ns(pid)? - cpu0;
        let lines = self.lines() - lines0;
        Ok(ToolCost {
            command: match self.bench.args.pid {
                Some(pid) => format!("{} (pid {pid})", self.bench.name),
                None => self.bench.args.command.join(" "),
            },
            cpu_ns_per_event: cpu as f64 / events as f64,
            lines_per_event: match self.tool {
                Some(_) => lines as f64 / events as f64,
                None => f64::NAN,
            },
        })
    }
}

impl LoadedWorkload for Loaded<'_> {
    fn unavailable(&mut self, scenario: &ScenarioInfo) -> Option<String> {
        self.bench.unfired.iter().find(|(n, _)| *n == scenario.name).map(|(_, why)| why.clone())
    }

    fn validate(&mut self, scenario: &ScenarioInfo) -> Result<(Validation, Box<dyn PreparedScenario + '_>)> {
        if let Some(why) = self.unavailable(scenario) {
            return Err(NotRunnable(why).into());
        }
        let i = self.bench.programs.iter().position(|p| p.name == scenario.name).context("no such program")?;
        let p = self.bench.programs[i].clone();
        if let Some(t) = self.tool.as_mut() {
            t.check_running()?;
        }
        let events = self.triggers.events_in(&p.trigger, VALIDATION_NS, 20, 2000)?;
        let first = !self.slowdowns_done.contains(&p.trigger);
        let mut all_runs = Vec::new();
        let cost = self.tool_cost(events, |l| {
            let running = &l.running;
            let fds: Vec<_> = l
                .bench
                .programs
                .iter()
                .map(|q| running.iter().find(|r| r.name == q.name).map(RunningProgram::fd).context("program running"))
                .collect::<Result<_>>()?;
            let (trigger, tool) = (l.triggers.get(&p.trigger)?, l.tool.as_ref());
            // Paced, as events come to a tool at work: a burst faster than
            // the tool prints would fill its buffer, and it would drop them.
            all_runs = runs_during(&fds, || {
                let mut left = events;
                while left > 0 {
                    let chunk = left.min(PACED_CHUNK);
                    trigger.fire(chunk)?;
                    left -= chunk;
                    while_growing(|| tool.map_or(0, Tool::lines), PACED_PAUSE, PACED_PAUSE, PACED_WAIT);
                }
                Ok(())
            })?;
            Ok(())
        })?;
        let counted =
            EventRuns { events, runs: all_runs[i].run_cnt, expected_runs_per_event: p.expected.runs_per_event() };
        let judged = judge_runs(&p.name, &p.point.to_string(), &p.trigger, counted)?;
        let mut checks = vec![judged.check];
        for (j, r) in all_runs.iter().enumerate().filter(|(j, _)| *j != i) {
            checks.push(format!(
                "  '{}' of {} ran {} times meanwhile",
                self.bench.programs[j].name, self.bench.name, r.run_cnt
            ));
        }
        if let Some(want) = self.bench.args.expect_lines
            && first
            && cost.lines_per_event < want
        {
            bail!(
                "{} reported {:.2} output lines per event of {}, fewer than the {want} it must (--expect-lines)",
                self.bench.name,
                cost.lines_per_event,
                p.trigger.describe()
            );
        }
        let mut notes: Vec<String> = judged.note.into_iter().collect();
        notes.push(format!(
            "{}: {:.0} ns of CPU per event in the tool itself (its threads' user and system time, on any CPU){}",
            cost.command,
            cost.cpu_ns_per_event,
            if cost.lines_per_event.is_finite() {
                format!(", {:.2} output lines per event", cost.lines_per_event)
            } else {
                String::new()
            }
        ));
        let slowdown = match first {
            true => {
                self.slowdowns_done.push(p.trigger.clone());
                let s = self.slowdown(&p.trigger)?;
                match &s {
                    Some(s) => notes.push(format!(
                        "slowdown of {}: {:+.1} ns per event with {} running ({}; bpf_stats off)",
                        p.trigger.describe(),
                        s.ns_per_event(),
                        self.bench.name,
                        s.phases
                    )),
                    None => notes.push(format!(
                        "slowdown: not measured, {} was running before bpfbench (--pid)",
                        self.bench.name
                    )),
                }
                s
            }
            false => None,
        };
        let attached = AttachedRun {
            point: p.point.to_string(),
            mechanism: p.point.mechanism().into(),
            trigger: p.trigger.describe(),
            counted,
            records: None,
            slowdown,
            tool: first.then_some(cost),
        };
        let validation = Validation {
            verdict: format!("{:.2} runs/event", attached.runs_per_event()),
            outcome: None,
            timing: Timing::BpfStats { point: p.point.to_string(), trigger: p.trigger.describe() },
            checks,
            notes,
            outputs: Vec::new(),
            attached: Some(Box::new(attached)),
        };
        let cap = self.triggers.events_in(&p.trigger, BATCH_WALL_NS, 1, u64::from(u32::MAX))? as u32;
        Ok((validation, Box::new(ToolScenario { loaded: self, program: i, cap })))
    }
}

struct ToolScenario<'l, 'b> {
    loaded: &'l mut Loaded<'b>,
    program: usize,
    cap: u32,
}

impl PreparedScenario for ToolScenario<'_, '_> {
    /// `iters` events: the tool's program's runs and their time (Body), or
    /// an empty program's on the same hook beside it (Overhead).
    fn run_batch(&mut self, variant: Variant, iters: u32) -> Result<BatchTiming> {
        let l = &mut *self.loaded;
        let p = l.bench.programs[self.program].clone();
        if variant == Variant::Overhead && l.empties[self.program].is_none() {
            l.empties[self.program] = Some(EmptyOnHook::load(p.kind, &p.point)?);
        }
        if variant == Variant::Overhead {
            let ctx = AttachContext {
                cgroup: None,
                own_binary: &l.own_binary,
                own_function: TRIGGER_FUNCTION,
                own_usdt: TRIGGER_USDT,
                // A running tool's sockmap is its own, not known here.
                sockmap: None,
            };
            l.empties[self.program].as_mut().expect("loaded").attach(&p.point, &ctx)?;
        }
        let fd = match variant {
            Variant::Body => l.running.iter().find(|r| r.name == p.name).context("program running")?.fd(),
            Variant::Overhead => l.empties[self.program].as_ref().expect("loaded").fd()?,
        };
        time_events(fd, &p.name, &mut l.triggers, &p.trigger, iters)
    }

    fn batch_cap(&self) -> Option<u32> {
        Some(self.cap)
    }

    fn overhead_key(&self) -> OverheadKey {
        let p = &self.loaded.bench.programs[self.program];
        OverheadKey::EmptyAttached { kind: p.kind, point: p.point.to_string(), trigger: p.trigger.describe() }
    }

    fn program(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.loaded.running(&self.loaded.bench.programs[self.program].name).ok().map(RunningProgram::fd)
    }
}

/// Waits, looking at `lines` every `poll`, until it has not changed for
/// `quiet` (at least `quiet`, at most `at_most`): a tool still printing
/// what it read is let finish.
fn while_growing(lines: impl Fn() -> u64, poll: Duration, quiet: Duration, at_most: Duration) {
    let started = std::time::Instant::now();
    let (mut last, mut since) = (lines(), started);
    while started.elapsed() < at_most {
        std::thread::sleep(poll);
        let now = lines();
        if now != last {
            (last, since) = (now, std::time::Instant::now());
        } else if since.elapsed() >= quiet {
            break;
        }
    }
}
