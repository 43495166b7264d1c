//! One object in the userspace runtime: its programs' instructions, its
//! maps copied from the kernel's after setup, and the helpers' state. What
//! the harness drives in place of `BPF_PROG_TEST_RUN` when `--runtime user`
//! is asked for, and what counts instructions for `--metric insns`.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};

use anyhow::{Context, Result};

use super::PacketOutcome;
use super::helpers::{self, Helpers};
use super::interp::{Counts, Interpreter};
use super::jit::{self, JitProgram, calls::TailEntry, frame::Frame32};
use super::maps::{UserMap, UserMaps};
use super::{tc, xdp};
use crate::insn::{CALL, Insn, JMP, KFUNC_CALL};
use crate::kernel::lines::LineTable;
use crate::kernel::prepared::PreparedCode;
use crate::record::SampledTime;
use crate::record::{InstructionCount, LineCount};

/// Instructions a timed run may execute. A batch runs thousands of
/// iterations in one run, and the programs timed were verified by the
/// kernel (which bounds their loops), so the budget only has to stop a
/// runaway, not a slow batch.
const TIMED_BUDGET: u64 = 1 << 34;

/// What the runs since the last [`UserRuntime::take_counts`] executed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunCounts {
    pub insns: u64,
    /// Calls by helper name.
    pub helpers: BTreeMap<String, u64>,
    /// Map operations by "map name: helper name".
    pub map_ops: BTreeMap<String, u64>,
    /// Instructions by source line ("file:line"; see [`crate::kernel::lines`]), while profiling.
    pub lines: BTreeMap<String, u64>,
    /// Each of those lines' text.
    pub line_text: BTreeMap<String, String>,
}

impl RunCounts {
    /// What `self` executed beyond `less` (a shorter run of the same).
    pub fn minus(mut self, less: &RunCounts) -> RunCounts {
        self.insns -= less.insns.min(self.insns);
        for (mine, theirs) in
            [(&mut self.helpers, &less.helpers), (&mut self.map_ops, &less.map_ops), (&mut self.lines, &less.lines)]
        {
            for (k, n) in theirs {
                let e = mine.entry(k.clone()).or_default();
                *e = e.saturating_sub(*n);
            }
            mine.retain(|_, n| *n != 0);
        }
        self
    }

    /// What `self` (a body's batch over `packets` packets) executed beyond
    /// `empty` (the same batch of the empty loop).
    pub fn beyond(self, empty: RunCounts, packets: u64) -> InstructionCount {
        let less = |mine: BTreeMap<String, u64>, theirs: &BTreeMap<String, u64>| -> BTreeMap<String, i64> {
            let mut out: BTreeMap<String, i64> = mine.into_iter().map(|(k, n)| (k, n as i64)).collect();
            for (k, n) in theirs {
                *out.entry(k.clone()).or_default() -= *n as i64;
            }
            out.retain(|_, n| *n != 0);
            out
        };
        let mut text = self.line_text;
        text.extend(empty.line_text);
        let lines = less(self.lines, &empty.lines)
            .into_iter()
            .map(|(at, insns)| LineCount { text: text.get(&at).cloned().unwrap_or_default(), at, insns, samples: 0 })
            .collect();
        InstructionCount {
            packets,
            body_insns: self.insns,
            loop_insns: empty.insns,
            helpers: less(self.helpers, &empty.helpers),
            map_ops: less(self.map_ops, &empty.map_ops),
            lines,
            time: None,
        }
    }
}

/// How the runtime executes a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// The x86-64 JIT, for programs the kernel's verifier accepted; the
    /// others fall back to the interpreter.
    Jit,
    /// The checked, counting interpreter.
    Interpreter,
}

pub struct UserRuntime {
    programs: BTreeMap<String, Vec<Insn>>,
    /// The programs the kernel's verifier accepted: the JIT runs only these.
    verified: std::collections::BTreeSet<String>,
    pub maps: UserMaps,
    helpers: Helpers,
    counts: Counts,
    engine: Engine,
    /// Compiled programs, by name; dropped when a map is copied again (the
    /// code holds the addresses of global data).
    compiled: BTreeMap<String, JitProgram>,
    /// The kernel's id of each program that has one: what prog arrays hold.
    prog_ids: BTreeMap<u32, String>,
    /// Where the JIT's tail calls land, by program id (the compiled code of
    /// the programs with ids, when the first compiled run needs them).
    tail_entries: Option<Vec<(u32, TailEntry)>>,
    /// Each packet's `__sk_buff` when the runs are tc runs.
    skb_views: Option<HashMap<Vec<u8>, Vec<u8>>>,
    frame: Option<Frame32>,
    /// Each program's source lines.
    lines: BTreeMap<String, LineTable>,
    /// Executions per instruction of each program, while profiling.
    hits: Option<BTreeMap<String, Vec<Cell<u64>>>>,
}

/// Resolves ld_imm64's maps for the JIT as the interpreter does.
struct JitMaps<'a> {
    helpers: &'a Helpers,
    maps: &'a mut UserMaps,
}

impl jit::Resolve for JitMaps<'_> {
    fn map_handle(&mut self, fd: i32) -> Result<u64, String> {
        self.helpers.map_handle(Some(self.maps), fd)
    }
    fn map_value(&mut self, fd: i32, off: u32) -> Result<u64, String> {
        let (value, _) = self.helpers.global_data(Some(self.maps), fd, off)?;
        Ok(value.as_ptr() as u64 + u64::from(off))
    }
    fn lookup_plan(&mut self, handle: u64) -> Option<jit::LookupPlan> {
        let i = helpers::map_index(handle, self.maps.maps.len())?;
        let cpu = self.helpers.cpu;
        let m = &mut self.maps.maps[i];
        let max_entries = m.def.max_entries;
        let of_maps = super::maps::of_maps(m.def.map_type);
        Some(match m.array_layout(cpu) {
            Some((base, stride)) if of_maps => {
                jit::LookupPlan::ArrayOfMaps { base, stride, max_entries, tag: helpers::map_handle_tag() }
            }
            Some((base, stride)) => jit::LookupPlan::Array { base, stride, max_entries },
            None => jit::LookupPlan::Direct { map: m as *mut UserMap as u64, cpu: cpu as u64 },
        })
    }
}

/// The helpers and kfuncs `insns` call that this runtime does not have,
/// named ("helper 21 (bpf_skb_set_tunnel_key)"). The program still runs:
/// a run whose path reaches one fails naming it, and the others run.
pub fn missing_calls(insns: &[Insn]) -> Vec<String> {
    let mut missing = Vec::new();
    for i in insns.iter().filter(|i| lacks(i)) {
        let name = if i.src == KFUNC_CALL { helpers::kfunc_label(i.imm) } else { helpers::helper_label(i.imm) };
        if !missing.contains(&name) {
            missing.push(name);
        }
    }
    missing
}

/// Whether `i` calls a helper or kfunc this runtime does not have.
fn lacks(i: &Insn) -> bool {
    i.code == (JMP | CALL) && (i.src == KFUNC_CALL || (i.src == 0 && !helpers::supported(i.imm)))
}

impl UserRuntime {
    /// The object's programs and maps (as setup left them in the kernel),
    /// run as if on `cpu`. Refuses a map type it does not have; a program
    /// calling a helper or kfunc it lacks loads (see [`missing_calls`]).
    pub fn new(code: &PreparedCode, cpu: usize) -> Result<UserRuntime> {
        let programs: BTreeMap<String, Vec<Insn>> = code.programs.clone();
        Ok(UserRuntime {
            programs,
            maps: UserMaps::mirror_ids(&code.maps)?,
            // The JIT compiles only programs whose every call the runtime has
            // (its code keeps the helpers' contracts, which a stand-in could
            // not); one calling what it lacks runs in the checked interpreter,
            // where a path that reaches the call fails naming it.
            verified: code
                .verified
                .iter()
                .filter(|p| code.programs.get(*p).is_none_or(|insns| !insns.iter().any(lacks)))
                .cloned()
                .collect(),
            helpers: Helpers::new(cpu, 1),
            counts: Counts::default(),
            engine: Engine::Jit,
            compiled: BTreeMap::new(),
            prog_ids: code.prog_ids.iter().map(|(name, id)| (*id, name.clone())).collect(),
            tail_entries: None,
            skb_views: None,
            frame: None,
            lines: code.lines.clone(),
            hits: None,
        })
    }

    /// The CPU runs claim to be on (bpf_get_smp_processor_id, per-CPU slots).
    pub fn cpu(&self) -> usize {
        self.helpers.cpu
    }

    /// Copies map `name` again from the kernel's after setup code changed it.
    pub fn resync(&mut self, name: &str) -> Result<()> {
        self.compiled.clear();
        self.tail_entries = None;
        self.maps.resync(name)
    }

    /// Runs from now on in `engine`; returns the one used so far.
    pub fn set_engine(&mut self, engine: Engine) -> Engine {
        std::mem::replace(&mut self.engine, engine)
    }

    /// Counts executions per source line from now on (`on`), or stops.
    /// Only the interpreter counts: see [`Self::set_engine`].
    pub fn set_profiling(&mut self, on: bool) {
        self.hits = on.then(|| {
            self.programs.iter().map(|(name, insns)| (name.clone(), vec![Cell::new(0); insns.len()])).collect()
        });
    }

    /// The engine `prog`'s runs take: the JIT only for what the kernel verified.
    pub fn engine_of(&self, prog: &str) -> Engine {
        if self.engine == Engine::Jit && self.verified.contains(prog) && JitProgram::supported().is_ok() {
            Engine::Jit
        } else {
            Engine::Interpreter
        }
    }

    pub fn map(&self, name: &str) -> Result<&UserMap> {
        self.maps.by_name(name).with_context(|| format!("the object has no map {name}"))
    }

    pub fn map_mut(&mut self, name: &str) -> Result<&mut UserMap> {
        self.maps.by_name_mut(name).with_context(|| format!("the object has no map {name}"))
    }

    /// Makes every later run a tc run: each packet's `__sk_buff` as the
    /// kernel's test run fills it (see [`crate::kernel::skb_view`]), by packet.
    pub fn set_skb_views(&mut self, views: HashMap<Vec<u8>, Vec<u8>>) {
        self.skb_views = Some(views);
    }

    /// Runs program `prog` once on `packet`: as tc where `__sk_buff` views
    /// were given, as XDP otherwise.
    pub fn run(&mut self, prog: &str, packet: &[u8]) -> Result<PacketOutcome> {
        let skb = match &self.skb_views {
            Some(views) => Some(
                views
                    .get(packet)
                    .cloned()
                    .context("no __sk_buff from the kernel for this packet (a tc run's context)")?,
            ),
            None => None,
        };
        if self.engine_of(prog) == Engine::Jit {
            return self.run_jit(prog, packet, skb.as_deref());
        }
        let insns = self.programs.get(prog).with_context(|| format!("the object has no program {prog}"))?;
        let hits_of = |name: &str| self.hits.as_ref().and_then(|h| h.get(name)).map(Vec::as_slice);
        let mut interp = Interpreter::new(insns);
        if let Some(hits) = hits_of(prog) {
            interp = interp.counting_each(hits);
        }
        for (id, name) in &self.prog_ids {
            interp.tail_target(*id, &self.programs[name], hits_of(name));
        }
        interp.budget = TIMED_BUDGET;
        let maps = Some(&mut self.maps);
        match &skb {
            Some(view) => tc::run(&interp, packet, view, &mut self.helpers, maps, &mut self.counts),
            None => xdp::run(&interp, packet, &mut self.helpers, maps, &mut self.counts),
        }
        .with_context(|| format!("{prog} in the userspace runtime"))
    }

    /// Compiles `prog` unless it is.
    fn compile(&mut self, prog: &str) -> Result<()> {
        if !self.compiled.contains_key(prog) {
            let insns = self.programs.get(prog).with_context(|| format!("the object has no program {prog}"))?;
            let mut resolve = JitMaps { helpers: &self.helpers, maps: &mut self.maps };
            let code = JitProgram::compile(insns, &mut resolve).with_context(|| format!("JIT-compiling {prog}"))?;
            self.compiled.insert(prog.to_string(), code);
        }
        Ok(())
    }

    /// Where tail calls land: every program with an id the kernel verified, compiled.
    fn tail_entries(&mut self) -> Result<Vec<(u32, TailEntry)>> {
        if let Some(t) = &self.tail_entries {
            return Ok(t.clone());
        }
        let mut entries = Vec::new();
        for (id, name) in self.prog_ids.clone() {
            if self.verified.contains(&name) {
                self.compile(&name)?;
                entries.push((id, self.compiled.get_mut(&name).expect("compiled above").tail_entry()));
            }
        }
        self.tail_entries = Some(entries.clone());
        Ok(entries)
    }

    /// Runs the kernel-verified program `prog` once on `packet`, compiled
    /// (tc with the `__sk_buff` `skb`, XDP without).
    fn run_jit(&mut self, prog: &str, packet: &[u8], skb: Option<&[u8]>) -> Result<PacketOutcome> {
        self.compile(prog)?;
        let targets = self.tail_entries()?;
        if self.frame.is_none() {
            self.frame = Some(Frame32::new().context("mapping the XDP frame below 4 GiB")?);
        }
        let (Some(code), Some(frame)) = (self.compiled.get_mut(prog), self.frame.as_mut()) else {
            unreachable!("compiled and mapped above")
        };
        // SAFETY: the kernel's verifier accepted `prog` (engine_of checked),
        // of the type the context is for (the caller's), and the tail
        // calls' targets (a prog array takes programs of its type only).
        unsafe { frame.run(code, packet, skb, &mut self.helpers, &mut self.maps, &targets) }
            .map_err(|e| anyhow::anyhow!(e))
            .with_context(|| format!("{prog} in the userspace runtime's JIT"))
    }

    /// Runs `insns` (not one of the object's programs: a fuzzed one) as
    /// XDP on `packet` with the object's maps, at most `budget` instructions.
    pub fn run_insns(&mut self, insns: &[Insn], packet: &[u8], budget: u64) -> Result<PacketOutcome, super::VmError> {
        let mut interp = Interpreter::new(insns);
        interp.budget = budget;
        xdp::run(&interp, packet, &mut self.helpers, Some(&mut self.maps), &mut self.counts)
    }

    /// The instructions of the object's program `name`.
    pub fn program(&self, name: &str) -> Option<&[Insn]> {
        self.programs.get(name).map(Vec::as_slice)
    }

    /// What the runs executed since the last call, and starts counting afresh.
    pub fn take_counts(&mut self) -> RunCounts {
        let counts = std::mem::take(&mut self.counts);
        let ops = std::mem::take(&mut self.helpers.map_ops);
        let (lines, line_text) = self.take_line_counts();
        RunCounts {
            lines,
            line_text,
            insns: counts.insns,
            helpers: counts.helpers.into_iter().map(|(id, n)| (helpers::name_of(id), n)).collect(),
            map_ops: ops
                .into_iter()
                .map(|((map, op), n)| (format!("{}: {}", self.maps.maps[map].def.name, helpers::name_of(op)), n))
                .collect(),
        }
    }

    /// The code ranges of the programs compiled so far.
    pub fn compiled_ranges(&self) -> Vec<(u64, u64)> {
        self.compiled.values().map(JitProgram::code_range).collect()
    }

    /// Where `samples` fell: each in compiled code goes to its instruction's
    /// line; each in called code (a helper, a map) to the line of the call
    /// that led there and to the helper called; the rest is outside.
    /// (The batches' times are the caller's to add.)
    pub fn attribute(&self, samples: &[super::sampler::Sample]) -> SampledTime {
        let mut out = SampledTime::default();
        let locate = |addr: u64| self.compiled.iter().find_map(|(prog, code)| code.pc_of(addr).map(|pc| (prog, pc)));
        for s in samples {
            let (prog, pc, helper) = match (locate(s.ip), s.caller) {
                (Some((prog, pc)), _) => (prog, pc, None),
                // The return address follows the call: its last byte is the call's.
                (None, caller) if caller != 0 => match locate(caller - 1) {
                    Some((prog, pc)) => {
                        let insn = self.programs[prog][pc];
                        let name = if insn.code == (JMP | CALL) && insn.src == 0 {
                            helpers::name_of(insn.imm)
                        } else {
                            "(code the program called)".to_string()
                        };
                        // The map too, where the call site shows it ("map: helper", as map_ops).
                        let map =
                            self.compiled[prog].call_map(pc).and_then(|h| helpers::map_index(h, self.maps.maps.len()));
                        if let Some(m) = map {
                            *out.map_ops.entry(format!("{}: {name}", self.maps.maps[m].def.name)).or_default() += 1;
                        }
                        (prog, pc, Some(name))
                    }
                    None => {
                        out.outside += 1;
                        continue;
                    }
                },
                (None, _) => {
                    out.outside += 1;
                    continue;
                }
            };
            out.samples += 1;
            if let Some(h) = helper {
                *out.helpers.entry(h).or_default() += 1;
            }
            let (key, text) = match self.lines.get(prog).and_then(|t| t.at(pc)) {
                Some(line) => (line.key(), line.text.clone()),
                None => (format!("(no line record) {prog}"), String::new()),
            };
            out.lines.entry(key).or_insert((0, text)).0 += 1;
        }
        out
    }

    /// Executions per source line since the last call (and each line's
    /// text); instructions no line record covers count under
    /// "(no line record) PROGRAM".
    fn take_line_counts(&mut self) -> (BTreeMap<String, u64>, BTreeMap<String, String>) {
        let (mut counts, mut text) = (BTreeMap::new(), BTreeMap::new());
        for (prog, hits) in self.hits.iter().flatten() {
            let table = self.lines.get(prog);
            for (pc, h) in hits.iter().enumerate() {
                let n = h.take();
                if n == 0 {
                    continue;
                }
                let key = match table.and_then(|t| t.at(pc)) {
                    Some(line) => {
                        let key = line.key();
                        text.entry(key.clone()).or_insert_with(|| line.text.clone());
                        key
                    }
                    None => format!("(no line record) {prog}"),
                };
                *counts.entry(key).or_default() += n;
            }
        }
        (counts, text)
    }
}
