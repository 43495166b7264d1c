//! A user's BPF object file, opened and prepared with libbpf as its author
//! would load it (maps created, CO-RE and map relocations done), without
//! ever writing to it: the programs it holds, their final instructions, and
//! loading one of them as it is.
//!
//! libbpf-rs does not expose `bpf_object__prepare`, so this wraps the raw
//! libbpf calls; the object closes (and releases every fd) when dropped.

pub mod attach;
mod checks;
mod elf;
mod legacy_maps;
mod maps;
mod mend;
mod rust_license;
mod verifier_log;
pub mod verify;

use std::ffi::{CStr, CString, c_char};
use std::os::fd::{BorrowedFd, RawFd};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

use anyhow::{Context, Result, bail, ensure};
use libbpf_rs::libbpf_sys as sys;

pub use checks::{check_bpf_elf, is_bpf_elf};
pub use verifier_log::parse_stats;

use crate::kernel::libbpf_log;
use crate::kernel::prog_type::ProgKind;
use crate::record::VerifierStats;

/// What the object says about one of its programs.
#[derive(Debug, Clone)]
pub struct ProgramInfo {
    pub name: String,
    pub section: String,
    /// The kernel's name of its type ("xdp", "sched_cls", "kprobe", ...).
    pub type_name: String,
    /// Set for the types bpfbench times.
    pub kind: Option<ProgKind>,
}

/// Lines of the verifier's log an error shows.
const LOG_TAIL: usize = 20;
/// Verifier log level: statistics only (processed insns, states, time).
const BPF_LOG_STATS: u32 = 4;
/// Room for the statistics log (a few lines) and an error message.
const STATS_LOG_SIZE: usize = 64 * 1024;

/// What [`ObjectFile::open_mended`] mended: the static programs made
/// global, and the functions copied into `.text` for the sections that call
/// them (by name).
#[derive(Debug, Default, Clone)]
pub struct Mends {
    pub globalized: Vec<String>,
    pub copied: Vec<String>,
}

pub struct ObjectFile {
    obj: NonNull<sys::bpf_object>,
    path: PathBuf,
    elf: checks::ElfFacts,
    /// Where the verifier writes the selected program's statistics.
    log: Box<[u8]>,
    /// Maps whose legacy definitions were read as BTF-defined maps.
    legacy_maps: Vec<String>,
}

// SAFETY: the object is used from one thread at a time (it moves with its owner).
unsafe impl Send for ObjectFile {}

/// Every item of one of libbpf's lists, walked by its `next` function (null
/// starts the walk and ends it).
fn walk_list<T>(mut next: impl FnMut(*mut T) -> *mut T) -> Vec<*mut T> {
    let mut out = Vec::new();
    let mut item = next(std::ptr::null_mut());
    while !item.is_null() {
        out.push(item);
        item = next(item);
    }
    out
}

fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: libbpf returns NUL-terminated strings that live as long as the object.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn errno_error(rc: i32) -> std::io::Error {
    std::io::Error::from_raw_os_error(rc.abs())
}

impl ObjectFile {
    /// Opens `path` (checked first to be a BPF ELF object), in memory as
    /// Aya's loader reads it where libbpf reads it otherwise: legacy map
    /// definitions (a `maps` section, as aya-ebpf's `#[map]` writes them)
    /// as BTF-defined maps (see `legacy_maps`), and a Rust object that
    /// names no license as "GPL" (see `rust_license`).
    pub fn open(path: &Path) -> Result<ObjectFile> {
        let elf = check_bpf_elf(path)?;
        let file = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let legacy = legacy_maps::mend(&file).with_context(|| {
            format!("cannot read the legacy map definitions ('maps' section) of {}", path.display())
        })?;
        let (mended, legacy_maps) = match legacy {
            Some((image, maps)) => (Some(image), maps),
            None => (None, Vec::new()),
        };
        let licensed = rust_license::mend(mended.as_deref().unwrap_or(&file))
            .with_context(|| format!("cannot read the sections of {}", path.display()))?;
        let mut elf = elf;
        if licensed.is_some() {
            // The programs bpfbench builds around this one (the batch loop) carry its license.
            elf.license = rust_license::AYA_DEFAULT.into();
            elf.license_by_default = true;
        }
        if let Some(image) = licensed.or(mended) {
            let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            let obj = open_image(&stem, &image)
                .map_err(|why| anyhow::anyhow!("libbpf cannot open {} {why}", path.display()))?;
            let object = ObjectFile {
                obj,
                path: path.to_path_buf(),
                elf,
                log: vec![0u8; STATS_LOG_SIZE].into_boxed_slice(),
                legacy_maps,
            };
            return object.seeded();
        }
        let c_path = CString::new(path.as_os_str().as_encoded_bytes()).context("the path holds a NUL byte")?;
        // libbpf's reasons come to the error, not to standard error.
        libbpf_log::capture();
        libbpf_log::take();
        // SAFETY: a valid C string; NULL opts mean defaults.
        let raw = unsafe { sys::bpf_object__open_file(c_path.as_ptr(), std::ptr::null()) };
        let Some(obj) = NonNull::new(raw) else {
            let err = std::io::Error::last_os_error();
            bail!("libbpf cannot open {} {}", path.display(), libbpf_log::open_refusal(&err));
        };
        ObjectFile {
            obj,
            path: path.to_path_buf(),
            elf,
            log: vec![0u8; STATS_LOG_SIZE].into_boxed_slice(),
            legacy_maps: Vec::new(),
        }
        .seeded()
    }

    /// Opens an object compiled into bpfbench (see `bpf_object_bytes!`).
    pub fn open_memory(name: &str, bytes: &'static [u8]) -> Result<ObjectFile> {
        let obj = open_image(name, bytes)
            .map_err(|why| anyhow::anyhow!("libbpf cannot open bpfbench's own {name} object {why}"))?;
        let elf = checks::ElfFacts {
            license: "Dual BSD/GPL".into(),
            license_by_default: false,
            prog_array_targets: Vec::new(),
        };
        ObjectFile {
            obj,
            path: PathBuf::from(name),
            elf,
            log: vec![0u8; STATS_LOG_SIZE].into_boxed_slice(),
            legacy_maps: Vec::new(),
        }
        .seeded()
    }

    /// Opens `path` as a project's own loader takes it, for objects built
    /// for one (Cilium's), mended in memory where libbpf refuses them (the
    /// file is untouched; see `mend`): its static programs made global,
    /// functions that another section calls copied into `.text`.
    pub fn open_mended(path: &Path) -> Result<(ObjectFile, Mends)> {
        let elf = check_bpf_elf(path)?;
        let mut image = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let damaged = || format!("{} is a damaged ELF file", path.display());
        let globalized = mend::globalize_static_programs(&mut image).with_context(damaged)?;
        let copied = match mend::copy_called_programs_into_text(&image).with_context(damaged)? {
            Some((mended, copied)) => {
                image = mended;
                copied
            }
            None => Vec::new(),
        };
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let obj =
            open_image(&stem, &image).map_err(|why| anyhow::anyhow!("libbpf cannot open {} {why}", path.display()))?;
        let object = ObjectFile {
            obj,
            path: path.to_path_buf(),
            elf,
            log: vec![0u8; STATS_LOG_SIZE].into_boxed_slice(),
            legacy_maps: Vec::new(),
        }
        .seeded()?;
        Ok((object, Mends { globalized, copied }))
    }

    /// The object with its hash maps seeded as [`hash_seed`](crate::kernel::hash_seed) asks.
    fn seeded(self) -> Result<ObjectFile> {
        for m in self.maps_raw() {
            crate::kernel::hash_seed::apply_raw(m)?;
        }
        Ok(self)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The maps whose legacy definitions (a `maps` section) were read as
    /// BTF-defined maps on open; empty for most objects.
    pub fn legacy_maps(&self) -> &[String] {
        &self.legacy_maps
    }

    /// Whether the object names no license and loads under Aya's default, "GPL".
    pub fn license_by_default(&self) -> bool {
        self.elf.license_by_default
    }

    /// Sets the object's read-only data (`const volatile` globals) before
    /// `prepare`; `value` is the skeleton's type for the `.rodata` section.
    pub fn set_rodata<T: bytemuck::Pod>(&mut self, value: &T) -> Result<()> {
        let m = self
            .maps_raw()
            .into_iter()
            // SAFETY: maps of this object.
            .find(|&m| cstr(unsafe { sys::bpf_map__name(m) }).ends_with(".rodata"))
            .with_context(|| format!("{} has no .rodata", self.path.display()))?;
        let bytes = bytemuck::bytes_of(value);
        // SAFETY: libbpf copies `bytes`; their size must be the section's.
        let rc = unsafe { sys::bpf_map__set_initial_value(m, bytes.as_ptr().cast(), bytes.len() as _) };
        if rc != 0 {
            bail!("setting {}'s .rodata: {}", self.path.display(), errno_error(rc));
        }
        Ok(())
    }

    /// The initial bytes of data section `section` (`.rodata`, `.data`,
    /// `.bss`, `.rodata.config`, `.data.NAME`) before `prepare`.
    pub fn section_data(&self, section: &str) -> Result<&[u8]> {
        let (data, size) = self.section_raw(section)?;
        // SAFETY: `size` bytes at `data`, libbpf's copy of the section, borrowed through self.
        Ok(unsafe { std::slice::from_raw_parts(data, size) })
    }

    /// The same, to change before `prepare`: libbpf creates the section's
    /// map from them (and freezes a `.rodata*` one after load, so the
    /// verifier sees its values as constants).
    pub fn section_data_mut(&mut self, section: &str) -> Result<&mut [u8]> {
        let (data, size) = self.section_raw(section)?;
        // SAFETY: as above, borrowed mutably through self.
        Ok(unsafe { std::slice::from_raw_parts_mut(data, size) })
    }

    fn section_raw(&self, section: &str) -> Result<(*mut u8, usize)> {
        let c = CString::new(section).context("the section name holds a NUL byte")?;
        // SAFETY: the object's own map list; libbpf finds an internal map by its section's name.
        let m = unsafe { sys::bpf_object__find_map_by_name(self.obj.as_ptr(), c.as_ptr()) };
        ensure!(!m.is_null(), "{} has no data section {section}", self.path.display());
        let mut size = 0;
        // SAFETY: a map of this object; the memory lives as long as the object.
        let data = unsafe { sys::bpf_map__initial_value(m, &mut size) };
        ensure!(!data.is_null(), "{}: {section} has no initial data to set", self.path.display());
        Ok((data.cast::<u8>(), size as usize))
    }

    /// The file's name without `.o` or `.bpf.o`.
    pub fn stem(&self) -> String {
        let name = self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        name.trim_end_matches(".o").trim_end_matches(".bpf").to_string()
    }

    fn programs_raw(&self) -> Vec<*mut sys::bpf_program> {
        // SAFETY: iterating the object's own program list.
        walk_list(|p| unsafe { sys::bpf_object__next_program(self.obj.as_ptr(), p) })
    }

    fn program_raw(&self, name: &str) -> Result<*mut sys::bpf_program> {
        self.programs_raw()
            .into_iter()
            // SAFETY: a program of this object.
            .find(|&p| cstr(unsafe { sys::bpf_program__name(p) }) == name)
            .with_context(|| format!("{} has no program '{name}'", self.path.display()))
    }

    /// Gives every program whose section name libbpf does not know (its
    /// type left unspecified) the type `kind`: objects built for their own
    /// loader name sections their way (Cilium's `xdp/entry`, `xdp/tail`).
    /// Returns how many programs it typed.
    pub fn assume_type(&mut self, kind: ProgKind) -> Result<usize> {
        self.assume_types(|_| Some(kind))
    }

    /// As [`ObjectFile::assume_type`], the type of each program chosen by
    /// its section name (`None`: left as it is).
    pub fn assume_types(&mut self, kind_of: impl Fn(&str) -> Option<ProgKind>) -> Result<usize> {
        let mut typed = 0;
        for p in self.programs_raw() {
            // SAFETY: a program of this object, before load.
            if unsafe { sys::bpf_program__type(p) } != sys::BPF_PROG_TYPE_UNSPEC {
                continue;
            }
            // SAFETY: as above.
            let Some(kind) = kind_of(&cstr(unsafe { sys::bpf_program__section_name(p) })) else { continue };
            // SAFETY: as above.
            let rc = unsafe { sys::bpf_program__set_type(p, kind.desc().libbpf_type) };
            if rc != 0 {
                bail!(
                    "setting the type of program '{}': {}",
                    cstr(unsafe { sys::bpf_program__name(p) }),
                    errno_error(rc)
                );
            }
            // SAFETY: as above.
            unsafe { sys::bpf_program__set_expected_attach_type(p, kind.desc().expected_attach) };
            typed += 1;
        }
        Ok(typed)
    }

    /// Every program of the object, in file order.
    pub fn programs(&self) -> Vec<ProgramInfo> {
        self.programs_raw()
            .into_iter()
            .map(|p| {
                // SAFETY: a program of this object.
                let (name, section, ty) = unsafe {
                    (
                        cstr(sys::bpf_program__name(p)),
                        cstr(sys::bpf_program__section_name(p)),
                        sys::bpf_program__type(p),
                    )
                };
                let kind = ProgKind::of_libbpf(ty);
                // SAFETY: returns a static string or NULL.
                let type_name = cstr(unsafe { sys::libbpf_bpf_prog_type_str(ty) });
                ProgramInfo { name, section, type_name, kind }
            })
            .collect()
    }

    /// The program to time: `name`, or the only one. Errors say which
    /// programs there are and which types bpfbench times.
    pub fn select(&self, name: Option<&str>) -> Result<(ProgramInfo, ProgKind)> {
        let all = self.programs();
        let file = self.path.display();
        let listed = || all.iter().map(|p| format!("{} ({})", p.name, p.section)).collect::<Vec<_>>().join(", ");
        let p = match name {
            Some(n) => all
                .iter()
                .find(|p| p.name == n)
                .with_context(|| format!("{file} has no program '{n}'; it has {}", listed()))?,
            None => match all.as_slice() {
                [] => bail!("{file} holds no BPF program"),
                [one] => one,
                _ => bail!("{file} holds several programs: {}; choose one with --program NAME", listed()),
            },
        };
        match p.kind {
            Some(kind) => Ok((p.clone(), kind)),
            None if p.type_name == "unspec" => bail!(
                "program '{}' in {file} has no type libbpf knows (section {}); if the section is named for its own loader, give the type with --program-type TYPE, one of {}",
                p.name,
                p.section,
                ProgKind::names(|_| true)
            ),
            None => bail!(
                "program '{}' in {file} is a {} program (section {}); bpfbench times {} programs",
                p.name,
                p.type_name,
                p.section,
                ProgKind::names(|_| true)
            ),
        }
    }

    /// Loads only `program` and the programs the object's prog arrays are
    /// declared with (the others stay unloaded), pins nothing, and makes
    /// map `name` use the pinned map at `path` for each (name, path) in `reuse`.
    pub fn configure(&mut self, program: &str, reuse: &[(String, PathBuf)]) -> Result<()> {
        for p in self.programs_raw() {
            // SAFETY: a program of this object, before load.
            let name = cstr(unsafe { sys::bpf_program__name(p) });
            let load = name == program || self.elf.prog_array_targets.contains(&name);
            unsafe { sys::bpf_program__set_autoload(p, load) };
        }
        let target = self.program_raw(program)?;
        // SAFETY: the buffer lives in self, as long as the object.
        let rc = unsafe {
            sys::bpf_program__set_log_level(target, BPF_LOG_STATS);
            sys::bpf_program__set_log_buf(target, self.log.as_mut_ptr().cast(), self.log.len() as _)
        };
        if rc != 0 {
            bail!("setting the verifier log of '{program}': {}", errno_error(rc));
        }
        // A pinned map would outlive the run; bpfbench never pins.
        for m in self.maps_raw() {
            // SAFETY: a map of this object, before prepare.
            let rc = unsafe { sys::bpf_map__set_pin_path(m, std::ptr::null()) };
            if rc != 0 {
                bail!("unpinning map '{}': {}", cstr(unsafe { sys::bpf_map__name(m) }), errno_error(rc));
            }
        }
        self.reuse_pinned(reuse)
    }

    /// Makes map `name` use the pinned map at `path` for each (name, path)
    /// in `reuse` (before load).
    pub fn reuse_pinned(&mut self, reuse: &[(String, PathBuf)]) -> Result<()> {
        for (name, path) in reuse {
            let m = self.map_raw(name).with_context(|| {
                format!("--map-pin {name}=...: {} has no map '{name}'; {}", self.path.display(), self.maps_listed())
            })?;
            let fd = crate::kernel::bpffs::open_pinned_map(path)
                .with_context(|| format!("--map-pin {name}={}", path.display()))?;
            // SAFETY: a valid fd; libbpf dups it.
            let rc = unsafe { sys::bpf_map__reuse_fd(m, std::os::fd::AsRawFd::as_raw_fd(&fd)) };
            if rc != 0 {
                bail!(
                    "--map-pin {name}={}: the pinned map does not match the object's '{name}' (type, key, value or size): {}",
                    path.display(),
                    errno_error(rc)
                );
            }
        }
        Ok(())
    }

    /// Loads every program of the object, as a test framework's loader
    /// does (a test file's tests share its maps), pinning nothing.
    /// A refusal names the program and carries the verifier's reason.
    pub fn load_every_program(&mut self) -> Result<()> {
        for m in self.maps_raw() {
            // SAFETY: a map of this object, before load.
            let rc = unsafe { sys::bpf_map__set_pin_path(m, std::ptr::null()) };
            if rc != 0 {
                bail!("unpinning map '{}': {}", cstr(unsafe { sys::bpf_map__name(m) }), errno_error(rc));
            }
        }
        libbpf_log::take();
        // SAFETY: an opened object, loaded once.
        let rc = unsafe { sys::bpf_object__load(self.obj.as_ptr()) };
        if rc != 0 {
            let said = libbpf_log::tail(LOG_TAIL);
            let reason = load_reason(&said).or_else(|| refusal(&said)).unwrap_or_else(|| one_line(&said));
            bail!("loading {}: {reason} ({})", self.path.display(), errno_error(rc));
        }
        Ok(())
    }

    /// The BTF declaration tags on the object's functions: (function, tag),
    /// such as Cilium's `tail:cilium_calls/7` on a tail-call program.
    pub fn function_tags(&self) -> Vec<(String, String)> {
        use libbpf_rs::btf::types::DeclTag;
        use libbpf_rs::btf::{BtfType, ReferencesType};
        let Some(btf) = self.typed_btf() else { return Vec::new() };
        let mut out = Vec::new();
        for tag in btf.type_by_kind::<DeclTag<'_>>() {
            if tag.component_index().is_some() {
                continue;
            }
            let Some(name) = tag.name().map(|n| n.to_string_lossy().into_owned()) else { continue };
            let target: Option<BtfType<'_>> = btf.type_by_id(tag.referenced_type_id());
            if let Some(func) = target.and_then(|t| t.name().map(|n| n.to_string_lossy().into_owned())) {
                out.push((func, name));
            }
        }
        out
    }

    /// Leaves `program` unloaded when the object is loaded.
    pub fn skip_loading(&mut self, program: &str) -> Result<()> {
        let p = self.program_raw(program)?;
        // SAFETY: a program of this object, before load.
        unsafe { sys::bpf_program__set_autoload(p, false) };
        Ok(())
    }

    /// Loads `programs` too (after `configure`): the programs a prog array
    /// slot is filled with. Each must be a program of this object.
    pub fn also_load(&mut self, programs: &[String]) -> Result<()> {
        for name in programs {
            let p = self.program_raw(name).map_err(|_| {
                let names: Vec<String> = self.programs().into_iter().map(|p| p.name).collect();
                anyhow::anyhow!(
                    "a prog array slot names program '{name}', which {} does not have; its programs are {}",
                    self.path.display(),
                    names.join(", ")
                )
            })?;
            // SAFETY: a program of this object, before load.
            unsafe { sys::bpf_program__set_autoload(p, true) };
        }
        Ok(())
    }

    /// Creates the maps and relocates the programs (`bpf_object__prepare`).
    pub fn prepare(&mut self) -> Result<()> {
        libbpf_log::take();
        // SAFETY: an open object, prepared once.
        let rc = unsafe { sys::bpf_object__prepare(self.obj.as_ptr()) };
        if rc != 0 {
            bail!(
                "libbpf cannot prepare {} ({}): {}",
                self.path.display(),
                errno_error(rc),
                one_line(&libbpf_log::tail(3))
            );
        }
        Ok(())
    }

    /// The program's final instructions after `prepare`, subprograms appended.
    pub fn insns(&self, program: &str) -> Result<Vec<crate::insn::Insn>> {
        let p = self.program_raw(program)?;
        // SAFETY: after prepare, insns/insn_cnt describe libbpf's copy of the program.
        let (ptr, n) = unsafe { (sys::bpf_program__insns(p), sys::bpf_program__insn_cnt(p)) };
        if ptr.is_null() || n == 0 {
            bail!("program '{program}' has no instructions");
        }
        Ok(super::from_kernel(unsafe { std::slice::from_raw_parts(ptr, n as usize) }))
    }

    /// The program's BTF function records after `prepare` (empty without BTF).
    pub fn func_info(&self, program: &str) -> Result<Vec<sys::bpf_func_info>> {
        let p = self.program_raw(program)?;
        // SAFETY: as for insns; NULL or an error pointer when there is none.
        let (ptr, n) = unsafe { (sys::bpf_program__func_info(p), sys::bpf_program__func_info_cnt(p)) };
        if ptr.is_null() || (ptr as isize) < 0 || n == 0 {
            return Ok(Vec::new());
        }
        Ok(unsafe { std::slice::from_raw_parts(ptr, n as usize) }.to_vec())
    }

    /// The source lines of the program's instructions after `prepare`
    /// (empty when the object has no line records).
    pub fn line_table(&self, program: &str) -> Result<crate::kernel::lines::LineTable> {
        let p = self.program_raw(program)?;
        let btf = self.btf().map_or(std::ptr::null(), |b| b.as_ptr().cast_const());
        // SAFETY: a program of this object, whose BTF is `btf`.
        Ok(unsafe { crate::kernel::lines::LineTable::of_program(p, btf) })
    }

    /// The object's BTF as libbpf fixed it up, if it has any.
    pub fn btf(&self) -> Option<NonNull<sys::btf>> {
        // SAFETY: owned by the object.
        NonNull::new(unsafe { sys::bpf_object__btf(self.obj.as_ptr()) })
    }

    /// The object's BTF through libbpf-rs's typed view.
    pub fn typed_btf(&self) -> Option<libbpf_rs::btf::Btf<'_>> {
        // SAFETY: the object outlives the borrow.
        libbpf_rs::btf::Btf::from_bpf_object(unsafe { self.obj.as_ref() }).ok().flatten()
    }

    /// The object's license string (GPL-only helpers need a GPL license).
    pub fn license(&self) -> &str {
        &self.elf.license
    }

    /// Expected attach type and load flags the program's section asks for.
    pub fn load_attrs(&self, program: &str) -> Result<(sys::bpf_attach_type, u32)> {
        let p = self.program_raw(program)?;
        // SAFETY: a program of this object.
        let attach = unsafe { sys::bpf_program__expected_attach_type(p) };
        // xdp.frags sections: libbpf adds the flag only while loading.
        let section = cstr(unsafe { sys::bpf_program__section_name(p) });
        let frags = if section.starts_with("xdp.frags") { sys::BPF_F_XDP_HAS_FRAGS } else { 0 };
        Ok((attach, unsafe { sys::bpf_program__flags(p) } | frags))
    }

    /// Loads the configured program into the kernel, as its author's loader
    /// would, and returns the verifier's statistics. A refusal carries the
    /// verifier's last lines.
    pub fn load(&mut self, program: &str) -> Result<VerifierStats> {
        self.log.fill(0);
        libbpf_log::take();
        // SAFETY: a prepared object.
        let rc = unsafe { sys::bpf_object__load(self.obj.as_ptr()) };
        let log = self.verifier_log();
        let said = one_line(&libbpf_log::tail(LOG_TAIL));
        if rc != 0 && log.trim().is_empty() && !said.contains("BPF program load failed") {
            // No word from the verifier, and libbpf made no load call that
            // failed: libbpf refused before the kernel saw the program.
            let hint = match said.contains("missing BPF prog type") {
                true => "; its section names no type libbpf knows: give it with --program-type xdp|tc",
                false => "",
            };
            bail!(
                "libbpf refused to load program '{program}' of {} before the kernel's verifier saw it: {said} ({}){hint}",
                self.path.display(),
                errno_error(rc)
            );
        }
        if rc != 0 {
            let reason = refusal(&log).unwrap_or(said);
            let processed =
                parse_stats(&log).processed_insns.map(|n| format!(" after {n} instructions")).unwrap_or_default();
            bail!(
                "the kernel's verifier refused program '{program}' of {}{processed}: {reason} ({}; 'bpfbench verifier {}' shows its figures)",
                self.path.display(),
                errno_error(rc),
                self.path.display()
            );
        }
        let fd = self.prog_fd(program)?;
        let mut stats = parse_stats(&log);
        crate::kernel::prog_info::fill_from_kernel(fd, &mut stats)?;
        Ok(stats)
    }

    /// The verifier's figures from the last load, refused or not.
    pub fn last_stats(&self) -> VerifierStats {
        parse_stats(&self.verifier_log())
    }

    /// The verifier's reason, when the last load was refused.
    pub fn last_refusal(&self) -> Option<String> {
        refusal(&self.verifier_log())
    }

    /// What the verifier wrote for the configured program.
    fn verifier_log(&self) -> String {
        let end = self.log.iter().position(|&b| b == 0).unwrap_or(self.log.len());
        String::from_utf8_lossy(&self.log[..end]).into_owned()
    }

    /// The loaded program's descriptor.
    pub fn prog_fd(&self, program: &str) -> Result<BorrowedFd<'_>> {
        let p = self.program_raw(program)?;
        // SAFETY: a program of this object.
        let fd: RawFd = unsafe { sys::bpf_program__fd(p) };
        if fd < 0 {
            bail!("program '{program}' is not loaded");
        }
        // SAFETY: the fd stays open as long as the object.
        Ok(unsafe { BorrowedFd::borrow_raw(fd) })
    }

    /// What the userspace runtime needs of the loaded object: every loaded
    /// program's final instructions, source lines and kernel id (the
    /// kernel's verifier accepted each), and the maps.
    pub fn loaded_code(&self) -> Result<crate::kernel::prepared::PreparedCode> {
        let mut code = crate::kernel::prepared::PreparedCode { maps: self.created_maps()?, ..Default::default() };
        for p in self.programs_raw() {
            // SAFETY: a program of this object.
            let name = cstr(unsafe { sys::bpf_program__name(p) });
            let Ok(fd) = self.prog_fd(&name) else { continue };
            code.prog_ids.insert(name.clone(), crate::kernel::prog_info::prog_id(fd)?);
            code.programs.insert(name.clone(), self.insns(&name)?);
            code.lines.insert(name.clone(), self.line_table(&name)?);
            code.verified.insert(name);
        }
        Ok(code)
    }
}

impl Drop for ObjectFile {
    fn drop(&mut self) {
        // SAFETY: we own the object; this closes its programs and maps.
        unsafe { sys::bpf_object__close(self.obj.as_ptr()) };
    }
}

/// libbpf's object of the ELF image `image`, named `name`; where libbpf
/// refuses it, "(errno): libbpf's last lines" on one line. libbpf parses the image during the
/// call and keeps copies of what it needs (instructions, BTF, the name).
fn open_image(name: &str, image: &[u8]) -> Result<NonNull<sys::bpf_object>> {
    let c_name = CString::new(name).context("the name holds a NUL byte")?;
    // SAFETY: zero is a valid opts; libbpf reads `sz` first.
    let mut opts: sys::bpf_object_open_opts = unsafe { std::mem::zeroed() };
    opts.sz = size_of::<sys::bpf_object_open_opts>() as _;
    opts.object_name = c_name.as_ptr();
    // libbpf's reasons come to the error, not to standard error.
    libbpf_log::capture();
    libbpf_log::take();
    // SAFETY: the image and the name outlive the call.
    let raw = unsafe { sys::bpf_object__open_mem(image.as_ptr().cast(), image.len() as _, &opts) };
    NonNull::new(raw).ok_or_else(|| anyhow::anyhow!("{}", libbpf_log::open_refusal(&std::io::Error::last_os_error())))
}

/// The verifier's reason for a refusal: its last line that is not a statistic.
pub fn refusal(log: &str) -> Option<String> {
    log.lines()
        .map(str::trim)
        .rev()
        .find(|l| {
            !l.is_empty()
                && !l.starts_with("processed ")
                && !l.starts_with("verification time")
                && !l.starts_with("stack depth")
        })
        .map(str::to_string)
}

/// What libbpf said of the program that stopped an object's load: the
/// line naming its cause ("prog 'x': failed to find kernel BTF type ID of
/// 'f'", "BPF program load failed: -EPERM" and the hint after it), not
/// the summary lines that follow ("failed to load object").
fn load_reason(said: &str) -> Option<String> {
    let lines: Vec<&str> = said.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let cause = lines
        .iter()
        .position(|l| l.contains("failed to find") || l.contains("load failed") || l.contains("failed to resolve"))?;
    let mut reason = lines[cause].to_string();
    if let Some(hint) = lines.get(cause + 1).filter(|l| l.contains("permission error")) {
        reason = format!("{reason}; {hint}");
    }
    Some(reason)
}

/// A libbpf message on one line.
fn one_line(s: &str) -> String {
    s.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
}
