//! One test object loaded and replayed as Cilium's Go runner
//! (bpf/tests/bpftest/bpf_test.go) replays it: every program loaded
//! together, maps unpinned, `cilium_calls` filled from the tail programs'
//! BTF tags; then each test in sorted name order, sharing the maps, so a
//! test sees the state the tests before it left (a reply after its
//! request):
//!
//! 1. `pktgen` runs on 3520 zero bytes (and a zeroed 256-byte `__sk_buff`
//!    for tc); its output packet and context are `setup`'s input.
//! 2. `setup` seeds maps and tail-calls the datapath entry; the verdict, as
//!    a native-endian u32 in front of the output packet, and the context
//!    go to `check`, whose report in `suite_result_map` is decoded: the
//!    test's own pass or fail. That map and `mock_skb_meta_map` are zeroed
//!    after.
//! 3. A test whose setup jumps is then split, from the maps as they were
//!    before its setup: the setup runs again with a recorder in every slot
//!    of the prog arrays the setups use, which names the slot the jump
//!    reached, while the run's output is the packet and context the entry
//!    would have been given; the maps as they are now are the test's
//!    *fresh* state. The entry
//!    runs alone on that input, and its output must pass the test's check
//!    as the runner's sequence did. The maps are then put back as the
//!    runner's sequence left them, for the next test.

use std::os::fd::{AsFd, BorrowedFd};

use anyhow::{Context, Result, bail};

use super::result::CheckOutcome;
use super::suite::section_kind;
use crate::engine::object_encapsulates_for_good;
use crate::kernel::map_snapshot::{MapSnapshot, restore_all};
use crate::kernel::object::ObjectFile;
use crate::kernel::prog_type::ProgKind;
use crate::kernel::slot_traps::{Reached, SlotRecorder};
use crate::kernel::test_run::{RunOutput, run_keeping_ctx};
use crate::workloads::bpf_tests::framework::{
    Entry, EntryRun, Judgement, Replayed, ReplayedFile, Split, Test, TestFile,
};

/// The packet buffer pktgen starts from (Cilium's runner: a page less
/// the test run's head- and tailroom).
pub const PKTGEN_BYTES: usize = 4096 - 256 - 320;
/// The `__sk_buff` a tc test's first program is given: zeroes (larger
/// than the struct, as the runner's).
pub const SKB_BYTES: usize = 256;
/// The map a `CHECK` writes its report into, and the one the framework's
/// skb metadata mock keeps; both zeroed after each test.
const RESULT_MAP: &str = "suite_result_map";
const MOCK_META_MAP: &str = "mock_skb_meta_map";

/// What a CHECK is given of an entry's run: the verdict, native-endian, in front of the packet.
fn verdict_and_packet(run: &EntryRun) -> Vec<u8> {
    let mut data = run.output.retval.to_ne_bytes().to_vec();
    data.extend_from_slice(&run.output.packet);
    data
}

/// Where a test's setup starts: the setup and its input (pktgen's
/// output, its context), and the maps before it ran: what the setup is run
/// again from, so that each validation times the state the setup makes
/// then (a setup may stamp the time, as Cilium's agent-liveness tests do).
#[derive(Default)]
struct Start {
    setup: Option<(String, Vec<u8>, Option<Vec<u8>>)>,
    before: Vec<MapSnapshot>,
}

/// A test object loaded and replayed.
pub(super) struct Collection {
    object: ObjectFile,
    recorder: SlotRecorder,
    /// Each map's descriptor, shared by the snapshots of it.
    maps: Vec<(String, std::sync::Arc<std::os::fd::OwnedFd>)>,
    kind: ProgKind,
    /// Whether a program of the object encapsulates for good
    /// (`object::splice::encapsulates_for_good`): said where the chain loop
    /// then gives another output.
    encapsulates_for_good: bool,
    replayed: Vec<Replayed>,
    /// Each replayed test's start, by its index.
    starts: Vec<Start>,
    /// Facts for every test's notes (slots filled, programs made global).
    notes: Vec<String>,
}

impl Collection {
    /// Loads `file` and replays its tests in order.
    pub fn load(file: &TestFile) -> Result<Collection> {
        let (mut object, mends) = ObjectFile::open_mended(&file.path)?;
        object.assume_types(section_kind)?;
        object.load_every_program()?;
        let mut notes = Vec::new();
        if !mends.globalized.is_empty() {
            notes.push(format!(
                "{} static program(s) made global in memory, as Cilium's loader takes them",
                mends.globalized.len()
            ));
        }
        if !mends.copied.is_empty() {
            notes.push(format!(
                "called from another program's section, copied into .text in memory (libbpf calls into .text only; Cilium's loader links them): {}",
                mends.copied.join(", ")
            ));
        }
        let filled = fill_tail_slots(&object)?;
        if filled > 0 {
            notes.push(format!("{filled} prog array slot(s) filled from the programs' BTF tags (tail:MAP/N)"));
        }
        let kind = file.kind;
        let some_check = &file.tests[0].check;
        let (attach, flags) = object.load_attrs(some_check)?;
        // Traps in the slots the setups can jump to: the prog arrays they use.
        let setups: Vec<BorrowedFd<'_>> =
            file.tests.iter().filter_map(|t| t.setup.as_ref()).map(|s| object.prog_fd(s)).collect::<Result<_>>()?;
        let recorder = SlotRecorder::new(&object, &setups, kind, attach, flags)?;
        drop(setups);
        let mut maps = Vec::new();
        for (fd, _, name) in object.created_maps()? {
            // SAFETY: the object holds the fd open as long as it lives.
            let map = unsafe { BorrowedFd::borrow_raw(fd) };
            if crate::kernel::map_snapshot::restorable(map).with_context(|| format!("reading map {name}"))? {
                maps.push((name, std::sync::Arc::new(map.try_clone_to_owned()?)));
            }
        }
        let encapsulates_for_good = object_encapsulates_for_good(&object);
        let mut collection = Collection {
            object,
            recorder,
            maps,
            kind,
            encapsulates_for_good,
            replayed: Vec::new(),
            starts: Vec::new(),
            notes,
        };
        for test in &file.tests {
            let replayed = collection.replay(test);
            collection.clear_framework_maps()?;
            let (replayed, start) = replayed?;
            collection.replayed.push(replayed);
            collection.starts.push(start);
        }
        Ok(collection)
    }

    fn prog(&self, name: &str) -> Result<BorrowedFd<'_>> {
        self.object.prog_fd(name)
    }

    /// The context a test starts with: a zeroed `__sk_buff` for tc, none for XDP.
    fn first_ctx(&self) -> Option<Vec<u8>> {
        (self.kind == ProgKind::Tc).then(|| vec![0u8; SKB_BYTES])
    }

    /// One test, as the runner runs it (see the module's comment): its
    /// outcome is that of the runner's own sequence, the setup's tail call
    /// taken. A test whose setup jumps is then split from the state before
    /// that run ([`Collection::split`]); the split stands where the
    /// entry's output passes the test's CHECK as the runner's did. The
    /// tests after go on from the state the runner's sequence left.
    fn replay(&self, test: &Test) -> Result<(Replayed, Start)> {
        let mut data = vec![0u8; PKTGEN_BYTES];
        let mut ctx = self.first_ctx();
        let mut replayed = Replayed { test: test.clone(), outcome: Err(String::new()), entry: None };
        let mut start = Start::default();
        if let Some(pktgen) = &test.pktgen {
            let (out, c) = run_keeping_ctx(self.prog(pktgen)?, &data, ctx.as_deref())
                .with_context(|| format!("test {}: running its pktgen program {pktgen}", test.name))?;
            (data, ctx) = (out.packet, c.or(ctx));
        }
        if let Some(setup) = test.setup.as_ref().filter(|_| test.enters_datapath) {
            start.before = self.snapshot()?;
            start.setup = Some((setup.clone(), data.clone(), ctx.clone()));
        }
        if let Some(setup) = &test.setup {
            let (out, c) = run_keeping_ctx(self.prog(setup)?, &data, ctx.as_deref())
                .with_context(|| format!("test {}: running its setup program {setup}", test.name))?;
            data = out.retval.to_ne_bytes().to_vec();
            data.extend_from_slice(&out.packet);
            ctx = c.or(ctx);
        }
        let outcome = self.check(test, &data, ctx.as_deref())?;
        if start.setup.is_some() {
            let after = self.snapshot()?;
            replayed.entry = Some(match self.split_from(&start)? {
                Ok(split) => {
                    let (output, own) = self
                        .entry_then_check(test, &split.entry)
                        .with_context(|| format!("test {}: running the entry {}", test.name, split.entry.program))?;
                    match outcome.passed() && !own.passed() {
                        true => Err(format!(
                            "run on its own, on the packet and context its setup hands it, the entry {} fails the test's CHECK ({}), which the setup's own jump passes: the jump hands it state a test run cannot give (an skb whose Ethernet header the setup removed, ...)",
                            split.entry.program,
                            own.explain()
                        )),
                        false => Ok(Entry { output, ..split.entry }),
                    }
                }
                Err(why) => Err(why),
            });
            restore_all(&after)?;
        }
        replayed.outcome = Ok(outcome.into());
        Ok((replayed, start))
    }

    /// Runs `r`'s setup again from the maps as they were before it, up to
    /// its jump (the recorder in the slots of the arrays the setups use):
    /// the entry and its input, and the maps as the setup left them; or why
    /// it reached no entry.
    fn split_from(&self, start: &Start) -> Result<std::result::Result<Split, String>> {
        let Some((setup, data, ctx)) = &start.setup else {
            return Ok(Err("the test drives no datapath entry".into()));
        };
        restore_all(&start.before)?;
        let ((out, c), reached) = self.recorder.capture(|| run_keeping_ctx(self.prog(setup)?, data, ctx.as_deref()))?;
        let (slot, id) = match reached {
            Some(Reached { slot, program_id: Some(id) }) => (slot, id),
            Some(Reached { slot, program_id: None }) => {
                return Ok(Err(format!("its setup tail-calls slot {} of {}, which is empty", slot.index, slot.map)));
            }
            None => return Ok(Err("its setup returned without a tail call".into())),
        };
        let entry = Entry {
            program: self.program_of(id)?,
            slot: format!("{}[{}]", slot.map, slot.index),
            packet: out.packet,
            ctx: c.or(ctx.clone()),
            output: RunOutput { retval: 0, packet: Vec::new(), duration_ns: 0 },
        };
        Ok(Ok(Split { entry, fresh: self.snapshot()? }))
    }

    /// Runs `test`'s check on `data` (the verdict in front of the packet)
    /// and decodes its report.
    fn check(&self, test: &Test, data: &[u8], ctx: Option<&[u8]>) -> Result<CheckOutcome> {
        let (out, _) = run_keeping_ctx(self.prog(&test.check)?, data, ctx)
            .with_context(|| format!("test {}: running its check program {}", test.name, test.check))?;
        let map = self.object.map_fd(RESULT_MAP).with_context(|| format!("a test object has a map {RESULT_MAP}"))?;
        let len = libbpf_rs::MapInfo::new(map)?.info.value_size as usize;
        let value = crate::kernel::maps::lookup(map, &0u32.to_ne_bytes(), len)?.unwrap_or_default();
        let outcome = CheckOutcome::decode(out.retval, &value)
            .with_context(|| format!("test {}: decoding its report", test.name))?;
        self.clear_framework_maps()?;
        Ok(outcome)
    }

    /// The entry run on `entry`'s input, then its CHECK given the output
    /// and context, as the runner's sequence gives them. What the CHECK
    /// writes stays (Cilium's checks delete what their setup added): the
    /// replay's sequence needs it, and a caller timing from a state of its
    /// own puts its maps back.
    fn entry_then_check(&self, test: &Test, entry: &Entry) -> Result<(RunOutput, CheckOutcome)> {
        let run = self.run_entry(entry)?;
        let outcome = self.check(test, &verdict_and_packet(&run), run.ctx.as_deref())?;
        Ok((run.output, outcome))
    }

    /// Zeroes the report map and the skb metadata mock, as the runner does after each test.
    fn clear_framework_maps(&self) -> Result<()> {
        for name in [RESULT_MAP, MOCK_META_MAP] {
            let Ok(map) = self.object.map_fd(name) else { continue };
            let len = libbpf_rs::MapInfo::new(map)?.info.value_size as usize;
            crate::kernel::maps::update(map, &0u32.to_ne_bytes(), &vec![0u8; len])
                .with_context(|| format!("clearing {name}"))?;
        }
        Ok(())
    }

    /// The name of this object's program of kernel id `id`.
    fn program_of(&self, id: u32) -> Result<String> {
        for p in self.object.programs() {
            let Ok(fd) = self.object.prog_fd(&p.name) else { continue };
            if crate::kernel::prog_info::prog_id(fd)? == id {
                return Ok(p.name);
            }
        }
        bail!("the slot the setup reached holds a program of another object (id {id})")
    }
}

impl ReplayedFile for Collection {
    fn kind(&self) -> ProgKind {
        self.kind
    }

    fn replayed(&self) -> &[Replayed] {
        &self.replayed
    }

    fn notes(&self) -> &[String] {
        &self.notes
    }

    fn encapsulates_for_good(&self) -> bool {
        self.encapsulates_for_good
    }

    /// Runs test `t`'s setup again from the maps as they were before it, up
    /// to its jump (the recorder in the slots of the arrays the setups use).
    fn split(&self, t: usize) -> Result<std::result::Result<Split, String>> {
        self.split_from(&self.starts[t])
    }

    fn run_entry(&self, entry: &Entry) -> Result<EntryRun> {
        let (output, ctx) = run_keeping_ctx(self.prog(&entry.program)?, &entry.packet, entry.ctx.as_deref())?;
        Ok(EntryRun { output, ctx: ctx.or(entry.ctx.clone()) })
    }

    fn run_entry_and_check(&self, test: &Test, entry: &Entry) -> Result<(RunOutput, Judgement)> {
        let (output, outcome) = self.entry_then_check(test, entry)?;
        Ok((output, outcome.into()))
    }

    /// `test`'s CHECK on an entry's run `run`, as an observer: it sees the
    /// maps `seen` (as the flow's first packet left them: a CHECK counts
    /// that packet, finds the connection it made), and the maps are `seen`
    /// again after it. A CHECK that cleans up (Cilium's egress gateway
    /// checks delete the policy their setup added) would otherwise take
    /// away the state the entry is then timed in.
    fn judge(&self, test: &Test, run: &EntryRun, seen: &[MapSnapshot]) -> Result<Judgement> {
        restore_all(seen)?;
        let outcome = self.check(test, &verdict_and_packet(run), run.ctx.as_deref());
        restore_all(seen)?;
        outcome.map(Judgement::from)
    }

    fn snapshot(&self) -> Result<Vec<MapSnapshot>> {
        let ncpus = crate::system::cpu::possible_cpus()?;
        self.maps
            .iter()
            .map(|(name, fd)| MapSnapshot::take_shared(fd, ncpus).with_context(|| format!("reading map {name}")))
            .collect()
    }

    fn entry_fd(&self, entry: &Entry) -> Result<BorrowedFd<'_>> {
        self.prog(&entry.program)
    }

    /// The program's expected attach type and flags (a prog array takes
    /// only programs like the first it held).
    fn load_attrs(&self, program: &str) -> Result<(crate::kernel::AttachType, u32)> {
        self.object.load_attrs(program)
    }
}

/// Fills prog array slots from the functions' BTF tags `tail:MAP/N`, as
/// Cilium's loader fills `cilium_calls`. Returns how many it filled.
fn fill_tail_slots(object: &ObjectFile) -> Result<usize> {
    let arrays: Vec<String> = object.prog_arrays().into_iter().map(|(name, _)| name).collect();
    let mut filled = 0;
    for (func, tag) in object.function_tags() {
        let Some((map, slot)) = tag.strip_prefix("tail:").and_then(|t| t.rsplit_once('/')) else { continue };
        let Ok(slot) = slot.parse::<u32>() else { continue };
        if !arrays.iter().any(|a| a == map) {
            continue;
        }
        let Ok(fd) = object.prog_fd(&func) else { continue };
        object.fill_prog_array(map, slot, fd.as_fd()).with_context(|| format!("{tag} on {func}"))?;
        filled += 1;
    }
    Ok(filled)
}
