//! Fuzzing the interpreter: random bytecode, and real programs with a few
//! instructions mutated, run against real maps and packets. Every program
//! must end in a verdict or an error naming an instruction; a panic is a
//! defect (it is caught and reported with the program that caused it), and
//! the instruction budget bounds every run, so nothing hangs.

use crate::record::probes::FuzzReport;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

use super::UserRuntime;
use crate::insn::Insn;

/// xorshift64: repeatable from the seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// One random instruction: any opcode and register number; small offsets
/// and immediates half the time, so jumps and accesses land near.
pub fn random_insn(rng: &mut Rng) -> Insn {
    let v = rng.next_u64();
    let near = v & 1 == 0;
    Insn {
        code: (v >> 8) as u8,
        dst: ((v >> 16) & 0x0f) as u8,
        src: ((v >> 20) & 0x0f) as u8,
        off: if near { ((v >> 24) % 16) as i16 - 8 } else { (v >> 24) as i16 },
        imm: if near { ((v >> 40) % 64) as i32 - 32 } else { (v >> 32) as i32 },
    }
}

/// A program of 1 to 32 random instructions.
pub fn random_program(rng: &mut Rng) -> Vec<Insn> {
    let len = 1 + rng.below(32);
    (0..len).map(|_| random_insn(rng)).collect()
}

/// `base` with 1 to 4 mutations: a field changed, an instruction replaced,
/// two swapped, or the program cut short.
pub fn mutate(base: &[Insn], rng: &mut Rng) -> Vec<Insn> {
    let mut p = base.to_vec();
    for _ in 0..1 + rng.below(4) {
        if p.is_empty() {
            break;
        }
        let i = rng.below(p.len());
        let v = rng.next_u64();
        match v % 8 {
            0 => p[i].code = (v >> 8) as u8,
            1 => p[i].dst = ((v >> 8) & 0x0f) as u8,
            2 => p[i].src = ((v >> 8) & 0x0f) as u8,
            3 => p[i].off = p[i].off.wrapping_add(((v >> 8) % 33) as i16 - 16),
            4 => p[i].imm = p[i].imm.wrapping_add(((v >> 8) % 129) as i32 - 64),
            5 => p[i] = random_insn(rng),
            6 => {
                let j = rng.below(p.len());
                p.swap(i, j);
            }
            _ => p.truncate(i.max(1)),
        }
    }
    p
}

/// Runs `programs` programs, half random and half mutated from `bases`
/// (all random when there are none), each on one of `packets` with
/// `runtime`'s maps and at most `budget` instructions.
pub fn run(
    runtime: &mut UserRuntime,
    bases: &[Vec<Insn>],
    packets: &[Vec<u8>],
    programs: u64,
    seed: u64,
    budget: u64,
) -> FuzzReport {
    let mut rng = Rng::new(seed);
    let mut report = FuzzReport::default();
    let start = Instant::now();
    for n in 0..programs {
        let prog = if bases.is_empty() || rng.next_u64() & 1 == 0 {
            report.random += 1;
            random_program(&mut rng)
        } else {
            report.mutated += 1;
            let base = &bases[rng.below(bases.len())];
            mutate(base, &mut rng)
        };
        let packet = &packets[rng.below(packets.len())];
        let before = runtime.take_counts().insns;
        report.insns += before;
        match catch_unwind(AssertUnwindSafe(|| runtime.run_insns(&prog, packet, budget))) {
            Ok(Ok(_)) => report.finished += 1,
            Ok(Err(e)) => {
                report.refused += 1;
                if e.what.starts_with("the budget") {
                    report.budget_spent += 1;
                }
                *report.kinds.entry(kind(&e.what)).or_default() += 1;
            }
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                report.panics.push((n, msg));
            }
        }
        report.programs += 1;
    }
    report.insns += runtime.take_counts().insns;
    report.elapsed = start.elapsed();
    report
}

/// An error message without its addresses and numbers, to group by.
fn kind(what: &str) -> String {
    let words: Vec<&str> = what.split_whitespace().filter(|w| !w.chars().any(|c| c.is_ascii_digit())).collect();
    words.join(" ")
}
