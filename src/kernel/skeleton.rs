//! Loading libbpf-rs skeletons, and owned handles on their parts.
//!
//! Workloads keep duplicated descriptors of their skeleton's programs and
//! maps, so their state does not borrow the skeleton (which borrows its
//! open-object storage).

use std::os::fd::{AsFd, OwnedFd};

use anyhow::{Context, Result, anyhow, bail};
use libbpf_rs::skel::OpenSkel;
use libbpf_rs::{MapCore, MapHandle};

use crate::kernel::libbpf_log;

/// Lines of the verifier's log an error shows.
const VERIFIER_LOG_LINES: usize = 25;

/// Loads an opened skeleton; when the kernel refuses it, the error names
/// `what` and carries the tail of the verifier's log.
pub fn load<'obj, O: OpenSkel<'obj>>(mut open: O, what: &str) -> Result<O::Output> {
    super::hash_seed::apply(open.open_object_mut())?;
    libbpf_log::take();
    open.load().map_err(|e| {
        anyhow!("the kernel refused {what} ({e}); verifier log tail:\n{}", libbpf_log::tail(VERIFIER_LOG_LINES))
    })
}

/// An owned handle on a skeleton map.
pub fn map_handle<T: std::fmt::Debug>(map: &libbpf_rs::MapImpl<'_, T>) -> Result<MapHandle> {
    MapHandle::try_from(map).with_context(|| format!("duplicating map {:?}", map.name()))
}

/// An owned handle on the map behind `fd` (opened again by its id).
pub fn map_handle_from_fd(fd: std::os::fd::BorrowedFd<'_>) -> Result<MapHandle> {
    let info = libbpf_rs::MapInfo::new(fd).context("reading a map's info")?;
    MapHandle::from_map_id(info.info.id).context("opening a map by its id")
}

/// An owned descriptor of a loaded skeleton program.
pub fn prog_fd(p: &libbpf_rs::Program<'_>) -> Result<OwnedFd> {
    p.as_fd().try_clone_to_owned().context("duplicating program fd")
}

/// Declares skeleton types plain bytes (`bytemuck::Pod`), so they can be
/// written to and read from maps as they are.
///
/// Only for types libbpf-cargo generated from BTF: `#[repr(C)]` structs with
/// an explicit field for every padding gap, and enums as
/// `#[repr(transparent)]` integers. Not for structs holding a union whose
/// members differ in size (the bytes beyond the smallest member can be
/// uninitialised).
#[macro_export]
macro_rules! impl_pod {
    ($($t:ty),+ $(,)?) => {$(
        // SAFETY: see the macro's documentation: every bit pattern is a
        // valid value and no byte of the type is padding.
        unsafe impl bytemuck::Zeroable for $t {}
        unsafe impl bytemuck::Pod for $t {}
    )+};
}

/// Where a built-in workload's BPF object comes from: the build compiled
/// into bpfbench, or a file built from the same source (two such files are
/// what `bpfbench ab --workload NAME A.o B.o` compares).
#[derive(Debug, Clone)]
pub enum ObjectSource {
    Builtin { name: &'static str, bytes: &'static [u8] },
    File(std::path::PathBuf),
}

impl ObjectSource {
    /// How the source is named in messages.
    pub fn label(&self) -> String {
        match self {
            ObjectSource::Builtin { name, .. } => format!("bpfbench's own {name}.bpf.o"),
            ObjectSource::File(p) => p.display().to_string(),
        }
    }

    /// Opens the object with libbpf, ready to be configured and loaded.
    pub fn open(&self) -> Result<libbpf_rs::OpenObject> {
        libbpf_log::capture();
        libbpf_log::take();
        let opened = match self {
            ObjectSource::Builtin { name, bytes } => {
                libbpf_rs::ObjectBuilder::default().name(*name)?.open_memory(bytes)
            }
            ObjectSource::File(path) => {
                crate::kernel::object::check_bpf_elf(path)?;
                libbpf_rs::ObjectBuilder::default().open_file(path)
            }
        };
        opened.map_err(|e| anyhow!("libbpf cannot open {} {}", self.label(), libbpf_log::open_refusal(&e)))
    }
}

/// Loads an opened object; a refusal names `what` and carries the tail of
/// the verifier's log.
pub fn load_object(mut open: libbpf_rs::OpenObject, what: &str) -> Result<libbpf_rs::Object> {
    super::hash_seed::apply(&mut open)?;
    libbpf_log::take();
    open.load().map_err(|e| {
        anyhow!("the kernel refused {what} ({e}); verifier log tail:\n{}", libbpf_log::tail(VERIFIER_LOG_LINES))
    })
}

/// Loads an opened object as [`load_object`] does, after libbpf prepared
/// it and the userspace runtime took its programs' instructions.
pub fn load_object_keeping_code(
    mut open: libbpf_rs::OpenObject,
    what: &str,
) -> Result<(libbpf_rs::Object, crate::kernel::prepared::PreparedCode)> {
    super::hash_seed::apply(&mut open)?;
    let mut code =
        crate::kernel::prepared::PreparedCode::capture(&mut open).with_context(|| format!("preparing {what}"))?;
    let obj = load_object(open, what)?;
    code.mark_verified(&obj);
    Ok((obj, code))
}

/// The part of an opened object named `name` (a map name may carry libbpf's
/// object prefix, as `.rodata` sections do).
fn find_named<T>(
    items: impl Iterator<Item = T>,
    name_of: impl Fn(&T) -> String,
    name: &str,
    kind: &str,
    source: &str,
) -> Result<T> {
    let mut names = Vec::new();
    for item in items {
        let n = name_of(&item);
        if n == name || (name.starts_with('.') && n.ends_with(name)) {
            return Ok(item);
        }
        names.push(n);
    }
    bail!("{source} has no {kind} '{name}' (it has: {}); was it built from this bpfbench's source?", names.join(", "))
}

/// An opened object's map `name`, to configure before loading.
pub fn open_map_mut<'o>(
    open: &'o mut libbpf_rs::OpenObject,
    name: &str,
    source: &str,
) -> Result<libbpf_rs::OpenMapMut<'o>> {
    find_named(open.maps_mut(), |m| m.name().to_string_lossy().into_owned(), name, "map", source)
}

/// Edits the initial value of an opened object's global-variable section
/// (`.rodata`, `.bss`) through `T`, the skeleton's type for it; a build
/// whose section has another size is refused.
pub fn edit_section<T: bytemuck::Pod>(
    open: &mut libbpf_rs::OpenObject,
    section: &str,
    source: &str,
    edit: impl FnOnce(&mut T),
) -> Result<()> {
    let mut m = open_map_mut(open, section, source)?;
    let bytes = m.initial_value_mut().with_context(|| format!("{source}'s {section} has no data"))?;
    if bytes.len() != size_of::<T>() {
        bail!(
            "{source}'s {section} holds {} bytes where this bpfbench expects {}; build it from the same source",
            bytes.len(),
            size_of::<T>()
        );
    }
    let mut value: T = bytemuck::pod_read_unaligned(bytes);
    edit(&mut value);
    bytes.copy_from_slice(bytemuck::bytes_of(&value));
    Ok(())
}

/// An owned handle on a loaded object's map `name`.
pub fn object_map(obj: &libbpf_rs::Object, name: &str, source: &str) -> Result<MapHandle> {
    let m = find_named(obj.maps(), |m| m.name().to_string_lossy().into_owned(), name, "map", source)?;
    MapHandle::try_from(&m).with_context(|| format!("duplicating map '{name}'"))
}

/// [`object_map`], checked to have the key and value sizes of the host's
/// types: a build from other headers is refused before it is written to.
pub fn object_map_sized(
    obj: &libbpf_rs::Object,
    name: &str,
    key: usize,
    value: usize,
    source: &str,
) -> Result<MapHandle> {
    let m = object_map(obj, name, source)?;
    if (m.key_size() as usize, m.value_size() as usize) != (key, value) {
        bail!(
            "map '{name}' of {source} has {}-byte keys and {}-byte values where this bpfbench expects {key} and {value}; build it from the same headers",
            m.key_size(),
            m.value_size()
        );
    }
    Ok(m)
}

/// An owned descriptor of a loaded object's program `name`.
pub fn object_prog(obj: &libbpf_rs::Object, name: &str, source: &str) -> Result<OwnedFd> {
    let p = find_named(obj.progs(), |p| p.name().to_string_lossy().into_owned(), name, "program", source)?;
    p.as_fd().try_clone_to_owned().context("duplicating program fd")
}

/// Leaves the programs named `names` unloaded (where the object has them):
/// the loop constructs a kernel lacks, which it would refuse.
pub fn leave_unloaded(open: &mut libbpf_rs::OpenObject, names: &[String]) {
    for mut prog in open.progs_mut() {
        if names.iter().any(|n| prog.name().to_str() == Some(n.as_str())) {
            prog.set_autoload(false);
        }
    }
}
