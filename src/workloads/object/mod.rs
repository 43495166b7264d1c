//! Your own program: an unmodified XDP or tc object file (`bpfbench run
//! FILE.bpf.o`), or a spec file bundling one with maps and named cases
//! (`bpfbench run bench.toml`).
//!
//! libbpf loads the object as its author's loader would; each case is then
//! validated against the program's own output (and the user's expectations)
//! and timed in BPF, the program spliced into a driver's batch loop
//! ([`splice`], [`spliced`]), or, when that cannot be done, per call
//! ([`per_call`]), labelled as such everywhere.

mod btf_value;
mod cases;
mod chain;
mod checks;
mod globals;
pub mod live;
mod map_json;
mod map_state;
mod options;
mod per_call;
mod restore;
mod splice;
mod spliced;
mod user_context;

use std::collections::HashMap;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::Mutex;

use anyhow::{Context, Result, bail};
use clap::{Args, FromArgMatches};
use libbpf_rs::{MapCore, MapFlags, MapHandle};

use crate::harness::timing::{BodyChoice, TimingChoice};
use crate::harness::{BatchTiming, LoadedWorkload, PreparedScenario, ScenarioInfo, Validation, Variant, Workload};
use crate::insn::{Insn, helper};
use crate::kernel::load::constant_program;
use crate::kernel::map_snapshot::MapSnapshot;
use crate::kernel::object::{ObjectFile, ProgramInfo};
use crate::kernel::prog_type::{BatchLoop, ProgKind};
use crate::kernel::slot_traps::{MAX_WATCHED_SLOTS, Slot, SlotTraps};
use crate::kernel::test_run::{RunOutput, run_input};
use crate::kernel::{AttachType, FuncInfo};
use crate::packet::mask::Mask;
use crate::packet::{diff_packets, pcap};
use crate::record::{Body, InstructionCount, LoopConstruct, Runtime, Timing, VerifierStats};
use crate::workloads::Registration;
pub use cases::{Case, CaseInput, CaseSpec, DEFAULT_PACKET, ExpectedVerdict, ForProgram};
pub(crate) use chain::{ChainRequest, ChainTimer, NotInLoop};
pub use options::{EMPTY_SLOT, LoadArgs, ObjectArgs, ObjectSetup, SlotFill, VerifierArgs};
use per_call::PerCall;
pub(crate) use restore::{Restore, plan as restore_plan};
use splice::PreparedProgram;
pub(crate) use splice::{ENCAPSULATED_FOR_GOOD, object_encapsulates_for_good};
use spliced::{Placement, SpliceRequest, Spliced};

crate::bpf_skeleton!("driver_xdp");
/// The drivers' configuration and per-CPU state, from their BTF (driver.h).
pub(crate) use skel::types::{bench_driver_state as DriverState, rodata as Rodata};
crate::impl_pod!(DriverState, Rodata);
/// Said of a tc case whose skb state the loop puts back with helpers.
pub const HELPER_RESETS: &str = "the program changes the skb's protocol, packet type or flow hash: the loop puts them back with a helper call after every iteration that changed them (a test run starts each skb without a hash), inside the timed region; the empty loop needs none";

/// Bytes the driver writes back per iteration at most.
pub const MAX_RESTORE: u32 = size_of::<skel::types::bench_variant>() as u32;

pub const REGISTRATION: Registration = Registration {
    names: &[],
    about: "your own XDP or tc program: an object file (FILE.bpf.o) or a spec file (FILE.toml)",
    claims: |target| target.ends_with(".o") || target.ends_with(".toml") || Path::new(target).is_file(),
    selected_by: None,
    options: ObjectArgs::augment_args,
    build: |target, matches| {
        let args = ObjectArgs::from_arg_matches(matches).map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(Box::new(ObjectBench::new(ObjectSetup::from_target(Path::new(target), &args)?)?))
    },
    with_object: None,
};

/// How two outputs of a program differ, if they do, outside what `mask`
/// leaves out.
pub(crate) fn outputs_differ(kind: ProgKind, mask: &Mask, want: &RunOutput, got: &RunOutput) -> Option<String> {
    if want.retval != got.retval {
        return Some(format!("verdict {}, expected {}", kind.verdict_name(got.retval), kind.verdict_name(want.retval)));
    }
    if kind.outputs_flow_keys() {
        return btf_value::struct_differs("bpf_flow_keys", &want.packet, &got.packet)
            .map(|d| format!("flow keys differ: {d}"));
    }
    if mask.is_empty() {
        return diff_packets(&want.packet, &got.packet).map(|d| format!("output packet differs: {d}"));
    }
    let (want, got) = mask.blank(&want.packet, &got.packet);
    diff_packets(&want, &got).map(|d| format!("output packet differs (outside {mask}): {d}"))
}

/// The cure for outputs that differ only in fields a clock or a random
/// draw fills (after `mask`): the `--ignore` flags that accept them.
pub(crate) fn ignore_hint(mask: &Mask, want: &RunOutput, got: &RunOutput) -> Option<String> {
    if want.retval != got.retval {
        return None;
    }
    let (want, got) = mask.blank(&want.packet, &got.packet);
    let keys = crate::packet::mask::drawn_fields(&want, &got)?;
    let flags: Vec<String> = keys.iter().map(|k| format!("--ignore {k}")).collect();
    Some(format!(
        "they differ only in fields a clock or a random draw fills: {} accepts them (ignore = [{}] in a spec's case)",
        flags.join(" "),
        keys.iter().map(|k| format!("\"{k}\"")).collect::<Vec<_>>().join(", ")
    ))
}

/// Why case `name` (`what`: "" or " the chain") cannot run in the
/// userspace runtime: N/A where the runtime lacks what the path needs (a
/// helper, a map type), a failure otherwise.
fn not_in_user_runtime(name: &str, what: &str, e: anyhow::Error) -> anyhow::Error {
    let why = format!("case {name}: cannot run{what} in the userspace runtime: {e:#}");
    if crate::uvm::lacks(&e) { crate::harness::NotRunnable(why).into() } else { anyhow::anyhow!(why) }
}

/// Writes the first `restore` bytes of each of a case's packets into a
/// driver's `bench_variants` (sized to the bytes written back).
fn write_variants(map: &MapHandle, variants: &[Vec<u8>], restore: u32) -> Result<()> {
    let n = restore as usize;
    for (i, v) in variants.iter().enumerate() {
        let mut value = vec![0u8; map.value_size() as usize];
        value[..n].copy_from_slice(&v[..n]);
        map.update(&(i as u32).to_ne_bytes(), &value, MapFlags::ANY).context("writing the case's packets")?;
    }
    Ok(())
}

/// The program the per-call overhead is measured with: it returns at once.
pub(crate) fn empty_program(kind: ProgKind, attach: AttachType, flags: u32) -> Result<OwnedFd> {
    constant_program(kind, "bench_empty", kind.pass_verdict(), attach, flags)
        .context("loading the empty program of per-call timing")
}

/// A user's object and its cases, as configured.
pub struct ObjectBench {
    setup: ObjectSetup,
    program: ProgramInfo,
    kind: ProgKind,
    cases: Vec<Case>,
    infos: Vec<ScenarioInfo>,
    /// `--timing-mode`: the driver's loop, per call, or the best there is.
    timing: TimingChoice,
    /// What earlier builds found of each driver (by [`DriverKey`]), kept
    /// across set-ups: a case's driver is built again every sweep and,
    /// in `ab`, every round, and cases of one program differ mostly in
    /// their packets, which the verifier's verdict does not depend on.
    drivers: Mutex<HashMap<DriverKey, KnownDriver>>,
    /// Why the verifier refused the body inline, per loop: found once for
    /// any driver of that loop, it holds for all.
    inline_refused: Mutex<HashMap<(LoopConstruct, Runtime), String>>,
    /// What progress names the rows under ("spec/" in a corpus, whose rows are named so).
    row_prefix: String,
}

impl ObjectBench {
    /// Checks the object, picks the program and resolves every case, so
    /// bad input is refused before anything reaches the kernel.
    pub fn new(mut setup: ObjectSetup) -> Result<ObjectBench> {
        if let Some(build) = setup.build.as_deref().filter(|_| !setup.object.exists()) {
            bail!("{} is not built; build it with: {build}", setup.object.display());
        }
        let object = setup.open(&setup.object)?;
        let (program, kind) = object.select(setup.program.as_deref())?;
        let maps = object.map_names();
        drop(object);
        for (c, e) in setup.cases.iter().flat_map(|c| c.expect_maps.iter().map(move |e| (c, e))) {
            if !maps.contains(&e.map) {
                bail!(
                    "case {}: --expect-map {}: {} has no map '{}'; its maps: {}",
                    c.name,
                    e.map,
                    setup.object.display(),
                    e.map,
                    maps.join(", ")
                );
            }
        }
        if setup.program.is_none() && setup.cases.len() == 1 && setup.cases[0].name == "default" {
            setup.cases[0].name = program.name.clone();
        }
        let for_program = ForProgram { kind, name: &program.name, type_name: &program.type_name };
        let cases = setup.cases.iter().map(|c| c.resolve(for_program)).collect::<Result<Vec<_>>>()?;
        let file = setup.object.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
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
            drivers: Mutex::default(),
            inline_refused: Mutex::default(),
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
        Ok(splice::DRIVER_LOOPS.into_iter().find(|l| caps.loop_construct(*l).is_ok()))
    }
}

impl Workload for ObjectBench {
    fn name(&self) -> &str {
        &self.setup.name
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
            if !self.kind.desc().user_runtime {
                bail!(
                    "'{name}' is a {} program; the userspace runtime runs {} programs only: use --runtime kernel",
                    self.program.type_name,
                    ProgKind::labels(|t| t.user_runtime)
                );
            }
            if self.setup.per_call || self.timing == TimingChoice::PerCall {
                bail!(
                    "--per-call times single test runs in the kernel; the userspace runtime times in the batch loop: drop --per-call or use --runtime kernel"
                );
            }
        }
        let mut user = self.setup.open(&self.setup.object)?;
        user.configure(name, &self.setup.pins)?;
        user.also_load(&own_slot_programs(&self.setup.tail_calls))?;
        user.prepare()?;
        // The final instructions, before loading takes them over.
        let insns = user.insns(name)?;
        let funcs = user.func_info(name)?;
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
        let (stats, others) = load_filled(&mut user, name, &self.setup, &mut notes)?;
        let (attach, flags) = user.load_attrs(name)?;
        let traps = if makes_tail_calls(&insns) {
            Some(self.watch_empty_slots(&user, attach, flags, &mut notes)?)
        } else {
            None
        };
        let empty = empty_program(self.kind, attach, flags)?;
        let construct = self.loop_construct(runtime)?;
        let maps_as_set_up = match self.cases.iter().any(|c| !c.expect_maps.is_empty()) {
            true => snapshot_own_maps(&user, &self.setup.pins)?,
            false => Vec::new(),
        };
        Ok(Box::new(Loaded {
            maps_as_set_up,
            bench: self,
            user,
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
        user: &ObjectFile,
        attach: AttachType,
        flags: u32,
        notes: &mut Vec<String>,
    ) -> Result<SlotTraps> {
        let pinned: Vec<String> = self.setup.pins.iter().map(|(map, _)| map.clone()).collect();
        let leave: Vec<Slot> = self
            .setup
            .tail_calls
            .iter()
            .filter(|f| f.left_empty())
            .map(|f| Slot { map: f.map.clone(), index: f.slot })
            .collect();
        let traps = SlotTraps::install(user, self.kind, attach, flags, &pinned, &leave)?;
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

/// Loads `program` of `user` (prepared) as the setup asks: its maps filled
/// from --map files first, then its prog array slots, loading the other
/// objects they name (returned, to stay loaded) with their maps filled from
/// the --map files that name theirs. Each map and slot gets a note.
fn load_filled(
    user: &mut ObjectFile,
    program: &str,
    setup: &ObjectSetup,
    notes: &mut Vec<String>,
) -> Result<(VerifierStats, Vec<ObjectFile>)> {
    // A --map names a map of this object or of an object whose program
    // fills a prog array slot.
    let has_others = setup.tail_calls.iter().any(|f| f.object.is_some());
    let own_maps = user.map_names();
    for (map, file) in &setup.maps {
        if own_maps.contains(map) || !has_others {
            let n = map_json::fill(user, map, file)?;
            notes.push(format!("map {map}: {n} entries from {}", file.display()));
        }
    }
    for (map, path) in &setup.pins {
        notes.push(format!("map {map}: the map pinned at {}", path.display()));
    }
    for g in &setup.globals {
        notes.push(format!("global {}: set before load", g.shown()));
    }
    let stats = user.load(program)?;
    let others = fill_slots(user, setup, notes)?;
    for (map, file) in &setup.maps {
        if !own_maps.contains(map) && !others.iter().any(|o| o.map_names().contains(map)) {
            bail!(
                "--map {map}={}: neither {} nor the objects of --tail-call have a map '{map}'",
                file.display(),
                setup.object.display()
            );
        }
    }
    Ok((stats, others))
}

/// The object's own maps as the setup left them (--map files, globals),
/// for cases that check the maps after their packets: those a program may
/// write and bpfbench can read whole; not the read-only ones (.rodata),
/// nor maps pinned by the user's control plane, which are not ours to
/// put back.
fn snapshot_own_maps(user: &ObjectFile, pins: &[(String, std::path::PathBuf)]) -> Result<Vec<MapSnapshot>> {
    let ncpus = crate::system::cpu::possible_cpus()?;
    let mut snapshots = Vec::new();
    for (fd, _, name) in user.created_maps()? {
        if pins.iter().any(|(pinned, _)| *pinned == name) {
            continue;
        }
        // SAFETY: the object holds the fd open as long as `user` lives.
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

/// Fills the prog array slots `fills` name in `user` (loaded), loading the
/// programs of other objects, which are returned to stay loaded as long as
/// the slots are used; an other object's maps named in `maps` are filled
/// from their files first. Each slot and map gets a note.
fn fill_slots(user: &ObjectFile, setup: &ObjectSetup, notes: &mut Vec<String>) -> Result<Vec<ObjectFile>> {
    let mut others = Vec::new();
    for f in &setup.tail_calls {
        let what = format!("--tail-call {}:{}={}", f.map, f.slot, f.program);
        if f.left_empty() {
            user.empty_prog_array_slot(&f.map, f.slot).with_context(|| what.clone())?;
            notes.push(format!("prog array {}: slot {} left empty ({what}): a path may reach it", f.map, f.slot));
            continue;
        }
        let (fd, from) = match &f.object {
            None => (user.prog_fd(&f.program).with_context(|| what.clone())?, String::new()),
            Some(path) => {
                let mut other = setup.open(path).with_context(|| what.clone())?;
                other.configure(&f.program, &[]).with_context(|| what.clone())?;
                other.prepare().with_context(|| what.clone())?;
                let theirs = other.map_names();
                for (map, file) in setup.maps.iter().filter(|(m, _)| theirs.contains(m)) {
                    let n = map_json::fill(&other, map, file)?;
                    notes.push(format!("map {map} of {}: {n} entries from {}", path.display(), file.display()));
                }
                other.load(&f.program).with_context(|| what.clone())?;
                others.push(other);
                let other = others.last().expect("just pushed");
                (other.prog_fd(&f.program)?, format!(" of {}", path.display()))
            }
        };
        user.fill_prog_array(&f.map, f.slot, fd).with_context(|| what.clone())?;
        notes.push(format!("prog array {}: slot {} holds {}{from}", f.map, f.slot, f.program));
    }
    Ok(others)
}

/// Whether the program calls `bpf_tail_call`.
fn makes_tail_calls(insns: &[Insn]) -> bool {
    splice::calls_helper(insns, helper::TAIL_CALL)
}

/// The user's object, loaded as its author's loader would.
struct Loaded<'a> {
    bench: &'a ObjectBench,
    user: ObjectFile,
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

/// What a spliced driver is built from, but the packets' bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct DriverKey {
    construct: LoopConstruct,
    runtime: Runtime,
    restore: u32,
    packets: usize,
}

/// What the builds of one driver found: where the body went, at the tail
/// reset and at the MAC header's, and whether the tail reset failed.
#[derive(Debug, Default, Clone)]
struct KnownDriver {
    at_tail: Option<Placement>,
    at_mac: Option<Placement>,
    tail_fails: bool,
}

impl ObjectBench {
    /// The same, its rows named under `prefix` in progress lines, as a
    /// corpus names them (`spec/case`).
    pub fn rows_named_under(self, prefix: &str) -> ObjectBench {
        ObjectBench { row_prefix: format!("{prefix}/"), ..self }
    }

    /// Notes what a build found of driver `key`.
    fn remember(&self, key: DriverKey, found: impl FnOnce(&mut KnownDriver)) {
        found(self.drivers.lock().unwrap_or_else(|e| e.into_inner()).entry(key).or_default());
    }
}

impl Loaded<'_> {
    /// What earlier builds found of the driver `key`; where none built it,
    /// the refusal of the inline body in the same loop, if one was found
    /// (the same program's complexity in that loop; its packets and bytes
    /// written back change only the loop's reset block).
    fn known_driver(&self, key: DriverKey) -> KnownDriver {
        let drivers = self.bench.drivers.lock().unwrap_or_else(|e| e.into_inner());
        let refused = self.bench.inline_refused.lock().unwrap_or_else(|e| e.into_inner());
        let called = refused.get(&(key.construct, key.runtime)).map(|why| Placement::Called(Some(why.clone())));
        let mut known = drivers.get(&key).cloned().unwrap_or_default();
        known.at_tail = known.at_tail.or_else(|| called.clone());
        known.at_mac = known.at_mac.or(called);
        known
    }

    /// The program's own output for each packet, checked to be the same on
    /// two runs: a path that changes with state has no single figure.
    fn references(&self, case: &Case) -> Result<Vec<RunOutput>> {
        let prog = self.user.prog_fd(&self.bench.program.name)?;
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
        let prog = self.user.prog_fd(&self.bench.program.name)?;
        for i in 0..case.packets.len() {
            run_input(prog, &case.input(i))?;
        }
        case.expect_maps
            .iter()
            .map(|e| e.check(&self.user, self.cpu).with_context(|| format!("case {}", case.name)))
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

/// How a validated case is timed.
enum Timer<'a> {
    // Boxed: the spliced driver is large, and a per-call timer is small.
    InBpf(Box<Spliced>),
    Chain(Box<ChainTimer>),
    PerCall(PerCall<'a>),
}

struct Prepared<'a> {
    timer: Timer<'a>,
    /// The user's program as loaded: its tag and verifier figures are the record's.
    program: BorrowedFd<'a>,
    stats: VerifierStats,
    overhead_key: String,
}

impl PreparedScenario for Prepared<'_> {
    fn run_batch(&mut self, variant: Variant, iters: u32) -> Result<BatchTiming> {
        let body = variant == Variant::Body;
        match &mut self.timer {
            Timer::InBpf(s) => s.run_batch(body, iters),
            Timer::Chain(c) => c.run_batch(body, iters),
            Timer::PerCall(p) => p.run_batch(body, iters),
        }
    }

    fn overhead_key(&self) -> String {
        self.overhead_key.clone()
    }

    fn batch_cap(&self) -> Option<u32> {
        match &self.timer {
            Timer::InBpf(s) => crate::harness::timing::batch_cap(s.construct),
            Timer::Chain(c) => Some(c.batch_cap()),
            Timer::PerCall(_) => None,
        }
    }

    fn program(&self) -> Option<BorrowedFd<'_>> {
        Some(self.program)
    }

    fn verifier_stats(&self) -> Option<VerifierStats> {
        Some(self.stats.clone())
    }

    fn count_instructions(&mut self, iters: u32, profile: crate::harness::Profile) -> Result<Option<InstructionCount>> {
        match &mut self.timer {
            Timer::InBpf(s) => {
                let Some(rt) = s.user().cloned() else { return Ok(None) };
                crate::harness::count_instructions(&rt, iters, profile, |variant, n| {
                    s.run_batch(variant == Variant::Body, n)
                })
                .map(Some)
            }
            Timer::Chain(c) => {
                let Some(rt) = c.user().cloned() else { return Ok(None) };
                // The chain's own instructions: its entry run alone per packet, no loop around it.
                crate::harness::count_instructions(&rt, iters, profile, |variant, n| match variant {
                    Variant::Body => c.run_entry(n),
                    Variant::Overhead => Ok(BatchTiming {
                        started_ns: crate::system::monotonic_ns(),
                        elapsed_ns: 0,
                        iters: u64::from(n),
                    }),
                })
                .map(Some)
            }
            Timer::PerCall(_) => Ok(None),
        }
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
        let (timer, timing, key) = match self.restore_plan(case, &refs) {
            Restore::PerCall(reason) if self.runtime == Runtime::User => {
                bail!(
                    "case {}: the userspace runtime times in the batch loop only, and this case is timed per call because {reason}",
                    case.name
                )
            }
            Restore::PerCall(reason) => self.per_call(case, refs.clone(), reason),
            Restore::Bytes(restore)
                if makes_tail_calls(&self.insns) || matches!(kind.desc().batch_loop, BatchLoop::Chain(_)) =>
            {
                self.chain(case, &refs, restore, &mut checks, &mut notes, &info.name)?
            }
            Restore::Bytes(restore) => self.spliced(case, &refs, restore, &mut checks, &mut notes, &info.name)?,
        };
        if let Timing::PerCall { reason, host_timed } = &timing {
            let by = match host_timed {
                true => format!(
                    "timed by the host around its system call: the kernel reports no time for {} test runs",
                    bench.program.type_name
                ),
                false => "timed by the kernel".to_string(),
            };
            notes.push(format!("timing: per call (one BPF_PROG_TEST_RUN per packet, {by}), because {reason}"));
        }
        let (verdict, outcome) = (checks::verdict_summary(kind, &refs), Some(case.outcome(kind, &refs)));
        let validation = Validation { verdict, outcome, timing, checks, notes, outputs: refs };
        let program = self.user.prog_fd(&bench.program.name)?;
        let prepared = Prepared { timer, program, stats: self.stats.clone(), overhead_key: key };
        Ok((validation, Box::new(prepared)))
    }
}

impl Loaded<'_> {
    /// Where the loop's restore can put the packet back: the bytes to write
    /// back per iteration, or why the case is timed per call.
    fn restore_plan(&self, case: &Case, refs: &[RunOutput]) -> Restore {
        let bench = self.bench;
        if bench.setup.per_call || bench.timing == TimingChoice::PerCall {
            Restore::PerCall("asked for with --per-call".into())
        } else if let BatchLoop::PerCall(why) = bench.kind.desc().batch_loop {
            Restore::PerCall(why.into())
        } else if self.construct.is_none() {
            Restore::PerCall("this kernel verifies neither may_goto nor bounded loops".into())
        } else {
            let outputs: Vec<Vec<u8>> = refs.iter().map(|r| r.packet.clone()).collect();
            restore::plan(bench.kind, &case.packets, &outputs)
        }
    }

    /// The program spliced into the driver's loop (called or inline), or
    /// per call when the verifier refuses the spliced program.
    fn spliced(
        &self,
        case: &Case,
        refs: &[RunOutput],
        restore: u32,
        checks: &mut Vec<String>,
        notes: &mut Vec<String>,
        row: &str,
    ) -> Result<(Timer<'_>, Timing, String)> {
        let (bench, kind, name) = (self.bench, self.bench.kind, self.bench.program.name.as_str());
        let user = PreparedProgram { object: &self.user, name, kind, insns: &self.insns, funcs: &self.funcs };
        let construct = self.construct.unwrap_or_default();
        let refused_inline = |why: String| {
            let mut refused = self.bench.inline_refused.lock().unwrap_or_else(|e| e.into_inner());
            refused.entry((construct, self.runtime)).or_insert(why);
        };
        let request = SpliceRequest {
            user: &user,
            variants: &case.packets,
            restore,
            references: refs.to_vec(),
            mask: case.mask.clone(),
            cpu: self.cpu,
            runtime: self.runtime,
            ctx: case.shared_ctx().map(<[u8]>::to_vec),
            construct,
            body: bench.setup.body,
            reset_at_mac: false,
            known: None,
            inline_refused: Some(&refused_inline),
        };
        let key = DriverKey { construct, runtime: self.runtime, restore, packets: case.packets.len() };
        let known = self.known_driver(key);
        // A tc program that changes the length is put back at the tail; where
        // that fails (a decapsulation's data walks forward), at the MAC
        // header, in the kernel (the userspace runtime has no
        // bpf_skb_adjust_room). The tail's reason stands if both fail.
        let resizes_tc = kind == ProgKind::Tc && refs.iter().zip(&case.packets).any(|(r, p)| r.packet.len() != p.len());
        let at_mac = |request: SpliceRequest<'_>| {
            // Asked now: the tail's build may have found the inline refusal.
            let known = self.known_driver(key).at_mac;
            let built = Spliced::build(SpliceRequest { reset_at_mac: true, known, ..request });
            if let Ok(s) = &built {
                self.bench.remember(key, |k| k.at_mac = Some(s.placement()));
            }
            built
        };
        let what = format!(
            "{}{row}: the verifier checks the {} loop around the program",
            bench.row_prefix,
            construct.as_str()
        );
        let built = crate::harness::activity::during(&what, || {
            match known.tail_fails && resizes_tc && self.runtime == Runtime::Kernel {
                true => at_mac(request),
                false => match Spliced::build(SpliceRequest { known: known.at_tail.clone(), ..request.clone() }) {
                    Err(at_tail) if resizes_tc && self.runtime == Runtime::Kernel => {
                        self.bench.remember(key, |k| k.tail_fails = true);
                        at_mac(request).map_err(|_| at_tail)
                    }
                    Ok(s) => {
                        self.bench.remember(key, |k| k.at_tail = Some(s.placement()));
                        Ok(s)
                    }
                    built => built,
                },
            }
        });
        Ok(match built {
            Ok(s) => {
                if s.user().is_some() {
                    checks.push(format!("in the userspace runtime, the program alone gave the kernel's verdict and output for each of the {} packet(s)", refs.len()));
                    notes.push("runtime: userspace, the spliced program as the kernel verified it, compiled by bpfbench's JIT, with copies of the maps".into());
                }
                checks.push("spliced into the batch loop: the last iteration of every checked batch matched the program's own output".into());
                if s.resized()? > 0 {
                    notes.push(format!("the program changes the packet's length: the loop puts it back after every iteration ({}), inside the timed region", s.length_reset));
                }
                if s.helper_resets()? > 0 {
                    notes.push(HELPER_RESETS.into());
                }
                let placement = match (&s.placement, &s.why_called) {
                    (Body::Inline, _) => "inline in the batch loop".to_string(),
                    (Body::Call, Some(why)) => format!("called from the batch loop (not inline: {why})"),
                    (Body::Call, None) => "called from the batch loop".to_string(),
                };
                notes.push(format!(
                    "timing: in BPF, the program {placement}; {restore} bytes written back per iteration"
                ));
                if s.placement_known {
                    notes.push("placed as an earlier build of this loop placed it (the same program and loop; other packets or sweep): the verifier walked only that form".into());
                }
                let key = format!(
                    "{kind:?} driver loop ({}, body {}), {restore} bytes written back, {} packet(s)",
                    s.construct.as_str(),
                    s.placement.as_str(),
                    case.packets.len()
                );
                let timing =
                    Timing::InBpf { construct: s.construct, body: s.placement, why_called: s.why_called.clone() };
                (Timer::InBpf(Box::new(s)), timing, key)
            }
            Err(e) if self.runtime == Runtime::User => return Err(not_in_user_runtime(&case.name, "", e)),
            Err(e) if bench.timing.forced_loop().is_some() => {
                bail!("case {}: --timing-mode {}: {e:#}", case.name, bench.timing.as_str())
            }
            Err(e) => {
                // The reason on its first line, the verifier's last lines after it.
                let text = format!("{e:#}");
                let (reason, tail) = text.split_once('\n').unwrap_or((&text, ""));
                let reason = match reason.contains("another output") && splice::encapsulates_for_good(&self.insns) {
                    true => format!("{reason} ({ENCAPSULATED_FOR_GOOD})"),
                    false => reason.to_string(),
                };
                if !tail.is_empty() {
                    notes.push(format!(
                        "verifier log of the spliced program (last lines):\n      {}",
                        tail.replace('\n', "\n      ")
                    ));
                }
                self.per_call(case, refs.to_vec(), reason)
            }
        })
    }

    /// A program that makes tail calls: the chain entered from the chain
    /// driver's loop by a tail call, or per call where no loop can hold it.
    fn chain(
        &self,
        case: &Case,
        refs: &[RunOutput],
        restore: u32,
        checks: &mut Vec<String>,
        notes: &mut Vec<String>,
        row: &str,
    ) -> Result<(Timer<'_>, Timing, String)> {
        let name = &self.bench.program.name;
        let user = match self.runtime {
            Runtime::User => {
                let mut code = self.user.loaded_code()?;
                for other in &self.tail_call_objects {
                    code.merge(other.loaded_code()?, &other.stem())?;
                }
                Some((name.as_str(), code))
            }
            Runtime::Kernel => None,
        };
        // A raw tracepoint's runs take its arguments as their context and no packet.
        let no_packet = [Vec::new()];
        let (variants, ctx) = match self.bench.kind.takes_raw_context() {
            true => (&no_packet[..], Some(case.packets[0].clone())),
            false => (&case.packets[..], case.shared_ctx().map(<[u8]>::to_vec)),
        };
        let req = ChainRequest {
            kind: self.bench.kind,
            entry: self.user.prog_fd(name)?,
            user,
            load_attrs: self.user.load_attrs(name)?,
            variants,
            restore,
            references: refs.to_vec(),
            mask: case.mask.clone(),
            ctx,
            cpu: self.cpu,
        };
        let what = format!("{}{row}: the verifier checks the chain loop around the program", self.bench.row_prefix);
        let timer = match crate::harness::activity::during(&what, || ChainTimer::build(req)) {
            Ok(Ok(timer)) => timer,
            Ok(Err(NotInLoop(why))) if self.runtime == Runtime::User => {
                bail!("case {}: the userspace runtime times chains in the batch loop only, and {why}", case.name)
            }
            Err(e) if self.runtime == Runtime::User => return Err(not_in_user_runtime(&case.name, " the chain", e)),
            Ok(Err(NotInLoop(why))) => {
                return Ok(self.per_call(case, refs.to_vec(), format!("it makes tail calls, and {why}")));
            }
            Err(e) => {
                // One line: a packet's differences follow the error on lines of their own.
                let mut why =
                    format!("{e:#}").lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
                if why.contains("another output") && object_encapsulates_for_good(&self.user) {
                    why = format!("{why} ({ENCAPSULATED_FOR_GOOD})");
                }
                let reason = format!("it makes tail calls, and the loop that enters a chain could not run it: {why}");
                return Ok(self.per_call(case, refs.to_vec(), reason));
            }
        };
        if timer.user().is_some() {
            checks.push(format!("in the userspace runtime, the chain alone gave the kernel's verdict and output for each of the {} packet(s)", refs.len()));
            notes.push("runtime: userspace, the chain driver and the chain's programs as the kernel verified them, compiled by bpfbench's JIT, tail calls through copies of the prog arrays (33 per run, as kernels since 5.17 allow), with copies of the maps".into());
        }
        checks.push("entered from the batch loop by a tail call, the chain's checked pass of every run matched the program's own output".into());
        let budget = match timer.tail_calls {
            0 => "this kernel counts tail calls per call of the loop's subprogram, so each pass has the whole budget"
                .to_string(),
            n => format!(
                "{n} tail calls per packet, the loop's included, and this kernel allows {} per run",
                timer.limit
            ),
        };
        notes.push(format!(
            "timing: in BPF, the chain entered by a tail call from the batch loop ({} timed passes per test run: {budget}); {restore} bytes written back per pass",
            timer.per_run
        ));
        if let Some(how) = timer.length_reset {
            notes.push(format!(
                "the chain changes the packet's length: the loop puts it back after every pass ({how}), inside the timed region"
            ));
        }
        if timer.helper_resets().is_ok_and(|n| n > 0) {
            notes.push(HELPER_RESETS.into());
        }
        let key = format!(
            "{:?} chain loop ({} passes per run, a tail call into an empty program), {restore} bytes written back, {} packet(s)",
            self.bench.kind,
            timer.per_run,
            case.packets.len()
        );
        let timing = Timing::Chain { tail_calls: timer.tail_calls, per_run: timer.per_run };
        Ok((Timer::Chain(Box::new(timer)), timing, key))
    }

    fn per_call(&self, case: &Case, refs: Vec<RunOutput>, reason: String) -> (Timer<'_>, Timing, String) {
        let prog = self.user.prog_fd(&self.bench.program.name).expect("loaded in setup");
        let empty = std::os::fd::AsFd::as_fd(&self.empty);
        let inputs = (0..case.packets.len()).map(|i| case.input(i)).collect();
        let timer =
            PerCall { prog, empty, inputs, references: refs, mask: case.mask.clone(), kind: self.bench.kind, next: 0 };
        let key = format!("{:?} test run of an empty program", self.bench.kind);
        let host_timed = !self.bench.kind.test_run_times();
        (Timer::PerCall(timer), Timing::PerCall { reason, host_timed }, key)
    }
}
