//! Kernel instruction counts attributed: the plugin's regions (tcg-counter,
//! its file read by tcg-protocol) turned into a scenario's counts per
//! packet, by symbol of the guest's kallsyms and the JIT images'. The
//! method is the statistics' kind of reasoning, not the machine's: of each
//! batch size's rounds the fewest (an interrupt only adds), the longer
//! batch less the shorter (what a batch costs once drops out), the empty
//! loop's share taken off, and a count below zero (within the method's
//! resolution) clamped.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use bpfbench_tcg_protocol::{BlockCounts, KERNEL_SPACE, RegionsFile};

use crate::record::{DataAccesses, KernelCounts, KernelInsns, MechanismCounts, MemoryCounts};

/// What follows a JIT image, where nothing else starts (module text, padding).
pub const AFTER_IMAGE: &str = "[after a JIT image]";

/// A guest's symbols by address (text symbols of kallsyms).
pub struct Symbols(BTreeMap<u64, String>);

impl Symbols {
    pub fn parse(kallsyms: &str) -> Symbols {
        let map = kallsyms
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                let addr = u64::from_str_radix(w.next()?, 16).ok()?;
                let kind = w.next()?;
                let name = w.next()?;
                (addr != 0 && matches!(kind, "t" | "T" | "w" | "W")).then(|| (addr, name.to_string()))
            })
            .collect();
        Symbols(map)
    }

    /// A guest kernel's symbols, refused in one line where it lists none
    /// with an address: a kernel built without CONFIG_KALLSYMS (no
    /// /proc/kallsyms: the file is empty), or one hiding addresses (zeros).
    pub fn of_kernel(kallsyms: &str) -> Result<Symbols> {
        let symbols = Symbols::parse(kallsyms);
        if symbols.0.is_empty() {
            bail!(
                "the guest kernel lists no symbols with addresses in /proc/kallsyms (built without CONFIG_KALLSYMS?): kernel-insns attributes its counts by symbol; use a kernel built with CONFIG_KALLSYMS=y"
            );
        }
        Ok(symbols)
    }

    /// These symbols and `extra`'s; an image's end never replaces a name
    /// (the next image may start where one ends).
    fn with(&self, extra: &[(u64, String)]) -> Symbols {
        let mut map = self.0.clone();
        for (addr, name) in extra {
            if name == AFTER_IMAGE {
                map.entry(*addr).or_insert_with(|| name.clone());
            } else {
                map.insert(*addr, name.clone());
            }
        }
        Symbols(map)
    }

    /// The symbol `vaddr` lies in: the nearest at or below it.
    fn of(&self, vaddr: u64) -> Option<&str> {
        self.0.range(..=vaddr).next_back().map(|(_, n)| n.as_str())
    }
}

/// What one function executed in a region, or the difference of two
/// regions' (so a count may be below zero until it is clamped).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Tally {
    insns: i64,
    reads: i64,
    writes: i64,
    d1_misses: i64,
    ll_misses: i64,
}

impl Tally {
    fn of(b: &BlockCounts) -> Tally {
        let n = |v: u64| v as i64;
        Tally {
            insns: n(b.insns * b.execs),
            reads: n(b.reads),
            writes: n(b.writes),
            d1_misses: n(b.d1_misses),
            ll_misses: n(b.ll_misses),
        }
    }

    fn add(&mut self, other: Tally, sign: i64) {
        self.insns += sign * other.insns;
        self.reads += sign * other.reads;
        self.writes += sign * other.writes;
        self.d1_misses += sign * other.d1_misses;
        self.ll_misses += sign * other.ll_misses;
    }

    /// Per packet of `iters`, as the record keeps data accesses.
    fn accesses(&self, iters: f64) -> DataAccesses {
        let per = |n: i64| n as f64 / iters;
        DataAccesses {
            reads: per(self.reads),
            writes: per(self.writes),
            d1_misses: per(self.d1_misses),
            ll_misses: per(self.ll_misses),
        }
    }
}

/// One region's counts by function ("[user]" for user space).
fn by_symbol(blocks: &[BlockCounts], symbols: &Symbols) -> BTreeMap<String, Tally> {
    let mut counts: BTreeMap<String, Tally> = BTreeMap::new();
    for b in blocks {
        let name = if b.vaddr < KERNEL_SPACE { "[user]" } else { symbols.of(b.vaddr).unwrap_or("[unknown]") };
        counts.entry(name.to_string()).or_default().add(Tally::of(b), 1);
    }
    counts
}

/// The kernel side of one region (user space left out): its JIT images'
/// share and the whole.
fn kernel_total(counts: &BTreeMap<String, Tally>, jit: &[(u64, String)]) -> (Tally, Tally) {
    let is_jit = |n: &str| jit.iter().any(|(_, j)| j == n);
    let (mut jit_n, mut all) = (Tally::default(), Tally::default());
    for (n, c) in counts.iter().filter(|(n, _)| *n != "[user]") {
        all.add(*c, 1);
        if is_jit(n) {
            jit_n.add(*c, 1);
        }
    }
    (jit_n, all)
}

/// One batch size's counts by function: of its rounds, the one with the
/// fewest kernel instructions (an interrupt only adds).
fn fewest(rounds: Vec<BTreeMap<String, Tally>>, jit: &[(u64, String)]) -> BTreeMap<String, Tally> {
    rounds.into_iter().min_by_key(|c| kernel_total(c, jit).1.insns).unwrap_or_default()
}

/// `long` less `short`, per function (what the extra packets executed).
fn difference(long: &BTreeMap<String, Tally>, short: &BTreeMap<String, Tally>) -> BTreeMap<String, Tally> {
    let mut d = long.clone();
    for (n, c) in short {
        d.entry(n.clone()).or_default().add(*c, -1);
    }
    d.remove("[user]");
    d
}

/// A scenario's counts per packet from the plugin's regions: for each
/// batch size the round with the fewest kernel instructions, the longer
/// batch's less the shorter's (what a batch costs once drops out), per
/// packet, the empty loop's the same way, taken off.
pub fn attribute(k: &KernelInsns, regions: &RegionsFile, symbols: &Symbols) -> Result<KernelCounts> {
    // Each kind of region by the JIT images present while it ran (an
    // attached program's trampolines come and go with it).
    let or_body = |list: &'_ [(u64, String)]| -> Vec<(u64, String)> {
        match list.is_empty() {
            true => k.jit_symbols.clone(),
            false => list.to_vec(),
        }
    };
    let (body_syms, loop_syms, bare_syms) = (
        symbols.with(&k.jit_symbols),
        symbols.with(&or_body(&k.loop_jit_symbols)),
        symbols.with(&or_body(&k.bare_jit_symbols)),
    );
    let region = |n: u64| {
        regions.regions.get(&n).with_context(|| format!("the plugin wrote no region {n} (was the plugin loaded?)"))
    };
    let counted = |ids: &[(u64, u64)], long: bool, symbols: &Symbols| -> Result<Vec<BTreeMap<String, Tally>>> {
        ids.iter().map(|&(s, l)| Ok(by_symbol(region(if long { l } else { s })?, symbols))).collect()
    };
    let jit: &Vec<(u64, String)> = &[&k.jit_symbols[..], &k.loop_jit_symbols[..], &k.bare_jit_symbols[..]].concat();
    let body_long = counted(&k.body_regions, true, &body_syms)?;
    let round_totals = body_long.iter().map(|c| kernel_total(c, jit).1.insns as u64).collect();
    let (body_short, loop_long, loop_short) = (
        counted(&k.body_regions, false, &body_syms)?,
        counted(&k.loop_regions, true, &loop_syms)?,
        counted(&k.loop_regions, false, &loop_syms)?,
    );
    // Each round's own estimate of the program's accesses: how far they
    // spread is the method's resolution for the figure below.
    let per_round: Vec<Tally> = (0..body_long.len().min(body_short.len()).min(loop_long.len()).min(loop_short.len()))
        .map(|i| {
            let total = |m: &BTreeMap<String, Tally>| kernel_total(m, jit).1;
            let mut t = total(&difference(&body_long[i], &body_short[i]));
            t.add(total(&difference(&loop_long[i], &loop_short[i])), -1);
            t
        })
        .collect();
    let body = difference(&fewest(body_long, jit), &fewest(body_short, jit));
    let empty = difference(&fewest(loop_long, jit), &fewest(loop_short, jit));
    let iters = f64::from(k.iters.max(1));
    let ((b_jit, b_all), (e_jit, e_all)) = (kernel_total(&body, jit), kernel_total(&empty, jit));
    let mut program = b_all;
    program.add(e_all, -1);
    // The profile is the program's batch's (the loop's own functions in
    // it): the loop runs a program of its own, whose symbol would not cancel.
    // A function's count below zero (a difference of two batches) is one
    // within the method's resolution: it is left out, as a zero is.
    let mut symbols: Vec<(String, f64)> =
        body.iter().map(|(n, c)| (n.clone(), c.insns as f64 / iters)).filter(|(_, c)| *c >= 0.005).collect();
    symbols.sort_by(|a, b| b.1.total_cmp(&a.1));
    let memory = regions.memory.then(|| {
        let mut symbols: Vec<(String, DataAccesses)> = body
            .iter()
            .map(|(n, c)| (n.clone(), c.accesses(iters).at_least_zero()))
            .filter(|(_, a)| a.reads + a.writes + a.d1_misses >= 0.005)
            .collect();
        let accesses = |a: &DataAccesses| a.reads + a.writes;
        symbols.sort_by(|(_, a), (_, b)| b.d1_misses.total_cmp(&a.d1_misses).then(accesses(b).total_cmp(&accesses(a))));
        let fields: Vec<[f64; 4]> = per_round.iter().map(|t| t.accesses(iters).fields()).collect();
        let spread = |i: usize| {
            let v = fields.iter().map(|f| f[i]);
            v.clone().fold(f64::MIN, f64::max) - v.fold(f64::MAX, f64::min)
        };
        let resolution = match fields.is_empty() {
            true => DataAccesses::default(),
            false => DataAccesses::from_fields([spread(0), spread(1), spread(2), spread(3)]),
        };
        MemoryCounts {
            total: program.accesses(iters).at_least_zero(),
            harness: e_all.accesses(iters).at_least_zero(),
            symbols,
            resolution,
        }
    });
    // The attach mechanism: the empty program's batches less the trigger's
    // alone, the same way.
    let mechanism = match k.bare_regions.is_empty() {
        true => None,
        false => {
            let bare = difference(
                &fewest(counted(&k.bare_regions, true, &bare_syms)?, jit),
                &fewest(counted(&k.bare_regions, false, &bare_syms)?, jit),
            );
            let entered = difference(&empty, &bare);
            let total = kernel_total(&entered, jit).1.insns as f64 / iters;
            let mut symbols: Vec<(String, f64)> =
                entered.iter().map(|(n, c)| (n.clone(), c.insns as f64 / iters)).filter(|(_, c)| *c >= 0.005).collect();
            symbols.sort_by(|a, b| b.1.total_cmp(&a.1));
            Some(MechanismCounts { total: total.max(0.0), symbols })
        }
    };
    // Counts are never below zero: a difference of batches below it is a
    // count within the method's resolution.
    Ok(KernelCounts {
        jit: ((b_jit.insns - e_jit.insns) as f64 / iters).max(0.0),
        kernel: (((b_all.insns - b_jit.insns) - (e_all.insns - e_jit.insns)) as f64 / iters).max(0.0),
        harness: (e_all.insns as f64 / iters).max(0.0),
        round_totals,
        symbols,
        memory,
        mechanism,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bpfbench_tcg_protocol::region_text;

    #[test]
    fn regions_are_attributed_by_symbol_longer_less_shorter_batch_the_empty_loop_taken_off() {
        // Batches of 100 and 200 packets; a batch costs 50 in the kernel
        // once (a system call), a packet 5 in the program's JIT image and 10
        // in the kernel, of which the loop's own is 2 and 4.
        let block = |v: &str, insns: u64, execs: u64| format!("{v} {insns} {execs}\n");
        let (jit, loop_jit, kern, sys) =
            ("ffffffffc0000010", "ffffffffc0000810", "ffffffff81000000", "ffffffff81000200");
        let region = |n: u64, body: bool, packets: u64, extra: &str| {
            let (j, k) = if body { (jit, 5) } else { (loop_jit, 0) };
            let mut r = format!("region {n} vcpu 0\n");
            if body {
                r += &block(j, k, packets);
            }
            r += &block(loop_jit, 2, packets);
            r += &block(kern, if body { 10 } else { 4 }, packets);
            r += &block(sys, 50, 1);
            r += "400000 3 1\n";
            r + extra + "end\n"
        };
        let timer = block("ffffffff81000100", 7, 1);
        let file = [
            region(1, true, 100, ""),
            region(2, true, 200, &timer),
            region(3, false, 100, ""),
            region(4, false, 200, ""),
            region(5, true, 100, &timer),
            region(6, true, 200, ""),
            region(7, false, 100, ""),
            region(8, false, 200, ""),
        ]
        .concat();
        let regions = RegionsFile::parse(&file).unwrap();
        let symbols = Symbols::parse(
            "ffffffff81000000 T bpf_prog_test_run_xdp\nffffffff81000100 t timer_tick\nffffffff81000200 T __sys_bpf\n",
        );
        let k = counted_in_rounds(2);
        let c = attribute(&k, &regions, &symbols).unwrap();
        // The timer in round 1's long batch and round 2's short one is
        // left out; the system call's 50 drops out; user space is not counted.
        assert_eq!(c.round_totals, vec![200 * 17 + 50 + 7, 200 * 17 + 50]);
        assert_eq!((c.jit, c.kernel, c.harness), (5.0, 6.0, 6.0));
        assert_eq!(c.symbols[0], ("bpf_prog_test_run_xdp".to_string(), 10.0));
        assert!(RegionsFile::parse("region 1 vcpu 0\nnonsense\n").is_err());
        assert_eq!(c.memory, None, "lines without data accesses count none");
    }

    #[test]
    fn a_kernel_without_symbols_is_refused_in_one_line() {
        for kallsyms in ["", "0000000000000000 T _text\n0000000000000000 t bpf_prog_run\n"] {
            let e = Symbols::of_kernel(kallsyms).err().expect("refused").to_string();
            assert!(e.contains("CONFIG_KALLSYMS") && !e.contains('\n'), "{e}");
        }
        assert!(Symbols::of_kernel("ffffffff81000000 T _text\n").is_ok());
    }

    #[test]
    fn data_accesses_are_counted_like_instructions() {
        // Per packet the program reads 3 and writes 1 in its JIT image, and
        // the kernel reads 2 of which one misses D1 every other packet; the
        // loop reads 1. A batch's cold misses (the first packet's) drop out.
        let region = |n: u64, body: bool, packets: u64| {
            let mut r = format!("region {n} vcpu 0 memory\n");
            if body {
                r += &format!("ffffffffc0000010 5 {packets} {} {packets} 0 0\n", 3 * packets);
                r += &format!("ffffffff81000000 10 {packets} {} 0 {} 1\n", 2 * packets, packets / 2 + 4);
            }
            r += &format!("ffffffffc0000810 2 {packets} {packets} 0 1 1\n");
            r + "end\n"
        };
        let file = [region(1, true, 100), region(2, true, 200), region(3, false, 100), region(4, false, 200)].concat();
        let regions = RegionsFile::parse(&file).unwrap();
        let k = counted_in_rounds(1);
        let c = attribute(&k, &regions, &Symbols::parse("ffffffff81000000 T htab_map_lookup_elem\n")).unwrap();
        let m = c.memory.unwrap();
        assert_eq!(m.total, DataAccesses { reads: 5.0, writes: 1.0, d1_misses: 0.5, ll_misses: 0.0 });
        assert_eq!(m.harness, DataAccesses { reads: 1.0, writes: 0.0, d1_misses: 0.0, ll_misses: 0.0 });
        assert_eq!(m.symbols[0].0, "htab_map_lookup_elem", "most D1 misses first");
    }

    #[test]
    fn a_count_is_never_below_zero_and_the_rounds_spread_is_its_resolution() {
        // A packet: the program reads 3 in its JIT image in the first
        // round, 3.5 in the second (each round's own estimate); the empty
        // loop misses D1 on one packet in ten and runs a kernel function
        // that the program's batch does not, so the program's D1 misses and
        // kernel instructions are 0 less 0.1: never below zero. A kernel
        // function reads less in the longer batch (-1 a packet) and writes
        // more (1 a packet): its reads count 0.
        let blocks = |body: bool, packets: u64, reads_per: f64| {
            let mut b = vec![BlockCounts { vaddr: 0xffffffffc0000810, insns: 2, execs: packets, ..Default::default() }];
            if body {
                let reads = (reads_per * packets as f64) as u64;
                b.push(BlockCounts {
                    vaddr: 0xffffffffc0000010,
                    insns: 5,
                    execs: packets,
                    reads,
                    ..Default::default()
                });
                let (reads, writes) = (300 - packets, packets);
                b.push(BlockCounts {
                    vaddr: 0xffffffff81000000,
                    insns: 1,
                    execs: 1,
                    reads,
                    writes,
                    ..Default::default()
                });
            } else {
                b[0].d1_misses = packets / 10;
                b.push(BlockCounts { vaddr: 0xffffffff81000100, insns: 1, execs: packets / 10, ..Default::default() });
            }
            b
        };
        let file: String = [(true, 3.0), (false, 0.0), (true, 3.5), (false, 0.0)]
            .iter()
            .enumerate()
            .flat_map(|(i, &(body, reads))| {
                let n = 2 * i as u64 + 1;
                [region_text(n, 0, blocks(body, 100, reads)), region_text(n + 1, 0, blocks(body, 200, reads))]
            })
            .collect();
        let c = attribute(&counted_in_rounds(2), &RegionsFile::parse(&file).unwrap(), &Symbols::parse("")).unwrap();
        let m = c.memory.unwrap();
        assert_eq!((m.total.d1_misses, c.kernel), (0.0, 0.0), "never below zero");
        assert_eq!(c.jit, 5.0);
        let names: Vec<&str> = m.symbols.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["bpf_prog_aa_xdp", "[unknown]"], "{:?}", m.symbols);
        assert_eq!((m.symbols[1].1.reads, m.symbols[1].1.writes), (0.0, 1.0));
        assert!((m.resolution.reads - 0.5).abs() < 1e-9, "{:?}", m.resolution);
        assert_eq!(m.resolution.d1_misses, 0.0);
    }

    #[test]
    fn the_attach_mechanism_is_the_empty_programs_batches_less_the_triggers_alone() {
        // An event: the trigger runs 20 in the kernel alone; attached, the
        // hook's path adds 6 (tracepoint) and the empty program runs 2 in
        // its JIT image; the program 5. A batch costs 50 once (drops out).
        let (trigger, hook) = (0xffffffff81000000, 0xffffffff81000100);
        let blocks = |jit: Option<(u64, u64)>, attached: bool, events: u64| {
            let mut b = vec![
                BlockCounts { vaddr: trigger, insns: 20, execs: events, ..Default::default() },
                BlockCounts { vaddr: 0xffffffff81000200, insns: 50, execs: 1, ..Default::default() },
            ];
            if attached {
                b.push(BlockCounts { vaddr: hook, insns: 6, execs: events, ..Default::default() });
            }
            if let Some((vaddr, insns)) = jit {
                b.push(BlockCounts { vaddr, insns, execs: events, ..Default::default() });
            }
            b
        };
        let kinds = [(Some((0xffffffffc0000010, 5)), true), (Some((0xffffffffc0000810, 2)), true), (None, false)];
        let file: String = kinds
            .iter()
            .enumerate()
            .flat_map(|(i, &(jit, attached))| {
                let n = 2 * i as u64 + 1;
                [region_text(n, 0, blocks(jit, attached, 100)), region_text(n + 1, 0, blocks(jit, attached, 200))]
            })
            .collect();
        let mut k = counted_in_rounds(1);
        (k.loop_regions, k.bare_regions) = (vec![(3, 4)], vec![(5, 6)]);
        let symbols = Symbols::parse("ffffffff81000000 T __x64_sys_getppid\nffffffff81000100 T perf_syscall_enter\n");
        let c = attribute(&k, &RegionsFile::parse(&file).unwrap(), &symbols).unwrap();
        assert_eq!((c.jit, c.kernel), (3.0, 0.0));
        let m = c.mechanism.expect("bare regions give the mechanism");
        assert_eq!(m.total, 8.0, "the hook's 6 and the empty program's 2");
        assert_eq!(m.symbols[0], ("perf_syscall_enter".to_string(), 6.0));
        assert!(m.symbols.iter().all(|(n, _)| n != "__x64_sys_getppid"), "the trigger's own cancels: {:?}", m.symbols);
        k.bare_regions.clear();
        assert_eq!(attribute(&k, &RegionsFile::parse(&file).unwrap(), &symbols).unwrap().mechanism, None);
    }

    /// A scenario counted in `rounds` rounds: the program's batches of 100
    /// and 200 packets in regions 1, 2 (then 5, 6), the empty loop's in 3, 4
    /// (then 7, 8); the program's JIT image and the loop's.
    fn counted_in_rounds(rounds: u64) -> KernelInsns {
        let pairs = |first: u64| (0..rounds).map(|r| (first + 4 * r, first + 4 * r + 1)).collect();
        KernelInsns {
            iters: 100,
            body_regions: pairs(1),
            loop_regions: pairs(3),
            bare_regions: Vec::new(),
            loop_jit_symbols: Vec::new(),
            bare_jit_symbols: Vec::new(),
            jit_symbols: vec![
                (0xffffffffc0000000, "bpf_prog_aa_xdp".into()),
                (0xffffffffc0000800, "bpf_prog_bb_loop".into()),
            ],
            counts: None,
        }
    }
}
