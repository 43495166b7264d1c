//! A QEMU TCG plugin that counts the guest instructions one vCPU executes
//! between two marker instructions, by translation block, for bpfbench's
//! kernel instruction counts (`--metric kernel-insns` in a guest).
//!
//! The guest's bpfbench executes [`START`] before a test run and [`STOP`]
//! after it. Between them, every executed block of that vCPU adds its
//! instruction count to the block's tally; at [`STOP`] the region's blocks
//! are appended to the file given as `out=PATH`, in the format
//! `bpfbench-tcg-protocol` defines (and the host reads with it). Data
//! accesses are counted with a simulated level-1 data cache and last-level
//! cache ([`cache`]; emptied at each region's start, so a region's misses
//! do not depend on what ran before it).
//!
//! Every kernel instruction that accesses memory has a callback, all the
//! time: adding them only around the counted regions would need QEMU to
//! drop its translations (`qemu_plugin_reset`), and QEMU 7.2 then aborts
//! at times ("qemu_plugin_vcpu_mem_cb: code should not be reached": a
//! memory callback list kept past an exception, then freed). The word
//! `memory` says a region's lines carry data accesses.
//!
//! Attribution (which function, which JIT image) is the host's, from the
//! guest's kallsyms: the plugin knows addresses only. Under TCG an
//! interrupt is taken between blocks, so the interrupted code's blocks
//! count exactly; the handler's blocks count too, under its own symbols.
//! Outside a region a block costs one call and one load, and so does a
//! memory access.

mod cache;

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};

use qemu_plugin_sys::{
    QEMU_PLUGIN_VERSION, qemu_info_t, qemu_plugin_cb_flags, qemu_plugin_id_t, qemu_plugin_insn_data,
    qemu_plugin_insn_size, qemu_plugin_insn_vaddr, qemu_plugin_mem_is_store, qemu_plugin_mem_rw,
    qemu_plugin_mem_size_shift, qemu_plugin_meminfo_t, qemu_plugin_register_vcpu_insn_exec_cb,
    qemu_plugin_register_vcpu_mem_cb, qemu_plugin_register_vcpu_tb_exec_cb, qemu_plugin_register_vcpu_tb_trans_cb,
    qemu_plugin_tb, qemu_plugin_tb_get_insn, qemu_plugin_tb_n_insns, qemu_plugin_tb_vaddr,
};

use bpfbench_tcg_protocol::{BlockCounts, KERNEL_SPACE, MODULES, OUT_ARG, PROBE_ARG, PROBED, START, STOP, region_text};
use cache::{Caches, Missed};

/// The plugin API version this plugin is built for (QEMU checks it).
#[unsafe(no_mangle)]
pub static qemu_plugin_version: c_int = QEMU_PLUGIN_VERSION as c_int;

const MAX_VCPUS: usize = 64;

/// Whether each vCPU is between its markers.
static COUNTING: [AtomicBool; MAX_VCPUS] = [const { AtomicBool::new(false) }; MAX_VCPUS];

/// Each vCPU's simulated caches (a vCPU's callbacks run on its own thread,
/// so each lock is taken by one thread only).
static CACHES: OnceLock<Vec<Mutex<Caches>>> = OnceLock::new();

/// One translation of a block: where it starts, its instructions, and how
/// often it ran in the current region, with its data accesses.
struct Block {
    vaddr: u64,
    insns: u32,
    execs: AtomicU64,
    reads: AtomicU64,
    writes: AtomicU64,
    d1_misses: AtomicU64,
    ll_misses: AtomicU64,
}

/// Every block translated so far (QEMU keeps a block's callbacks as long as
/// the translation lives, so each record lives as long as the process).
static BLOCKS: Mutex<Vec<&'static Block>> = Mutex::new(Vec::new());

/// The file regions are appended to, and how many were written.
static OUT: OnceLock<Mutex<(File, u64)>> = OnceLock::new();

unsafe extern "C" fn block_executed(vcpu: c_uint, udata: *mut c_void) {
    if COUNTING.get(vcpu as usize).is_some_and(|c| c.load(Relaxed)) {
        // SAFETY: udata is the leaked Block registered with this callback.
        let block = unsafe { &*(udata as *const Block) };
        block.execs.fetch_add(1, Relaxed);
    }
}

unsafe extern "C" fn memory_accessed(vcpu: c_uint, info: qemu_plugin_meminfo_t, vaddr: u64, udata: *mut c_void) {
    if !COUNTING.get(vcpu as usize).is_some_and(|c| c.load(Relaxed)) {
        return;
    }
    // SAFETY: udata is the leaked Block registered with this callback; info
    // is QEMU's handle of this access, valid during the callback.
    let (block, store, size) = unsafe {
        (&*(udata as *const Block), qemu_plugin_mem_is_store(info), 1u64 << qemu_plugin_mem_size_shift(info))
    };
    (if store { &block.writes } else { &block.reads }).fetch_add(1, Relaxed);
    let Some(caches) = CACHES.get().and_then(|c| c.get(vcpu as usize)) else { return };
    let missed = caches.lock().unwrap_or_else(|e| e.into_inner()).access(vaddr, size);
    if missed >= Missed::D1 {
        block.d1_misses.fetch_add(1, Relaxed);
    }
    if missed >= Missed::D1AndLl {
        block.ll_misses.fetch_add(1, Relaxed);
    }
}

unsafe extern "C" fn start(vcpu: c_uint, _: *mut c_void) {
    if let Some(c) = COUNTING.get(vcpu as usize) {
        if let Some(caches) = CACHES.get().and_then(|c| c.get(vcpu as usize)) {
            caches.lock().unwrap_or_else(|e| e.into_inner()).clear();
        }
        c.store(true, Relaxed);
    }
}

unsafe extern "C" fn stop(vcpu: c_uint, _: *mut c_void) {
    let Some(c) = COUNTING.get(vcpu as usize) else { return };
    if !c.swap(false, Relaxed) {
        return;
    }
    let Some(out) = OUT.get() else { return };
    let blocks: Vec<BlockCounts> = BLOCKS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|b| BlockCounts {
            vaddr: b.vaddr,
            insns: b.insns.into(),
            execs: b.execs.swap(0, Relaxed),
            reads: b.reads.swap(0, Relaxed),
            writes: b.writes.swap(0, Relaxed),
            d1_misses: b.d1_misses.swap(0, Relaxed),
            ll_misses: b.ll_misses.swap(0, Relaxed),
        })
        .filter(BlockCounts::touched)
        .collect();
    let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
    out.1 += 1;
    let region = out.1;
    let _ = out.0.write_all(region_text(region, vcpu, blocks).as_bytes());
    let _ = out.0.flush();
}

/// The marker callback `insn` is, if it is one of [`START`] and [`STOP`].
///
/// # Safety
/// `insn` is QEMU's instruction, during its block's translation callback
/// (its bytes are valid only then).
unsafe fn marker(insn: *const qemu_plugin_sys::qemu_plugin_insn) -> Option<unsafe extern "C" fn(c_uint, *mut c_void)> {
    // SAFETY: QEMU's pointer to the instruction's bytes, valid during translation.
    let bytes = unsafe {
        let data = qemu_plugin_insn_data(insn) as *const u8;
        if data.is_null() { return None } else { std::slice::from_raw_parts(data, qemu_plugin_insn_size(insn)) }
    };
    match bytes {
        b if b == START => Some(start),
        b if b == STOP => Some(stop),
        _ => None,
    }
}

/// Registers a tally of `insns` instructions at `vaddr`, counted by `register`.
fn tally(vaddr: u64, insns: usize) -> *mut c_void {
    let block: &'static Block = Box::leak(Box::new(Block {
        vaddr,
        insns: insns as u32,
        execs: AtomicU64::new(0),
        reads: AtomicU64::new(0),
        writes: AtomicU64::new(0),
        d1_misses: AtomicU64::new(0),
        ll_misses: AtomicU64::new(0),
    }));
    BLOCKS.lock().unwrap_or_else(|e| e.into_inner()).push(block);
    block as *const Block as *mut c_void
}

unsafe extern "C" fn translated(_: qemu_plugin_id_t, tb: *mut qemu_plugin_tb) {
    // SAFETY: QEMU's block and its instructions, valid during this callback.
    unsafe {
        let (n, vaddr) = (qemu_plugin_tb_n_insns(tb), qemu_plugin_tb_vaddr(tb));
        // JIT images are counted by instruction: QEMU 7.2 leaves in a
        // block's list an instruction it moved to the next block (one that
        // would cross a page boundary), so a block's length can be one too
        // many, and a JIT image lands at another page offset on every load
        // (seen: 35 or 36 a packet for one program). Elsewhere (kernel
        // text, at the same page offsets on every boot) a block is counted
        // whole, one callback per block.
        let per_insn = vaddr >= MODULES;
        let whole = (!per_insn).then(|| tally(vaddr, n));
        if let Some(whole) = whole {
            qemu_plugin_register_vcpu_tb_exec_cb(
                tb,
                Some(block_executed),
                qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                whole,
            );
        }
        for i in 0..n {
            let insn = qemu_plugin_tb_get_insn(tb, i);
            let tally = whole.unwrap_or_else(|| tally(qemu_plugin_insn_vaddr(insn), 1));
            if per_insn {
                qemu_plugin_register_vcpu_insn_exec_cb(
                    insn,
                    Some(block_executed),
                    qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                    tally,
                );
            }
            // Its data accesses go to the same tally (a callback per access;
            // an instruction without any gets none). User space's are never
            // counted (the host leaves user space out): no callback.
            if vaddr >= KERNEL_SPACE {
                qemu_plugin_register_vcpu_mem_cb(
                    insn,
                    Some(memory_accessed),
                    qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                    qemu_plugin_mem_rw::QEMU_PLUGIN_MEM_RW,
                    tally,
                );
            }
            let Some(marker) = marker(insn) else { continue };
            qemu_plugin_register_vcpu_insn_exec_cb(
                insn,
                Some(marker),
                qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                std::ptr::null_mut(),
            );
        }
    }
}

/// Called by QEMU when it loads the plugin: `-plugin PATH,out=FILE`.
///
/// # Safety
/// QEMU's arguments: `argv` holds `argc` C strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn qemu_plugin_install(
    id: qemu_plugin_id_t,
    _info: *const qemu_info_t,
    argc: c_int,
    argv: *mut *mut c_char,
) -> c_int {
    let mut out = None;
    for i in 0..argc.max(0) as usize {
        // SAFETY: QEMU passes argc valid C strings.
        let arg = unsafe { CStr::from_ptr(*argv.add(i)) }.to_string_lossy();
        if let Some(path) = arg.strip_prefix(OUT_ARG) {
            out = Some(path.to_string());
        }
        // bpfbench's check that this QEMU loads the plugin: say so, and
        // refuse, so that QEMU exits at once.
        if arg == PROBE_ARG {
            println!("{PROBED}");
            return -1;
        }
    }
    let Some(path) = out else {
        eprintln!("bpfbench-tcg-counter: give out=FILE (where the regions' counts go)");
        return -1;
    };
    match File::create(&path) {
        Ok(f) => {
            let _ = OUT.set(Mutex::new((f, 0)));
        }
        Err(e) => {
            eprintln!("bpfbench-tcg-counter: cannot create {path}: {e}");
            return -1;
        }
    }
    let _ = CACHES.set((0..MAX_VCPUS).map(|_| Mutex::new(Caches::default())).collect());
    // SAFETY: registering a callback with QEMU for this plugin's id.
    unsafe { qemu_plugin_register_vcpu_tb_trans_cb(id, Some(translated)) };
    0
}
