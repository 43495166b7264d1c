//! The x86-64 encodings the JIT emits: just the instruction forms one BPF
//! instruction needs, each written out from the Intel manual's tables.
//!
//! Registers are numbered as in the encoding (rax 0 … r15 15). Memory
//! operands are always `[base + disp]` with an 8- or 32-bit displacement,
//! so rbp/r13 never need the no-displacement special case.

pub const RAX: u8 = 0;
pub const RCX: u8 = 1;
pub const RDX: u8 = 2;
pub const RBX: u8 = 3;
pub const RSP: u8 = 4;
pub const RBP: u8 = 5;
pub const RSI: u8 = 6;
pub const RDI: u8 = 7;
pub const R8: u8 = 8;
pub const R9: u8 = 9;
pub const R10: u8 = 10;
pub const R11: u8 = 11;
pub const R13: u8 = 13;
pub const R14: u8 = 14;
pub const R15: u8 = 15;

/// Two-operand ALU opcodes in their `op r/m, r` form; the `81 /n` and
/// `83 /n` immediate forms take the same operation's extension `n`.
#[derive(Clone, Copy)]
pub enum Op {
    Add,
    Or,
    And,
    Sub,
    Xor,
    Cmp,
}

impl Op {
    fn rm_r(self) -> u8 {
        match self {
            Op::Add => 0x01,
            Op::Or => 0x09,
            Op::And => 0x21,
            Op::Sub => 0x29,
            Op::Xor => 0x31,
            Op::Cmp => 0x39,
        }
    }
    fn ext(self) -> u8 {
        match self {
            Op::Add => 0,
            Op::Or => 1,
            Op::And => 4,
            Op::Sub => 5,
            Op::Xor => 6,
            Op::Cmp => 7,
        }
    }
}

/// Shifts by an immediate (`C1 /n ib`) and by a register (BMI2's
/// shlx/shrx/sarx, which take any count register and mask the count as
/// BPF does).
#[derive(Clone, Copy)]
pub enum Shift {
    Left,
    Right,
    Arith,
}

/// Condition codes of `jcc`'s `0F 8x` form.
pub mod cc {
    pub const B: u8 = 0x2;
    pub const AE: u8 = 0x3;
    pub const E: u8 = 0x4;
    pub const NE: u8 = 0x5;
    pub const BE: u8 = 0x6;
    pub const A: u8 = 0x7;
    pub const L: u8 = 0xc;
    pub const GE: u8 = 0xd;
    pub const LE: u8 = 0xe;
    pub const G: u8 = 0xf;
}

/// Access widths in bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Width {
    B1,
    B2,
    B4,
    B8,
}

impl Width {
    pub fn of(bytes: usize) -> Width {
        match bytes {
            1 => Width::B1,
            2 => Width::B2,
            4 => Width::B4,
            _ => Width::B8,
        }
    }
}

/// Machine code being written.
#[derive(Default)]
pub struct Asm {
    pub code: Vec<u8>,
}

impl Asm {
    pub fn len(&self) -> usize {
        self.code.len()
    }

    fn byte(&mut self, b: u8) {
        self.code.push(b);
    }

    fn bytes(&mut self, b: &[u8]) {
        self.code.extend_from_slice(b);
    }

    fn imm32(&mut self, v: i32) {
        self.bytes(&v.to_le_bytes());
    }

    /// REX with W and the high bits of `reg` (ModRM.reg) and `rm`; omitted
    /// when empty unless `force` (byte registers spl/bpl/sil/dil need it).
    fn rex(&mut self, w: bool, reg: u8, rm: u8, force: bool) {
        let r = 0x40 | (u8::from(w) << 3) | ((reg >> 3 & 1) << 2) | (rm >> 3 & 1);
        if r != 0x40 || force {
            self.byte(r);
        }
    }

    /// An `opcode r/m, reg` instruction between two registers: `dst` in
    /// ModRM's r/m field, `src` in its reg field.
    fn rr(&mut self, opcode: u8, w: bool, dst: u8, src: u8) {
        self.rex(w, src, dst, false);
        self.byte(opcode);
        self.modrm_reg(src, dst);
    }

    fn modrm_reg(&mut self, reg: u8, rm: u8) {
        self.byte(0xc0 | (reg & 7) << 3 | (rm & 7));
    }

    /// ModRM (+SIB) and displacement for `[base + disp]`.
    fn modrm_mem(&mut self, reg: u8, base: u8, disp: i32) {
        let short = i8::try_from(disp).is_ok();
        self.byte(if short { 0x40 } else { 0x80 } | (reg & 7) << 3 | (base & 7));
        if base & 7 == RSP {
            self.byte(0x24);
        }
        if short {
            self.byte(disp as i8 as u8);
        } else {
            self.imm32(disp);
        }
    }

    /// `op dst, src` (64- or 32-bit).
    pub fn alu_rr(&mut self, op: Op, w: bool, dst: u8, src: u8) {
        self.rr(op.rm_r(), w, dst, src);
    }

    /// `op dst, imm` (a 64-bit operation sign-extends the immediate).
    pub fn alu_ri(&mut self, op: Op, w: bool, dst: u8, imm: i32) {
        self.rex(w, 0, dst, false);
        if let Ok(b) = i8::try_from(imm) {
            self.byte(0x83);
            self.modrm_reg(op.ext(), dst);
            self.byte(b as u8);
        } else {
            self.byte(0x81);
            self.modrm_reg(op.ext(), dst);
            self.imm32(imm);
        }
    }

    /// `test dst, src`.
    pub fn test_rr(&mut self, w: bool, dst: u8, src: u8) {
        self.rr(0x85, w, dst, src);
    }

    /// `test dst, imm`.
    pub fn test_ri(&mut self, w: bool, dst: u8, imm: i32) {
        self.rex(w, 0, dst, false);
        self.byte(0xf7);
        self.modrm_reg(0, dst);
        self.imm32(imm);
    }

    /// `mov dst, src`; the 32-bit form zero-extends.
    pub fn mov_rr(&mut self, w: bool, dst: u8, src: u8) {
        self.rr(0x89, w, dst, src);
    }

    /// `mov dst, imm`: 64-bit sign-extends the immediate, 32-bit zero-extends.
    pub fn mov_ri(&mut self, w: bool, dst: u8, imm: i32) {
        if w {
            self.rex(true, 0, dst, false);
            self.byte(0xc7);
            self.modrm_reg(0, dst);
        } else {
            self.rex(false, 0, dst, false);
            self.byte(0xb8 + (dst & 7));
        }
        self.imm32(imm);
    }

    /// `movabs dst, imm64`.
    pub fn mov_ri64(&mut self, dst: u8, imm: u64) {
        self.rex(true, 0, dst, false);
        self.byte(0xb8 + (dst & 7));
        self.bytes(&imm.to_le_bytes());
    }

    /// `imul dst, src`.
    pub fn imul_rr(&mut self, w: bool, dst: u8, src: u8) {
        self.rex(w, dst, src, false);
        self.bytes(&[0x0f, 0xaf]);
        self.modrm_reg(dst, src);
    }

    /// `imul dst, dst, imm`.
    pub fn imul_ri(&mut self, w: bool, dst: u8, imm: i32) {
        self.rex(w, dst, dst, false);
        self.byte(0x69);
        self.modrm_reg(dst, dst);
        self.imm32(imm);
    }

    /// `div src`: unsigned rdx:rax / src (edx:eax for 32 bits).
    pub fn div(&mut self, w: bool, src: u8) {
        self.rex(w, 0, src, false);
        self.byte(0xf7);
        self.modrm_reg(6, src);
    }

    /// `neg dst`.
    pub fn neg(&mut self, w: bool, dst: u8) {
        self.rex(w, 0, dst, false);
        self.byte(0xf7);
        self.modrm_reg(3, dst);
    }

    /// `shl/shr/sar dst, imm`.
    pub fn shift_ri(&mut self, kind: Shift, w: bool, dst: u8, imm: u8) {
        let ext = match kind {
            Shift::Left => 4,
            Shift::Right => 5,
            Shift::Arith => 7,
        };
        self.rex(w, 0, dst, false);
        self.byte(0xc1);
        self.modrm_reg(ext, dst);
        self.byte(imm);
    }

    /// `shlx/shrx/sarx dst, dst, count` (VEX.LZ.0F38 F7, count in vvvv).
    pub fn shift_rr(&mut self, kind: Shift, w: bool, dst: u8, count: u8) {
        let pp = match kind {
            Shift::Left => 1,  // 66
            Shift::Right => 3, // F2
            Shift::Arith => 2, // F3
        };
        let r = (!(dst >> 3) & 1) << 7;
        let b = (!(dst >> 3) & 1) << 5;
        self.bytes(&[0xc4, r | 0x40 | b | 0x02, (u8::from(w) << 7) | ((!count & 0xf) << 3) | pp, 0xf7]);
        self.modrm_reg(dst, dst);
    }

    /// `bswap dst` (32 or 64 bits).
    pub fn bswap(&mut self, w: bool, dst: u8) {
        self.rex(w, 0, dst, false);
        self.bytes(&[0x0f, 0xc8 + (dst & 7)]);
    }

    /// `rol dst16, 8`: swaps the low two bytes.
    pub fn rol16_8(&mut self, dst: u8) {
        self.byte(0x66);
        self.rex(false, 0, dst, false);
        self.byte(0xc1);
        self.modrm_reg(0, dst);
        self.byte(8);
    }

    /// `movzx dst32, src8/src16` (zero-extends to 64 bits).
    pub fn movzx_rr(&mut self, width: Width, dst: u8, src: u8) {
        self.rex(false, dst, src, width == Width::B1);
        self.bytes(&[0x0f, if width == Width::B1 { 0xb6 } else { 0xb7 }]);
        self.modrm_reg(dst, src);
    }

    /// `movsx dst, src8/16/32`; the 32-bit destination form is zero-extended to 64.
    pub fn movsx_rr(&mut self, w: bool, width: Width, dst: u8, src: u8) {
        self.rex(w, dst, src, width == Width::B1);
        match width {
            Width::B1 => self.bytes(&[0x0f, 0xbe]),
            Width::B2 => self.bytes(&[0x0f, 0xbf]),
            _ => self.byte(0x63),
        }
        self.modrm_reg(dst, src);
    }

    /// A zero-extending load of `width` bytes at `[base + disp]`.
    pub fn load(&mut self, width: Width, dst: u8, base: u8, disp: i32) {
        match width {
            Width::B1 | Width::B2 => {
                self.rex(false, dst, base, false);
                self.bytes(&[0x0f, if width == Width::B1 { 0xb6 } else { 0xb7 }]);
            }
            Width::B4 | Width::B8 => {
                self.rex(width == Width::B8, dst, base, false);
                self.byte(0x8b);
            }
        }
        self.modrm_mem(dst, base, disp);
    }

    /// A sign-extending load (to 64 bits) of 1, 2 or 4 bytes.
    pub fn load_sx(&mut self, width: Width, dst: u8, base: u8, disp: i32) {
        self.rex(true, dst, base, false);
        match width {
            Width::B1 => self.bytes(&[0x0f, 0xbe]),
            Width::B2 => self.bytes(&[0x0f, 0xbf]),
            _ => self.byte(0x63),
        }
        self.modrm_mem(dst, base, disp);
    }

    /// `mov [base + disp], src` of `width` bytes.
    pub fn store(&mut self, width: Width, base: u8, disp: i32, src: u8) {
        if width == Width::B2 {
            self.byte(0x66);
        }
        self.rex(width == Width::B8, src, base, width == Width::B1);
        self.byte(if width == Width::B1 { 0x88 } else { 0x89 });
        self.modrm_mem(src, base, disp);
    }

    /// `mov [base + disp], imm` of `width` bytes (8 bytes: sign-extended).
    pub fn store_imm(&mut self, width: Width, base: u8, disp: i32, imm: i32) {
        if width == Width::B2 {
            self.byte(0x66);
        }
        self.rex(width == Width::B8, 0, base, false);
        self.byte(if width == Width::B1 { 0xc6 } else { 0xc7 });
        self.modrm_mem(0, base, disp);
        match width {
            Width::B1 => self.byte(imm as u8),
            Width::B2 => self.bytes(&(imm as u16).to_le_bytes()),
            _ => self.imm32(imm),
        }
    }

    /// `lock add [base + disp], src` (4 or 8 bytes).
    pub fn lock_add(&mut self, w: bool, base: u8, disp: i32, src: u8) {
        self.byte(0xf0);
        self.rex(w, src, base, false);
        self.byte(0x01);
        self.modrm_mem(src, base, disp);
    }

    /// `lea dst, [base + disp]`.
    pub fn lea(&mut self, dst: u8, base: u8, disp: i32) {
        self.rex(true, dst, base, false);
        self.byte(0x8d);
        self.modrm_mem(dst, base, disp);
    }

    /// `cmp qword [base + disp], imm8` then the caller's jcc.
    pub fn cmp_mem_i8(&mut self, base: u8, disp: i32, imm: i8) {
        self.rex(true, 0, base, false);
        self.byte(0x83);
        self.modrm_mem(7, base, disp);
        self.byte(imm as u8);
    }

    /// `sub qword [base + disp], 1`.
    pub fn dec_mem(&mut self, base: u8, disp: i32) {
        self.rex(true, 0, base, false);
        self.byte(0x83);
        self.modrm_mem(5, base, disp);
        self.byte(1);
    }

    pub fn push(&mut self, r: u8) {
        self.rex(false, 0, r, false);
        self.byte(0x50 + (r & 7));
    }

    pub fn pop(&mut self, r: u8) {
        self.rex(false, 0, r, false);
        self.byte(0x58 + (r & 7));
    }

    /// `call r`.
    pub fn call_r(&mut self, r: u8) {
        self.rex(false, 0, r, false);
        self.byte(0xff);
        self.modrm_reg(2, r);
    }

    pub fn leave_ret(&mut self) {
        self.bytes(&[0xc9, 0xc3]);
    }

    /// `jcc rel32` with a zero displacement; returns where the displacement
    /// goes, for [`Asm::patch`].
    pub fn jcc(&mut self, cond: u8) -> usize {
        self.bytes(&[0x0f, 0x80 | cond]);
        self.imm32(0);
        self.len() - 4
    }

    /// `jmp rel32`, to patch.
    pub fn jmp(&mut self) -> usize {
        self.byte(0xe9);
        self.imm32(0);
        self.len() - 4
    }

    /// `call rel32`, to patch.
    pub fn call_rel(&mut self) -> usize {
        self.byte(0xe8);
        self.imm32(0);
        self.len() - 4
    }

    /// Points the rel32 at `at` to code offset `target`.
    pub fn patch(&mut self, at: usize, target: usize) {
        let rel = target as i64 - (at as i64 + 4);
        self.code[at..at + 4].copy_from_slice(&(rel as i32).to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Encodings checked against GNU as's output.
    #[test]
    fn encodings_match_the_assembler() {
        let enc = |f: &dyn Fn(&mut Asm)| {
            let mut a = Asm::default();
            f(&mut a);
            a.code
        };
        assert_eq!(enc(&|a| a.alu_rr(Op::Add, true, RAX, RDI)), [0x48, 0x01, 0xf8]); // add rax, rdi
        assert_eq!(enc(&|a| a.alu_rr(Op::Sub, false, R13, RSI)), [0x41, 0x29, 0xf5]); // sub r13d, esi
        assert_eq!(enc(&|a| a.alu_ri(Op::And, true, R15, 0x1234)), [0x49, 0x81, 0xe7, 0x34, 0x12, 0, 0]); // and r15, 0x1234
        assert_eq!(enc(&|a| a.alu_ri(Op::Cmp, false, RBX, -1)), [0x83, 0xfb, 0xff]); // cmp ebx, -1
        assert_eq!(enc(&|a| a.load(Width::B1, RSI, RBP, -8)), [0x0f, 0xb6, 0x75, 0xf8]); // movzx esi, byte [rbp-8]
        assert_eq!(enc(&|a| a.load(Width::B8, R14, R13, 0x200)), [0x4d, 0x8b, 0xb5, 0, 2, 0, 0]); // mov r14, [r13+0x200]
        assert_eq!(enc(&|a| a.load_sx(Width::B4, RAX, RDI, 4)), [0x48, 0x63, 0x47, 0x04]); // movsxd rax, [rdi+4]
        assert_eq!(enc(&|a| a.store(Width::B1, RBP, -1, RSI)), [0x40, 0x88, 0x75, 0xff]); // mov [rbp-1], sil
        assert_eq!(enc(&|a| a.store(Width::B2, RDI, 2, R8)), [0x66, 0x44, 0x89, 0x47, 0x02]); // mov [rdi+2], r8w
        assert_eq!(enc(&|a| a.store_imm(Width::B8, RBP, -16, -2)), [0x48, 0xc7, 0x45, 0xf0, 0xfe, 0xff, 0xff, 0xff]); // mov qword [rbp-16], -2
        assert_eq!(enc(&|a| a.store(Width::B4, RSP, 8, RAX)), [0x89, 0x44, 0x24, 0x08]); // mov [rsp+8], eax
        assert_eq!(enc(&|a| a.shift_rr(Shift::Left, true, RAX, RCX)), [0xc4, 0xe2, 0xf1, 0xf7, 0xc0]); // shlx rax, rax, rcx
        assert_eq!(enc(&|a| a.shift_rr(Shift::Arith, false, R13, RSI)), [0xc4, 0x42, 0x4a, 0xf7, 0xed]); // sarx r13d, r13d, esi
        assert_eq!(enc(&|a| a.shift_rr(Shift::Right, true, RBX, R14)), [0xc4, 0xe2, 0x8b, 0xf7, 0xdb]); // shrx rbx, rbx, r14
        assert_eq!(enc(&|a| a.movsx_rr(true, Width::B1, RAX, RSI)), [0x48, 0x0f, 0xbe, 0xc6]); // movsx rax, sil
        assert_eq!(enc(&|a| a.movzx_rr(Width::B1, RAX, RDI)), [0x40, 0x0f, 0xb6, 0xc7]); // movzx eax, dil
        assert_eq!(enc(&|a| a.bswap(true, R14)), [0x49, 0x0f, 0xce]); // bswap r14
        assert_eq!(enc(&|a| a.rol16_8(RDX)), [0x66, 0xc1, 0xc2, 0x08]); // rol dx, 8
        assert_eq!(enc(&|a| a.imul_rr(true, RBX, R8)), [0x49, 0x0f, 0xaf, 0xd8]); // imul rbx, r8
        assert_eq!(enc(&|a| a.mov_ri(false, R13, 7)), [0x41, 0xbd, 7, 0, 0, 0]); // mov r13d, 7
        assert_eq!(enc(&|a| a.lock_add(true, RDI, 8, RSI)), [0xf0, 0x48, 0x01, 0x77, 0x08]); // lock add [rdi+8], rsi
        assert_eq!(enc(&|a| a.call_r(R11)), [0x41, 0xff, 0xd3]); // call r11
        assert_eq!(enc(&|a| a.push(R15)), [0x41, 0x57]);
        assert_eq!(enc(&|a| a.div(true, R11)), [0x49, 0xf7, 0xf3]); // div r11
        assert_eq!(enc(&|a| a.div(false, R11)), [0x41, 0xf7, 0xf3]); // div r11d
    }
}
