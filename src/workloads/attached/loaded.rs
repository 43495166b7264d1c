//! The object loaded and its programs attached: what validation counts
//! (events, runs, buffer records, the slowdown) and what a batch times
//! (the program's runs under `iters` events, or an empty program's on the
//! same point).

use std::os::fd::BorrowedFd;

use anyhow::{Context, Result};

use super::{Attachable, AttachedBench};
use crate::attached::{EmptyOnHook, SlowdownPlan, Triggers, judge_runs, measure_slowdown, runs_during, time_events};
use crate::harness::{
    BatchTiming, HookBatch, LoadedWorkload, NotRunnable, OverheadKey, PreparedScenario, ScenarioInfo, Validation,
    Variant,
};
use crate::kernel::attach_point::AttachPoint;
use crate::kernel::bpf_stats::{self, RunStats, StatsEnabled};
use crate::kernel::buffers::BufferReader;
use crate::kernel::object::ObjectFile;
use crate::kernel::object::attach::{AttachContext, IN_A_GUEST, Link, MissingMechanism};
use crate::kernel::sockmap::SockMap;
use crate::record::Timing;
use crate::record::attached::{AttachedRun, BufferRecords, EventRuns};
use crate::system::cgroup::OwnCgroup;
use crate::trigger::{TRIGGER_FUNCTION, TRIGGER_USDT, TriggerKind};

/// Wall time validation fires events for (at most 2,000 events).
const VALIDATION_NS: f64 = 100e6;
/// Wall time a timed batch may take: the runner sizes batches by the
/// program's time, a fraction of the trigger's, and the run's time cap is wall time.
const BATCH_WALL_NS: f64 = 10e6;

/// What is attached now.
enum Attachment {
    Nothing,
    /// Every program of the object that attaches here, as its loader would.
    Object {
        _links: Vec<Link>,
    },
    /// The empty program at program `for_program`'s point.
    Empty {
        for_program: usize,
    },
    /// Program `program` alone, the object's others detached (its kernel
    /// instructions without theirs).
    Alone {
        program: usize,
        _link: Link,
    },
}

pub(super) struct Loaded<'b> {
    // Fields drop in this order: links before the programs they attach,
    // the buffer reader before the maps it reads, the cgroup last.
    attachment: Attachment,
    reader: Option<BufferReader>,
    /// Each program's empty counterpart, loaded when first needed.
    empties: Vec<Option<EmptyOnHook>>,
    triggers: Triggers,
    stats: Option<StatsEnabled>,
    object: ObjectFile,
    cgroup: Option<OwnCgroup>,
    /// The object's sockmap, which its sk_msg and sk_skb programs attach to.
    sockmap: Option<SockMap>,
    bench: &'b AttachedBench,
    own_binary: std::path::PathBuf,
    /// Programs this kernel cannot attach, and why (a missing mechanism).
    unattachable: Vec<Option<String>>,
    /// Triggers whose slowdown was measured (the first program of each).
    slowdowns_done: Vec<TriggerKind>,
    notes: Vec<String>,
}

impl<'b> Loaded<'b> {
    pub(super) fn new(bench: &'b AttachedBench, cpu: usize) -> Result<Loaded<'b>> {
        let setup = &bench.setup;
        let mut notes = Vec::new();
        if bench.programs.iter().any(|p| matches!(p.point, AttachPoint::Tracepoint { .. }))
            && crate::system::tracefs::ensure()? == crate::system::tracefs::Mounted::Privately
        {
            notes.push("tracefs: mounted in bpfbench's own mount namespace (the machine's has none)".into());
        }
        let cgroup = match bench.programs.iter().any(|p| matches!(p.point, AttachPoint::Cgroup { .. })) {
            true => {
                let c = OwnCgroup::enter()?;
                notes.push(format!(
                    "cgroup: bpfbench runs in {} while the cgroup programs are attached to it",
                    c.path().display()
                ));
                Some(c)
            }
            false => None,
        };
        let mut unattachable: Vec<Option<String>> = bench.programs.iter().map(|_| None).collect();
        let object = match load(bench, &[]) {
            Ok(object) => object,
            // A kernel that refuses trampolines refuses their programs at
            // load: the others load without them, and they are N/A.
            Err(e) if bench.programs.iter().any(|p| p.point.needs_trampoline()) => {
                let refused: Vec<&str> =
                    bench.programs.iter().filter(|p| p.point.needs_trampoline()).map(|p| p.name.as_str()).collect();
                for (i, p) in bench.programs.iter().enumerate().filter(|(_, p)| p.point.needs_trampoline()) {
                    unattachable[i] = Some(format!(
                        "{reason}; this kernel refuses to load '{}' at {} (a BPF trampoline); {IN_A_GUEST}",
                        p.name,
                        p.point,
                        reason = crate::record::error_line(&e)
                    ));
                }
                load(bench, &refused)?
            }
            Err(e) => return Err(e),
        };
        if !object.legacy_maps().is_empty() {
            notes.push(crate::workloads::object::legacy_maps_note(&object));
        }
        for (map, file) in &setup.user.maps {
            notes.push(format!("map {map}: filled from {}", file.display()));
        }
        for g in &setup.user.globals {
            notes.push(format!("global {}: set before load", g.shown()));
        }
        let buffers: Vec<_> = object.buffer_maps();
        let reader = match buffers.is_empty() {
            true => None,
            false => {
                let maps: Vec<_> = buffers.iter().map(|(_, fd, kind)| (*fd, *kind)).collect();
                // The tool's reader runs beside the workload, not on its CPU.
                let other = crate::system::cpu::allowed_cpus()?.into_iter().find(|c| *c != cpu);
                let reader = BufferReader::start(&maps, move || {
                    if let Some(c) = other {
                        let _ = crate::system::cpu::pin_to_cpu(c);
                    }
                })?;
                notes.push(format!(
                    "buffers: {} read by a thread of bpfbench's{} as the tool's reader would",
                    buffers.iter().map(|(n, _, _)| n.as_str()).collect::<Vec<_>>().join(", "),
                    other.map(|c| format!(" on CPU {c}")).unwrap_or_default()
                ));
                Some(reader)
            }
        };
        let own_binary = std::fs::read_link("/proc/self/exe").context("reading /proc/self/exe")?;
        let sockmap = match bench
            .programs
            .iter()
            .any(|p| matches!(p.point, AttachPoint::SockMap { .. }) || p.trigger == TriggerKind::SockMapMessage)
        {
            true => Some(object.sockmap()?),
            false => None,
        };
        let mut loaded = Loaded {
            attachment: Attachment::Nothing,
            reader,
            empties: bench.programs.iter().map(|_| None).collect(),
            triggers: Triggers::for_object(sockmap.as_ref().map(|m| m.fd().try_clone_to_owned()).transpose()?),
            sockmap,
            stats: Some(bpf_stats::enable()?),
            object,
            cgroup,
            bench,
            own_binary,
            unattachable,
            slowdowns_done: Vec::new(),
            notes,
        };
        loaded.find_unattachable()?;
        Ok(loaded)
    }

    fn context(&self) -> AttachContext<'_> {
        AttachContext {
            cgroup: self.cgroup.as_ref().map(|c| c.fd()),
            own_binary: &self.own_binary,
            own_function: TRIGGER_FUNCTION,
            own_usdt: TRIGGER_USDT,
            sockmap: self.sockmap.as_ref().map(SockMap::fd),
        }
    }

    /// Attaches each program once: a program whose mechanism this kernel
    /// lacks is N/A (its reason kept), any other refusal fails the set-up.
    fn find_unattachable(&mut self) -> Result<()> {
        for (i, p) in self.bench.programs.iter().enumerate() {
            if self.unattachable[i].is_some() {
                continue;
            }
            match self.object.attach(&p.name, &p.point, &self.context()) {
                Ok(link) => drop(link),
                Err(e) if e.is::<MissingMechanism>() => self.unattachable[i] = Some(crate::record::error_line(&e)),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Every program that attaches here attached, as the object's loader would.
    fn attach_object(&mut self) -> Result<()> {
        if matches!(self.attachment, Attachment::Object { .. }) {
            return Ok(());
        }
        self.detach_all();
        let mut links = Vec::new();
        for (i, p) in self.bench.programs.iter().enumerate() {
            if self.unattachable[i].is_none() {
                links.push(self.object.attach(&p.name, &p.point, &self.context())?);
            }
        }
        self.attachment = Attachment::Object { _links: links };
        Ok(())
    }

    /// Only the empty program at program `i`'s point attached.
    fn attach_empty(&mut self, i: usize) -> Result<()> {
        if matches!(self.attachment, Attachment::Empty { for_program } if for_program == i) {
            return Ok(());
        }
        self.detach_all();
        let p = &self.bench.programs[i];
        if self.empties[i].is_none() {
            self.empties[i] = Some(EmptyOnHook::load(p.kind, &p.point)?);
        }
        let mut empty = self.empties[i].take().expect("loaded above");
        let attached = empty.attach(&p.point, &self.context());
        self.empties[i] = Some(empty);
        attached?;
        self.attachment = Attachment::Empty { for_program: i };
        Ok(())
    }

    /// Only program `i` attached, at its point.
    fn attach_alone(&mut self, i: usize) -> Result<()> {
        if matches!(self.attachment, Attachment::Alone { program, .. } if program == i) {
            return Ok(());
        }
        self.detach_all();
        let p = &self.bench.programs[i];
        let link = self.object.attach(&p.name, &p.point, &self.context())?;
        self.attachment = Attachment::Alone { program: i, _link: link };
        Ok(())
    }

    fn detach_all(&mut self) {
        self.attachment = Attachment::Nothing;
        self.empties.iter_mut().flatten().for_each(EmptyOnHook::detach);
    }

    /// The run-time statistics on (kernel-instruction regions and the
    /// slowdown's phases turn them off): runs are counted by them.
    fn stats_on(&mut self) -> Result<()> {
        if self.stats.is_none() {
            self.stats = Some(bpf_stats::enable()?);
        }
        Ok(())
    }

    /// Fires `events` with the object attached: every program's runs.
    fn count_runs(&mut self, kind: &TriggerKind, events: u64) -> Result<Vec<RunStats>> {
        self.stats_on()?;
        self.attach_object()?;
        let fds: Vec<BorrowedFd<'_>> =
            self.bench.programs.iter().map(|p| self.object.prog_fd(&p.name)).collect::<Result<_>>()?;
        let trigger = self.triggers.get(kind)?;
        runs_during(&fds, || trigger.fire(events))
    }

    /// The trigger's slowdown with the whole object attached, the
    /// statistics off meanwhile (unless the machine keeps them on).
    fn slowdown(&mut self, kind: &TriggerKind) -> Result<crate::record::attached::Slowdown> {
        self.stats = None;
        let programs: Vec<String> = self
            .bench
            .programs
            .iter()
            .zip(&self.unattachable)
            .filter(|(_, u)| u.is_none())
            .map(|(p, _)| p.name.clone())
            .collect();
        // A trigger of its own: the measured ones keep their state.
        let trigger = self.triggers.prepare(kind)?;
        let mut set = |on: bool| -> Result<()> {
            match on {
                true => self.attach_object(),
                false => {
                    self.detach_all();
                    Ok(())
                }
            }
        };
        let measured =
            measure_slowdown(trigger, programs, &mut set, SlowdownPlan::default(), crate::system::interrupt::flag());
        self.stats_on()?;
        measured
    }

    fn validate_program(&mut self, i: usize) -> Result<(Validation, AttachedRun)> {
        let p: &Attachable = &self.bench.programs[i];
        let (kind, point, expected) = (p.trigger.clone(), p.point.clone(), p.expected);
        // The trigger's cost with the object attached sizes validation and batches.
        self.attach_object()?;
        self.triggers.forget(&kind);
        let events = self.triggers.events_in(&kind, VALIDATION_NS, 20, 2000)?;
        // The sizing's records read first: they are not this count's.
        let records_before = self.reader.as_ref().map(|r| {
            r.settle();
            r.counts()
        });
        let runs = self.count_runs(&kind, events)?;
        let records = match (&self.reader, records_before) {
            (Some(r), Some((rec0, lost0))) => {
                r.settle();
                let (rec, lost) = r.counts();
                let maps = self.object.buffer_maps().into_iter().map(|(n, _, _)| n).collect();
                Some(BufferRecords { records: rec - rec0, lost: lost - lost0, maps })
            }
            _ => None,
        };
        let own = runs[i];
        let name = &self.bench.programs[i].name;
        let counted = EventRuns { events, runs: own.run_cnt, expected_runs_per_event: expected.runs_per_event() };
        let judged = judge_runs(name, &point.to_string(), &kind, counted)?;
        let mut checks = vec![judged.check];
        for (j, r) in runs.iter().enumerate().filter(|(j, _)| *j != i) {
            checks.push(format!(
                "  '{}' of the same object ran {} times meanwhile",
                self.bench.programs[j].name, r.run_cnt
            ));
        }
        let mut notes = self.notes.clone();
        notes.extend(judged.note);
        for (j, why) in self.unattachable.iter().enumerate() {
            if let Some(why) = why {
                notes.push(format!("'{}' is not attached here: {why}", self.bench.programs[j].name));
            }
        }
        if let Some(r) = &records {
            checks.push(format!(
                "buffers: {} records ({:.2} per event), {} lost, from {}",
                r.records,
                r.records as f64 / events as f64,
                r.lost,
                r.maps.join(", ")
            ));
        }
        let slowdown = match !self.bench.setup.slowdown || self.slowdowns_done.contains(&kind) {
            true => None,
            false => {
                let s = self.slowdown(&kind)?;
                self.slowdowns_done.push(kind.clone());
                notes.push(format!(
                    "slowdown of {}: {:+.1} ns per event with the object attached ({}; bpf_stats off)",
                    kind.describe(),
                    s.ns_per_event(),
                    s.phases
                ));
                Some(s)
            }
        };
        let attached = AttachedRun {
            point: point.to_string(),
            mechanism: point.mechanism().into(),
            trigger: kind.describe(),
            counted,
            records,
            slowdown,
            tool: None,
        };
        let validation = Validation {
            verdict: format!("{:.2} runs/event", attached.runs_per_event()),
            outcome: None,
            timing: Timing::BpfStats { point: point.to_string(), trigger: kind.describe() },
            checks,
            notes,
            outputs: Vec::new(),
            attached: Some(Box::new(attached.clone())),
        };
        Ok((validation, attached))
    }
}

/// The object opened and loaded as its loader would, its maps filled from
/// --map files; the programs `skip` names left unloaded.
fn load(bench: &AttachedBench, skip: &[&str]) -> Result<ObjectFile> {
    let setup = &bench.setup;
    let mut object = setup.open()?;
    object.reuse_pinned(&setup.user.pins)?;
    for p in &bench.programs {
        if skip.contains(&p.name.as_str()) {
            object.skip_loading(&p.name)?;
        } else if setup.attach.as_ref().is_some_and(|a| !a.is_empty()) {
            object.set_attach_target(&p.name, &p.point)?;
        }
    }
    object.prepare()?;
    for (map, file) in &setup.user.maps {
        crate::workloads::object::map_json::fill(&object, map, file)?;
    }
    object.load_every_program()?;
    Ok(object)
}

impl LoadedWorkload for Loaded<'_> {
    fn unavailable(&mut self, scenario: &ScenarioInfo) -> Option<String> {
        let (i, _) = self.bench.program(&scenario.name).ok()?;
        self.unattachable[i].clone()
    }

    fn validate(&mut self, scenario: &ScenarioInfo) -> Result<(Validation, Box<dyn PreparedScenario + '_>)> {
        let (i, _) = self.bench.program(&scenario.name)?;
        if let Some(why) = &self.unattachable[i] {
            return Err(NotRunnable(why.clone()).into());
        }
        let (validation, _) = self.validate_program(i)?;
        let kind = self.bench.programs[i].trigger.clone();
        let cap = self.triggers.events_in(&kind, BATCH_WALL_NS, 1, u64::from(u32::MAX))? as u32;
        Ok((validation, Box::new(AttachedScenario { loaded: self, program: i, cap })))
    }
}

/// One program ready to be timed on its hook.
struct AttachedScenario<'l, 'b> {
    loaded: &'l mut Loaded<'b>,
    program: usize,
    /// Events per batch at most (a batch's wall time within BATCH_WALL_NS).
    cap: u32,
}

impl PreparedScenario for AttachedScenario<'_, '_> {
    /// `iters` events: the program's runs and their time (Body), or the
    /// empty program's at the same point (Overhead), from bpf_stats.
    fn run_batch(&mut self, variant: Variant, iters: u32) -> Result<BatchTiming> {
        let l = &mut *self.loaded;
        l.stats_on()?;
        let p = &l.bench.programs[self.program];
        let kind = p.trigger.clone();
        match variant {
            Variant::Body => l.attach_object()?,
            Variant::Overhead => l.attach_empty(self.program)?,
        }
        let fd = match variant {
            Variant::Body => l.object.prog_fd(&p.name)?,
            Variant::Overhead => l.empties[self.program].as_ref().expect("attached above").fd()?,
        };
        time_events(fd, &p.name, &mut l.triggers, &kind, iters)
    }

    /// The trigger's `iters` events with this program alone attached, the
    /// empty program, or nothing, the statistics off: kernel-instruction
    /// regions of the program without the object's others, and of the
    /// workload without the hook.
    fn run_hook_batch(&mut self, attached: HookBatch, iters: u32) -> Option<Result<()>> {
        let l = &mut *self.loaded;
        let kind = l.bench.programs[self.program].trigger.clone();
        // What the kernel runs for the hook, not for the statistics.
        l.stats = None;
        let set = match attached {
            HookBatch::ProgramAlone => l.attach_alone(self.program),
            HookBatch::Empty => l.attach_empty(self.program),
            HookBatch::Nothing => {
                l.detach_all();
                Ok(())
            }
        };
        Some(set.and_then(|()| l.triggers.get(&kind)?.fire(u64::from(iters))))
    }

    fn batch_cap(&self) -> Option<u32> {
        Some(self.cap)
    }

    fn overhead_key(&self) -> OverheadKey {
        let p = &self.loaded.bench.programs[self.program];
        OverheadKey::EmptyAttached { kind: p.kind, point: p.point.to_string(), trigger: p.trigger.describe() }
    }

    fn program(&self) -> Option<BorrowedFd<'_>> {
        self.loaded.object.prog_fd(&self.loaded.bench.programs[self.program].name).ok()
    }
}
