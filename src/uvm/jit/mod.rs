//! The x86-64 JIT: each BPF instruction becomes the few machine
//! instructions the kernel's own JIT would emit, so the userspace runtime
//! times native code against native code.
//!
//! **What it runs.** Only programs the kernel's verifier accepted on this
//! machine: the JIT checks no memory access and no loop bound, it relies on
//! the verifier's proof (pointers stay in the stack, context, packet and
//! map values; loops end). Anything else — fuzzed or hand-made bytecode —
//! runs in the checked interpreter. The runtime enforces this
//! ([`super::UserRuntime`] JITs a program only if the kernel loaded it).
//!
//! **How the verifier's proof carries over.** The helpers keep the
//! kernel's contracts (a lookup gives `value_size` bytes or NULL, adjust
//! keeps the packet inside its frame), and XDP's 32-bit `data`/`data_end`
//! are real pointers because the frame lives below 4 GiB (`MAP_32BIT`,
//! see [`frame`]): the loads the kernel's verifier would rewrite need no
//! rewriting.
//!
//! **Layout.** BPF registers live in the x86 registers the kernel's JIT
//! uses (r1–r5 are the C argument registers, r6–r9 callee-saved, r10 is
//! rbp), so a helper is a plain C call and a BPF-to-BPF call a plain
//! `call`. Every BPF function gets the same frame: rbp, 512 bytes of
//! stack, then rbx, r13, r14, r15; 16-byte aligned at every call.
//! Division, modulo and the fetching atomics call out to Rust (the
//! interpreter's own arithmetic), with r0–r5 saved around the call.

mod asm;
pub mod calls;
pub mod frame;

use std::collections::{BTreeSet, HashMap};

use asm::{Asm, Op, Shift, Width, cc};

use super::VmError;
use crate::insn::Insn;
use crate::insn::*;

/// BPF register → x86 register, as in the kernel's JIT.
const REG: [u8; 11] =
    [asm::RAX, asm::RDI, asm::RSI, asm::RDX, asm::RCX, asm::R8, asm::RBX, asm::R13, asm::R14, asm::R15, asm::RBP];
/// Scratch registers no BPF register lives in.
const SCRATCH: [u8; 3] = [asm::R9, asm::R10, asm::R11];
/// Bytes of BPF stack per function, as in the kernel.
const STACK: i32 = 512;

/// What `ld_imm64` of a map puts in a register, decided by the runtime.
pub trait Resolve {
    /// The handle of map `fd`.
    fn map_handle(&mut self, fd: i32) -> Result<u64, String>;
    /// The address of byte `off` of map `fd`'s only value (global data).
    fn map_value(&mut self, fd: i32, off: u32) -> Result<u64, String>;
    /// How to look up in the map of `handle` where the call site knows the
    /// map, as the kernel's verifier inlines array lookups and calls a
    /// hash's lookup directly. None: the generic helper.
    fn lookup_plan(&mut self, _handle: u64) -> Option<LookupPlan> {
        None
    }
}

/// A lookup in a map known at the call site.
#[derive(Debug, Clone, Copy)]
pub enum LookupPlan {
    /// Values side by side from `base`, `stride` apart: inlined.
    Array { base: u64, stride: usize, max_entries: u32 },
    /// An array of maps: inlined, giving the inner map's handle (`tag` | its 4-byte index, or NULL for an empty slot).
    ArrayOfMaps { base: u64, stride: usize, max_entries: u32, tag: u64 },
    /// `calls::lookup_direct` on this map, skipping the handle's decoding.
    Direct { map: u64, cpu: u64 },
}

/// Machine code in an executable mapping (private, anonymous, read and
/// execute once written; unmapped on drop).
struct Code(memmap2::Mmap);

impl Code {
    fn new(bytes: &[u8]) -> std::io::Result<Code> {
        let mut map = memmap2::MmapMut::map_anon(bytes.len().max(1))?;
        map[..bytes.len()].copy_from_slice(bytes);
        Ok(Code(map.make_exec()?))
    }

    fn ptr(&self) -> *const u8 {
        self.0.as_ptr()
    }

    fn len(&self) -> usize {
        self.0.len()
    }
}

/// A compiled program.
pub struct JitProgram {
    code: Code,
    /// may_goto's count, reset at each run; boxed, for its address is in the code.
    may_goto_left: Box<u64>,
    /// Where each instruction's code starts (a function's first at its
    /// prologue), non-decreasing: for mapping a sampled address back.
    starts: Vec<usize>,
    /// The map handle in r1 at each helper call where the code shows it.
    call_maps: HashMap<usize, u64>,
}

impl JitProgram {
    /// Whether this CPU has what the JIT emits (BMI2's shifts).
    pub fn supported() -> Result<(), String> {
        if std::arch::is_x86_feature_detected!("bmi2") {
            Ok(())
        } else {
            Err("the JIT needs a CPU with BMI2; use the interpreter".into())
        }
    }

    /// Compiles `insns`, which the kernel's verifier accepted.
    pub fn compile(insns: &[Insn], resolve: &mut dyn Resolve) -> Result<JitProgram, VmError> {
        Self::supported().map_err(|what| VmError { pc: 0, insn: Insn::default(), what })?;
        let may_goto_left = Box::new(0u64);
        let Translated { code: bytes, starts, call_maps } =
            translate(insns, resolve, &*may_goto_left as *const u64 as u64)?;
        let code = Code::new(&bytes).map_err(|e| VmError {
            pc: 0,
            insn: Insn::default(),
            what: format!("mapping the JIT's code: {e}"),
        })?;
        Ok(JitProgram { code, may_goto_left, starts, call_maps })
    }

    /// Runs the program with r1 = `ctx`.
    ///
    /// # Safety
    /// The program must be one the kernel's verifier accepted, `ctx` what
    /// its type expects, and the helpers' environment ([`calls::HelperEnv`]) set.
    pub unsafe fn call(&mut self, ctx: u64) -> u64 {
        *self.may_goto_left = MAY_GOTO_BUDGET;
        // SAFETY: the code follows the C calling convention (see the module docs).
        let f: extern "C" fn(u64) -> u64 = unsafe { std::mem::transmute(self.code.ptr()) };
        f(ctx)
    }

    /// Where a tail call into this program lands.
    pub fn tail_entry(&mut self) -> calls::TailEntry {
        calls::TailEntry { code: self.code.ptr() as u64, may_goto_left: &mut *self.may_goto_left }
    }

    pub fn code_bytes(&self) -> usize {
        self.code.len()
    }

    /// The addresses [start, end) of the compiled code.
    pub fn code_range(&self) -> (u64, u64) {
        (self.code.ptr() as u64, self.code.ptr() as u64 + self.code.len() as u64)
    }

    /// The instruction whose code holds address `addr`, if it is in this
    /// program (code after the last instruction, out-of-line stubs, counts
    /// as the last).
    pub fn pc_of(&self, addr: u64) -> Option<usize> {
        let (start, end) = self.code_range();
        if addr < start || addr >= end {
            return None;
        }
        let off = (addr - start) as usize;
        self.starts.partition_point(|&s| s <= off).checked_sub(1)
    }

    /// The handle of the map the helper call at `pc` works on, where the
    /// code before it shows which (as for the direct lookups).
    pub fn call_map(&self, pc: usize) -> Option<u64> {
        self.call_maps.get(&pc).copied()
    }
}

/// A jump or call whose displacement waits for its target's address.
enum Fixup {
    Jump { at: usize, pc: usize },
    Call { at: usize, pc: usize },
}

/// An operand of a call out to Rust.
#[derive(Clone, Copy)]
enum Arg {
    Reg(u8),
    Imm(u64),
}

fn prologue(a: &mut Asm) {
    a.push(asm::RBP);
    a.mov_rr(true, asm::RBP, asm::RSP);
    a.alu_ri(Op::Sub, true, asm::RSP, STACK);
    for r in [asm::RBX, asm::R13, asm::R14, asm::R15] {
        a.push(r);
    }
}

fn epilogue(a: &mut Asm) {
    for r in [asm::R15, asm::R14, asm::R13, asm::RBX] {
        a.pop(r);
    }
    a.leave_ret();
}

/// Calls `f(args…)` (a Rust function of up to four u64s), keeping r0–r5,
/// and puts its result in `result`.
fn call_out(a: &mut Asm, f: u64, args: [Arg; 4], result: Option<u8>) {
    // Register arguments go to scratch registers first: the saves below
    // and the argument moves would otherwise overwrite one another.
    let mut scratch = SCRATCH.iter();
    let args = args.map(|arg| match arg {
        Arg::Reg(r) => {
            let s = *scratch.next().expect("at most three register arguments");
            a.mov_rr(true, s, r);
            Arg::Reg(s)
        }
        imm => imm,
    });
    const SAVED: [u8; 6] = [asm::RAX, asm::RDI, asm::RSI, asm::RDX, asm::RCX, asm::R8];
    // Six pushes keep rsp 16-byte aligned for the call.
    for r in SAVED {
        a.push(r);
    }
    for (arg, to) in args.iter().zip([asm::RDI, asm::RSI, asm::RDX, asm::RCX]) {
        match *arg {
            Arg::Reg(s) => a.mov_rr(true, to, s),
            Arg::Imm(v) => a.mov_ri64(to, v),
        }
    }
    a.mov_ri64(asm::RAX, f);
    a.call_r(asm::RAX);
    a.mov_rr(true, asm::R11, asm::RAX);
    for r in SAVED.iter().rev() {
        a.pop(*r);
    }
    if let Some(r) = result {
        a.mov_rr(true, r, asm::R11);
    }
}

/// Unsigned division or modulo of `dst` by `src` (or `imm`), by BPF's
/// rules for a zero divisor (the quotient is 0, the remainder the
/// dividend); rax and rdx (r0 and r3) are kept around x86's `div`.
fn unsigned_div(a: &mut Asm, quotient: bool, w: bool, dst: u8, src: Option<u8>, imm: i32) {
    match src {
        Some(s) => a.mov_rr(w, asm::R11, s),
        None => a.mov_ri(w, asm::R11, imm),
    }
    a.test_rr(w, asm::R11, asm::R11);
    let to_zero = a.jcc(cc::E);
    a.push(asm::RAX);
    a.push(asm::RDX);
    a.mov_rr(w, asm::RAX, dst);
    a.alu_rr(Op::Xor, false, asm::RDX, asm::RDX);
    a.div(w, asm::R11);
    a.mov_rr(true, asm::R11, if quotient { asm::RAX } else { asm::RDX });
    a.pop(asm::RDX);
    a.pop(asm::RAX);
    a.mov_rr(w, dst, asm::R11);
    let to_done = a.jmp();
    let zero = a.len();
    a.patch(to_zero, zero);
    if quotient {
        a.alu_rr(Op::Xor, false, dst, dst);
    } else if !w {
        a.mov_rr(false, dst, dst);
    }
    let done = a.len();
    a.patch(to_done, done);
}

fn alu_op(op: u8) -> Option<Op> {
    Some(match op {
        ADD => Op::Add,
        SUB => Op::Sub,
        OR => Op::Or,
        AND => Op::And,
        XOR => Op::Xor,
        _ => return None,
    })
}

fn shift_kind(op: u8) -> Option<Shift> {
    Some(match op {
        LSH => Shift::Left,
        RSH => Shift::Right,
        ARSH => Shift::Arith,
        _ => return None,
    })
}

/// The `jcc` condition of a BPF conditional jump (after cmp or, for JSET, test).
fn condition(op: u8) -> Option<u8> {
    Some(match op {
        JEQ => cc::E,
        JNE | JSET => cc::NE,
        JGT => cc::A,
        JGE => cc::AE,
        JLT => cc::B,
        JLE => cc::BE,
        JSGT => cc::G,
        JSGE => cc::GE,
        JSLT => cc::L,
        JSLE => cc::LE,
        _ => return None,
    })
}

/// The program's functions: instruction 0 and every BPF-to-BPF call's target.
fn function_starts(insns: &[Insn]) -> Result<BTreeSet<usize>, VmError> {
    let mut starts = BTreeSet::from([0]);
    for (pc, i) in insns.iter().enumerate() {
        if i.code == (JMP | CALL) && i.src == PSEUDO_CALL {
            let t = pc as i64 + 1 + i64::from(i.imm);
            if t < 0 || t as usize >= insns.len() {
                return Err(VmError { pc, insn: *i, what: "calls outside the program".into() });
            }
            starts.insert(t as usize);
        }
    }
    Ok(starts)
}

/// Every instruction a jump lands on: what registers hold is unknown there.
fn jump_targets(insns: &[Insn]) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    for (pc, i) in insns.iter().enumerate() {
        let op = i.op();
        let off = match (i.class(), op) {
            (JMP, CALL | EXIT) => continue,
            (JMP32, JA) => i64::from(i.imm),
            (JMP | JMP32, _) => i64::from(i.off),
            _ => continue,
        };
        if let Ok(t) = usize::try_from(pc as i64 + 1 + off) {
            out.insert(t);
        }
    }
    out
}

/// The registers `i` writes (a call: r0–r5).
fn writes(i: Insn) -> std::ops::Range<usize> {
    let one = |r: u8| r as usize..r as usize + 1;
    match i.class() {
        ALU | ALU64 | LDX | LD => one(i.dst),
        STX if i.mode() == ATOMIC => match i.imm {
            CMPXCHG => one(0),
            op if op & FETCH != 0 => one(i.src),
            _ => 0..0,
        },
        JMP if i.op() == CALL => 0..6,
        _ => 0..0,
    }
}

/// Emits a lookup in a map the call site knows (r2 = rsi points at the key).
fn inline_lookup(a: &mut Asm, plan: LookupPlan) {
    let (base, stride, max, tag) = match plan {
        LookupPlan::Array { base, stride, max_entries } => (base, stride, max_entries, None),
        LookupPlan::ArrayOfMaps { base, stride, max_entries, tag } => (base, stride, max_entries, Some(tag)),
        LookupPlan::Direct { map, cpu } => {
            a.mov_ri64(asm::RDI, map);
            a.mov_ri64(asm::RDX, cpu);
            a.mov_ri64(asm::RAX, calls::lookup_direct as *const () as u64);
            a.call_r(asm::RAX);
            return;
        }
    };
    // eax = key; out of bounds: NULL.
    a.load(Width::B4, asm::RAX, asm::RSI, 0);
    a.alu_ri(Op::Cmp, false, asm::RAX, max as i32);
    let mut to_null = vec![a.jcc(cc::AE)];
    a.imul_ri(true, asm::RAX, stride as i32);
    a.mov_ri64(asm::R11, base);
    a.alu_rr(Op::Add, true, asm::RAX, asm::R11);
    if let Some(tag) = tag {
        // The slot holds the inner map's index, or all ones for none.
        a.load(Width::B4, asm::RAX, asm::RAX, 0);
        a.alu_ri(Op::Cmp, false, asm::RAX, -1);
        to_null.push(a.jcc(cc::E));
        a.mov_ri64(asm::R11, tag);
        a.alu_rr(Op::Or, true, asm::RAX, asm::R11);
    }
    let to_done = a.jmp();
    let null = a.len();
    for at in to_null {
        a.patch(at, null);
    }
    a.alu_rr(Op::Xor, false, asm::RAX, asm::RAX);
    let done = a.len();
    a.patch(to_done, done);
}

/// Whether `plan` can be inlined with 32-bit immediates.
fn fits(plan: &LookupPlan) -> bool {
    match plan {
        LookupPlan::Array { stride, max_entries, .. } | LookupPlan::ArrayOfMaps { stride, max_entries, .. } => {
            i32::try_from(*stride).is_ok() && i32::try_from(*max_entries).is_ok()
        }
        LookupPlan::Direct { .. } => true,
    }
}

/// A program's code and what maps it back to instructions.
struct Translated {
    code: Vec<u8>,
    /// Where each instruction's code starts.
    starts: Vec<usize>,
    /// The map handle in r1 at each helper call, where known.
    call_maps: HashMap<usize, u64>,
}

fn translate(insns: &[Insn], resolve: &mut dyn Resolve, may_goto_cell: u64) -> Result<Translated, VmError> {
    let starts = function_starts(insns)?;
    let targets = jump_targets(insns);
    // The map handle each register holds, where it is known in straight-line code.
    let mut handles: [Option<u64>; 11] = [None; 11];
    let mut a = Asm::default();
    // Code offset of each instruction (past its function's prologue) and of each function.
    let mut at = vec![0usize; insns.len() + 1];
    let mut entry: HashMap<usize, usize> = HashMap::new();
    let mut fixups = Vec::new();
    let mut call_maps = HashMap::new();
    let mut pc = 0;
    while pc < insns.len() {
        let i = insns[pc];
        let fail = |what: &str| VmError { pc, insn: i, what: what.to_string() };
        if starts.contains(&pc) {
            entry.insert(pc, a.len());
            prologue(&mut a);
        }
        if starts.contains(&pc) || targets.contains(&pc) {
            handles = [None; 11];
        }
        // What this instruction leaves in registers, for the next's sake.
        let copied =
            (i.code == (ALU64 | MOV | X) && i.off == 0).then(|| handles.get(i.src as usize).copied().flatten());
        let loaded_map = (i.code == (LD | IMM | SIZE_DW) && i.src == PSEUDO_MAP_FD).then_some(i.imm);
        at[pc] = a.len();
        if i.dst > 10 || i.src > 10 {
            return Err(fail("no such register"));
        }
        let (dst, src) = (REG[i.dst as usize], REG[i.src as usize]);
        let x = i.code & X != 0;
        let op = i.op();
        let jump_target = |off: i64| -> Result<usize, VmError> {
            let t = pc as i64 + 1 + off;
            if t < 0 || t as usize >= insns.len() { Err(fail("jumps outside the program")) } else { Ok(t as usize) }
        };
        let mut next = pc + 1;
        match i.class() {
            ALU | ALU64 => {
                let w = i.class() == ALU64;
                if let Some(o) = alu_op(op) {
                    if x { a.alu_rr(o, w, dst, src) } else { a.alu_ri(o, w, dst, i.imm) }
                } else if let Some(k) = shift_kind(op) {
                    if x {
                        a.shift_rr(k, w, dst, src)
                    } else {
                        a.shift_ri(k, w, dst, (i.imm as u8) & if w { 63 } else { 31 })
                    }
                } else {
                    match op {
                        MOV => match (i.off, x) {
                            (0, true) => a.mov_rr(w, dst, src),
                            (0, false) => a.mov_ri(w, dst, i.imm),
                            (8, true) => a.movsx_rr(w, Width::B1, dst, src),
                            (16, true) => a.movsx_rr(w, Width::B2, dst, src),
                            (32, true) if w => a.movsx_rr(true, Width::B4, dst, src),
                            _ => return Err(fail("mov with an unknown offset")),
                        },
                        MUL => {
                            if x {
                                a.imul_rr(w, dst, src)
                            } else {
                                a.imul_ri(w, dst, i.imm)
                            }
                        }
                        NEG => a.neg(w, dst),
                        DIV | MOD if i.off == 0 => {
                            unsigned_div(&mut a, op == DIV, w, dst, if x { Some(src) } else { None }, i.imm)
                        }
                        DIV | MOD => {
                            // Signed: out of line (x86's idiv traps where BPF's gives a value).
                            let s = if x { Arg::Reg(src) } else { Arg::Imm(i.imm as i64 as u64) };
                            let how = u64::from(i.code) | (u64::from(i.off as u16) << 8);
                            call_out(
                                &mut a,
                                calls::alu as *const () as u64,
                                [Arg::Reg(dst), s, Arg::Imm(how), Arg::Imm(0)],
                                Some(dst),
                            );
                        }
                        END => {
                            // ALU64's END is bswap; ALU's swaps to big-endian with X, truncates without.
                            let swap = w || x;
                            match (i.imm, swap) {
                                (16, true) => {
                                    a.rol16_8(dst);
                                    a.movzx_rr(Width::B2, dst, dst);
                                }
                                (32, true) => a.bswap(false, dst),
                                (64, true) => a.bswap(true, dst),
                                (16, false) => a.movzx_rr(Width::B2, dst, dst),
                                (32, false) => a.mov_rr(false, dst, dst),
                                (64, false) => {}
                                _ => return Err(fail("byte swap of an unknown width")),
                            }
                        }
                        _ => return Err(fail("unknown ALU operation")),
                    }
                }
            }
            JMP | JMP32 => {
                let wide = i.class() == JMP;
                match op {
                    CALL if wide => match i.src {
                        0 => {
                            if let Some(h) = handles[1] {
                                call_maps.insert(pc, h);
                            }
                            let plan = match (i.imm, handles[1]) {
                                (1, Some(h)) => resolve.lookup_plan(h).filter(fits),
                                _ => None,
                            };
                            match plan {
                                Some(plan) => inline_lookup(&mut a, plan),
                                None if i.imm == super::uapi::TAIL_CALL => {
                                    // rax: the chain's verdict; rdx: whether it ran.
                                    a.mov_ri64(asm::RAX, calls::tail_call as *const () as u64);
                                    a.call_r(asm::RAX);
                                    a.test_rr(true, asm::RDX, asm::RDX);
                                    let failed = a.jcc(cc::E);
                                    epilogue(&mut a);
                                    a.patch(failed, a.len());
                                }
                                None => {
                                    // The runtime runs a program calling what it lacks in the interpreter.
                                    let f = calls::address(i.imm)
                                        .ok_or_else(|| fail(&super::helpers::unsupported(i.imm)))?;
                                    a.mov_ri64(asm::RAX, f);
                                    a.call_r(asm::RAX);
                                }
                            }
                        }
                        PSEUDO_CALL => {
                            let t = jump_target(i64::from(i.imm))?;
                            fixups.push(Fixup::Call { at: a.call_rel(), pc: t });
                        }
                        _ => return Err(fail(&super::helpers::missing_kfunc(i.imm))),
                    },
                    EXIT if wide => epilogue(&mut a),
                    JCOND if wide => {
                        // may_goto: taken once the run's budget is spent.
                        let t = jump_target(i64::from(i.off))?;
                        a.mov_ri64(asm::R11, may_goto_cell);
                        a.cmp_mem_i8(asm::R11, 0, 0);
                        fixups.push(Fixup::Jump { at: a.jcc(cc::E), pc: t });
                        a.dec_mem(asm::R11, 0);
                    }
                    JA => {
                        let off = if wide { i64::from(i.off) } else { i64::from(i.imm) };
                        fixups.push(Fixup::Jump { at: a.jmp(), pc: jump_target(off)? });
                    }
                    _ => {
                        let cond = condition(op).ok_or_else(|| fail("unknown jump"))?;
                        match (op == JSET, x) {
                            (true, true) => a.test_rr(wide, dst, src),
                            (true, false) => a.test_ri(wide, dst, i.imm),
                            (false, true) => a.alu_rr(Op::Cmp, wide, dst, src),
                            (false, false) => a.alu_ri(Op::Cmp, wide, dst, i.imm),
                        }
                        fixups.push(Fixup::Jump { at: a.jcc(cond), pc: jump_target(i64::from(i.off))? });
                    }
                }
            }
            LDX => {
                let width = Width::of(size_bytes(i.code));
                match i.mode() {
                    MEM => a.load(width, dst, src, i32::from(i.off)),
                    MEMSX if width == Width::B8 => a.load(width, dst, src, i32::from(i.off)),
                    MEMSX => a.load_sx(width, dst, src, i32::from(i.off)),
                    _ => return Err(fail("legacy packet loads (LD_ABS/LD_IND) are not supported")),
                }
            }
            ST | STX => {
                let size = size_bytes(i.code);
                let width = Width::of(size);
                match (i.class(), i.mode()) {
                    (ST, MEM) => a.store_imm(width, dst, i32::from(i.off), i.imm),
                    (STX, MEM) => a.store(width, dst, i32::from(i.off), src),
                    (STX, ATOMIC) if size == 4 || size == 8 => {
                        if i.imm == 0 {
                            a.lock_add(size == 8, dst, i32::from(i.off), src);
                        } else {
                            // The fetching and bitwise atomics: old value to src (r0 for cmpxchg).
                            a.lea(asm::R9, dst, i32::from(i.off));
                            let how = (i.imm as u32 as u64) | ((size as u64) << 32);
                            let result = match i.imm {
                                CMPXCHG => Some(REG[0]),
                                op if op & FETCH != 0 => Some(src),
                                _ => None,
                            };
                            call_out(
                                &mut a,
                                calls::atomic as *const () as u64,
                                [Arg::Reg(asm::R9), Arg::Reg(src), Arg::Reg(REG[0]), Arg::Imm(how)],
                                result,
                            );
                        }
                    }
                    _ => return Err(fail("unknown store")),
                }
            }
            LD => {
                if i.code != (LD | IMM | SIZE_DW) {
                    return Err(fail("legacy packet loads (LD_ABS/LD_IND) are not supported"));
                }
                let hi = insns.get(pc + 1).ok_or_else(|| fail("ld_imm64 is missing its second half"))?;
                let v = match i.src {
                    0 => (u64::from(hi.imm as u32) << 32) | u64::from(i.imm as u32),
                    PSEUDO_MAP_FD => resolve.map_handle(i.imm).map_err(|e| fail(&e))?,
                    PSEUDO_MAP_VALUE => resolve.map_value(i.imm, hi.imm as u32).map_err(|e| fail(&e))?,
                    _ => return Err(fail("ld_imm64 of an unknown pseudo source")),
                };
                a.mov_ri64(dst, v);
                next = pc + 2;
                at[pc + 1] = a.len();
            }
            _ => unreachable!("three bits of class"),
        }
        for r in writes(i) {
            if r < handles.len() {
                handles[r] = None;
            }
        }
        if let (Some(fd), true) = (loaded_map, (i.dst as usize) < handles.len()) {
            handles[i.dst as usize] = resolve.map_handle(fd).ok();
        }
        if let Some(h) = copied {
            handles[i.dst as usize] = h;
        }
        pc = next;
    }
    for f in fixups {
        match f {
            Fixup::Jump { at: from, pc } => a.patch(from, at[pc]),
            Fixup::Call { at: from, pc } => a.patch(from, entry[&pc]),
        }
    }
    // A function's prologue is its first instruction's; the second half of
    // an ld_imm64 emits nothing (and was left at 0): it starts where it ends.
    let mut starts: Vec<usize> = (0..insns.len()).map(|pc| entry.get(&pc).copied().unwrap_or(at[pc])).collect();
    for pc in 1..starts.len() {
        starts[pc] = starts[pc].max(starts[pc - 1]);
    }
    Ok(Translated { code: a.code, starts, call_maps })
}

#[cfg(test)]
mod tests;
