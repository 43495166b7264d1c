//! The body inline in the timing loop: a program's calls to one function
//! replaced by that function's instructions.
//!
//! The timing loop calls the body once per iteration. On CPUs whose every
//! return goes through a return thunk (AMD's SRSO "Safe RET"), that call
//! costs ~9 ns, more than many early exits themselves. Inlined, the body's
//! instructions run in the loop's own frame:
//! - its exits become jumps to where the call returned, the verdict in r0;
//! - its stack moves below the caller's frame (every r10-relative access
//!   shifted; a copied frame pointer is shifted once, where it is copied);
//! - the caller's registers r6-r9 that are live after the call, which a
//!   called function would have preserved, are saved below the caller's
//!   frame before the body and loaded back after it;
//! - its own subprograms stay functions, called from the inlined copy.
//!
//! The verifier then walks the body inside the loop instead of once as a
//! function, which it may refuse (paths that never converge at the loop
//! head, too many states): the caller loads the call form then, and says why.

use std::collections::HashMap;

use crate::insn::*;
use crate::kernel::FuncInfo;

/// `bpf_tail_call`: it leaves the whole program, which an inlined body must not.
const HELPER_TAIL_CALL: i32 = helper::TAIL_CALL;

/// Why a call could not be inlined (before the verifier had its say).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NotInlined {
    #[error("the program makes no call to the body")]
    NoCall,
    #[error("the body makes tail calls, which leave the loop")]
    TailCall,
    #[error("the body uses the frame pointer other than to address its stack")]
    FramePointer,
    #[error("the loop's frame and the body's need more than 512 bytes of stack")]
    Stack,
    #[error("the body is too large to inline: a jump across it exceeds the instruction set's reach")]
    TooFar,
    #[error("the instructions are malformed: {0}")]
    Malformed(&'static str),
}

/// The program with its calls to the body inlined.
#[derive(Debug, Clone)]
pub struct Inlined {
    pub insns: Vec<Insn>,
    /// Function records of what stayed a function (empty when there were none).
    pub funcs: Vec<FuncInfo>,
    /// Calls inlined (each a copy of the body).
    pub copies: usize,
    /// Registers r6-r9 saved around each copy, as a bit set (bit r - 6).
    pub saved_regs: u8,
    /// Bytes the body's stack moved down.
    pub shift: i16,
    /// Bytes of the body's own stack frame.
    pub body_depth: i64,
    /// Bytes zeroed after each copy (what an overhead program must zero
    /// too); 0 with [`Scrub::Written`], whose stores belong to the body's paths.
    pub scrubbed: i64,
}

/// The bit of register r6-r9 in a register set (none for the others).
fn bit(r: u8) -> u8 {
    if (6..=9).contains(&r) { 1 << (r - 6) } else { 0 }
}

/// Registers r6-r9 (as bits) an instruction reads and writes.
fn uses_defs(i: &Insn) -> (u8, u8) {
    let (d, s) = (i.dst, i.src);
    let x = i.reads_src();
    match i.class() {
        LD if i.code == LD_IMM64 => (0, bit(d)),
        // Legacy packet loads read the context from r6.
        LD => (bit(6) | if x { bit(s) } else { 0 }, 0),
        LDX => (bit(s), bit(d)),
        ST => (bit(d), 0),
        // Atomics may also write src or r0; counting them as reads only keeps more live, never less.
        STX => (bit(d) | bit(s), 0),
        ALU | ALU64 if i.op() == MOV => (if x { bit(s) } else { 0 }, bit(d)),
        ALU | ALU64 => (bit(d) | if x { bit(s) } else { 0 }, bit(d)),
        JMP | JMP32 => match i.op() {
            JA | CALL | EXIT | JCOND => (0, 0),
            _ => (bit(d) | if x { bit(s) } else { 0 }, 0),
        },
        _ => (0, 0),
    }
}

/// Registers r6-r9 live on entry to each instruction of the function
/// [start, end) (backward data flow to a fixed point).
fn live_in(insns: &[Insn], start: usize, end: usize) -> Result<Vec<u8>, NotInlined> {
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); end - start];
    let mut pc = start;
    while pc < end {
        let i = &insns[pc];
        let next = pc + i.width();
        let s = &mut succ[pc - start];
        let falls_through = !(i.is_jump_class() && (i.op() == EXIT || (i.op() == JA)));
        if let Some(t) = i.jump_target(pc) {
            if t < start as i64 || t >= end as i64 {
                return Err(NotInlined::Malformed("a jump leaves its function"));
            }
            s.push(t as usize);
        }
        if falls_through && next < end {
            s.push(next);
        }
        pc = next;
    }
    let mut first = vec![false; end - start];
    let mut pc = start;
    while pc < end {
        first[pc - start] = true;
        pc += insns[pc].width();
    }
    let mut live = vec![0u8; end - start];
    loop {
        let mut changed = false;
        for pc in (start..end).rev().filter(|pc| first[pc - start]) {
            let (uses, defs) = uses_defs(&insns[pc]);
            let out = succ[pc - start].iter().fold(0u8, |m, &t| m | live[t - start]);
            let inn = uses | (out & !defs);
            if inn != live[pc - start] {
                live[pc - start] = inn;
                changed = true;
            }
        }
        if !changed {
            return Ok(live);
        }
    }
}

/// Whether `i` uses the frame pointer's value other than as a memory
/// operation's base or the source of a copy.
fn escapes_fp(i: &Insn) -> bool {
    let x = i.reads_src();
    match i.class() {
        STX => i.src == FP,
        ALU | ALU64 => i.dst == FP || (x && i.src == FP && i.code != MOV64_REG),
        JMP | JMP32 => !matches!(i.op(), CALL | EXIT) && (i.dst == FP || (x && i.src == FP)),
        _ => false,
    }
}

/// Bytes of stack the function [start, end) addresses below its frame
/// pointer, rounded up to 8; None when a copied frame pointer is not
/// moved by a constant at once (its reach unknown).
fn frame_depth(insns: &[Insn], start: usize, end: usize) -> Option<i64> {
    let mut depth = 0i64;
    for pc in start..end {
        let i = &insns[pc];
        let based = match i.class() {
            LDX if i.src == FP => Some(i64::from(i.off)),
            ST | STX if i.dst == FP => Some(i64::from(i.off)),
            _ => None,
        };
        if let Some(off) = based {
            depth = depth.max(-off);
        }
        if i.code == MOV64_REG && i.src == FP {
            let next = insns.get(pc + 1)?;
            if next.code != ADD64_IMM || next.dst != i.dst {
                return None;
            }
            depth = depth.max(-i64::from(next.imm));
        }
    }
    Some((depth + 7) / 8 * 8)
}

/// Helpers that only read through their pointer arguments: a stack
/// pointer passed to them writes no slot. Any other helper, subprogram or
/// kfunc given a stack pointer may write anywhere in the frame.
const READ_ONLY_HELPERS: [i32; 8] = [
    1,   // map_lookup_elem
    2,   // map_update_elem
    3,   // map_delete_elem
    6,   // trace_printk
    25,  // perf_event_output
    28,  // csum_diff
    87,  // map_push_elem
    130, // ringbuf_output
];

/// The body's 8-byte stack slots, as bits (bit j: bytes [-8(j+1), -8j) of its frame).
type Slots = u64;

/// The slots a store of `size` bytes at frame offset `off` touches.
fn slots_of(off: i64, size: i64) -> Slots {
    let (lo, hi) = (-(off + size), -off); // distances below the frame pointer
    if lo < 0 || hi > MAX_STACK {
        return Slots::MAX;
    }
    let (first, last) = (lo / 8, (hi - 1) / 8);
    (first..=last).fold(0, |m, j| m | 1 << j)
}

/// For each instruction of the function [start, end): the slots of its
/// frame that some path from the start may have written before it (a
/// forward data flow to a fixed point). Stores through a copy of the frame
/// pointer, and calls given one (but for [`READ_ONLY_HELPERS`]), count as
/// writing every slot; so do loads from the stack once a copy was stored
/// there, since what they load may be a copy.
fn written_before(insns: &[Insn], start: usize, end: usize) -> Vec<Slots> {
    // Registers as bits r0-r10 that may hold a copy of the frame pointer.
    type Regs = u16;
    const ARGS: Regs = 0b11_1110;
    let n = end - start;
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut pc = start;
    while pc < end {
        let i = &insns[pc];
        let next = pc + i.width();
        if let Some(t) = i.jump_target(pc).filter(|&t| t >= start as i64 && t < end as i64) {
            succ[pc - start].push(t as usize);
        }
        if !(i.is_jump_class() && matches!(i.op(), EXIT | JA)) && next < end {
            succ[pc - start].push(next);
        }
        pc = next;
    }
    let mut spilled = false;
    loop {
        let mut state: Vec<Option<(Regs, Slots)>> = vec![None; n];
        state[0] = Some((1 << FP, 0));
        let mut spills = false;
        let mut work = vec![start];
        while let Some(pc) = work.pop() {
            let Some((mut regs, mut slots)) = state[pc - start] else { continue };
            let i = &insns[pc];
            let (d, s) = (i.dst, i.src);
            let x = i.reads_src();
            let held = regs;
            let copy = move |r: u8| held & (1 << r) != 0;
            let set = |regs: &mut Regs, r: u8, on: bool| {
                if on { *regs |= 1 << r } else { *regs &= !(1 << r) }
            };
            match i.class() {
                LD => set(&mut regs, d, false),
                LDX => set(&mut regs, d, spilled && copy(s)),
                ST | STX => {
                    if d == FP {
                        slots |= slots_of(i64::from(i.off), i.access_bytes() as i64);
                    } else if copy(d) {
                        slots = Slots::MAX;
                    }
                    if i.class() == STX && copy(s) {
                        spills = true;
                    }
                    // Atomics with a fetch write a register from memory.
                    if i.class() == STX && i.mode() == ATOMIC {
                        set(&mut regs, s, spilled);
                        set(&mut regs, 0, spilled);
                    }
                }
                ALU64 if i.op() == MOV => set(&mut regs, d, x && copy(s)),
                ALU64 => {
                    let on = copy(d) || (x && copy(s));
                    set(&mut regs, d, on)
                }
                ALU => set(&mut regs, d, false),
                _ if i.code == CALL_OP => {
                    let read_only = s == 0 && READ_ONLY_HELPERS.contains(&i.imm);
                    if regs & ARGS != 0 && !read_only {
                        slots = Slots::MAX;
                    }
                    regs &= !(ARGS | 1);
                }
                _ => {}
            }
            for &t in &succ[pc - start] {
                let merged = match state[t - start] {
                    Some((r, w)) => (r | regs, w | slots),
                    None => (regs, slots),
                };
                if state[t - start] != Some(merged) {
                    state[t - start] = Some(merged);
                    work.push(t);
                }
            }
        }
        if spills == spilled {
            return state.into_iter().map(|s| s.map_or(0, |(_, w)| w)).collect();
        }
        spilled = spills;
    }
}

/// Stores zeroing the given slots of a frame that begins `shift` bytes
/// below the frame pointer, but none deeper than `depth`.
fn zero_slots(slots: Slots, shift: i64, depth: i64) -> impl Iterator<Item = Insn> {
    (0..depth / 8)
        .filter(move |j| slots & (1 << j) != 0)
        .map(move |j| st_imm(8, FP, -((shift + 8 * (j + 1)) as i16), 0))
}

/// Where an instruction of the output came from, for the second pass that
/// points its jumps and calls at their new places.
#[derive(Clone, Copy)]
enum Origin {
    /// Made here (saves, loads, frame pointer shifts): nothing to fix.
    New,
    /// The caller's instruction `pc`.
    Caller(usize),
    /// Copy `k` of the body's instruction `pc`.
    Copy(usize, usize),
    /// Instruction `pc` of a function kept as it is.
    Kept(usize),
}

/// What to zero after each inlined copy of the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scrub {
    /// Nothing: the cheapest loop, where the verifier's states converge.
    None,
    /// The body's own stack frame: where the body's paths leave its slots
    /// in different forms (zero, scalar, spilled pointer) and the verifier
    /// would keep a state for each mix at the loop head (xdp-lb's datapath).
    Frame,
    /// So many bytes below the loop's frame: an overhead program pays the
    /// same stores as the body whose cost it stands for.
    Bytes(i64),
    /// At each of the body's exits, the slots the paths to it may have
    /// written; the whole frame once before the loop. Every slot reaches the
    /// loop head zeroed, as with `Frame`, but a path pays only for the slots
    /// it wrote (an early exit that wrote none, nothing): 15 stores per
    /// iteration cost xdp-lb's loop ~1.4 ns. The stores are then part of
    /// the body's figure, and an overhead program zeroes nothing.
    Written,
}

/// Inlines every call the function starting at 0 (the program's entry)
/// makes to the function starting at `body`. The body's own subprograms,
/// and the body itself if anything else calls it, stay functions.
pub fn inline_calls(insns: &[Insn], funcs: &[FuncInfo], body: usize, scrub: Scrub) -> Result<Inlined, NotInlined> {
    let starts = function_starts(insns, funcs.iter().map(|f| f.insn_off as usize));
    let end_of = |s: usize| starts.range(s + 1..).next().copied().unwrap_or(insns.len());
    if body == 0 || !starts.contains(&body) {
        return Err(NotInlined::NoCall);
    }
    let (caller_end, body_end) = (end_of(0), end_of(body));
    let sites: Vec<usize> =
        (0..caller_end).filter(|&pc| insns[pc].is_pseudo_call() && insns[pc].call_target(pc) == body as i64).collect();
    if sites.is_empty() {
        return Err(NotInlined::NoCall);
    }
    let called_elsewhere = (caller_end..insns.len()).any(|pc| {
        (insns[pc].is_pseudo_call() || insns[pc].is_pseudo_func()) && insns[pc].call_target(pc) == body as i64
    });
    let body_insns = &insns[body..body_end];
    if body_insns.iter().any(|i| i.calls_helper(HELPER_TAIL_CALL)) {
        return Err(NotInlined::TailCall);
    }
    // The frame pointer only as a base or copied to be moved: anything else would escape the shift.
    if body_insns.iter().any(escapes_fp) {
        return Err(NotInlined::FramePointer);
    }
    let caller_depth =
        frame_depth(insns, 0, caller_end).ok_or(NotInlined::Malformed("the loop copies its frame pointer unmoved"))?;
    let body_depth = frame_depth(insns, body, body_end).ok_or(NotInlined::FramePointer)?;
    let live = live_in(insns, 0, caller_end)?;
    // Saved: what is live after any of the calls.
    let saved: u8 = sites.iter().fold(0u8, |m, &pc| m | live.get(pc + 1).copied().unwrap_or(0));
    let saved_list: Vec<u8> = (6..=9).filter(|&r| saved & bit(r) != 0).collect();
    let save_slot = |k: usize| -(caller_depth + 8 * (k as i64 + 1));
    let shift = caller_depth + 8 * saved_list.len() as i64;
    let written = (scrub == Scrub::Written).then(|| written_before(insns, body, body_end));
    let scrub = match scrub {
        Scrub::None | Scrub::Written => 0,
        Scrub::Frame => body_depth,
        Scrub::Bytes(n) => (n + 7) / 8 * 8,
    };
    if shift + body_depth.max(scrub) > MAX_STACK {
        return Err(NotInlined::Stack);
    }

    // First pass: lay the program out, remembering where each instruction came from.
    let mut laid = Laid { out: Vec::with_capacity(insns.len() + sites.len() * body_insns.len()), ..Laid::default() };
    let Laid { out, caller_at, copy_at, copy_end, kept_at, kept_funcs } = &mut laid;
    // The saved registers start at zero: live after a call on some path,
    // one may be unset on another that reaches the call, where saving it
    // would read an uninitialised register (the verifier refuses that).
    for &r in &saved_list {
        out.push((mov64_imm(r, 0), Origin::New));
    }
    // Zeroed once, the slots a path never writes reach the loop head as
    // the ones it wrote and zeroed at its exit do.
    if written.is_some() {
        out.extend(zero_slots(Slots::MAX, shift, body_depth).map(|i| (i, Origin::New)));
    }
    for pc in 0..caller_end {
        caller_at.insert(pc, out.len());
        if !sites.contains(&pc) {
            out.push((insns[pc], Origin::Caller(pc)));
            continue;
        }
        let k = copy_at.len();
        let mut at = HashMap::new();
        for (n, &r) in saved_list.iter().enumerate() {
            out.push((stx(8, FP, r, save_slot(n) as i16), Origin::New));
        }
        for (bpc, &original) in insns.iter().enumerate().take(body_end).skip(body) {
            at.insert(bpc, out.len());
            let mut i = original;
            let fp_based = match i.class() {
                LDX => i.src == FP,
                ST | STX => i.dst == FP,
                _ => false,
            };
            if fp_based {
                i.off = i16::try_from(i64::from(i.off) - shift).map_err(|_| NotInlined::Stack)?;
            }
            if let Some(w) = &written
                && i.code == EXIT_OP
            {
                out.extend(zero_slots(w[bpc - body], shift, body_depth).map(|i| (i, Origin::New)));
            }
            out.push((i, Origin::Copy(k, bpc)));
            if i.code == MOV64_REG && i.src == FP {
                out.push((add64_imm(i.dst, -(shift as i32)), Origin::New));
            }
        }
        copy_end.push(out.len());
        // Zeroed, the body's stack reaches the loop head in one form
        // whatever path the body took, so the verifier's states there prune.
        let mut off = shift + 8;
        while off <= shift + scrub {
            out.push((st_imm(8, FP, -(off as i16), 0), Origin::New));
            off += 8;
        }
        for (n, &r) in saved_list.iter().enumerate() {
            out.push((ldx(8, r, FP, save_slot(n) as i16), Origin::New));
        }
        copy_at.push(at);
    }
    for &s in starts.range(caller_end..) {
        if s == body && !called_elsewhere {
            continue;
        }
        kept_funcs.push((s, out.len()));
        for (pc, &i) in insns.iter().enumerate().take(end_of(s)).skip(s) {
            kept_at.insert(pc, out.len());
            out.push((i, Origin::Kept(pc)));
        }
    }

    // Second pass: jumps, calls and function addresses to their new places.
    let result = relocate(&laid, body_end)?;
    let funcs_out = func_records(funcs, &laid.kept_funcs)?;
    Ok(Inlined {
        insns: result,
        funcs: funcs_out,
        copies: sites.len(),
        saved_regs: saved,
        shift: shift as i16,
        body_depth,
        scrubbed: scrub,
    })
}

/// The first pass's program: each instruction with where it came from,
/// and where the caller's, each copy's and each kept function's
/// instructions now are.
#[derive(Default)]
struct Laid {
    out: Vec<(Insn, Origin)>,
    caller_at: HashMap<usize, usize>,
    copy_at: Vec<HashMap<usize, usize>>,
    /// Where each copy ends: its exits jump there.
    copy_end: Vec<usize>,
    kept_at: HashMap<usize, usize>,
    /// (first instruction before, after) of each function kept.
    kept_funcs: Vec<(usize, usize)>,
}

/// The laid-out program with its jumps, calls and function addresses
/// pointed at their new places, and each copy's exits turned into jumps
/// past it (`body_end`: the first instruction after the body).
fn relocate(laid: &Laid, body_end: usize) -> Result<Vec<Insn>, NotInlined> {
    let reach = |from: usize, to: usize| -> i64 { to as i64 - from as i64 - 1 };
    let mut result = Vec::with_capacity(laid.out.len());
    for (at, (mut i, origin)) in laid.out.iter().copied().enumerate() {
        // Where a jump of this instruction's function to `t` now lands.
        let local = |t: usize| match origin {
            Origin::New => None,
            Origin::Caller(_) => laid.caller_at.get(&t).copied(),
            Origin::Copy(k, _) => laid.copy_at[k].get(&t).copied().or((t == body_end).then(|| laid.copy_end[k])),
            Origin::Kept(_) => laid.kept_at.get(&t).copied(),
        };
        let pc = match origin {
            Origin::New => {
                result.push(i);
                continue;
            }
            Origin::Caller(pc) | Origin::Copy(_, pc) | Origin::Kept(pc) => pc,
        };
        if i.is_pseudo_call() || i.is_pseudo_func() {
            let t = i.call_target(pc) as usize;
            let to = laid.kept_at.get(&t).copied().ok_or(NotInlined::Malformed("a call to a function not kept"))?;
            i.imm = i32::try_from(reach(at, to)).map_err(|_| NotInlined::TooFar)?;
        } else if let Origin::Copy(k, _) = origin
            && i.code == EXIT_OP
        {
            i = ja(i16::try_from(reach(at, laid.copy_end[k])).map_err(|_| NotInlined::TooFar)?);
        } else if let Some(t) = i.jump_target(pc) {
            let to = local(t as usize).ok_or(NotInlined::Malformed("a jump to nowhere"))?;
            let d = reach(at, to);
            if i.is_long_ja() {
                i.imm = i32::try_from(d).map_err(|_| NotInlined::TooFar)?;
            } else {
                i.off = i16::try_from(d).map_err(|_| NotInlined::TooFar)?;
            }
        }
        result.push(i);
    }
    Ok(result)
}

/// The BTF function records of the inlined program: the entry's, then each
/// kept function's at its new place (none when the object had none).
fn func_records(funcs: &[FuncInfo], kept_funcs: &[(usize, usize)]) -> Result<Vec<FuncInfo>, NotInlined> {
    if funcs.is_empty() {
        return Ok(Vec::new());
    }
    let type_of = |s: usize| funcs.iter().find(|f| f.insn_off as usize == s).map(|f| f.type_id);
    let mut v = vec![FuncInfo { insn_off: 0, type_id: type_of(0).ok_or(NotInlined::Malformed("no entry record"))? }];
    for &(s, at) in kept_funcs {
        let type_id = type_of(s).ok_or(NotInlined::Malformed("a function without a record"))?;
        v.push(FuncInfo { insn_off: at as u32, type_id });
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `r0 += r7`.
    const ADD_R0_R7: Insn = alu(ALU64, ADD, 0, Some(7), 0);
    /// `if r1 == 0 goto +off`.
    const fn if_r1_zero(off: i16) -> Insn {
        jmp_imm(JEQ, 1, 0, off)
    }
    const IF_R1_ZERO: u8 = JMP | JEQ;
    fn codes(v: &[Insn]) -> Vec<(u8, u8, u8, i16, i32)> {
        v.iter().map(|i| (i.code, i.dst, i.src, i.off, i.imm)).collect()
    }

    /// A loop-shaped caller at 0, a body at 7 with a branch, two exits, a
    /// frame pointer copy and a call to its own subprogram at 15.
    fn program() -> (Vec<Insn>, Vec<FuncInfo>) {
        let insns = vec![
            mov64_reg(6, 1),    // 0: r6 = ctx (dead after the call)
            mov64_imm(7, 5),    // 1: r7 = 5 (live after it)
            stx(8, FP, 7, -8),  // 2: the caller's frame: 8 bytes
            mov64_reg(1, 6),    // 3
            call_local(2),      // 4: -> 7
            ADD_R0_R7,          // 5: r0 += r7
            exit(),             // 6
            mov64_reg(2, FP),   // 7: body: r2 = r10
            add64_imm(2, -16),  // 8: r2 += -16
            stx(8, FP, 1, -16), // 9: *(r10 - 16) = r1
            if_r1_zero(1),      // 10: if r1 == 0 goto 12
            exit(),             // 11
            call_local(2),      // 12: -> 15
            mov64_imm(0, 1),    // 13
            exit(),             // 14
            mov64_imm(0, 0),    // 15: subprogram
            exit(),             // 16
        ];
        let funcs = [0, 7, 15].map(|off| FuncInfo { insn_off: off, type_id: off + 100 }).to_vec();
        (insns, funcs)
    }

    #[test]
    fn the_body_lands_below_the_frame_with_live_registers_saved_and_exits_jumping_back() {
        let (insns, funcs) = program();
        let out = inline_calls(&insns, &funcs, 7, Scrub::None).unwrap();
        assert_eq!((out.copies, out.saved_regs, out.shift), (1, 1 << (7 - 6), 16));
        let want = vec![
            mov64_imm(7, 0), // the saved register starts set
            mov64_reg(6, 1),
            mov64_imm(7, 5),
            stx(8, FP, 7, -8),
            mov64_reg(1, 6),
            stx(8, FP, 7, -16), // save r7 below the frame
            mov64_reg(2, FP),
            add64_imm(2, -16), // the copied frame pointer moved with the stack
            add64_imm(2, -16),
            stx(8, FP, 1, -32),
            if_r1_zero(1),
            ja(3),         // exit: to the copy's end (the loads)
            call_local(5), // to the subprogram, now at 18
            mov64_imm(0, 1),
            ja(0),
            ldx(8, 7, FP, -16), // r7 back
            ADD_R0_R7,
            exit(),
            mov64_imm(0, 0),
            exit(),
        ];
        assert_eq!(codes(&out.insns), codes(&want));
        // The body's record is gone; the subprogram's moved with it.
        let recs: Vec<(u32, u32)> = out.funcs.iter().map(|f| (f.insn_off, f.type_id)).collect();
        assert_eq!(recs, [(0, 100), (18, 115)]);
    }

    #[test]
    fn bodies_that_would_escape_the_loop_or_its_stack_are_refused() {
        let (insns, funcs) = program();
        assert_eq!(inline_calls(&insns, &funcs, 15, Scrub::None).unwrap_err(), NotInlined::NoCall);
        let mut tail = insns.clone();
        tail[13] = call_helper(HELPER_TAIL_CALL);
        assert_eq!(inline_calls(&tail, &funcs, 7, Scrub::None).unwrap_err(), NotInlined::TailCall);
        let mut escape = insns.clone();
        escape[9] = stx(8, FP, FP, -16);
        assert_eq!(inline_calls(&escape, &funcs, 7, Scrub::None).unwrap_err(), NotInlined::FramePointer);
        let mut deep = insns.clone();
        deep[9] = stx(8, FP, 1, -504);
        assert_eq!(inline_calls(&deep, &funcs, 7, Scrub::None).unwrap_err(), NotInlined::Stack);
    }

    #[test]
    fn without_function_records_the_starts_come_from_the_calls() {
        let (insns, _) = program();
        let out = inline_calls(&insns, &[], 7, Scrub::None).unwrap();
        assert!(out.funcs.is_empty());
        assert_eq!(out.insns.len(), 20);
    }

    #[test]
    fn a_scrubbed_copy_zeroes_the_bodys_frame_before_the_saved_registers_come_back() {
        let (insns, funcs) = program();
        let out = inline_calls(&insns, &funcs, 7, Scrub::Frame).unwrap();
        assert_eq!((out.body_depth, out.scrubbed), (16, 16));
        // After the copy's last instruction (its final exit, a jump to here): two zeroing stores, then r7 back.
        let at = out.insns.iter().position(|i| i.code == LDX | MEM | SIZE_DW).unwrap();
        assert_eq!(codes(&out.insns[at - 2..at]), codes(&[st_imm(8, FP, -24, 0), st_imm(8, FP, -32, 0)]));
        // The overhead's form: the bytes asked for, whatever its own body uses.
        let out = inline_calls(&insns, &funcs, 7, Scrub::Bytes(40)).unwrap();
        assert_eq!(out.scrubbed, 40);
        assert_eq!(inline_calls(&insns, &funcs, 7, Scrub::Bytes(600)).unwrap_err(), NotInlined::Stack);
    }

    #[test]
    fn written_zeroes_at_each_exit_the_slots_its_paths_wrote_and_the_frame_once_before() {
        let (insns, funcs) = program();
        let out = inline_calls(&insns, &funcs, 7, Scrub::Written).unwrap();
        // Nothing for an overhead program to match: the stores are the body's.
        assert_eq!(out.scrubbed, 0);
        let z = |off: i16| st_imm(8, FP, off, 0);
        // The body's two slots (shift 16: the caller's 8 bytes and saved r7) zeroed at the start.
        assert_eq!(codes(&out.insns[..3]), codes(&[mov64_imm(7, 0), z(-24), z(-32)]));
        let branch = out.insns.iter().position(|i| i.code == IF_R1_ZERO).unwrap();
        // The first exit: only the slot its path wrote (-16, now -32).
        assert_eq!(codes(&out.insns[branch + 1..branch + 3]), codes(&[z(-32), ja(5)]));
        // The second, after a call given a copy of the frame pointer: the whole frame.
        assert_eq!(
            codes(&out.insns[branch + 3..branch + 8]),
            codes(&[call_local(7), mov64_imm(0, 1), z(-24), z(-32), ja(0)])
        );
        // The branch around the first exit skips its zeroing too.
        assert_eq!(out.insns[branch].off, 2);
        // A jump to an exit lands on that exit's zeroing, whose slots are
        // those of the paths that reach it (the call is on none now).
        let mut to_exit = insns.clone();
        to_exit[10] = if_r1_zero(3); // if r1 == 0 goto 14 (the last exit)
        let out = inline_calls(&to_exit, &funcs, 7, Scrub::Written).unwrap();
        let branch = out.insns.iter().position(|i| i.code == IF_R1_ZERO).unwrap();
        let lands = (branch as i64 + 1 + i64::from(out.insns[branch].off)) as usize;
        assert_eq!(codes(&out.insns[lands..lands + 2]), codes(&[z(-32), ja(0)]));
    }

    #[test]
    fn what_a_path_may_have_written_follows_copies_of_the_frame_pointer() {
        let at_end = |body: &[Insn]| *written_before(body, 0, body.len()).last().unwrap();
        // A 4-byte store at -12 touches the second slot; one at -4 the first.
        assert_eq!(at_end(&[st_imm(4, FP, -12, 0), st_imm(4, FP, -4, 0), exit()]), 0b11);
        // Paths join: either branch's store counts.
        let branches = [
            if_r1_zero(2),      // if r1 == 0 goto +2
            stx(8, FP, 1, -8),  // -8
            ja(1),              // goto exit
            stx(8, FP, 1, -24), // -24
            exit(),
        ];
        assert_eq!(at_end(&branches), 0b101);
        let copy = [mov64_reg(2, FP), add64_imm(2, -8)];
        // A map lookup reads its key: nothing written.
        assert_eq!(at_end(&[copy[0], copy[1], call_helper(1), exit()]), 0);
        // Another helper given the copy may write anywhere; so may a store through it.
        assert_eq!(at_end(&[copy[0], copy[1], call_helper(4), exit()]), Slots::MAX);
        assert_eq!(at_end(&[copy[0], copy[1], st_imm(4, 2, 0, 0), exit()]), Slots::MAX);
        // A copy stored and loaded back is still one; a 32-bit move is not.
        let spilled = [copy[0], stx(8, FP, 2, -8), ldx(8, 3, FP, -8), st_imm(4, 3, 0, 0), exit()];
        assert_eq!(at_end(&spilled), Slots::MAX);
        assert_eq!(at_end(&[copy[0], alu(ALU, MOV, 3, Some(2), 0), st_imm(4, 3, 0, 0), exit()]), 0);
    }
}
