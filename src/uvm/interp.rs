//! The interpreter: runs relocated BPF bytecode with every memory access
//! checked against the regions the runtime handed out, and counts what it
//! executes. Bytecode the kernel's verifier would refuse ends in an error
//! naming the instruction, never in a crash: an instruction budget bounds
//! every run.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

use super::helpers::Helpers;
use super::maps::UserMaps;
use super::memory::{Memory, RegionKind};
use super::uapi::{MAX_TAIL_CALLS, TAIL_CALL};
use crate::insn::*;

/// Stack bytes per frame, as in the kernel.
pub const STACK_PER_FRAME: usize = 512;
/// Frames deep a program may call (the kernel allows 8).
pub const MAX_FRAMES: usize = 8;

/// What a program reaches outside itself: helpers, maps, and the context's
/// pointer fields.
pub trait Env {
    /// Calls helper `id`; map values it returns go into `mem` as regions.
    fn helper(&mut self, id: i32, args: [u64; 5], mem: &mut Memory) -> Result<u64, String>;
    /// A load of `size` bytes at `off` in the context, if it is a pointer
    /// field the runtime translates (XDP's 32-bit data and data_end).
    fn context_load(&self, off: u64, size: usize) -> Option<u64>;
    /// The run's helper state and maps, through which the methods below
    /// reach the maps; None: the run has none.
    fn reach(&mut self) -> Option<(&mut Helpers, Option<&mut UserMaps>)>;

    /// What `ld_imm64` of map `fd` puts in a register.
    fn map_handle(&mut self, fd: i32) -> Result<u64, String> {
        match self.reach() {
            Some((h, maps)) => h.map_handle(maps.as_deref(), fd),
            None => Err(format!("names map fd {fd}, and the run has no maps")),
        }
    }

    /// The address of byte `off` of map `fd`'s value (global data), added to `mem`.
    fn map_value(&mut self, fd: i32, off: u32, mem: &mut Memory) -> Result<u64, String> {
        match self.reach() {
            Some((h, maps)) => h.map_value(maps, fd, off, mem),
            None => Err(format!("names map fd {fd}, and the run has no maps")),
        }
    }

    /// Slot `index` of the prog array `map` (a handle), which `bpf_tail_call`
    /// reaches: the kernel id of its program, None where it is empty; None
    /// outside the array.
    fn tail_slot(&mut self, map: u64, index: u64) -> Option<Option<u32>> {
        let (h, maps) = self.reach()?;
        h.tail_slot(maps, map, index)
    }
}

/// An error at one instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmError {
    pub pc: usize,
    pub insn: Insn,
    pub what: String,
}

impl fmt::Display for VmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "instruction {} (code {:#04x}, dst r{}, src r{}, off {}, imm {}): {}",
            self.pc, self.insn.code, self.insn.dst, self.insn.src, self.insn.off, self.insn.imm, self.what
        )
    }
}

impl std::error::Error for VmError {}

impl VmError {
    /// Whether the instruction calls a helper or kfunc the runtime does not
    /// have (the program is fine; the runtime lacks it).
    pub fn lacks(&self) -> bool {
        self.what.ends_with(super::helpers::LACKED)
    }
}

/// What one run executed: identical for the same program and input.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    pub insns: u64,
    /// Calls per helper id.
    pub helpers: BTreeMap<i32, u64>,
}

struct Frame {
    /// The program and instruction the call returns to.
    return_to: (usize, usize),
    saved: [u64; 4],
}

/// One program the interpreter may run: the entry, or a tail call's target.
struct Program<'p> {
    insns: &'p [Insn],
    /// Executions per instruction, when profiling (`--profile`).
    hits: Option<&'p [Cell<u64>]>,
}

/// A program ready to run, and the programs its tail calls may reach.
pub struct Interpreter<'p> {
    /// The entry first, then the tail calls' targets.
    programs: Vec<Program<'p>>,
    /// Kernel program id → index in `programs`.
    targets: HashMap<u32, usize>,
    /// Instructions a run may execute before it is stopped.
    pub budget: u64,
}

impl<'p> Interpreter<'p> {
    pub fn new(insns: &'p [Insn]) -> Interpreter<'p> {
        Interpreter { programs: vec![Program { insns, hits: None }], targets: HashMap::new(), budget: 1 << 24 }
    }

    /// Adds one to `hits[pc]` for each execution of the entry's instruction
    /// `pc` (`hits` has one slot per instruction).
    pub fn counting_each(mut self, hits: &'p [Cell<u64>]) -> Interpreter<'p> {
        assert_eq!(hits.len(), self.programs[0].insns.len(), "one slot per instruction");
        self.programs[0].hits = Some(hits);
        self
    }

    /// Lets tail calls reach the program the kernel knows by `id`
    /// (counting its instructions in `hits` as for the entry).
    pub fn tail_target(&mut self, id: u32, insns: &'p [Insn], hits: Option<&'p [Cell<u64>]>) {
        self.targets.insert(id, self.programs.len());
        self.programs.push(Program { insns, hits });
    }

    /// Runs from instruction 0 with r1 = `ctx` (an address inside a region
    /// of `mem`). `mem` gets the stack for the run; its regions are back
    /// as they were afterwards.
    pub fn run(&self, ctx: u64, env: &mut dyn Env, mem: &mut Memory, counts: &mut Counts) -> Result<u64, VmError> {
        let mut stack = vec![0u8; STACK_PER_FRAME * MAX_FRAMES];
        let regions = mem.len();
        mem.add(stack.as_mut_ptr(), stack.len(), true, RegionKind::Stack);
        let result = self.execute(ctx, stack.as_mut_ptr() as u64, env, mem, counts);
        mem.truncate(regions);
        result
    }

    fn execute(
        &self,
        ctx: u64,
        stack: u64,
        env: &mut dyn Env,
        mem: &mut Memory,
        counts: &mut Counts,
    ) -> Result<u64, VmError> {
        let mut r = [0u64; 11];
        r[1] = ctx;
        r[10] = stack + STACK_PER_FRAME as u64;
        let mut frames: Vec<Frame> = Vec::new();
        let mut may_goto_left = MAY_GOTO_BUDGET;
        // The program running (an index in `programs`), and its instruction.
        let mut prog = 0usize;
        let mut pc = 0usize;
        let mut executed = 0u64;
        let mut tail_calls = 0u32;
        loop {
            let Program { insns, hits } = &self.programs[prog];
            let Some(&i) = insns.get(pc) else {
                return Err(VmError { pc, insn: Insn::default(), what: "runs off the end of the program".into() });
            };
            let fail = |what: String| VmError { pc, insn: i, what };
            executed += 1;
            if let Some(hits) = hits {
                hits[pc].set(hits[pc].get() + 1);
            }
            if executed > self.budget {
                counts.insns += executed - 1;
                return Err(fail(format!(
                    "the budget of {} instructions is spent (a loop the verifier would refuse?)",
                    self.budget
                )));
            }
            if i.dst > 10 || i.src > 10 {
                return Err(fail("no such register".into()));
            }
            let (dst, src) = (i.dst as usize, i.src as usize);
            let imm = i.imm as i64 as u64;
            let mut next = pc + 1;
            match i.class() {
                ALU64 | ALU => {
                    if dst == 10 {
                        return Err(fail("r10 (the frame pointer) is read-only".into()));
                    }
                    let wide = i.class() == ALU64;
                    let op = i.op();
                    let s = if i.code & X != 0 { r[src] } else { imm };
                    r[dst] = alu(op, wide, i.off, i.imm, r[dst], s, i.code & X != 0).map_err(fail)?;
                }
                JMP | JMP32 => {
                    let op = i.op();
                    match op {
                        CALL if i.class() == JMP => match i.src {
                            0 if i.imm == TAIL_CALL => {
                                *counts.helpers.entry(i.imm).or_default() += 1;
                                // x86's JIT in its order: the index, then the count
                                // (which a call into an empty slot spends), then the slot.
                                let slot = env.tail_slot(r[2], r[3]);
                                let within = tail_calls < MAX_TAIL_CALLS;
                                if slot.is_some() {
                                    tail_calls = tail_calls.saturating_add(1);
                                }
                                if let (Some(Some(id)), true) = (slot, within) {
                                    // The target replaces this frame: its exit
                                    // returns where this function's would.
                                    prog = *self.targets.get(&id).ok_or_else(|| {
                                        fail(format!(
                                            "tail-calls the program with kernel id {id}, which is not in the userspace runtime"
                                        ))
                                    })?;
                                    pc = 0;
                                    continue;
                                }
                            }
                            0 => {
                                *counts.helpers.entry(i.imm).or_default() += 1;
                                r[0] = env.helper(i.imm, [r[1], r[2], r[3], r[4], r[5]], mem).map_err(fail)?;
                            }
                            PSEUDO_CALL => {
                                if frames.len() + 1 >= MAX_FRAMES {
                                    return Err(fail(format!("calls nest deeper than {MAX_FRAMES} frames")));
                                }
                                frames.push(Frame { return_to: (prog, next), saved: [r[6], r[7], r[8], r[9]] });
                                r[10] = r[10].wrapping_add(STACK_PER_FRAME as u64);
                                next =
                                    target(pc, i.imm as i64).ok_or_else(|| fail("calls outside the program".into()))?;
                            }
                            _ => return Err(fail(super::helpers::missing_kfunc(i.imm))),
                        },
                        EXIT if i.class() == JMP => match frames.pop() {
                            None => {
                                counts.insns += executed;
                                return Ok(r[0]);
                            }
                            Some(f) => {
                                [r[6], r[7], r[8], r[9]] = f.saved;
                                r[10] = r[10].wrapping_sub(STACK_PER_FRAME as u64);
                                (prog, next) = f.return_to;
                            }
                        },
                        JCOND if i.class() == JMP => {
                            // may_goto: falls through until the budget is spent.
                            if may_goto_left == 0 {
                                next = target(pc, i64::from(i.off))
                                    .ok_or_else(|| fail("jumps outside the program".into()))?;
                            } else {
                                may_goto_left -= 1;
                            }
                        }
                        JA => {
                            // JMP32's JA is gotol: a 32-bit offset in imm.
                            let off = if i.class() == JMP32 { i.imm as i64 } else { i64::from(i.off) };
                            next = target(pc, off).ok_or_else(|| fail("jumps outside the program".into()))?;
                        }
                        _ => {
                            let s = if i.code & X != 0 { r[src] } else { imm };
                            let taken =
                                compare(op, i.class() == JMP, r[dst], s).ok_or_else(|| fail("unknown jump".into()))?;
                            if taken {
                                next = target(pc, i64::from(i.off))
                                    .ok_or_else(|| fail("jumps outside the program".into()))?;
                            }
                        }
                    }
                }
                LDX => {
                    let mode = i.mode();
                    if mode != MEM && mode != MEMSX {
                        return Err(fail("legacy packet loads (LD_ABS/LD_IND) are not supported".into()));
                    }
                    if dst == 10 {
                        return Err(fail("r10 (the frame pointer) is read-only".into()));
                    }
                    let size = size_bytes(i.code);
                    let addr = r[src].wrapping_add(i.off as i64 as u64);
                    // One check per load; the context's pointer fields read translated.
                    let (loaded, region) = mem.load_from(addr, size).map_err(|e| fail(e.to_string()))?;
                    let translated = if region.kind == RegionKind::Context {
                        env.context_load(addr - region.start, size)
                    } else {
                        None
                    };
                    let v = translated.unwrap_or(loaded);
                    r[dst] = if mode == MEMSX { sign_extend(v, size * 8) } else { v };
                }
                ST | STX => {
                    let size = size_bytes(i.code);
                    let addr = r[dst].wrapping_add(i.off as i64 as u64);
                    match (i.class(), i.mode()) {
                        (ST, MEM) => mem.store(addr, size, imm).map_err(|e| fail(e.to_string()))?,
                        (STX, MEM) => mem.store(addr, size, r[src]).map_err(|e| fail(e.to_string()))?,
                        (STX, ATOMIC) if size == 4 || size == 8 => {
                            let old = mem.load(addr, size).map_err(|e| fail(e.to_string()))?;
                            let operand = r[src];
                            let (new, fetched) = match i.imm {
                                XCHG => (operand, true),
                                CMPXCHG => {
                                    let expected = if size == 4 { r[0] & 0xffff_ffff } else { r[0] };
                                    r[0] = old;
                                    (if old == expected { operand } else { old }, false)
                                }
                                op => {
                                    let v = match op & !FETCH {
                                        ATOMIC_ADD => old.wrapping_add(operand),
                                        ATOMIC_OR => old | operand,
                                        ATOMIC_AND => old & operand,
                                        ATOMIC_XOR => old ^ operand,
                                        _ => return Err(fail("unknown atomic operation".into())),
                                    };
                                    (v, op & FETCH != 0)
                                }
                            };
                            mem.store(addr, size, new).map_err(|e| fail(e.to_string()))?;
                            if fetched {
                                r[src] = old;
                            }
                        }
                        _ => return Err(fail("unknown store".into())),
                    }
                }
                LD => {
                    if i.code != (LD | IMM | SIZE_DW) {
                        return Err(fail("legacy packet loads (LD_ABS/LD_IND) are not supported".into()));
                    }
                    let Some(&hi) = insns.get(pc + 1) else {
                        return Err(fail("ld_imm64 is missing its second half".into()));
                    };
                    if dst == 10 {
                        return Err(fail("r10 (the frame pointer) is read-only".into()));
                    }
                    r[dst] = match i.src {
                        0 => (u64::from(hi.imm as u32) << 32) | u64::from(i.imm as u32),
                        PSEUDO_MAP_FD => env.map_handle(i.imm).map_err(fail)?,
                        PSEUDO_MAP_VALUE => env.map_value(i.imm, hi.imm as u32, mem).map_err(fail)?,
                        s => return Err(fail(format!("ld_imm64 of pseudo source {s} is not supported"))),
                    };
                    next = pc + 2;
                }
                _ => unreachable!("three bits of class"),
            }
            pc = next;
        }
    }
}

fn target(pc: usize, off: i64) -> Option<usize> {
    usize::try_from(pc as i64 + 1 + off).ok()
}

fn sign_extend(v: u64, bits: usize) -> u64 {
    let shift = 64 - bits;
    (((v << shift) as i64) >> shift) as u64
}

/// The arithmetic both widths share, on `$d` and `$s` as `$u` (and `$i`
/// where signed), shifts masked to the width; None for any other
/// operation (MOV and END, whose rules differ by width, are `alu`'s own).
macro_rules! arith {
    ($op:expr, $signed:expr, $d:expr, $s:expr, $u:ty, $i:ty) => {{
        let (d, s) = ($d as $u, $s as $u);
        let shift = s & (<$u>::BITS as $u - 1);
        match $op {
            ADD => Some(d.wrapping_add(s)),
            SUB => Some(d.wrapping_sub(s)),
            MUL => Some(d.wrapping_mul(s)),
            // Division by zero gives 0, modulo by zero the dividend (the BPF ISA).
            DIV if $signed => Some(if s == 0 { 0 } else { (d as $i).wrapping_div(s as $i) as $u }),
            DIV => Some(d.checked_div(s).unwrap_or(0)),
            MOD if $signed => Some(if s == 0 { d } else { (d as $i).wrapping_rem(s as $i) as $u }),
            MOD => Some(d.checked_rem(s).unwrap_or(d)),
            OR => Some(d | s),
            AND => Some(d & s),
            XOR => Some(d ^ s),
            LSH => Some(d << shift),
            RSH => Some(d >> shift),
            ARSH => Some(((d as $i) >> shift) as $u),
            NEG => Some((d as $i).wrapping_neg() as $u),
            _ => None,
        }
    }};
}

/// One ALU operation; 32-bit ones work on the low halves and zero-extend.
pub(crate) fn alu(op: u8, wide: bool, off: i16, imm: i32, d: u64, s: u64, from_reg: bool) -> Result<u64, String> {
    let signed = off == 1;
    let unknown = || "unknown ALU operation".to_string();
    // MOV first (the commonest), and END: their rules differ by width.
    match (op, wide) {
        (MOV, true) => match off {
            0 => Ok(s),
            8 | 16 | 32 if from_reg => Ok(sign_extend(s, off as usize)),
            _ => Err(format!("mov with offset {off}")),
        },
        (MOV, false) => match off {
            0 => Ok(u64::from(s as u32)),
            8 | 16 if from_reg => Ok(u64::from(sign_extend(s & 0xffff_ffff, off as usize) as u32)),
            _ => Err(format!("mov32 with offset {off}")),
        },
        // ALU64 END is bswap, whatever the source bit.
        (END, true) => match imm {
            16 => Ok(u64::from((d as u16).swap_bytes())),
            32 => Ok(u64::from((d as u32).swap_bytes())),
            64 => Ok(d.swap_bytes()),
            _ => Err(format!("bswap of {imm} bits")),
        },
        // Source bit set: to big-endian (a swap on this little-endian host); clear: to little-endian (a truncation).
        (END, false) => match (imm, from_reg) {
            (16, true) => Ok(u64::from((d as u16).swap_bytes())),
            (32, true) => Ok(u64::from((d as u32).swap_bytes())),
            (64, true) => Ok(d.swap_bytes()),
            (16, false) => Ok(u64::from(d as u16)),
            (32, false) => Ok(u64::from(d as u32)),
            (64, false) => Ok(d),
            _ => Err(format!("byte swap of {imm} bits")),
        },
        (_, true) => arith!(op, signed, d, s, u64, i64).ok_or_else(unknown),
        (_, false) => arith!(op, signed, d, s, u32, i32).map(u64::from).ok_or_else(unknown),
    }
}

/// Whether a conditional jump is taken; JMP32 compares the low halves.
fn compare(op: u8, wide: bool, d: u64, s: u64) -> Option<bool> {
    let (d, s) = if wide { (d, s) } else { (d & 0xffff_ffff, s & 0xffff_ffff) };
    let (sd, ss) = if wide { (d as i64, s as i64) } else { (i64::from(d as u32 as i32), i64::from(s as u32 as i32)) };
    Some(match op {
        JEQ => d == s,
        JNE => d != s,
        JGT => d > s,
        JGE => d >= s,
        JLT => d < s,
        JLE => d <= s,
        JSET => d & s != 0,
        JSGT => sd > ss,
        JSGE => sd >= ss,
        JSLT => sd < ss,
        JSLE => sd <= ss,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoEnv;

    impl Env for NoEnv {
        fn helper(&mut self, id: i32, args: [u64; 5], _mem: &mut Memory) -> Result<u64, String> {
            // Helper 1000 adds its first two arguments, for the call tests.
            if id == 1000 { Ok(args[0] + args[1]) } else { Err(format!("helper {id}")) }
        }
        fn reach(&mut self) -> Option<(&mut Helpers, Option<&mut UserMaps>)> {
            None
        }
        fn context_load(&self, _off: u64, _size: usize) -> Option<u64> {
            None
        }
        fn tail_slot(&mut self, _map: u64, index: u64) -> Option<Option<u32>> {
            // Slot n < 9 holds the program of id n + 1; slot 9 is empty; the array has 10.
            (index < 10).then(|| (index < 9).then_some(index as u32 + 1))
        }
    }

    fn i(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
        Insn { code, dst, src, off, imm }
    }

    const EXIT: Insn = exit();

    /// Runs the instructions with r1 = 0 and returns r0.
    fn eval(prog: &[Insn]) -> u64 {
        let mut counts = Counts::default();
        Interpreter::new(prog).run(0, &mut NoEnv, &mut Memory::default(), &mut counts).unwrap()
    }

    /// r0 = a; r0 OP= b (64- or 32-bit, register source).
    fn op(code_op: u8, wide: bool, a: u64, b: u64, off: i16) -> u64 {
        let class = if wide { ALU64 } else { ALU };
        let ld = |dst: u8, v: u64| [i(LD_IMM64, dst, 0, 0, v as u32 as i32), i(0, 0, 0, 0, (v >> 32) as i32)];
        let mut p = Vec::new();
        p.extend(ld(0, a));
        p.extend(ld(2, b));
        p.push(i(class | X | code_op, 0, 2, off, 0));
        p.push(EXIT);
        eval(&p)
    }

    #[test]
    fn arithmetic_follows_the_kernels_rules() {
        // Division by zero gives 0; modulo by zero leaves the dividend.
        assert_eq!(op(DIV, true, 7, 0, 0), 0);
        assert_eq!(op(MOD, true, 7, 0, 0), 7);
        assert_eq!(op(MOD, false, 0xffff_ffff_0000_0007, 0, 0), 7, "32-bit: the low half, zero-extended");
        // Signed division (off 1), including the one overflow.
        assert_eq!(op(DIV, true, (-7i64) as u64, 2, 1), (-3i64) as u64);
        assert_eq!(op(DIV, true, i64::MIN as u64, u64::MAX, 1), i64::MIN as u64);
        // 32-bit results are zero-extended; shifts are masked.
        assert_eq!(op(ADD, false, 0xffff_ffff, 1, 0), 0);
        assert_eq!(op(LSH, true, 1, 65, 0), 2);
        assert_eq!(op(ARSH, false, 0x8000_0000, 4, 0), 0xf800_0000);
        // movsx: sign-extends the low 8 bits.
        assert_eq!(op(MOV, true, 0, 0x80, 8), 0xffff_ffff_ffff_ff80);
    }

    #[test]
    fn byte_swaps_and_32_bit_jumps() {
        // r0 = 0x1122; be16 r0 (to big-endian: a swap here).
        assert_eq!(eval(&[mov64_imm(0, 0x1122), i(ALU | END | X, 0, 0, 0, 16), EXIT]), 0x2211);
        // le32 truncates.
        assert_eq!(
            eval(&[i(LD_IMM64, 0, 0, 0, 0x4433_2211), i(0, 0, 0, 0, 0x55), i(ALU | END, 0, 0, 0, 32), EXIT]),
            0x4433_2211
        );
        // JMP32: r1 = 1 << 32 equals 0 in its low half.
        let p = [
            mov64_imm(1, 1),
            crate::insn::alu(ALU64, LSH, 1, None, 32),
            mov64_imm(0, 5),
            i(JMP32 | JEQ, 1, 0, 1, 0),
            EXIT,
            mov64_imm(0, 9),
            EXIT,
        ];
        assert_eq!(eval(&p), 9);
    }

    #[test]
    fn calls_keep_callee_saved_registers_and_give_each_frame_its_stack() {
        // main: r6 = 40; *(u64 *)(r10 - 8) = 2; call f; r0 += r6; r0 += *(r10 - 8); exit
        // f:    r6 = 1000; *(u64 *)(r10 - 8) = 7 (its own frame); r1 = 1; r2 = 2; call helper 1000 (3); exit
        let p = [
            mov64_imm(6, 40),
            st_imm(8, 10, -8, 2),
            call_local(4),
            crate::insn::alu(ALU64, ADD, 0, Some(6), 0),
            ldx(8, 1, 10, -8),
            crate::insn::alu(ALU64, ADD, 0, Some(1), 0),
            EXIT,
            mov64_imm(6, 1000),
            st_imm(8, 10, -8, 7),
            mov64_imm(1, 1),
            mov64_imm(2, 2),
            call_helper(1000),
            EXIT,
        ];
        let mut counts = Counts::default();
        let r0 = Interpreter::new(&p).run(0, &mut NoEnv, &mut Memory::default(), &mut counts).unwrap();
        assert_eq!(r0, 3 + 40 + 2);
        assert_eq!(counts.insns, 13);
        assert_eq!(counts.helpers.get(&1000), Some(&1));
        // Each instruction ran once; counted per instruction, twice over two runs.
        let hits: Vec<Cell<u64>> = vec![Cell::new(0); p.len()];
        for _ in 0..2 {
            Interpreter::new(&p)
                .counting_each(&hits)
                .run(0, &mut NoEnv, &mut Memory::default(), &mut Counts::default())
                .unwrap();
        }
        assert_eq!(hits.iter().map(Cell::get).collect::<Vec<_>>(), vec![2; p.len()]);
    }

    #[test]
    fn atomics_fetch_and_compare() {
        // *(u64 *)(r10 - 8) = 5; r1 = 3; lock fetch-add; r0 = r1 (5) + *(r10 - 8) (8)
        let p = [
            st_imm(8, 10, -8, 5),
            mov64_imm(1, 3),
            i(STX | ATOMIC | SIZE_DW, 10, 1, -8, FETCH),
            mov64_reg(0, 1),
            ldx(8, 2, 10, -8),
            crate::insn::alu(ALU64, ADD, 0, Some(2), 0),
            EXIT,
        ];
        assert_eq!(eval(&p), 13);
        // cmpxchg: memory 5, r0 = 5 (expected), r1 = 9: memory becomes 9, r0 the old 5.
        let p = [
            st_imm(8, 10, -8, 5),
            mov64_imm(0, 5),
            mov64_imm(1, 9),
            i(STX | ATOMIC | SIZE_DW, 10, 1, -8, CMPXCHG),
            ldx(8, 2, 10, -8),
            crate::insn::alu(ALU64, ADD, 0, Some(2), 0),
            EXIT,
        ];
        assert_eq!(eval(&p), 14);
    }

    #[test]
    fn tail_calls_replace_the_frame_and_stop_at_the_limit() {
        let tail_call = |slot: i32| [mov64_imm(3, slot), call_helper(TAIL_CALL)];
        let run = |entry: &[Insn], targets: &[&[Insn]]| {
            let mut interp = Interpreter::new(entry);
            for (n, t) in targets.iter().enumerate() {
                interp.tail_target(n as u32 + 1, t, None);
            }
            interp.run(0, &mut NoEnv, &mut Memory::default(), &mut Counts::default())
        };
        // The entry calls a subprogram that tail-calls slot 0 (id 1, which
        // returns 7): the target's exit returns to the subprogram's caller.
        let mut entry = vec![call_local(2), add64_imm(0, 100), EXIT];
        entry.extend(tail_call(0));
        entry.extend([mov64_imm(0, -1), EXIT]);
        let seven = [mov64_imm(0, 7), EXIT];
        assert_eq!(run(&entry, &[&seven]).unwrap(), 107);
        // An empty slot, or one past the end: the call falls through.
        for slot in [9, 10] {
            let mut empty = tail_call(slot).to_vec();
            empty.extend([mov64_imm(0, 3), EXIT]);
            assert_eq!(run(&empty, &[&seven]).unwrap(), 3);
        }
        // A program that counts in r0 (kept here, not by the kernel) and
        // tail-calls itself: 33 calls succeed, the 34th falls through.
        let mut again = vec![add64_imm(0, 1)];
        again.extend(tail_call(0));
        again.push(EXIT);
        let mut entry = vec![mov64_imm(0, 0)];
        entry.extend(tail_call(0));
        entry.push(EXIT);
        assert_eq!(run(&entry, &[&again]).unwrap(), u64::from(MAX_TAIL_CALLS));
        // A slot whose program the runtime was not given: an error naming its id.
        let err = run(&entry, &[]).unwrap_err();
        assert!(err.what.contains("kernel id 1"), "{err}");
    }
}
