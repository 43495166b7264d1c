//! BPF instructions as the interpreter reads them (RFC 9669's encoding).

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

    pub fn class(self) -> u8 {
        self.code & 0x07
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

/// Bytes a memory access of `code` covers.
pub fn size_bytes(code: u8) -> usize {
    match code & 0x18 {
        SIZE_W => 4,
        SIZE_H => 2,
        SIZE_B => 1,
        _ => 8,
    }
}
