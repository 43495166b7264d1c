//! What bpfbench and its QEMU TCG plugin (`tcg-counter/`) agree on, written
//! once: the marker instructions the guest executes around a counted
//! region, the plugin's arguments, the address ranges it tells apart, and
//! the file it writes, which the host reads back.
//!
//! The file holds a region after another:
//!
//! ```text
//! region 1 vcpu 0 memory
//! ffffffffc0002a1c 12 100000 300000 100000 0 0
//! ...
//! end
//! ```
//!
//! A line is a block's address (hex), its instructions, the times it ran,
//! and its data accesses in the region: reads, writes, and the accesses
//! that missed the simulated level-1 data cache and the last-level cache.
//! The word `memory` says the region's lines carry data accesses (a plugin
//! built before they were counted wrote three numbers a line).

use std::collections::HashMap;
use std::fmt;

/// `nopl 0x53465042(%rax,%rax,1)` ("BPFS"): counting starts after it. A NOP
/// no compiler emits, so a guest without the plugin runs it as a NOP.
pub const START: [u8; 8] = [0x0f, 0x1f, 0x84, 0x00, b'B', b'P', b'F', b'S'];
/// `nopl 0x45465042(%rax,%rax,1)` ("BPFE"): the region ends; its blocks are written.
pub const STOP: [u8; 8] = [0x0f, 0x1f, 0x84, 0x00, b'B', b'P', b'F', b'E'];

/// Kernel addresses start here on x86-64; below is the guest's user space.
pub const KERNEL_SPACE: u64 = 0xffff_8000_0000_0000;
/// Where x86-64 kernels put modules and JIT images (MODULES_VADDR).
pub const MODULES: u64 = 0xffff_ffff_a000_0000;

/// The plugin's argument naming the file of counts: `out=PATH`.
pub const OUT_ARG: &str = "out=";
/// The argument that asks the plugin to say it loaded and refuse (QEMU then exits at once).
pub const PROBE_ARG: &str = "probe=on";
/// What the plugin prints for [`PROBE_ARG`].
pub const PROBED: &str = "bpfbench-tcg-counter: loaded";

/// One block's tally in a region.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockCounts {
    pub vaddr: u64,
    pub insns: u64,
    pub execs: u64,
    /// Data accesses (zero from a plugin that did not count them).
    pub reads: u64,
    pub writes: u64,
    pub d1_misses: u64,
    pub ll_misses: u64,
}

impl BlockCounts {
    /// Whether the block did anything in the region (only those are written).
    pub fn touched(&self) -> bool {
        self.execs > 0 || self.reads > 0 || self.writes > 0 || self.d1_misses > 0 || self.ll_misses > 0
    }
}

impl fmt::Display for BlockCounts {
    /// The block's line in the file.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self;
        writeln!(f, "{:x} {} {} {} {} {} {}", b.vaddr, b.insns, b.execs, b.reads, b.writes, b.d1_misses, b.ll_misses)
    }
}

/// A region as the plugin writes it: its header, its blocks' lines, `end`.
pub fn region_text(region: u64, vcpu: u32, blocks: impl IntoIterator<Item = BlockCounts>) -> String {
    let mut text = format!("region {region} vcpu {vcpu} memory\n");
    for b in blocks {
        text += &b.to_string();
    }
    text + "end\n"
}

/// The plugin's file, read: each region's blocks by the region's number,
/// and whether every region carries data accesses.
#[derive(Debug, Default)]
pub struct RegionsFile {
    pub regions: HashMap<u64, Vec<BlockCounts>>,
    pub memory: bool,
}

/// A line of the file that is not of its format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    pub number: usize,
    pub text: String,
}

impl fmt::Display for BadLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the plugin's file, line {}: '{}'", self.number, self.text)
    }
}

impl std::error::Error for BadLine {}

impl RegionsFile {
    /// Reads the file [`region_text`] writes (lines starting with `#` are comments).
    pub fn parse(text: &str) -> Result<RegionsFile, BadLine> {
        let mut out = RegionsFile { memory: true, ..RegionsFile::default() };
        let mut current: Option<(u64, Vec<BlockCounts>)> = None;
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.starts_with('#')) {
            let bad = || BadLine { number: i + 1, text: line.to_string() };
            let num = |w: &str| w.parse::<u64>().map_err(|_| bad());
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["region", n, "vcpu", _, memory @ ..] if memory.is_empty() || memory == ["memory"] => {
                    out.memory &= !memory.is_empty();
                    current = Some((num(n)?, Vec::new()));
                }
                ["end"] => {
                    let (n, blocks) = current.take().ok_or_else(bad)?;
                    out.regions.insert(n, blocks);
                }
                [vaddr, insns, execs, memory @ ..] if memory.is_empty() || memory.len() == 4 => {
                    let accesses = |k: usize| memory.get(k).map_or(Ok(0), |w| num(w));
                    let block = BlockCounts {
                        vaddr: u64::from_str_radix(vaddr, 16).map_err(|_| bad())?,
                        insns: num(insns)?,
                        execs: num(execs)?,
                        reads: accesses(0)?,
                        writes: accesses(1)?,
                        d1_misses: accesses(2)?,
                        ll_misses: accesses(3)?,
                    };
                    current.as_mut().ok_or_else(bad)?.1.push(block);
                }
                _ => return Err(bad()),
            }
        }
        out.memory &= !out.regions.is_empty();
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_written_reads_back() {
        let b = BlockCounts {
            vaddr: 0xffffffffc0002a1c,
            insns: 12,
            execs: 100,
            reads: 300,
            writes: 100,
            d1_misses: 2,
            ll_misses: 1,
        };
        let text = region_text(1, 0, [b]) + &region_text(2, 1, []);
        assert_eq!(text.lines().next(), Some("region 1 vcpu 0 memory"));
        let file = RegionsFile::parse(&text).unwrap();
        assert_eq!(file.regions[&1], vec![b]);
        assert!(file.regions[&2].is_empty() && file.memory);
    }

    #[test]
    fn an_older_plugins_lines_carry_no_data_accesses() {
        let file = RegionsFile::parse("region 1 vcpu 0\nffffffff81000000 10 5\nend\n").unwrap();
        assert!(!file.memory);
        assert_eq!(
            file.regions[&1][0],
            BlockCounts { vaddr: 0xffffffff81000000, insns: 10, execs: 5, ..Default::default() }
        );
    }

    #[test]
    fn a_line_out_of_format_is_named() {
        for (text, number) in
            [("region 1 vcpu 0\nnonsense\n", 2), ("ffffffff81000000 10 5\n", 1), ("end\n", 1), ("region x vcpu 0\n", 1)]
        {
            assert_eq!(RegionsFile::parse(text).unwrap_err().number, number, "{text}");
        }
        assert!(!BlockCounts::default().touched());
        assert!(BlockCounts { d1_misses: 1, ..Default::default() }.touched());
    }
}
