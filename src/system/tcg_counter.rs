//! Kernel instruction counts through bpfbench's QEMU TCG plugin
//! (tcg-counter/): the guest side marks the regions to count and names the
//! JIT images; the host's analysis attributes them.
//!
//! In the guest, [`marked`] runs a closure between the plugin's two marker
//! instructions (NOPs everywhere else) and returns the region's number;
//! [`jit_symbols`] reads the JIT images' symbols while the programs are
//! loaded. On the host, `RegionsFile::parse` (tcg-protocol) reads the
//! plugin's file and [`crate::analysis::kernel_counts::attribute`] turns a
//! scenario's regions into instructions per packet.

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Result, bail};
use bpfbench_tcg_protocol::{START, STOP};

use crate::analysis::kernel_counts::AFTER_IMAGE;

/// Set in the guest by `bpfbench vm --metric kernel-insns`: the plugin is loaded.
pub const ENV: &str = "BPFBENCH_TCG_COUNTER";

/// The file the plugin writes in the guest's output folder.
pub const REGIONS_FILE: &str = "regions.txt";
/// The guest's kallsyms, written after the run.
pub const KALLSYMS_FILE: &str = "kallsyms";

/// Regions this process marked; the plugin numbers them in the same order.
static MARKED: AtomicU64 = AtomicU64::new(0);

/// Runs `f` between the plugin's start and stop markers
/// ([`bpfbench_tcg_protocol::START`] and `STOP`); returns its result and
/// the region's number.
pub fn marked<T>(f: impl FnOnce() -> T) -> (T, u64) {
    // SAFETY: an 8-byte NOP; it touches no register, memory or flag.
    unsafe {
        std::arch::asm!(".byte {}, {}, {}, {}, {}, {}, {}, {}", const START[0], const START[1], const START[2], const START[3], const START[4], const START[5], const START[6], const START[7], options(nostack, preserves_flags))
    };
    let out = f();
    // SAFETY: as above.
    unsafe {
        std::arch::asm!(".byte {}, {}, {}, {}, {}, {}, {}, {}", const STOP[0], const STOP[1], const STOP[2], const STOP[3], const STOP[4], const STOP[5], const STOP[6], const STOP[7], options(nostack, preserves_flags))
    };
    (out, MARKED.fetch_add(1, Ordering::SeqCst) + 1)
}

/// Whether this process runs in a guest whose QEMU loaded the plugin.
pub fn plugin_loaded() -> bool {
    std::env::var_os(ENV).is_some()
}

/// The JIT images loaded now, from the programs' info (kallsyms hides
/// them when `bpf_jit_harden` is on): (address, name), and after each
/// image the address where it ends, named `[after a JIT image]`, so that
/// nothing past an image is taken for it.
pub fn jit_symbols() -> Result<Vec<(u64, String)>> {
    let images = crate::kernel::prog_info::jit_images();
    if images.is_empty() {
        bail!(
            "the kernel gives no JIT image addresses (bpf_prog_info's jited_ksyms): are addresses hidden from root (kernel.kptr_restrict=2)?"
        );
    }
    let mut symbols = Vec::new();
    for (addr, len, name) in images.into_iter().filter(|(a, _, _)| *a != 0) {
        symbols.push((addr + u64::from(len), AFTER_IMAGE.to_string()));
        symbols.push((addr, name));
    }
    symbols.extend(trampolines());
    Ok(symbols)
}

/// The BPF trampolines (fentry, fexit, LSM) present now, from kallsyms'
/// `[bpf]` entries: they exist only while a program is attached, and are
/// no program's image. Their lengths are not given: the next symbol bounds
/// each.
fn trampolines() -> Vec<(u64, String)> {
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    kallsyms
        .lines()
        .filter(|l| l.ends_with("[bpf]"))
        .filter_map(|l| {
            let mut fields = l.split_whitespace();
            let addr = u64::from_str_radix(fields.next()?, 16).ok()?;
            let name = fields.nth(1)?;
            (addr != 0 && name.starts_with("bpf_trampoline_")).then(|| (addr, name.to_string()))
        })
        .collect()
}
