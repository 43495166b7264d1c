//! Splicing a user's program into a timing driver.
//!
//! libbpf prepares the user's object (maps created, CO-RE and map
//! relocations done); the program's final instructions, subprograms
//! appended, are a self-contained block: calls inside it are relative and
//! its maps are file descriptors. The driver (driver_xdp.bpf.c or
//! driver_tc.bpf.c) is prepared the same way; its stand-in bench_target()
//! is the last function in its instructions, so the driver up to there,
//! followed by the user's block, is the driver calling the user's program.
//!
//! The user's functions keep their BTF records, so the kernel verifies the
//! user's entry as a global function, once, whatever the driver's loop
//! does (as bpfbench's own workloads do with their bodies): the copy of the
//! user's BTF gets one more function, the driver's entry.

use std::ffi::{CStr, CString};
use std::os::fd::{FromRawFd, OwnedFd};
use std::ptr::NonNull;

use anyhow::{Context, Result, bail, ensure};
use libbpf_rs::btf::{BtfType, TypeId};
use libbpf_rs::libbpf_sys as sys;

use crate::object_file::{ObjectFile, ProgKind};
use crate::uvm::lines::LineTable;

/// BPF_JMP | BPF_CALL, and the call kinds its src_reg names.
const CALL: u8 = 0x85;
const PSEUDO_CALL: u8 = 1;
const PSEUDO_KFUNC_CALL: u8 = 2;
/// The stand-in the driver calls.
const TARGET: &str = "bench_target";
/// The driver's timed entry and its empty twin.
pub const DRIVER: &str = "bench_driver";
pub const DRIVER_OVERHEAD: &str = "bench_driver_overhead";
/// Verifier log level: statistics only.
const BPF_LOG_STATS: u32 = 4;
/// Lines of the verifier's log a refusal shows.
const LOG_TAIL: usize = 15;

/// The driver object for a program kind, as bpfbench compiled it.
pub fn driver_object(kind: ProgKind) -> Result<ObjectFile> {
    match kind {
        ProgKind::Xdp => ObjectFile::open_memory("driver_xdp", crate::bpf_object_bytes!("driver_xdp")),
        ProgKind::Tc => ObjectFile::open_memory("driver_tc", crate::bpf_object_bytes!("driver_tc")),
    }
}

fn func_name(obj: &ObjectFile, type_id: u32) -> Option<String> {
    let btf = obj.typed_btf()?;
    let t: BtfType<'_> = btf.type_by_id(TypeId::from(type_id))?;
    t.name().map(|n| n.to_string_lossy().into_owned())
}

/// Where bench_target starts in the driver program `prog`, checked to be
/// the last function and the one the driver's calls reach.
fn target_offset(driver: &ObjectFile, prog: &str, insns: &[sys::bpf_insn]) -> Result<usize> {
    let funcs = driver.func_info(prog)?;
    let target = funcs
        .iter()
        .find(|f| func_name(driver, f.type_id).as_deref() == Some(TARGET))
        .with_context(|| format!("the {prog} driver has no {TARGET} function record"))?
        .insn_off as usize;
    ensure!(funcs.iter().all(|f| (f.insn_off as usize) <= target), "{TARGET} is not the driver's last function");
    let reaches = insns[..target]
        .iter()
        .enumerate()
        .filter(|(_, i)| i.code == CALL && i.src_reg() == PSEUDO_CALL)
        .all(|(at, i)| at as i64 + 1 + i64::from(i.imm) == target as i64);
    ensure!(reaches, "the {prog} driver calls a function other than {TARGET}");
    Ok(target)
}

/// A BTF object bpfbench made (a copy of the user's plus one function).
struct OwnedBtf(NonNull<sys::btf>);

impl Drop for OwnedBtf {
    fn drop(&mut self) {
        // SAFETY: created by btf__new, freed once.
        unsafe { sys::btf__free(self.0.as_ptr()) };
    }
}

/// The user's BTF with a FUNC `bench_driver` of the user entry's prototype,
/// loaded into the kernel; and that function's type id.
fn driver_btf(user: &ObjectFile, entry_func: u32) -> Result<(OwnedBtf, u32)> {
    let src = user.btf().context("the object has no BTF")?;
    let mut size: u32 = 0;
    // SAFETY: raw data of a valid BTF, copied by btf__new below.
    let raw = unsafe { sys::btf__raw_data(src.as_ptr(), &mut size) };
    ensure!(!raw.is_null(), "cannot read the object's BTF");
    let btf = NonNull::new(unsafe { sys::btf__new(raw, size) }).context("cannot copy the object's BTF")?;
    let btf = OwnedBtf(btf);
    // SAFETY: a type of this BTF; a FUNC's `type` is its prototype.
    let entry = unsafe { sys::btf__type_by_id(btf.0.as_ptr(), entry_func) };
    ensure!(!entry.is_null(), "the program's function record names no type");
    let proto = unsafe { (*entry).__bindgen_anon_1.type_ };
    let name = CString::new(DRIVER).expect("no NUL");
    let id = unsafe { sys::btf__add_func(btf.0.as_ptr(), name.as_ptr(), sys::BTF_FUNC_GLOBAL as _, proto as _) };
    ensure!(id > 0, "cannot add the driver's function to the BTF: {}", std::io::Error::from_raw_os_error(-id));
    let rc = unsafe { sys::btf__load_into_kernel(btf.0.as_ptr()) };
    ensure!(rc == 0, "the kernel refused the program's BTF: {}", std::io::Error::from_raw_os_error(-rc));
    Ok((btf, id as u32))
}

/// What `load_program` hands the kernel beside the instructions.
pub struct LoadSpec<'a> {
    pub kind: ProgKind,
    pub name: &'a str,
    pub license: &'a str,
    pub attach: sys::bpf_attach_type,
    pub flags: u32,
    /// (BTF fd, function records), when the program carries BTF.
    pub funcs: Option<(i32, &'a [sys::bpf_func_info])>,
}

/// Loads `insns` as a program; a refusal carries the verifier's last lines.
pub fn load_program(spec: &LoadSpec<'_>, insns: &[sys::bpf_insn]) -> Result<OwnedFd> {
    let prog_type = match spec.kind {
        ProgKind::Xdp => sys::BPF_PROG_TYPE_XDP,
        ProgKind::Tc => sys::BPF_PROG_TYPE_SCHED_CLS,
    };
    let mut log = vec![0u8; 256 * 1024];
    // SAFETY: zero is a valid opts; the kernel reads `sz` first.
    let mut opts: sys::bpf_prog_load_opts = unsafe { std::mem::zeroed() };
    opts.sz = size_of::<sys::bpf_prog_load_opts>() as _;
    opts.expected_attach_type = spec.attach;
    opts.prog_flags = spec.flags;
    opts.log_level = BPF_LOG_STATS;
    opts.log_buf = log.as_mut_ptr().cast();
    opts.log_size = log.len() as u32;
    if let Some((btf_fd, funcs)) = spec.funcs {
        opts.prog_btf_fd = btf_fd as u32;
        opts.func_info = funcs.as_ptr().cast();
        opts.func_info_cnt = funcs.len() as u32;
        opts.func_info_rec_size = size_of::<sys::bpf_func_info>() as u32;
    }
    let name = CString::new(spec.name).context("program name holds a NUL byte")?;
    let license = CString::new(spec.license).context("license holds a NUL byte")?;
    // SAFETY: every pointer lives across the call; sizes are passed with them.
    let fd = unsafe {
        sys::bpf_prog_load(prog_type, name.as_ptr(), license.as_ptr(), insns.as_ptr(), insns.len() as _, &mut opts)
    };
    if fd < 0 {
        let err = std::io::Error::last_os_error();
        let text = CStr::from_bytes_until_nul(&log).map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let reason = crate::object_file::refusal(&text).unwrap_or_else(|| err.to_string());
        // The first line says why; the verifier's last lines follow.
        bail!("{reason} ({err})\n{}", lines[lines.len().saturating_sub(LOG_TAIL)..].join("\n"));
    }
    // SAFETY: a new fd we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A program bpfbench loaded, the instructions it loaded (what the
/// userspace runtime runs) and their source lines (`--profile`).
pub struct Loaded {
    pub fd: OwnedFd,
    pub insns: Vec<sys::bpf_insn>,
    pub lines: LineTable,
}

/// The user's program as the body of the prepared `driver`'s timed entry.
/// `insns` and `funcs` are the user program's instructions and function
/// records after `prepare`.
pub fn splice(
    driver: &ObjectFile,
    user: &ObjectFile,
    program: &str,
    insns: &[sys::bpf_insn],
    funcs: &[sys::bpf_func_info],
    kind: ProgKind,
) -> Result<Loaded> {
    if insns.iter().any(|i| i.code == CALL && i.src_reg() == PSEUDO_KFUNC_CALL && i.off != 0) {
        bail!("program '{program}' calls kfuncs of a kernel module, which a spliced program cannot reach");
    }
    let driver_insns = driver.insns(DRIVER)?;
    let target = target_offset(driver, DRIVER, &driver_insns)?;
    let mut spliced = driver_insns[..target].to_vec();
    spliced.extend_from_slice(insns);
    let (attach, flags) = user.load_attrs(program)?;
    let btf;
    let mut records = Vec::new();
    let funcs_arg = match funcs.first() {
        Some(entry) if entry.insn_off == 0 => {
            let (b, driver_func) = driver_btf(user, entry.type_id)?;
            btf = b;
            // SAFETY: loaded into the kernel by driver_btf.
            let fd = unsafe { sys::btf__fd(btf.0.as_ptr()) };
            records.push(sys::bpf_func_info { insn_off: 0, type_id: driver_func });
            records.extend(
                funcs.iter().map(|f| sys::bpf_func_info { insn_off: f.insn_off + target as u32, type_id: f.type_id }),
            );
            Some((fd, records.as_slice()))
        }
        // Without BTF every function is verified where it is called.
        _ => None,
    };
    let spec = LoadSpec { kind, name: DRIVER, license: user.license(), attach, flags, funcs: funcs_arg };
    let lines = driver.line_table(DRIVER)?.with_spliced(target, &user.line_table(program)?);
    Ok(Loaded { fd: load_program(&spec, &spliced)?, insns: spliced, lines })
}

/// The driver's overhead twin: the same loop around an empty call.
pub fn overhead(driver: &ObjectFile, kind: ProgKind, attach: sys::bpf_attach_type, flags: u32) -> Result<Loaded> {
    let insns = driver.insns(DRIVER_OVERHEAD)?;
    let spec = LoadSpec { kind, name: "bench_overhead", license: "Dual BSD/GPL", attach, flags, funcs: None };
    let fd = load_program(&spec, &insns).context("loading the driver's overhead loop")?;
    Ok(Loaded { fd, insns, lines: driver.line_table(DRIVER_OVERHEAD)? })
}
