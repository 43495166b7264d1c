//! BPF instructions as data (RFC 9669's encoding): the one place that
//! knows opcodes. The inliner, the splicer, the loader, the userspace
//! interpreter, JIT and fuzzer, and their tests, read and write [`Insn`]
//! with these constants and builders; `kernel` converts it to and from the
//! kernel's `struct bpf_insn` where it hands instructions over.

use std::collections::BTreeSet;

/// One 8-byte instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Insn {
    pub code: u8,
    pub dst: u8,
    pub src: u8,
    pub off: i16,
    pub imm: i32,
}

impl Insn {
    pub const fn new(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
        Insn { code, dst, src, off, imm }
    }

    /// Decodes little-endian instructions (what libbpf hands out on x86).
    pub fn decode_all(bytes: &[u8]) -> Vec<Insn> {
        bytes
            .chunks_exact(8)
            .map(|b| Insn {
                code: b[0],
                dst: b[1] & 0x0f,
                src: b[1] >> 4,
                off: i16::from_le_bytes([b[2], b[3]]),
                imm: i32::from_le_bytes([b[4], b[5], b[6], b[7]]),
            })
            .collect()
    }

    /// The little-endian encoding (what the kernel and libbpf take on x86).
    pub fn encode(self) -> [u8; 8] {
        let [o0, o1] = self.off.to_le_bytes();
        let [i0, i1, i2, i3] = self.imm.to_le_bytes();
        [self.code, (self.src << 4) | (self.dst & 0x0f), o0, o1, i0, i1, i2, i3]
    }

    pub fn class(self) -> u8 {
        self.code & 0x07
    }

    /// The operation: an ALU or jump operation (`code & 0xf0`).
    pub fn op(self) -> u8 {
        self.code & 0xf0
    }

    /// The memory mode of a load or store (`code & 0xe0`).
    pub fn mode(self) -> u8 {
        self.code & 0xe0
    }

    /// Whether the source operand is the src register (not the immediate).
    pub fn reads_src(self) -> bool {
        self.code & X != 0
    }

    /// Bytes a load or store covers.
    pub fn access_bytes(self) -> usize {
        size_bytes(self.code)
    }

    pub fn is_jump_class(self) -> bool {
        matches!(self.class(), JMP | JMP32)
    }

    /// A BPF-to-BPF call.
    pub fn is_pseudo_call(self) -> bool {
        self.code == CALL_OP && self.src == PSEUDO_CALL
    }

    /// A function's address loaded for a callback.
    pub fn is_pseudo_func(self) -> bool {
        self.code == LD_IMM64 && self.src == PSEUDO_FUNC
    }

    /// A call of helper `id`.
    pub fn calls_helper(self, id: i32) -> bool {
        self.code == CALL_OP && self.src == 0 && self.imm == id
    }

    /// Slots the instruction takes: 2 for ld_imm64.
    pub fn width(self) -> usize {
        if self.code == LD_IMM64 { 2 } else { 1 }
    }

    /// The target of a BPF-to-BPF call or a function address at `pc`.
    pub fn call_target(self, pc: usize) -> i64 {
        pc as i64 + 1 + i64::from(self.imm)
    }

    /// A jump's target, if the instruction at `pc` is a jump within its
    /// function (not a call or an exit).
    pub fn jump_target(self, pc: usize) -> Option<i64> {
        if !self.is_jump_class() || matches!(self.op(), CALL | EXIT) {
            return None;
        }
        Some(pc as i64 + 1 + self.jump_offset())
    }

    /// A jump's offset: gotol (a 32-bit class unconditional jump) reaches by its immediate.
    pub fn jump_offset(self) -> i64 {
        if self.is_long_ja() { i64::from(self.imm) } else { i64::from(self.off) }
    }

    /// gotol: its offset is the immediate.
    pub fn is_long_ja(self) -> bool {
        self.class() == JMP32 && self.op() == JA
    }
}

// Classes.
pub const LD: u8 = 0x00;
pub const LDX: u8 = 0x01;
pub const ST: u8 = 0x02;
pub const STX: u8 = 0x03;
pub const ALU: u8 = 0x04;
pub const JMP: u8 = 0x05;
pub const JMP32: u8 = 0x06;
pub const ALU64: u8 = 0x07;

// Source operand: the immediate or src register.
pub const X: u8 = 0x08;

// ALU operations (code & 0xf0).
pub const ADD: u8 = 0x00;
pub const SUB: u8 = 0x10;
pub const MUL: u8 = 0x20;
pub const DIV: u8 = 0x30;
pub const OR: u8 = 0x40;
pub const AND: u8 = 0x50;
pub const LSH: u8 = 0x60;
pub const RSH: u8 = 0x70;
pub const NEG: u8 = 0x80;
pub const MOD: u8 = 0x90;
pub const XOR: u8 = 0xa0;
pub const MOV: u8 = 0xb0;
pub const ARSH: u8 = 0xc0;
pub const END: u8 = 0xd0;

// Jump operations (code & 0xf0).
pub const JA: u8 = 0x00;
pub const JEQ: u8 = 0x10;
pub const JGT: u8 = 0x20;
pub const JGE: u8 = 0x30;
pub const JSET: u8 = 0x40;
pub const JNE: u8 = 0x50;
pub const JSGT: u8 = 0x60;
pub const JSGE: u8 = 0x70;
pub const CALL: u8 = 0x80;
pub const EXIT: u8 = 0x90;
pub const JLT: u8 = 0xa0;
pub const JLE: u8 = 0xb0;
pub const JSLT: u8 = 0xc0;
pub const JSLE: u8 = 0xd0;
/// may_goto (BPF_JCOND with src 0).
pub const JCOND: u8 = 0xe0;

// Memory modes (code & 0xe0) and sizes (code & 0x18).
pub const IMM: u8 = 0x00;
pub const MEM: u8 = 0x60;
pub const MEMSX: u8 = 0x80;
pub const ATOMIC: u8 = 0xc0;
pub const SIZE_W: u8 = 0x00;
pub const SIZE_H: u8 = 0x08;
pub const SIZE_B: u8 = 0x10;
pub const SIZE_DW: u8 = 0x18;

// Atomic operations (imm).
pub const FETCH: i32 = 0x01;
pub const XCHG: i32 = 0xe0 | FETCH;
/// The ALU operations an atomic applies (its imm without FETCH).
pub const ATOMIC_ADD: i32 = ADD as i32;
pub const ATOMIC_OR: i32 = OR as i32;
pub const ATOMIC_AND: i32 = AND as i32;
pub const ATOMIC_XOR: i32 = XOR as i32;
pub const CMPXCHG: i32 = 0xf0 | FETCH;

// Pseudo sources.
/// ld_imm64's src: imm is a map's fd.
pub const PSEUDO_MAP_FD: u8 = 1;
/// ld_imm64's src: imm is a map's fd, the next imm an offset into its value.
pub const PSEUDO_MAP_VALUE: u8 = 2;
/// call's src: imm is the relative offset of a BPF-to-BPF call.
pub const PSEUDO_CALL: u8 = 1;
/// call's src: imm is a kfunc's BTF id.
pub const KFUNC_CALL: u8 = 2;

/// ld_imm64's src: imm is a function's relative offset (a callback).
pub const PSEUDO_FUNC: u8 = 4;

/// The frame pointer, r10.
pub const FP: u8 = 10;
/// Bytes of stack a BPF function may address below its frame pointer.
pub const MAX_STACK: i64 = 512;
/// may_goto's budget per run: the kernel's `BPF_MAX_LOOPS`, which the
/// userspace interpreter and JIT give a run as the kernel does.
pub const MAY_GOTO_BUDGET: u64 = 8 * 1024 * 1024;

// Whole opcodes the tree builds or looks for.
/// `dst = imm64` (two slots).
pub const LD_IMM64: u8 = LD | IMM | SIZE_DW;
/// A helper, kfunc or BPF-to-BPF call.
pub const CALL_OP: u8 = JMP | CALL;
pub const EXIT_OP: u8 = JMP | EXIT;
pub const JA_OP: u8 = JMP | JA;
pub const MOV64_IMM: u8 = ALU64 | MOV;
pub const MOV64_REG: u8 = ALU64 | MOV | X;
pub const ADD64_IMM: u8 = ALU64 | ADD;

/// Bytes a memory access of `code` covers.
pub fn size_bytes(code: u8) -> usize {
    match code & 0x18 {
        SIZE_W => 4,
        SIZE_H => 2,
        SIZE_B => 1,
        _ => 8,
    }
}

/// The size field of an access of `bytes` (1, 2, 4 or 8).
pub fn size_code(bytes: usize) -> u8 {
    match bytes {
        1 => SIZE_B,
        2 => SIZE_H,
        4 => SIZE_W,
        _ => SIZE_DW,
    }
}

// Builders: the instructions as the kernel's `BPF_*` macros write them.

pub const fn mov64_imm(dst: u8, imm: i32) -> Insn {
    Insn::new(MOV64_IMM, dst, 0, 0, imm)
}

pub const fn mov64_reg(dst: u8, src: u8) -> Insn {
    Insn::new(MOV64_REG, dst, src, 0, 0)
}

pub const fn add64_imm(dst: u8, imm: i32) -> Insn {
    Insn::new(ADD64_IMM, dst, 0, 0, imm)
}

/// `dst op= imm` or `dst op= src` (`op` one of the ALU operations, `class` ALU or ALU64).
pub const fn alu(class: u8, op: u8, dst: u8, src: Option<u8>, imm: i32) -> Insn {
    match src {
        Some(s) => Insn::new(class | op | X, dst, s, 0, 0),
        None => Insn::new(class | op, dst, 0, 0, imm),
    }
}

/// A call of helper `id`.
pub const fn call_helper(id: i32) -> Insn {
    Insn::new(CALL_OP, 0, 0, 0, id)
}

/// A BPF-to-BPF call of the function `off` instructions after the next.
pub const fn call_local(off: i32) -> Insn {
    Insn::new(CALL_OP, 0, PSEUDO_CALL, 0, off)
}

pub const fn ja(off: i16) -> Insn {
    Insn::new(JA_OP, 0, 0, off, 0)
}

/// `if dst op imm goto +off` (`op` one of the jump operations).
pub const fn jmp_imm(op: u8, dst: u8, imm: i32, off: i16) -> Insn {
    Insn::new(JMP | op, dst, 0, off, imm)
}

pub const fn exit() -> Insn {
    Insn::new(EXIT_OP, 0, 0, 0, 0)
}

/// `dst = *(size *)(src + off)`.
pub fn ldx(bytes: usize, dst: u8, src: u8, off: i16) -> Insn {
    Insn::new(LDX | MEM | size_code(bytes), dst, src, off, 0)
}

/// `*(size *)(dst + off) = src`.
pub fn stx(bytes: usize, dst: u8, src: u8, off: i16) -> Insn {
    Insn::new(STX | MEM | size_code(bytes), dst, src, off, 0)
}

/// `*(size *)(dst + off) = imm`.
pub fn st_imm(bytes: usize, dst: u8, off: i16, imm: i32) -> Insn {
    Insn::new(ST | MEM | size_code(bytes), dst, 0, off, imm)
}

/// `dst = imm64`, with a pseudo source (`PSEUDO_MAP_FD`, ...) or 0; its two slots.
pub const fn ld_imm64(dst: u8, src: u8, value: u64) -> [Insn; 2] {
    [Insn::new(LD_IMM64, dst, src, 0, value as u32 as i32), Insn::new(0, 0, 0, 0, (value >> 32) as u32 as i32)]
}

/// `r0 = value; exit`: a program, or a body, that returns `value`.
pub const fn returning(value: i32) -> [Insn; 2] {
    [mov64_imm(0, value), exit()]
}

/// Where each function of `insns` starts: 0, the given function records'
/// offsets, and every BPF-to-BPF call's or function address's target.
pub fn function_starts(insns: &[Insn], records: impl IntoIterator<Item = usize>) -> BTreeSet<usize> {
    let mut starts: BTreeSet<usize> = records.into_iter().collect();
    starts.insert(0);
    let mut pc = 0;
    while pc < insns.len() {
        let i = insns[pc];
        if i.is_pseudo_call() || i.is_pseudo_func() {
            let t = i.call_target(pc);
            if t >= 0 && (t as usize) < insns.len() {
                starts.insert(t as usize);
            }
        }
        pc += i.width();
    }
    starts
}

/// Helper ids (uapi/linux/bpf.h): a call's immediate.
pub mod helper {
    pub const MAP_LOOKUP_ELEM: i32 = 1;
    pub const MAP_UPDATE_ELEM: i32 = 2;
    pub const MAP_DELETE_ELEM: i32 = 3;
    pub const KTIME_GET_NS: i32 = 5;
    pub const TRACE_PRINTK: i32 = 6;
    pub const GET_PRANDOM_U32: i32 = 7;
    pub const GET_SMP_PROCESSOR_ID: i32 = 8;
    pub const SKB_STORE_BYTES: i32 = 9;
    pub const L3_CSUM_REPLACE: i32 = 10;
    pub const L4_CSUM_REPLACE: i32 = 11;
    pub const TAIL_CALL: i32 = 12;
    pub const REDIRECT: i32 = 23;
    pub const PERF_EVENT_OUTPUT: i32 = 25;
    pub const SKB_LOAD_BYTES: i32 = 26;
    pub const CSUM_DIFF: i32 = 28;
    pub const SKB_CHANGE_PROTO: i32 = 31;
    pub const SKB_CHANGE_TYPE: i32 = 32;
    pub const GET_HASH_RECALC: i32 = 34;
    pub const SKB_CHANGE_TAIL: i32 = 38;
    pub const SKB_PULL_DATA: i32 = 39;
    pub const SET_HASH_INVALID: i32 = 41;
    pub const SET_HASH: i32 = 48;
    pub const SKB_ADJUST_ROOM: i32 = 50;
    pub const XDP_ADJUST_HEAD: i32 = 44;
    pub const XDP_ADJUST_META: i32 = 54;
    pub const XDP_ADJUST_TAIL: i32 = 65;
    pub const MAP_PUSH_ELEM: i32 = 87;
    pub const RINGBUF_OUTPUT: i32 = 130;
}
