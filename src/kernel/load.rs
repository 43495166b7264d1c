//! Programs bpfbench loads from instructions it has in hand rather than
//! from an object file: a spliced driver with its function records, the
//! constant programs (`r0 = value; exit`: per-call timing's empty program,
//! live runs' return-path sink), spacers' filler programs and maps, and the
//! copy of a user's BTF that gives the spliced driver its entry function.

use std::ffi::{CStr, CString};
use std::os::fd::{FromRawFd, OwnedFd};
use std::ptr::NonNull;

use anyhow::{Context, Result, bail, ensure};
use libbpf_rs::libbpf_sys as sys;

use super::object::ObjectFile;
use super::prog_type::ProgKind;
use super::{AttachType, FuncInfo};
use crate::insn::{self, Insn};

/// Verifier log level: statistics only.
const BPF_LOG_STATS: u32 = 4;
/// Lines of the verifier's log a refusal shows.
const LOG_TAIL: usize = 15;

/// What [`load_program`] hands the kernel beside the instructions.
pub struct LoadSpec<'a> {
    pub kind: ProgKind,
    pub name: &'a str,
    pub license: &'a str,
    pub attach: AttachType,
    pub flags: u32,
    /// (BTF fd, function records), when the program carries BTF.
    pub funcs: Option<(i32, &'a [FuncInfo])>,
}

/// The kernel's refusal of a program [`load_program`] loaded: why (its
/// verifier's last word), how far the verifier walked, and its last lines.
#[derive(Debug)]
pub struct Refusal {
    pub reason: String,
    /// Instructions the verifier processed before it gave up, where its log says.
    pub processed_insns: Option<u64>,
    pub errno: std::io::Error,
    pub log_tail: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The first line says why; the verifier's last lines follow.
        write!(f, "{} ({})\n{}", self.reason, self.errno, self.log_tail)
    }
}

impl std::error::Error for Refusal {}

/// Loads `insns` as a program; a refusal is a [`Refusal`].
pub fn load_program(spec: &LoadSpec<'_>, insns: &[Insn]) -> Result<OwnedFd> {
    let insns = super::to_kernel(insns);
    let mut log = vec![0u8; 256 * 1024];
    // SAFETY: zero is a valid opts; the kernel reads `sz` first.
    let mut opts: sys::bpf_prog_load_opts = unsafe { std::mem::zeroed() };
    opts.sz = size_of::<sys::bpf_prog_load_opts>() as _;
    opts.expected_attach_type = spec.attach;
    opts.prog_flags = spec.flags;
    if spec.kind == ProgKind::Syscall {
        // "Syscall programs can only be sleepable"; libbpf adds the flag for its own loads.
        opts.prog_flags |= sys::BPF_F_SLEEPABLE;
    }
    opts.log_level = BPF_LOG_STATS;
    opts.log_buf = log.as_mut_ptr().cast();
    opts.log_size = log.len() as u32;
    if let Some((btf_fd, funcs)) = spec.funcs {
        opts.prog_btf_fd = btf_fd as u32;
        opts.func_info = funcs.as_ptr().cast();
        opts.func_info_cnt = funcs.len() as u32;
        opts.func_info_rec_size = size_of::<FuncInfo>() as u32;
    }
    let name = CString::new(spec.name).context("program name holds a NUL byte")?;
    let license = CString::new(spec.license).context("license holds a NUL byte")?;
    // SAFETY: every pointer lives across the call; sizes are passed with them.
    let fd = unsafe {
        sys::bpf_prog_load(
            spec.kind.desc().libbpf_type,
            name.as_ptr(),
            license.as_ptr(),
            insns.as_ptr(),
            insns.len() as _,
            &mut opts,
        )
    };
    if fd < 0 {
        let err = std::io::Error::last_os_error();
        let text = CStr::from_bytes_until_nul(&log).map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        return Err(Refusal {
            reason: super::object::refusal(&text).unwrap_or_else(|| err.to_string()),
            processed_insns: super::object::parse_stats(&text).processed_insns,
            errno: err,
            log_tail: lines[lines.len().saturating_sub(LOG_TAIL)..].join("\n"),
        }
        .into());
    }
    // SAFETY: a new fd we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Loads a program of `kind` named `name` that returns `value`, with the
/// attach type and flags its companion program was loaded with.
pub fn constant_program(kind: ProgKind, name: &str, value: i32, attach: AttachType, flags: u32) -> Result<OwnedFd> {
    let spec = LoadSpec { kind, name, license: "GPL", attach, flags, funcs: None };
    load_program(&spec, &insn::returning(value))
        .with_context(|| format!("loading {name} (a program returning {value})"))
}

/// A socket filter of `count` instructions (`r0 = 0` repeated, then exit)
/// named `name`: JIT image of a chosen size.
pub fn filler_program(name: &CStr, count: u32) -> Result<OwnedFd> {
    let mut insns = vec![insn::mov64_imm(0, 0); count as usize];
    insns.push(insn::exit());
    let insns = super::to_kernel(&insns);
    // SAFETY: valid instructions and C strings live across the call; NULL opts are defaults.
    let fd = unsafe {
        sys::bpf_prog_load(
            ProgKind::SocketFilter.desc().libbpf_type,
            name.as_ptr(),
            c"GPL".as_ptr(),
            insns.as_ptr(),
            insns.len() as _,
            std::ptr::null_mut(),
        )
    };
    if fd < 0 {
        bail!("loading a {count}-instruction program: {}", std::io::Error::last_os_error());
    }
    // SAFETY: a new fd we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// An array of `entries` 8-byte values named `name`: map memory of a chosen size.
pub fn filler_map(name: &CStr, entries: u32) -> Result<OwnedFd> {
    // SAFETY: a C string name; NULL opts are defaults.
    let fd = unsafe { sys::bpf_map_create(sys::BPF_MAP_TYPE_ARRAY, name.as_ptr(), 4, 8, entries, std::ptr::null()) };
    if fd < 0 {
        bail!("creating an array of {entries} entries: {}", std::io::Error::last_os_error());
    }
    // SAFETY: a new fd we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A BTF object bpfbench made and loaded into the kernel.
pub struct OwnedBtf(NonNull<sys::btf>);

impl OwnedBtf {
    /// The kernel's descriptor of it.
    pub fn fd(&self) -> i32 {
        // SAFETY: loaded into the kernel when made.
        unsafe { sys::btf__fd(self.0.as_ptr()) }
    }
}

impl Drop for OwnedBtf {
    fn drop(&mut self) {
        // SAFETY: created by btf__new, freed once.
        unsafe { sys::btf__free(self.0.as_ptr()) };
    }
}

/// A copy of `object`'s BTF with more global FUNCs, one per name of
/// `names`, each of the prototype of the function whose type id is `like`;
/// loaded into the kernel. Returns it and the new functions' type ids.
pub fn btf_with_funcs(object: &ObjectFile, like: u32, names: &[&str]) -> Result<(OwnedBtf, Vec<u32>)> {
    let src = object.btf().context("the object has no BTF")?;
    let mut size: u32 = 0;
    // SAFETY: raw data of a valid BTF, copied by btf__new below.
    let raw = unsafe { sys::btf__raw_data(src.as_ptr(), &mut size) };
    ensure!(!raw.is_null(), "cannot read the object's BTF");
    // SAFETY: `raw` holds `size` bytes of BTF.
    let btf = NonNull::new(unsafe { sys::btf__new(raw, size) }).context("cannot copy the object's BTF")?;
    let btf = OwnedBtf(btf);
    // SAFETY: a type of this BTF; a FUNC's `type` is its prototype.
    let entry = unsafe { sys::btf__type_by_id(btf.0.as_ptr(), like) };
    ensure!(!entry.is_null(), "the program's function record names no type");
    // SAFETY: a valid type of this BTF.
    let proto = unsafe { (*entry).__bindgen_anon_1.type_ };
    let mut ids = Vec::new();
    for name in names {
        let name = CString::new(*name).context("function name holds a NUL byte")?;
        // SAFETY: a BTF of ours, a C string and a type id of it.
        let id = unsafe { sys::btf__add_func(btf.0.as_ptr(), name.as_ptr(), sys::BTF_FUNC_GLOBAL as _, proto as _) };
        ensure!(id > 0, "cannot add the driver's function to the BTF: {}", std::io::Error::from_raw_os_error(-id));
        ids.push(id as u32);
    }
    // SAFETY: as above.
    let rc = unsafe { sys::btf__load_into_kernel(btf.0.as_ptr()) };
    ensure!(rc == 0, "the kernel refused the program's BTF: {}", std::io::Error::from_raw_os_error(-rc));
    Ok((btf, ids))
}
