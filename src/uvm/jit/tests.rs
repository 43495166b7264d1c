//! The JIT against the interpreter: random programs of the kind the
//! verifier accepts (every register set before use, stack accesses inside
//! the frame, forward jumps only) must give the same r0 and stack in both.

use super::super::fuzz::Rng;
use super::super::helpers::Helpers;
use super::super::interp::{Counts, Env, Interpreter};
use super::super::maps::UserMaps;
use super::super::memory::Memory;
use super::*;
use crate::insn::*;

struct NoMaps;

impl Resolve for NoMaps {
    fn map_handle(&mut self, fd: i32) -> Result<u64, String> {
        Err(format!("map {fd}"))
    }
    fn map_value(&mut self, fd: i32, _off: u32) -> Result<u64, String> {
        Err(format!("map {fd}"))
    }
}

impl Env for NoMaps {
    fn helper(&mut self, id: i32, _args: [u64; 5], _mem: &mut Memory) -> Result<u64, String> {
        Err(format!("helper {id}"))
    }
    fn reach(&mut self) -> Option<(&mut Helpers, Option<&mut UserMaps>)> {
        None
    }
    fn context_load(&self, _off: u64, _size: usize) -> Option<u64> {
        None
    }
}

fn i(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn { code, dst, src, off, imm }
}

const EXIT_INSN: Insn = Insn { code: JMP | EXIT, dst: 0, src: 0, off: 0, imm: 0 };

fn ld64(dst: u8, v: u64) -> [Insn; 2] {
    [i(LD | IMM | SIZE_DW, dst, 0, 0, v as u32 as i32), i(0, 0, 0, 0, (v >> 32) as i32)]
}

/// Interesting operand values: edges of the signed and unsigned ranges, and noise.
fn value(rng: &mut Rng) -> u64 {
    const EDGES: [u64; 10] = [0, 1, 2, 0x7f, 0x80, 0xffff_ffff, 0x8000_0000, i64::MIN as u64, u64::MAX, 0x1_0000_0000];
    let v = rng.next_u64();
    if v.is_multiple_of(3) { EDGES[(v >> 8) as usize % EDGES.len()] } else { rng.next_u64() >> (v >> 58) }
}

/// Stack slot offsets used by the programs (8-byte aligned, inside the frame).
fn slot(rng: &mut Rng) -> i16 {
    -8 * (1 + (rng.next_u64() % 8) as i16)
}

/// One random instruction that the verifier would accept here (registers
/// r0–r9 are all set; `left` instructions follow before the tail).
fn safe_insn(rng: &mut Rng, left: usize) -> Vec<Insn> {
    let v = rng.next_u64();
    let dst = (v % 10) as u8;
    let src = ((v >> 4) % 10) as u8;
    let small = ((v >> 32) as i32) >> ((v >> 8) % 32);
    let class = if v >> 12 & 1 == 0 { ALU64 } else { ALU };
    let x = if v >> 13 & 1 == 0 { X } else { 0 };
    match (v >> 16) % 12 {
        0..=3 => {
            const OPS: [u8; 12] = [ADD, SUB, MUL, DIV, OR, AND, LSH, RSH, MOD, XOR, MOV, ARSH];
            let op = OPS[(v >> 20) as usize % OPS.len()];
            let imm = if x == 0 && matches!(op, LSH | RSH | ARSH) {
                small & if class == ALU64 { 63 } else { 31 }
            } else {
                small
            };
            // Signed division and modulo: offset 1.
            let off = if matches!(op, DIV | MOD) && v >> 40 & 1 == 1 { 1 } else { 0 };
            vec![i(class | x | op, dst, src, off, imm)]
        }
        4 => vec![i(class | NEG, dst, 0, 0, 0)],
        5 => {
            // Byte swaps and conversions; movsx.
            let widths = [16, 32, 64];
            match (v >> 20) % 3 {
                0 => vec![i(ALU64 | END, dst, 0, 0, widths[(v >> 24) as usize % 3])],
                1 => vec![i(ALU | END | x, dst, 0, 0, widths[(v >> 24) as usize % 3])],
                _ => {
                    let off = [8i16, 16, 32][(v >> 24) as usize % 3];
                    if class == ALU && off == 32 {
                        vec![i(ALU64 | MOV | X, dst, src, 32, 0)]
                    } else {
                        vec![i(class | MOV | X, dst, src, off, 0)]
                    }
                }
            }
        }
        6 | 7 => {
            // A store to the stack and a load back, of any size, possibly sign-extending.
            let sizes = [SIZE_B, SIZE_H, SIZE_W, SIZE_DW];
            let size = sizes[(v >> 20) as usize % 4];
            let at = slot(rng);
            let store = if v >> 24 & 1 == 0 {
                i(STX | MEM | size, 10, src, at, 0)
            } else {
                i(ST | MEM | size, 10, 0, at, small)
            };
            let mode = if size != SIZE_DW && v >> 25 & 1 == 1 { MEMSX } else { MEM };
            vec![store, i(LDX | mode | size, dst, 10, at, 0)]
        }
        8 => {
            // An atomic on a stack slot the program wrote first.
            let at = slot(rng);
            let size = if v >> 20 & 1 == 0 { SIZE_DW } else { SIZE_W };
            const OPS: [i32; 10] = [0x00, 0x40, 0x50, 0xa0, 0x01, 0x41, 0x51, 0xa1, XCHG, CMPXCHG];
            let op = OPS[(v >> 24) as usize % OPS.len()];
            let src = if op == CMPXCHG && src == 0 { 1 } else { src };
            vec![
                i(STX | MEM | SIZE_DW, 10, dst, at, 0),
                i(STX | ATOMIC | size, 10, src, at, op),
                i(LDX | MEM | size, dst, 10, at, 0),
            ]
        }
        _ => {
            // A forward jump, 64- or 32-bit, over at most what is left.
            const CONDS: [u8; 11] = [JEQ, JGT, JGE, JSET, JNE, JSGT, JSGE, JLT, JLE, JSLT, JSLE];
            let cls = if v >> 20 & 1 == 0 { JMP } else { JMP32 };
            let off = (rng.next_u64() % (left as u64 + 1)) as i16;
            if v >> 21 & 7 == 0 {
                vec![i(JMP | JA, 0, 0, off, 0)]
            } else {
                vec![i(cls | x | CONDS[(v >> 24) as usize % CONDS.len()], dst, src, off, small)]
            }
        }
    }
}

/// A program: every register and stack slot set, `n` random instructions,
/// then r0 = the xor of r0–r9 and of the stack slots.
fn safe_program(rng: &mut Rng, n: usize) -> Vec<Insn> {
    let mut p = Vec::new();
    for r in 0..10 {
        p.extend(ld64(r, value(rng)));
    }
    for k in 1..=8 {
        p.extend(ld64(1, value(rng)));
        p.push(i(STX | MEM | SIZE_DW, 10, 1, -8 * k, 0));
    }
    // Jumps land at most on the first instruction of the tail.
    let mut body = Vec::new();
    while body.len() < n {
        // Instructions are added as groups; a jump's offset counts instructions, so plan in groups of one.
        let group = safe_insn(rng, 0);
        body.extend(group);
    }
    // Re-aim the jumps now that the body's length is known: forward, inside the body or to the tail.
    let len = body.len();
    for (k, ins) in body.iter_mut().enumerate() {
        if matches!(ins.class(), JMP | JMP32) {
            ins.off = (rng.next_u64() % (len - k) as u64) as i16;
        }
    }
    p.extend(body);
    for r in 1..10 {
        p.push(i(ALU64 | X | XOR, 0, r, 0, 0));
    }
    for k in 1..=8 {
        p.push(i(LDX | MEM | SIZE_DW, 1, 10, -8 * k, 0));
        p.push(i(ALU64 | X | XOR, 0, 1, 0, 0));
        p.push(i(ALU64 | LSH, 0, 0, 0, 3));
    }
    p.push(EXIT_INSN);
    p
}

fn interpret(p: &[Insn]) -> u64 {
    let mut counts = Counts::default();
    let mut interp = Interpreter::new(p);
    interp.budget = 1 << 26;
    interp.run(0, &mut NoMaps, &mut Memory::default(), &mut counts).expect("a safe program runs")
}

fn jitted(p: &[Insn]) -> u64 {
    let mut prog = JitProgram::compile(p, &mut NoMaps).expect("compiles");
    // SAFETY: the program touches only its stack and calls no helper.
    unsafe { prog.call(0) }
}

#[test]
fn random_programs_give_the_interpreters_results() {
    if JitProgram::supported().is_err() {
        eprintln!("skipped: this CPU has no BMI2");
        return;
    }
    let mut rng = Rng::new(0x5eed);
    for n in 0..3000 {
        let p = safe_program(&mut rng, 1 + n % 40);
        assert_eq!(jitted(&p), interpret(&p), "program {n} differs:\n{p:?}");
    }
}

#[test]
fn calls_between_functions_keep_registers_and_frames() {
    // As the interpreter's own test: main keeps r6 and its stack across a
    // call to f, which uses its own frame; f divides (an out-of-line call).
    let p = [
        mov64_imm(6, 40),
        st_imm(8, 10, -8, 2),
        call_local(4),
        alu(ALU64, ADD, 0, Some(6), 0),
        ldx(8, 1, 10, -8),
        alu(ALU64, ADD, 0, Some(1), 0),
        EXIT_INSN,
        mov64_imm(6, 1000),
        st_imm(8, 10, -8, 7),
        mov64_imm(0, 21),
        i(ALU64 | DIV, 0, 0, 0, 7),
        EXIT_INSN,
    ];
    assert_eq!(interpret(&p), 3 + 40 + 2);
    assert_eq!(jitted(&p), 3 + 40 + 2);
}

#[test]
fn may_goto_ends_a_loop_as_the_interpreter_does() {
    // r0 = 0; loop: may_goto +2; r0 += 1; ja -3; exit
    let p =
        [mov64_imm(0, 0), i(JMP | JCOND, 0, 0, 2, 0), i(ALU64 | ADD, 0, 0, 0, 1), i(JMP | JA, 0, 0, -3, 0), EXIT_INSN];
    assert_eq!(jitted(&p), interpret(&p));
    assert_eq!(jitted(&p), 8 * 1024 * 1024);
}

#[test]
fn each_address_of_the_code_maps_back_to_its_instruction() {
    // r0 = 1; r1 = imm64 (two slots, one x86 instruction); r0 += r1; exit
    let [lo, hi] = ld64(1, 0x1234_5678_9abc);
    let p = [mov64_imm(0, 1), lo, hi, alu(ALU64, ADD, 0, Some(1), 0), exit()];
    let prog = JitProgram::compile(&p, &mut NoMaps).expect("compiles");
    let (start, end) = prog.code_range();
    assert_eq!(prog.pc_of(start), Some(0), "the prologue is the first instruction's");
    assert_eq!(prog.pc_of(end - 1), Some(4), "the epilogue is exit's");
    assert_eq!((prog.pc_of(start - 1), prog.pc_of(end)), (None, None));
    let pcs: Vec<usize> = (start..end).map(|a| prog.pc_of(a).unwrap()).collect();
    assert!(pcs.windows(2).all(|w| w[0] <= w[1]), "in order");
    assert!(!pcs.contains(&2), "the second half of ld_imm64 has no code of its own");
    for pc in [0, 1, 3, 4] {
        assert!(pcs.contains(&pc), "instruction {pc} has code");
    }
}
