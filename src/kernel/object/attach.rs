//! A loaded program attached at its point, as its loader would attach it,
//! and the link that keeps it there: dropping the link detaches it. Also
//! the empty program of a type (`attach_empty.bpf.c`), loaded for a point
//! to stand beside a user's program on the same hook.

use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::Path;
use std::ptr::NonNull;

use anyhow::{Context, Result, bail};
use libbpf_rs::libbpf_sys as sys;

use super::{ObjectFile, cstr, errno_error};
use crate::kernel::attach_point::{AttachPoint, SoftwareEvent, TrampolineSide};
use crate::kernel::libbpf_log;
use crate::kernel::prog_type::ProgKind;

/// A program attached while this lives: one link, or one a CPU for a
/// perf event opened on each.
#[derive(Debug)]
pub struct Link {
    raws: Vec<NonNull<sys::bpf_link>>,
}

// SAFETY: a link is an fd and libbpf's bookkeeping, used from one thread at a time.
unsafe impl Send for Link {}

impl Drop for Link {
    fn drop(&mut self) {
        for raw in &self.raws {
            // SAFETY: a link libbpf made, destroyed once (a perf event's closes its event).
            unsafe { sys::bpf_link__destroy(raw.as_ptr()) };
        }
    }
}

/// What attaching needs besides the program and the point.
#[derive(Debug, Clone, Copy)]
pub struct AttachContext<'a> {
    /// The cgroup a cgroup hook attaches to (bpfbench's own).
    pub cgroup: Option<BorrowedFd<'a>>,
    /// The executable of a bare `uprobe` or `usdt` section: bpfbench's.
    pub own_binary: &'a Path,
    /// bpfbench's trigger function and USDT probe (provider, name).
    pub own_function: &'a str,
    pub own_usdt: (&'a str, &'a str),
    /// The sockmap an sk_msg or sk_skb program attaches to (its object's).
    pub sockmap: Option<BorrowedFd<'a>>,
}

fn c(s: &str) -> Result<std::ffi::CString> {
    std::ffi::CString::new(s).with_context(|| format!("'{s}' holds a NUL byte"))
}

impl ObjectFile {
    /// Before load: where a tracing or LSM program's trampoline goes (the
    /// kernel fixes it at load), for a point that `--attach` gives.
    pub fn set_attach_target(&mut self, program: &str, point: &AttachPoint) -> Result<()> {
        let target = match point {
            AttachPoint::Trampoline { func, .. } => func,
            AttachPoint::BtfTracepoint { name } => name,
            _ => return Ok(()),
        };
        let p = self.program_raw(program)?;
        let attach = match point {
            AttachPoint::Trampoline { side: TrampolineSide::Fentry, .. } => sys::BPF_TRACE_FENTRY,
            AttachPoint::Trampoline { side: TrampolineSide::Fexit, .. } => sys::BPF_TRACE_FEXIT,
            AttachPoint::Trampoline { side: TrampolineSide::FmodRet, .. } => sys::BPF_MODIFY_RETURN,
            AttachPoint::Trampoline { side: TrampolineSide::Lsm, .. } => sys::BPF_LSM_MAC,
            _ => sys::BPF_TRACE_RAW_TP,
        };
        let name = c(target)?;
        libbpf_log::take();
        // SAFETY: a program of this object, before load; libbpf copies the name.
        let rc = unsafe {
            sys::bpf_program__set_expected_attach_type(p, attach);
            sys::bpf_program__set_attach_target(p, 0, name.as_ptr())
        };
        if rc != 0 {
            bail!(
                "--attach {point}: the kernel's BTF has no '{target}' to attach program '{program}' to: {} ({})",
                one_line_log(),
                errno_error(rc)
            );
        }
        Ok(())
    }

    /// Attaches loaded `program` at `point`. A refusal names the point,
    /// libbpf's reason and, where the kernel lacks the mechanism, where it
    /// can run instead.
    pub fn attach(&self, program: &str, point: &AttachPoint, ctx: &AttachContext<'_>) -> Result<Link> {
        if let AttachPoint::PerfEvent { event } = point {
            return self.attach_perf_event(program, *event);
        }
        let p = self.program_raw(program)?;
        libbpf_log::take();
        // SAFETY: a loaded program of this object; every string lives through the call.
        let raw = unsafe {
            match point {
                AttachPoint::Tracepoint { category, name } => {
                    sys::bpf_program__attach_tracepoint(p, c(category)?.as_ptr(), c(name)?.as_ptr())
                }
                AttachPoint::RawTracepoint { name } => sys::bpf_program__attach_raw_tracepoint(p, c(name)?.as_ptr()),
                AttachPoint::BtfTracepoint { .. } => sys::bpf_program__attach_trace(p),
                AttachPoint::Trampoline { side: TrampolineSide::Lsm, .. } => sys::bpf_program__attach_lsm(p),
                AttachPoint::Trampoline { .. } => sys::bpf_program__attach_trace(p),
                AttachPoint::Kprobe { func, offset, ret } => {
                    let opts = libbpf_opts!(bpf_kprobe_opts { offset: *offset as _, retprobe: *ret });
                    sys::bpf_program__attach_kprobe_opts(p, c(func)?.as_ptr(), &opts)
                }
                AttachPoint::KprobeMulti { pattern, ret } => {
                    let opts = libbpf_opts!(bpf_kprobe_multi_opts { retprobe: *ret });
                    sys::bpf_program__attach_kprobe_multi_opts(p, c(pattern)?.as_ptr(), &opts)
                }
                AttachPoint::Ksyscall { name, ret } => {
                    let opts = libbpf_opts!(bpf_ksyscall_opts { retprobe: *ret });
                    sys::bpf_program__attach_ksyscall(p, c(name)?.as_ptr(), &opts)
                }
                AttachPoint::Uprobe { target, ret } => {
                    let (binary, func) = match target {
                        Some((b, f)) => (b.as_path(), f.as_str()),
                        None => (ctx.own_binary, ctx.own_function),
                    };
                    let func = c(func)?;
                    let opts = libbpf_opts!(bpf_uprobe_opts { retprobe: *ret, func_name: func.as_ptr() });
                    let binary = c(&binary.to_string_lossy())?;
                    sys::bpf_program__attach_uprobe_opts(p, -1, binary.as_ptr(), 0, &opts)
                }
                AttachPoint::Usdt { target } => {
                    let (binary, provider, name) = match target {
                        Some((b, pr, n)) => (b.as_path(), pr.as_str(), n.as_str()),
                        None => (ctx.own_binary, ctx.own_usdt.0, ctx.own_usdt.1),
                    };
                    let binary = c(&binary.to_string_lossy())?;
                    sys::bpf_program__attach_usdt(
                        p,
                        -1,
                        binary.as_ptr(),
                        c(provider)?.as_ptr(),
                        c(name)?.as_ptr(),
                        std::ptr::null(),
                    )
                }
                AttachPoint::Cgroup { .. } => {
                    let cgroup = ctx.cgroup.context("a cgroup hook needs a cgroup to attach to")?;
                    sys::bpf_program__attach_cgroup(p, cgroup.as_raw_fd())
                }
                AttachPoint::PerfEvent { .. } => unreachable!("attached above"),
                AttachPoint::SockMap { .. } => {
                    let map = ctx.sockmap.context("an sk_msg or sk_skb program needs its object's sockmap")?;
                    sys::bpf_program__attach_sockmap(p, map.as_raw_fd())
                }
            }
        };
        match NonNull::new(raw) {
            Some(raw) => Ok(Link { raws: vec![raw] }),
            None => {
                let err = std::io::Error::last_os_error();
                let said = format!(
                    "attaching program '{program}' of {} at {point}: {}",
                    self.path.display(),
                    refusal_reason(&err)
                );
                match missing_mechanism(point, &err) {
                    Some(missing) => Err(MissingMechanism(format!("{said}; {missing}")).into()),
                    None => bail!(said),
                }
            }
        }
    }
}

impl ObjectFile {
    /// Attaches `program` to `event` on every online CPU, each occurrence a
    /// sample (period 1), as a profiler attaches to its clock on each CPU.
    fn attach_perf_event(&self, program: &str, event: SoftwareEvent) -> Result<Link> {
        let p = self.program_raw(program)?;
        let mut link = Link { raws: Vec::new() };
        for cpu in online_cpus()? {
            // SAFETY: perf_event_attr is plain data; zero is "off" for every flag.
            let mut attr: sys::perf_event_attr = unsafe { std::mem::zeroed() };
            attr.type_ = sys::PERF_TYPE_SOFTWARE;
            attr.size = std::mem::size_of::<sys::perf_event_attr>() as u32;
            attr.config = event.config();
            attr.__bindgen_anon_1.sample_period = 1;
            // SAFETY: a filled attr; pid -1 with a CPU: every task on that CPU.
            let fd = unsafe {
                libc::syscall(
                    libc::SYS_perf_event_open,
                    &attr as *const sys::perf_event_attr,
                    -1,
                    cpu as i32,
                    -1,
                    sys::PERF_FLAG_FD_CLOEXEC,
                )
            } as i32;
            if fd < 0 {
                bail!(
                    "opening the software perf event {} on CPU {cpu} for program '{program}': {}",
                    event.name(),
                    std::io::Error::last_os_error()
                );
            }
            libbpf_log::take();
            // SAFETY: a loaded program and a perf event fd, which the link owns from here.
            let raw = unsafe { sys::bpf_program__attach_perf_event(p, fd) };
            match NonNull::new(raw) {
                Some(raw) => link.raws.push(raw),
                None => {
                    let err = std::io::Error::last_os_error();
                    // SAFETY: the fd opened above, which no link took.
                    unsafe { libc::close(fd) };
                    bail!(
                        "attaching program '{program}' of {} to perf event {} on CPU {cpu}: {}",
                        self.path.display(),
                        event.name(),
                        refusal_reason(&err)
                    );
                }
            }
        }
        Ok(link)
    }
}

/// libbpf's last line, else the error itself: never an empty reason.
fn refusal_reason(err: &std::io::Error) -> String {
    let said = one_line_log();
    if said.is_empty() { err.to_string() } else { format!("{said} ({err})") }
}

fn one_line_log() -> String {
    let tail = libbpf_log::tail(2);
    tail.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
}

/// An attach this kernel cannot do at all (no kprobes, no trampolines):
/// the program is not available here, which is no failure of its own.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct MissingMechanism(pub String);

/// What this kernel lacks for `point`, and where the program runs instead.
fn missing_mechanism(point: &AttachPoint, err: &std::io::Error) -> Option<String> {
    let elsewhere = IN_A_GUEST;
    // The kernel's answer when built without fprobe, which multi-kprobes go through.
    if matches!(point, AttachPoint::KprobeMulti { .. }) && err.raw_os_error() == Some(libc::EOPNOTSUPP) {
        return Some(format!("this kernel has no multi-kprobes (built without CONFIG_FPROBE); {elsewhere}"));
    }
    if point.needs_kprobes() && !kprobes_built() {
        return Some(format!("this kernel has no kprobes (built without CONFIG_KPROBES); {elsewhere}"));
    }
    if point.needs_trampoline()
        // 524: the kernel's ENOTSUPP.
        && matches!(err.raw_os_error(), Some(libc::EPERM | 524 | libc::EOPNOTSUPP | libc::EINVAL))
    {
        return Some(format!(
            "this kernel refuses BPF trampolines (fentry, fexit and LSM programs: {err}); {elsewhere}"
        ));
    }
    None
}

/// Where a program runs that this kernel cannot attach.
pub const IN_A_GUEST: &str =
    "`bpfbench vm --kernel trixie -- FILE.bpf.o` runs it in a guest of Debian's 6.12 kernel, which has it";

/// Whether the kernel has kprobes: its perf PMU, or the tracing file of
/// the older interface.
pub fn kprobes_built() -> bool {
    Path::new("/sys/bus/event_source/devices/kprobe/type").exists()
        || Path::new("/sys/kernel/tracing/kprobe_events").exists()
        || Path::new("/sys/kernel/debug/tracing/kprobe_events").exists()
}

/// The empty program of `kind` (attach_empty.bpf.c), loaded to attach at
/// `point` (its attach type and, for trampolines, its target set first).
pub fn load_empty(kind: ProgKind, point: &AttachPoint) -> Result<(ObjectFile, &'static str)> {
    let name = match kind {
        ProgKind::Tracepoint => "empty_tracepoint",
        ProgKind::RawTracepoint => "empty_raw_tracepoint",
        ProgKind::Kprobe => match point {
            AttachPoint::Uprobe { .. } => "empty_uprobe",
            AttachPoint::KprobeMulti { .. } => "empty_kprobe_multi",
            AttachPoint::Usdt { .. } => "empty_usdt",
            _ => "empty_kprobe",
        },
        ProgKind::Tracing => "empty_tracing",
        ProgKind::Lsm => "empty_lsm",
        ProgKind::PerfEvent => "empty_perf_event",
        ProgKind::CgroupSockAddr => "empty_cgroup_sock_addr",
        ProgKind::SockOps => "empty_sock_ops",
        ProgKind::CgroupSock => "empty_cgroup_sock",
        ProgKind::CgroupSockopt => "empty_cgroup_sockopt",
        ProgKind::CgroupSysctl => "empty_cgroup_sysctl",
        ProgKind::CgroupSkb => "empty_cgroup_skb",
        ProgKind::SkMsg => "empty_sk_msg",
        ProgKind::SkSkb => "empty_sk_skb",
        ProgKind::Xdp
        | ProgKind::Tc
        | ProgKind::SocketFilter
        | ProgKind::FlowDissector
        | ProgKind::SkLookup
        | ProgKind::Netfilter
        | ProgKind::Syscall => bail!("bpfbench has no empty {} program to attach", kind.desc().label),
    };
    let mut object = ObjectFile::open_memory("attach_empty", crate::bpf_object_bytes!("attach_empty"))?;
    for p in object.programs_raw() {
        // SAFETY: a program of this object, before load.
        let own = cstr(unsafe { sys::bpf_program__name(p) }) == name;
        unsafe { sys::bpf_program__set_autoload(p, own) };
    }
    if let AttachPoint::Cgroup { attach, .. } | AttachPoint::SockMap { attach, .. } = point {
        let p = object.program_raw(name)?;
        // SAFETY: as above.
        unsafe { sys::bpf_program__set_expected_attach_type(p, *attach) };
    }
    object.set_attach_target(name, point)?;
    object.load_every_program().with_context(|| format!("loading the empty program for {point}"))?;
    Ok((object, name))
}

/// The CPUs online now (`/sys/devices/system/cpu/online`: "0-3,6").
fn online_cpus() -> Result<Vec<usize>> {
    let path = "/sys/devices/system/cpu/online";
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    parse_cpu_list(text.trim()).with_context(|| format!("{path} holds '{}', not a CPU list", text.trim()))
}

fn parse_cpu_list(text: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in text.split(',') {
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(a.parse::<usize>().ok()?..=b.parse::<usize>().ok()?),
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_lists_read_as_the_kernel_writes_them() {
        assert_eq!(super::parse_cpu_list("0-3,6"), Some(vec![0, 1, 2, 3, 6]));
        assert_eq!(super::parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(super::parse_cpu_list("zero"), None);
    }
}
