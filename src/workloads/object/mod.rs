//! Your own program: an unmodified XDP or tc object file (`bpfbench run
//! FILE.bpf.o`), or a spec file bundling one with maps and named cases
//! (`bpfbench run bench.toml`).
//!
//! libbpf loads the object as its author's loader would; each case is then
//! validated against the program's own output (and the user's expectations)
//! and timed by the timing engine ([`crate::engine`]): in BPF, the
//! program spliced into a driver's batch loop or entered from the chain
//! loop, or, when that cannot be done, per call, labelled as such
//! everywhere.

mod cases;
mod checks;
mod globals;
pub mod live;
pub(crate) mod map_json;
mod map_state;
mod options;

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use anyhow::{Context, Result, bail};
use clap::{Args, FromArgMatches};

use crate::engine::{self, DRIVER_LOOPS, DriverMemo, empty_program, ignore_hint, outputs_differ};
use crate::harness::timing::{BodyChoice, TimingChoice};
use crate::harness::{LoadedWorkload, PreparedScenario, ScenarioInfo, Validation, Workload};
use crate::insn::{Insn, helper};
use crate::kernel::map_snapshot::MapSnapshot;
use crate::kernel::object::{ObjectFile, ProgramInfo};
use crate::kernel::prog_type::ProgKind;
use crate::kernel::slot_traps::{MAX_WATCHED_SLOTS, Slot, SlotTraps};
use crate::kernel::test_run::{RunOutput, run_input};
use crate::kernel::{AttachType, FuncInfo};
use crate::packet::pcap;
use crate::record::{LoopConstruct, Runtime, VerifierStats};
use crate::workloads::{Claim, Registration};
pub use cases::{Case, CaseInput, CaseSpec, DEFAULT_PACKET, ExpectedVerdict, ForProgram};
pub use options::{EMPTY_SLOT, GlobalValue, LoadArgs, ObjectArgs, ObjectSetup, SlotFill, UserObject, VerifierArgs};
pub const REGISTRATION: Registration = Registration {
    names: &[],
    about: "your own XDP or tc program: an object file (FILE.bpf.o) or a spec file (FILE.toml)",
    // A spec file is this workload's; any other file is a BPF object to it
    // unless another workload claims it (a test framework's objects).
    claims: |target| {
        if target.ends_with(".toml") {
            Claim::Yes
        } else if target.ends_with(".o") || Path::new(target).is_file() {
            Claim::Fallback
        } else {
            Claim::No
        }
    },
    selected_by: None,
    options: ObjectArgs::augment_args,
    build: |target, matches| {
        let args = ObjectArgs::from_arg_matches(matches).map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(Box::new(ObjectBench::new(ObjectSetup::from_target(Path::new(target), &args)?)?))
    },
    with_object: None,
};

/// A user's object and its cases, as configured.
pub struct ObjectBench {
    setup: ObjectSetup,
    program: ProgramInfo,
    kind: ProgKind,
    cases: Vec<Case>,
    infos: Vec<ScenarioInfo>,
    /// `--timing-mode`: the driver's loop, per call, or the best there is.
    timing: TimingChoice,
    /// What earlier builds found of the program's drivers, kept across set-ups.
    drivers: DriverMemo,
    /// What progress names the rows under ("spec/" in a corpus, whose rows are named so).
    row_prefix: String,
}

impl ObjectBench {
    /// Checks the object, picks the program and resolves every case, so
    /// bad input is refused before anything reaches the kernel.
    pub fn new(mut setup: ObjectSetup) -> Result<ObjectBench> {
        if let Some(build) = setup.user.build.as_deref().filter(|_| !setup.user.object.exists()) {
            bail!("{} is not built; build it with: {build}", setup.user.object.display());
        }
        let object = setup.user.open(&setup.user.object)?;
        let (program, kind) = object.select(setup.user.program.as_deref())?;
        let maps = object.map_names();
        let missing: Vec<&str> = setup
            .cases
            .iter()
            .flat_map(|c| c.expect_maps.iter())
            .filter(|e| !object.has_map(&e.map))
            .map(|e| e.map.as_str())
            .collect();
        drop(object);
        for (c, e) in setup.cases.iter().flat_map(|c| c.expect_maps.iter().map(move |e| (c, e))) {
            if missing.contains(&e.map.as_str()) {
                bail!(
                    "case {}: --expect-map {}: {} has no map '{}'; its maps: {}",
                    c.name,
                    e.map,
                    setup.user.object.display(),
                    e.map,
                    maps.join(", ")
                );
            }
        }
        if setup.user.program.is_none() && setup.cases.len() == 1 && setup.cases[0].name == "default" {
            setup.cases[0].name = program.name.clone();
        }
        let for_program = ForProgram { kind, name: &program.name, type_name: &program.type_name };
        let cases = setup.cases.iter().map(|c| c.resolve(for_program)).collect::<Result<Vec<_>>>()?;
        let file = setup.user.object.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        let infos = cases
            .iter()
            .map(|c| ScenarioInfo {
                name: c.name.clone().into(),
                group: format!("{} in {file}", program.name).into(),
                description: format!("{} packet(s): {}", c.packets.len(), c.source).into(),
                facts: crate::record::ScenarioFacts::TABLE_ROW,
            })
            .collect();
        Ok(ObjectBench {
            setup,
            program,
            kind,
            cases,
            infos,
            timing: TimingChoice::Auto,
            drivers: DriverMemo::default(),
            row_prefix: String::new(),
        })
    }

    fn case(&self, info: &ScenarioInfo) -> Result<&Case> {
        self.cases.iter().find(|c| c.name == info.name).with_context(|| format!("no case '{}'", info.name))
    }

    /// The loop the driver times in: may_goto in the userspace runtime
    /// (whatever the kernel has); in the kernel the forced one where it
    /// verifies it, else the best of may_goto and a bounded loop. `None`
    /// when the kernel has neither: the cases are timed per call.
    fn loop_construct(&self, runtime: Runtime) -> Result<Option<LoopConstruct>> {
        if runtime == Runtime::User {
            return Ok(Some(LoopConstruct::MayGoto));
        }
        if self.timing.forced_loop().is_some() {
            return self.timing.loop_construct().map(Some);
        }
        let Some(caps) = crate::kernel::features::probe() else {
            // Unprivileged: the load that follows reports why.
            return Ok(Some(LoopConstruct::MayGoto));
        };
        Ok(DRIVER_LOOPS.into_iter().find(|l| caps.loop_construct(*l).is_ok()))
    }
}

impl Workload for ObjectBench {
    fn name(&self) -> &str {
        &self.setup.user.name
    }

    fn scenarios(&self) -> &[ScenarioInfo] {
        &self.infos
    }

    fn set_body(&mut self, choice: BodyChoice) -> Result<()> {
        self.setup.body = choice;
        Ok(())
    }

    fn set_timing(&mut self, choice: TimingChoice) -> Result<()> {
        if choice == TimingChoice::BpfLoop {
            bail!(
                "your own objects have no --timing-mode bpf-loop (its callback cannot take your program's context): use may-goto, bounded or per-call"
            );
        }
        if self.setup.body == BodyChoice::Inline {
            let without = match choice {
                _ if self.setup.per_call => Some("--per-call times without a loop"),
                TimingChoice::PerCall => Some("--timing-mode per-call times without a loop"),
                TimingChoice::Bounded => {
                    Some("--timing-mode bounded's loop is walked by the verifier in every iteration")
                }
                _ => None,
            };
            if let Some(why) = without {
                bail!("--body inline needs the may_goto loop ({why}): use --timing-mode may-goto or auto");
            }
        }
        self.timing = choice;
        Ok(())
    }

    fn setup(&self, cpu: usize) -> Result<Box<dyn LoadedWorkload + '_>> {
        self.setup_in(cpu, Runtime::Kernel)
    }

    /// The kernel loads the object either way: its verifier decides what
    /// the userspace JIT may run, and the maps are copied from the kernel's
    /// after the --map files filled them.
    fn setup_in(&self, cpu: usize, runtime: Runtime) -> Result<Box<dyn LoadedWorkload + '_>> {
        let name = &self.program.name;
        if runtime == Runtime::User {
            if !self.kind.user_runtime() {
                bail!(
                    "'{name}' is a {} program; the userspace runtime runs {} programs only: use --runtime kernel",
                    self.program.type_name,
                    ProgKind::labels(|t| t.kind.user_runtime())
                );
            }
            if self.setup.per_call || self.timing == TimingChoice::PerCall {
                bail!(
                    "--per-call times single test runs in the kernel; the userspace runtime times in the batch loop: drop --per-call or use --runtime kernel"
                );
            }
        }
        let mut object = self.setup.user.open(&self.setup.user.object)?;
        object.configure(name, &self.setup.user.pins)?;
        object.also_load(&own_slot_programs(&self.setup.tail_calls))?;
        object.prepare()?;
        // The final instructions, before loading takes them over.
        let insns = object.insns(name)?;
        let funcs = object.func_info(name)?;
        let mut notes = Vec::new();
        if runtime == Runtime::User {
            let missing = crate::uvm::runtime::missing_calls(&insns);
            if !missing.is_empty() {
                notes.push(format!(
                    "the userspace runtime lacks {}: a case whose path reaches it fails, naming it (--runtime kernel runs it); the others run, in its interpreter (its JIT compiles only programs whose every call it has)",
                    missing.join(", ")
                ));
            }
        }
        let (stats, others) = load_filled(&mut object, name, &self.setup, &mut notes)?;
        let (attach, flags) = object.load_attrs(name)?;
        let traps = if makes_tail_calls(&insns) {
            Some(self.watch_empty_slots(&object, attach, flags, &mut notes)?)
        } else {
            None
        };
        let empty = empty_program(self.kind, attach, flags)?;
        let construct = self.loop_construct(runtime)?;
        let maps_as_set_up = match self.cases.iter().any(|c| !c.expect_maps.is_empty()) {
            true => snapshot_own_maps(&object, &self.setup.user.pins)?,
            false => Vec::new(),
        };
        Ok(Box::new(Loaded {
            maps_as_set_up,
            bench: self,
            object,
            tail_call_objects: others,
            traps,
            insns,
            funcs,
            stats,
            empty,
            cpu,
            notes,
            runtime,
            construct,
        }))
    }
}

impl ObjectBench {
    /// Traps in the empty slots of the object's prog arrays (not the pinned
    /// ones, which are not ours to change, nor those left empty on purpose),
    /// so that validation fails where a path reaches one.
    fn watch_empty_slots(
        &self,
        object: &ObjectFile,
        attach: AttachType,
        flags: u32,
        notes: &mut Vec<String>,
    ) -> Result<SlotTraps> {
        let pinned: Vec<String> = self.setup.user.pins.iter().map(|(map, _)| map.clone()).collect();
        let leave: Vec<Slot> = self
            .setup
            .tail_calls
            .iter()
            .filter(|f| f.left_empty())
            .map(|f| Slot { map: f.map.clone(), index: f.slot })
            .collect();
        let traps = SlotTraps::install(object, self.kind, attach, flags, &pinned, &leave)?;
        if !traps.is_empty() {
            notes.push(format!(
                "prog arrays: {} empty slot(s) watched; a path that tail-calls one fails validation",
                traps.len()
            ));
        }
        for (map, slots) in &traps.unwatched {
            notes.push(format!(
                "prog array {map}: only slots 0 to {} of {slots} are watched for calls into empty slots",
                MAX_WATCHED_SLOTS - 1
            ));
        }
        Ok(traps)
    }
}

/// What bpfbench read differently from the file: its legacy map definitions.
pub(crate) fn legacy_maps_note(object: &ObjectFile) -> String {
    format!(
        "maps {}: legacy definitions (a 'maps' section, as aya-ebpf's #[map] writes them) read as BTF-defined maps, in memory",
        object.legacy_maps().join(", ")
    )
}

/// Loads `program` of `object` (prepared) as the setup asks: its maps filled
/// from --map files first, then its prog array slots, loading the other
/// objects they name (returned, to stay loaded) with their maps filled from
/// the --map files that name theirs. Each map and slot gets a note.
fn load_filled(
    object: &mut ObjectFile,
    program: &str,
    setup: &ObjectSetup,
    notes: &mut Vec<String>,
) -> Result<(VerifierStats, Vec<ObjectFile>)> {
    // A --map names a map of this object or of an object whose program
    // fills a prog array slot.
    let has_others = setup.tail_calls.iter().any(|f| f.object.is_some());
    if !object.legacy_maps().is_empty() {
        notes.push(legacy_maps_note(object));
    }
    if object.license_by_default() {
        notes.push("license: none in the object (rustc built it): loaded as \"GPL\", as Aya's loader takes it".into());
    }
    let own_maps = object.map_names();
    for (map, file) in &setup.user.maps {
        if own_maps.contains(map) || !has_others {
            let n = map_json::fill(object, map, file)?;
            notes.push(format!("map {map}: {n} entries from {}", file.display()));
        }
    }
    for (map, path) in &setup.user.pins {
        notes.push(format!("map {map}: the map pinned at {}", path.display()));
    }
    for g in &setup.user.globals {
        notes.push(format!("global {}: set before load", g.shown()));
    }
    let stats = object.load(program)?;
    notes.extend(unread_buffer_notes(object));
    let others = fill_slots(object, setup, notes)?;
    for (map, file) in &setup.user.maps {
        if !own_maps.contains(map) && !others.iter().any(|o| o.map_names().contains(map)) {
            bail!(
                "--map {map}={}: neither {} nor the objects of --tail-call have a map '{map}'",
                file.display(),
                setup.user.object.display()
            );
        }
    }
    Ok((stats, others))
}

/// A note per ring buffer or perf event array (aya-log's `AYA_LOGS` is
/// one): a test run has no reader, so what the program writes there is
/// dropped, and the figures leave out what a reader's copy would cost.
fn unread_buffer_notes(object: &ObjectFile) -> Vec<String> {
    use crate::kernel::buffers::BufferKind;
    object
        .buffer_maps()
        .into_iter()
        .map(|(name, _, kind)| match kind {
            BufferKind::Perf => format!(
                "map {name}: a perf event array no reader opens here: each output finds no perf event (-ENOENT) and drops its record before copying it, as with no logger or reader running; the figures leave that copy out"
            ),
            BufferKind::Ring => format!(
                "map {name}: a ring buffer nothing reads here: records are written until it is full, then refused (bpf_ringbuf_reserve gives NULL, bpf_ringbuf_output -EAGAIN), as with a reader that stopped; the figures hold both paths"
            ),
        })
        .collect()
}

/// The object's own maps as the setup left them (--map files, globals),
/// for cases that check the maps after their packets: those a program may
/// write and bpfbench can read whole; not the read-only ones (.rodata),
/// nor maps pinned by the user's control plane, which are not ours to
/// put back.
fn snapshot_own_maps(object: &ObjectFile, pins: &[(String, std::path::PathBuf)]) -> Result<Vec<MapSnapshot>> {
    let ncpus = crate::system::cpu::possible_cpus()?;
    let mut snapshots = Vec::new();
    for (fd, _, name) in object.created_maps()? {
        if pins.iter().any(|(pinned, _)| *pinned == name) {
            continue;
        }
        // SAFETY: the object holds the fd open as long as `object` lives.
        let map = unsafe { BorrowedFd::borrow_raw(fd) };
        if !crate::kernel::map_snapshot::restorable(map).with_context(|| format!("reading map {name}"))? {
            continue;
        }
        snapshots.push(MapSnapshot::take(map, ncpus).with_context(|| format!("reading map {name} as set up"))?);
    }
    Ok(snapshots)
}

/// The programs of the user's own object that prog array slots name.
fn own_slot_programs(fills: &[SlotFill]) -> Vec<String> {
    fills.iter().filter(|f| f.object.is_none() && !f.left_empty()).map(|f| f.program.clone()).collect()
}

/// Fills the prog array slots `fills` name in `object` (loaded), loading the
/// programs of other objects, which are returned to stay loaded as long as
/// the slots are used; an other object's maps named in `maps` are filled
/// from their files first. Each slot and map gets a note.
fn fill_slots(object: &ObjectFile, setup: &ObjectSetup, notes: &mut Vec<String>) -> Result<Vec<ObjectFile>> {
    let mut others = Vec::new();
    for f in &setup.tail_calls {
        let what = format!("--tail-call {}:{}={}", f.map, f.slot, f.program);
        if f.left_empty() {
            object.empty_prog_array_slot(&f.map, f.slot).with_context(|| what.clone())?;
            notes.push(format!("prog array {}: slot {} left empty ({what}): a path may reach it", f.map, f.slot));
            continue;
        }
        let (fd, from) = match &f.object {
            None => (object.prog_fd(&f.program).with_context(|| what.clone())?, String::new()),
            Some(path) => {
                let mut other = setup.user.open(path).with_context(|| what.clone())?;
                other.configure(&f.program, &[]).with_context(|| what.clone())?;
                other.prepare().with_context(|| what.clone())?;
                let theirs = other.map_names();
                for (map, file) in setup.user.maps.iter().filter(|(m, _)| theirs.contains(m)) {
                    let n = map_json::fill(&other, map, file)?;
                    notes.push(format!("map {map} of {}: {n} entries from {}", path.display(), file.display()));
                }
                other.load(&f.program).with_context(|| what.clone())?;
                others.push(other);
                let other = others.last().expect("just pushed");
                (other.prog_fd(&f.program)?, format!(" of {}", path.display()))
            }
        };
        object.fill_prog_array(&f.map, f.slot, fd).with_context(|| what.clone())?;
        notes.push(format!("prog array {}: slot {} holds {}{from}", f.map, f.slot, f.program));
    }
    Ok(others)
}

/// Whether the program calls `bpf_tail_call`.
fn makes_tail_calls(insns: &[Insn]) -> bool {
    engine::calls_helper(insns, helper::TAIL_CALL)
}

/// The user's object, loaded as its author's loader would.
struct Loaded<'a> {
    bench: &'a ObjectBench,
    object: ObjectFile,
    /// Objects whose programs fill the user's prog arrays: held so that
    /// they stay loaded.
    tail_call_objects: Vec<ObjectFile>,
    /// The empty prog array slots watched, when the program makes tail calls.
    traps: Option<SlotTraps>,
    insns: Vec<Insn>,
    funcs: Vec<FuncInfo>,
    /// The verifier's figures for the program as loaded.
    stats: VerifierStats,
    empty: OwnedFd,
    cpu: usize,
    notes: Vec<String>,
    /// Where the batches run: the kernel, or the userspace runtime's JIT.
    runtime: Runtime,
    /// The driver's loop; `None` where the kernel verifies none of them.
    construct: Option<LoopConstruct>,
    /// The maps as the setup left them, when a case checks the maps.
    maps_as_set_up: Vec<MapSnapshot>,
}

impl ObjectBench {
    /// The same, its rows named under `prefix` in progress lines, as a
    /// corpus names them (`spec/case`).
    pub fn rows_named_under(self, prefix: &str) -> ObjectBench {
        ObjectBench { row_prefix: format!("{prefix}/"), ..self }
    }
}

impl Loaded<'_> {
    /// The program's own output for each packet, checked to be the same on
    /// two runs: a path that changes with state has no single figure.
    fn references(&self, case: &Case) -> Result<Vec<RunOutput>> {
        let prog = self.object.prog_fd(&self.bench.program.name)?;
        let mut refs = Vec::with_capacity(case.packets.len());
        for i in 0..case.packets.len() {
            let input = case.input(i);
            let first = run_input(prog, &input)?;
            let second = run_input(prog, &input)?;
            self.check_no_empty_slot(i)?;
            if let Some(diff) = outputs_differ(self.bench.kind, &case.mask, &first, &second) {
                let cure = ignore_hint(&case.mask, &first, &second).unwrap_or_else(|| {
                    "the program's path depends on state, so no single figure describes it; a field it fills from the clock or a counter can be left out with --ignore (tcp.seq, ts.val, ip.id, ...)".into()
                });
                bail!("packet {i} gave different outputs on two runs ({diff}): {cure}");
            }
            refs.push(first);
        }
        Ok(refs)
    }

    /// The case's expectations of the maps: the maps put back as set up,
    /// each packet run once, then each expected entry looked up.
    fn check_maps(&self, case: &Case) -> Result<Vec<String>> {
        if case.expect_maps.is_empty() {
            return Ok(Vec::new());
        }
        for m in &self.maps_as_set_up {
            m.restore().with_context(|| format!("case {}: putting the maps back as set up", case.name))?;
        }
        let prog = self.object.prog_fd(&self.bench.program.name)?;
        for i in 0..case.packets.len() {
            run_input(prog, &case.input(i))?;
        }
        case.expect_maps
            .iter()
            .map(|e| e.check(&self.object, self.cpu).with_context(|| format!("case {}", case.name)))
            .collect()
    }

    /// Fails naming the empty prog array slot the runs of packet `i` reached.
    fn check_no_empty_slot(&self, i: usize) -> Result<()> {
        let Some(traps) = &self.traps else { return Ok(()) };
        if let Some(Slot { map, index }) = traps.take_reached()? {
            bail!(
                "packet {i}'s path tail-calls slot {index} of prog array '{map}', which is empty: fill it with --tail-call {map}:{index}=PROG, or say it is meant to be empty with --tail-call {map}:{index}={EMPTY_SLOT}"
            );
        }
        Ok(())
    }

    /// Writes what the program output for the case to --record's file.
    fn record(&self, case: &Case, refs: &[RunOutput], notes: &mut Vec<String>) -> Result<()> {
        let Some(path) = &self.bench.setup.record else { return Ok(()) };
        if self.bench.kind.outputs_no_packet() {
            notes.push("--record: this program's test run outputs no packets; nothing recorded".into());
            return Ok(());
        }
        let path = if self.bench.cases.len() > 1 {
            let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            path.with_file_name(format!("{stem}-{}.pcap", case.name))
        } else {
            path.clone()
        };
        let packets: Vec<&[u8]> = refs.iter().map(|r| r.packet.as_slice()).collect();
        pcap::write(&path, &packets)?;
        notes.push(format!("recorded the {} output packet(s) to {}", packets.len(), path.display()));
        Ok(())
    }
}

impl LoadedWorkload for Loaded<'_> {
    fn validate(&mut self, info: &ScenarioInfo) -> Result<(Validation, Box<dyn PreparedScenario + '_>)> {
        let (bench, kind) = (self.bench, self.bench.kind);
        let case = bench.case(info)?;
        let mut notes = self.notes.clone();
        notes.extend(case.input_notes(kind));
        let map_checks = self.check_maps(case)?;
        let refs = self.references(case)?;
        let mut checks = vec![format!(
            "the program's own verdict and output are the same on two runs of each of the {} packet(s)",
            refs.len()
        )];
        self.record(case, &refs, &mut notes)?;
        checks.extend(case.check_outputs(kind, bench.name(), &refs)?);
        checks.extend(map_checks);
        let program = engine::Program {
            object: &self.object,
            tail_call_objects: &self.tail_call_objects,
            name: &bench.program.name,
            kind,
            type_name: &bench.program.type_name,
            insns: &self.insns,
            funcs: &self.funcs,
            stats: self.stats.clone(),
            empty: self.empty.as_fd(),
            cpu: self.cpu,
            runtime: self.runtime,
            construct: self.construct,
        };
        let input = engine::Input {
            packets: &case.packets,
            ctx: case.shared_ctx(),
            per_call: (0..case.packets.len()).map(|i| case.input(i)).collect(),
            references: &refs,
            mask: &case.mask,
        };
        let per_call = bench.setup.per_call || bench.timing == TimingChoice::PerCall;
        let row = format!("{}{}", bench.row_prefix, info.name);
        let options = engine::Options {
            per_call: per_call.then_some("asked for with --per-call"),
            forced: bench.timing.forced_loop().map(|_| bench.timing.as_str()),
            body: bench.setup.body,
            case: &case.name,
            row: &row,
        };
        let chosen = engine::choose(&program, &input, options, &bench.drivers)?;
        checks.extend(chosen.checks);
        notes.extend(chosen.notes);
        let (verdict, outcome) = (checks::verdict_summary(kind, &refs), Some(case.outcome(kind, &refs)));
        let validation =
            Validation { verdict, outcome, timing: chosen.timing, checks, notes, outputs: refs, attached: None };
        Ok((validation, Box::new(chosen.timed)))
    }
}
