//! The BPF programs another process has loaded and attached (a tool such as
//! opensnoop), found from its file descriptors: `/proc/PID/fdinfo` names
//! each program's and link's id, and a link's attach point (a tracepoint's
//! name, a kprobe's function, a uprobe's file). bpfbench takes its own
//! descriptor of each program by id to read its counters; nothing of the
//! tool's is reloaded, detached or changed.

use std::collections::BTreeMap;
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::Path;

use anyhow::{Context, Result};
use libbpf_rs::libbpf_sys as sys;

use super::prog_type::ProgKind;

/// One program of the process.
#[derive(Debug)]
pub struct RunningProgram {
    pub id: u32,
    /// bpfbench's own descriptor of it.
    pub fd: OwnedFd,
    pub name: String,
    pub kind: Option<ProgKind>,
    /// libbpf's name of its type ("tracepoint", "kprobe").
    pub type_name: String,
    /// Where its links attach it, written as sections are
    /// (`tp/syscalls/sys_enter_openat`, `kprobe/do_sys_openat2`).
    pub points: Vec<String>,
}

impl RunningProgram {
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Every BPF program `pid` holds, with where its links attach it, in id order.
pub fn programs_of(pid: u32) -> Result<Vec<RunningProgram>> {
    let dir = format!("/proc/{pid}/fdinfo");
    let mut programs: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {dir}"))?.flatten() {
        let Ok(text) = std::fs::read_to_string(entry.path()) else { continue };
        let fields: BTreeMap<&str, &str> =
            text.lines().filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim(), v.trim())).collect();
        let Some(id) = fields.get("prog_id").and_then(|v| v.parse::<u32>().ok()) else { continue };
        let points = programs.entry(id).or_default();
        let point = match fields.get("link_id").and_then(|v| v.parse::<u32>().ok()) {
            // Kernels before 6.13 name no perf link's event in fdinfo: ask the link.
            Some(link) if fields.get("link_type") == Some(&"perf") && !fields.contains_key("event_type") => {
                perf_link_point(link)
            }
            Some(_) => link_point(&fields),
            None => None,
        };
        if let Some(point) = point.filter(|p| !points.contains(p)) {
            points.push(point);
        }
    }
    let mut out = Vec::new();
    for (id, points) in programs {
        // SAFETY: a plain syscall; a negative result is an error.
        let raw = unsafe { sys::bpf_prog_get_fd_by_id(id) };
        if raw < 0 {
            // Unloaded since its fdinfo was read.
            continue;
        }
        // SAFETY: a new descriptor this process owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let info = super::prog_info::prog_info(fd.as_fd())?;
        let short: Vec<u8> = info.name.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        let name = full_name(fd.as_fd(), &info).unwrap_or_else(|| String::from_utf8_lossy(&short).into_owned());
        // SAFETY: returns a static string or NULL.
        let type_name = unsafe {
            let p = sys::libbpf_bpf_prog_type_str(info.type_);
            if p.is_null() {
                format!("type {}", info.type_)
            } else {
                std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        out.push(RunningProgram { id, fd, name, kind: ProgKind::of_libbpf(info.type_), type_name, points });
    }
    Ok(out)
}

/// The program's whole name, from its BTF (the kernel keeps 15 characters
/// of it: opensnoop's two programs are both "tracepoint__sys").
fn full_name(fd: BorrowedFd<'_>, info: &sys::bpf_prog_info) -> Option<String> {
    use std::os::fd::AsRawFd;
    if info.btf_id == 0 || info.nr_func_info == 0 {
        return None;
    }
    // SAFETY: zero is a valid bpf_prog_info; the kernel writes one func_info record.
    let mut func: sys::bpf_func_info = unsafe { std::mem::zeroed() };
    let mut query: sys::bpf_prog_info = unsafe { std::mem::zeroed() };
    query.nr_func_info = 1;
    query.func_info_rec_size = std::mem::size_of::<sys::bpf_func_info>() as u32;
    query.func_info = &mut func as *mut sys::bpf_func_info as u64;
    let mut len = std::mem::size_of::<sys::bpf_prog_info>() as u32;
    // SAFETY: as above.
    if unsafe { sys::bpf_prog_get_info_by_fd(fd.as_raw_fd(), &mut query, &mut len) } != 0 {
        return None;
    }
    btf_type_name(info.btf_id, func.type_id)
}

/// The name of type `type_id` in the kernel's BTF object `btf_id` (a
/// program's, or vmlinux's or a module's).
fn btf_type_name(btf_id: u32, type_id: u32) -> Option<String> {
    // SAFETY: BTF libbpf loads and this function frees; names live as long as it.
    unsafe {
        let btf = sys::btf__load_from_kernel_by_id(btf_id);
        if btf.is_null() {
            return None;
        }
        let t = sys::btf__type_by_id(btf, type_id);
        let name = (!t.is_null())
            .then(|| sys::btf__name_by_offset(btf, (*t).name_off))
            .filter(|p| !p.is_null())
            .map(|p| std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned());
        sys::btf__free(btf);
        name.filter(|n| !n.is_empty())
    }
}

/// A tracing link's point as a section names it (`fentry/vfs_read`): its
/// attach type, and its target function named by the kernel's BTF.
fn tracing_link_point(f: &BTreeMap<&str, &str>) -> Option<String> {
    let attach_type: u32 = f.get("attach_type")?.parse().ok()?;
    let prefix = match attach_type {
        sys::BPF_TRACE_FENTRY => "fentry",
        sys::BPF_TRACE_FEXIT => "fexit",
        sys::BPF_MODIFY_RETURN => "fmod_ret",
        sys::BPF_LSM_MAC => "lsm",
        _ => return None,
    };
    let function = btf_type_name(f.get("target_obj_id")?.parse().ok()?, f.get("target_btf_id")?.parse().ok()?)?;
    Some(format!("{prefix}/{function}"))
}

/// A link's attach point, from its fdinfo fields, as a section names it.
fn link_point(f: &BTreeMap<&str, &str>) -> Option<String> {
    match (f.get("link_type").copied()?, f.get("event_type").copied()) {
        ("perf", Some("tracepoint")) => {
            let name = f.get("tp_name")?;
            Some(match tracepoint_category(name) {
                Some(category) => format!("tp/{category}/{name}"),
                None => format!("tp/?/{name}"),
            })
        }
        ("perf", Some("kprobe")) => Some(format!("kprobe/{}", f.get("func_name")?)),
        ("perf", Some("kretprobe")) => Some(format!("kretprobe/{}", f.get("func_name")?)),
        ("perf", Some("uprobe")) => Some(format!("uprobe/{}:{}", f.get("file_name")?, f.get("offset")?)),
        ("perf", Some("uretprobe")) => Some(format!("uretprobe/{}:{}", f.get("file_name")?, f.get("offset")?)),
        ("raw_tracepoint", _) => Some(format!("raw_tp/{}", f.get("tp_name")?)),
        ("tracing", _) => {
            tracing_link_point(f).or_else(|| Some(format!("tracing/{}", f.get("attach_type").copied().unwrap_or("?"))))
        }
        (other, _) => Some(other.to_string()),
    }
}

/// A perf link's attach point, from the link itself (BPF_OBJ_GET_INFO_BY_FD,
/// 6.6 and later): a kprobe's function, a uprobe's file, a tracepoint's name.
fn perf_link_point(id: u32) -> Option<String> {
    use std::os::fd::AsRawFd;
    // SAFETY: a plain syscall; a negative result is an error.
    let raw = unsafe { sys::bpf_link_get_fd_by_id(id) };
    if raw < 0 {
        return None;
    }
    // SAFETY: a new descriptor this process owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let mut name = [0u8; 512];
    // SAFETY: zero is a valid bpf_link_info; the name's buffer is at the
    // same place for kprobes, uprobes and tracepoints (the union's first
    // field), with its length after it.
    let mut info: sys::bpf_link_info = unsafe { std::mem::zeroed() };
    unsafe {
        let event = &mut info.__bindgen_anon_1.perf_event.__bindgen_anon_1.kprobe;
        event.func_name = name.as_mut_ptr() as u64;
        event.name_len = name.len() as u32;
    }
    let mut len = std::mem::size_of::<sys::bpf_link_info>() as u32;
    // SAFETY: as above.
    if unsafe { sys::bpf_link_get_info_by_fd(fd.as_raw_fd(), &mut info, &mut len) } != 0 {
        return None;
    }
    let text = std::ffi::CStr::from_bytes_until_nul(&name).ok()?.to_string_lossy().into_owned();
    // SAFETY: the kernel filled the perf event's part of the union.
    let (kind, offset) = unsafe {
        let p = info.__bindgen_anon_1.perf_event;
        (p.type_, p.__bindgen_anon_1.uprobe.offset)
    };
    match kind {
        sys::BPF_PERF_EVENT_KPROBE => Some(format!("kprobe/{text}")),
        sys::BPF_PERF_EVENT_KRETPROBE => Some(format!("kretprobe/{text}")),
        sys::BPF_PERF_EVENT_UPROBE => Some(format!("uprobe/{text}:{offset:#x}")),
        sys::BPF_PERF_EVENT_URETPROBE => Some(format!("uretprobe/{text}:{offset:#x}")),
        sys::BPF_PERF_EVENT_TRACEPOINT => {
            Some(format!("tp/{}/{text}", tracepoint_category(&text).unwrap_or_else(|| "?".into())))
        }
        _ => None,
    }
}

/// The category of tracepoint `name` under the tracing filesystem.
fn tracepoint_category(name: &str) -> Option<String> {
    let events = Path::new("/sys/kernel/tracing/events");
    std::fs::read_dir(events)
        .ok()?
        .flatten()
        .find(|c| c.path().join(name).is_dir())
        .map(|c| c.file_name().to_string_lossy().into_owned())
}
