//! The userspace runtime: the same BPF object run outside the kernel.
//!
//! An object is opened and prepared by libbpf exactly as for the kernel
//! (`bpf_object__prepare`: maps created, CO-RE, subprogram and map
//! relocations done), and each program's final instructions are taken from
//! it ([`prepared_insns`]); the kernel then loads the object as usual.
//! Two engines run the instructions ([`runtime::UserRuntime`] picks):
//! - [`jit`], x86-64 code for the programs the kernel's verifier accepted,
//!   which is what `--runtime user` times;
//! - [`interp::Interpreter`], which checks every access against the
//!   regions it handed out and counts what it executes (`--metric insns`,
//!   `fuzz-uvm`, anything unverified).
//!
//! Both use the maps of [`maps`] (array, hash, LRU with the kernel's
//! eviction, LPM, maps of maps, per-CPU arrays and hashes, global data),
//! copied from the kernel's after setup, and the helpers of [`helpers`].

pub mod fuzz;
pub mod helpers;
pub mod insn;
pub mod interp;
pub mod jit;
pub mod lines;
pub mod lpm;
pub mod lru;
pub mod maps;
pub mod memory;
pub mod runtime;
pub mod sampler;
pub mod uapi;
pub mod xdp;

use anyhow::{Result, bail};
use libbpf_rs::AsRawLibbpf;

pub use insn::Insn;
pub use interp::{Counts, Interpreter, VmError};
pub use runtime::{RunCounts, UserRuntime};

/// Has libbpf prepare an opened object for loading (maps created,
/// relocations done) without loading its programs.
pub fn prepare(open: &mut libbpf_rs::OpenObject) -> Result<()> {
    // SAFETY: a valid open object; prepare is allowed once, before load.
    let rc = unsafe { libbpf_rs::libbpf_sys::bpf_object__prepare(open.as_libbpf_object().as_ptr()) };
    if rc != 0 {
        bail!("libbpf could not prepare the object: {}", std::io::Error::from_raw_os_error(-rc));
    }
    Ok(())
}

/// What userspace needs of a prepared object once it is loaded: each
/// program's instructions, and which map each instruction's fd names (by
/// id: the fds may be closed by the time the maps are copied).
#[derive(Debug, Clone, Default)]
pub struct PreparedCode {
    pub programs: std::collections::BTreeMap<String, Vec<Insn>>,
    /// (fd in the instructions, map id, map name).
    pub maps: Vec<(i32, u32, String)>,
    /// The programs the kernel's verifier accepted on this machine: the
    /// only ones the JIT runs (see [`jit`]).
    pub verified: std::collections::BTreeSet<String>,
    /// Each program's source lines, where the object has line records.
    pub lines: std::collections::BTreeMap<String, lines::LineTable>,
}

impl PreparedCode {
    /// Prepares `open` and takes its programs' instructions and maps.
    pub fn capture(open: &mut libbpf_rs::OpenObject) -> Result<PreparedCode> {
        use std::os::fd::{AsFd, AsRawFd};
        prepare(open)?;
        let programs = open.progs().map(|p| (p.name().to_string_lossy().into_owned(), prepared_insns(&p))).collect();
        // SAFETY: the open object's BTF (NULL without one), alive while it is.
        let btf = unsafe { libbpf_rs::libbpf_sys::bpf_object__btf(open.as_libbpf_object().as_ptr()) };
        // SAFETY: prepared programs of the object whose BTF that is.
        let lines = open
            .progs()
            .map(|p| {
                (p.name().to_string_lossy().into_owned(), unsafe {
                    lines::LineTable::of_program(p.as_libbpf_object().as_ptr(), btf)
                })
            })
            .collect();
        let mut maps = Vec::new();
        for m in open.maps() {
            // SAFETY: a prepared object's map has its fd (or -1 if it was not created).
            let fd = unsafe { libbpf_rs::libbpf_sys::bpf_map__fd(m.as_libbpf_object().as_ptr()) };
            if fd < 0 {
                continue;
            }
            // SAFETY: a valid fd owned by the object for as long as it lives.
            let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
            let id = libbpf_rs::MapInfo::new(borrowed.as_fd())?.info.id;
            maps.push((borrowed.as_raw_fd(), id, m.name().to_string_lossy().into_owned()));
        }
        Ok(PreparedCode { programs, maps, verified: Default::default(), lines })
    }
}

impl PreparedCode {
    /// Notes which programs `obj` (this code's object, now loaded) has in the kernel.
    pub fn mark_verified(&mut self, obj: &libbpf_rs::Object) {
        for p in obj.progs() {
            // SAFETY: a loaded object's program; its fd is -1 unless the kernel accepted it.
            let fd = unsafe { libbpf_rs::libbpf_sys::bpf_program__fd(p.as_libbpf_object().as_ptr()) };
            if fd >= 0 {
                self.verified.insert(p.name().to_string_lossy().into_owned());
            }
        }
    }
}

/// A prepared program's instructions, relocated as the kernel would get them.
pub fn prepared_insns(prog: &libbpf_rs::OpenProgram<'_>) -> Vec<Insn> {
    from_libbpf(prog.insns())
}

/// Instructions as libbpf holds them, decoded.
pub fn from_libbpf(insns: &[libbpf_rs::libbpf_sys::bpf_insn]) -> Vec<Insn> {
    // SAFETY: bpf_insn is 8 plain bytes.
    let bytes = unsafe { std::slice::from_raw_parts(insns.as_ptr().cast::<u8>(), std::mem::size_of_val(insns)) };
    Insn::decode_all(bytes)
}
