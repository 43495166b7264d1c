//! Where a program attaches, read from its section name as libbpf reads it
//! (`tp/syscalls/sys_enter_openat`, `uprobe//bin/bash:readline`,
//! `cgroup/connect4`) or from `--attach`, which takes the same forms. No
//! kernel here: `kernel::object::attach` attaches to a point, and
//! `trigger` picks what fires it.

use std::fmt;
use std::path::PathBuf;

use anyhow::{Result, bail};

use super::AttachType;
use super::prog_type::{ProgKind, section_has_prefix};
use libbpf_rs::libbpf_sys as sys;

/// The kernel function a BPF trampoline enters, and on which side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrampolineSide {
    Fentry,
    Fexit,
    FmodRet,
    /// An LSM hook (`lsm/file_open`): the trampoline on `bpf_lsm_<hook>`.
    Lsm,
}

/// One place a program runs from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttachPoint {
    /// A perf tracepoint: `tp/CATEGORY/NAME`.
    Tracepoint { category: String, name: String },
    /// A raw tracepoint: `raw_tp/NAME`.
    RawTracepoint { name: String },
    /// A raw tracepoint with the kernel's BTF types: `tp_btf/NAME`.
    BtfTracepoint { name: String },
    /// A kernel function, through a BPF trampoline: `fentry/FUNC`, `lsm/HOOK`.
    Trampoline { side: TrampolineSide, func: String },
    /// A kernel function, through a kprobe: `kprobe/FUNC[+OFFSET]`, `kretprobe/FUNC`.
    Kprobe { func: String, offset: u64, ret: bool },
    /// Kernel functions whose names match a pattern, through one multi-kprobe
    /// link (fprobe, 5.18): `kprobe.multi/PATTERN`, `kretprobe.multi/PATTERN`.
    KprobeMulti { pattern: String, ret: bool },
    /// A system call's kernel entry, through a kprobe: `ksyscall/NAME`.
    Ksyscall { name: String, ret: bool },
    /// A function of a program, through a uprobe: `uprobe/BINARY:FUNC`;
    /// a bare `uprobe` section: bpfbench's own trigger function.
    Uprobe { target: Option<(PathBuf, String)>, ret: bool },
    /// A USDT probe: `usdt/BINARY:PROVIDER:NAME`; a bare `usdt` section:
    /// bpfbench's own probe (`bpfbench:trigger`).
    Usdt { target: Option<(PathBuf, String, String)> },
    /// A cgroup hook (the cgroup is bpfbench's own, which the trigger runs
    /// in), of the attach type the section gives (`cgroup/connect4`, `sockops`).
    Cgroup { attach: AttachType, hook: String },
    /// A perf event's overflow: a software event bpfbench opens on every
    /// online CPU, sampling each occurrence (`perf_event/page-faults`; a
    /// bare `perf_event` section: page faults).
    PerfEvent { event: SoftwareEvent },
    /// A sockmap's sockets (`sk_msg`, `sk_skb/stream_verdict`).
    SockMap { attach: AttachType, hook: String },
}

/// The software perf events a perf_event program is attached to: each one
/// counted event is a sample, and each sample a run. Software events need
/// no PMU (this machine has none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SoftwareEvent {
    /// A page fault (`PERF_COUNT_SW_PAGE_FAULTS`).
    PageFaults,
    /// A context switch (`PERF_COUNT_SW_CONTEXT_SWITCHES`).
    ContextSwitches,
}

impl SoftwareEvent {
    pub const ALL: [SoftwareEvent; 2] = [SoftwareEvent::PageFaults, SoftwareEvent::ContextSwitches];

    /// Its name as perf writes it, and as `perf_event/NAME` takes it.
    pub fn name(self) -> &'static str {
        match self {
            SoftwareEvent::PageFaults => "page-faults",
            SoftwareEvent::ContextSwitches => "context-switches",
        }
    }

    /// `perf_event_attr.config` for `PERF_TYPE_SOFTWARE`.
    pub fn config(self) -> u64 {
        u64::from(match self {
            SoftwareEvent::PageFaults => sys::PERF_COUNT_SW_PAGE_FAULTS,
            SoftwareEvent::ContextSwitches => sys::PERF_COUNT_SW_CONTEXT_SWITCHES,
        })
    }
}

/// A cgroup hook's section and its attach type (libbpf's section names).
const CGROUP_HOOKS: &[(&str, AttachType)] = &[
    ("cgroup/bind4", sys::BPF_CGROUP_INET4_BIND),
    ("cgroup/bind6", sys::BPF_CGROUP_INET6_BIND),
    ("cgroup/connect4", sys::BPF_CGROUP_INET4_CONNECT),
    ("cgroup/connect6", sys::BPF_CGROUP_INET6_CONNECT),
    ("cgroup/connect_unix", sys::BPF_CGROUP_UNIX_CONNECT),
    ("cgroup/sendmsg4", sys::BPF_CGROUP_UDP4_SENDMSG),
    ("cgroup/sendmsg6", sys::BPF_CGROUP_UDP6_SENDMSG),
    ("cgroup/sendmsg_unix", sys::BPF_CGROUP_UNIX_SENDMSG),
    ("cgroup/recvmsg4", sys::BPF_CGROUP_UDP4_RECVMSG),
    ("cgroup/recvmsg6", sys::BPF_CGROUP_UDP6_RECVMSG),
    ("cgroup/recvmsg_unix", sys::BPF_CGROUP_UNIX_RECVMSG),
    ("cgroup/getpeername4", sys::BPF_CGROUP_INET4_GETPEERNAME),
    ("cgroup/getpeername6", sys::BPF_CGROUP_INET6_GETPEERNAME),
    ("cgroup/getpeername_unix", sys::BPF_CGROUP_UNIX_GETPEERNAME),
    ("cgroup/getsockname4", sys::BPF_CGROUP_INET4_GETSOCKNAME),
    ("cgroup/getsockname6", sys::BPF_CGROUP_INET6_GETSOCKNAME),
    ("cgroup/getsockname_unix", sys::BPF_CGROUP_UNIX_GETSOCKNAME),
    ("cgroup/sock_create", sys::BPF_CGROUP_INET_SOCK_CREATE),
    ("cgroup/sock", sys::BPF_CGROUP_INET_SOCK_CREATE),
    ("cgroup/sock_release", sys::BPF_CGROUP_INET_SOCK_RELEASE),
    ("cgroup/post_bind4", sys::BPF_CGROUP_INET4_POST_BIND),
    ("cgroup/post_bind6", sys::BPF_CGROUP_INET6_POST_BIND),
    ("cgroup/getsockopt", sys::BPF_CGROUP_GETSOCKOPT),
    ("cgroup/setsockopt", sys::BPF_CGROUP_SETSOCKOPT),
    ("cgroup/sysctl", sys::BPF_CGROUP_SYSCTL),
    ("sockops", sys::BPF_CGROUP_SOCK_OPS),
    ("cgroup_skb/ingress", sys::BPF_CGROUP_INET_INGRESS),
    ("cgroup_skb/egress", sys::BPF_CGROUP_INET_EGRESS),
];

/// A sockmap program's section and its attach type.
const SOCKMAP_HOOKS: &[(&str, AttachType)] = &[
    ("sk_msg", sys::BPF_SK_MSG_VERDICT),
    ("sk_skb/stream_parser", sys::BPF_SK_SKB_STREAM_PARSER),
    ("sk_skb/stream_verdict", sys::BPF_SK_SKB_STREAM_VERDICT),
    ("sk_skb/verdict", sys::BPF_SK_SKB_VERDICT),
];

impl AttachPoint {
    /// The point a section name (or `--attach`) gives, for a program of
    /// `kind`. A section without its target (`tp`, `kprobe`) is refused
    /// with what to write, except `uprobe` and `usdt`, which mean
    /// bpfbench's own trigger.
    pub fn parse(section: &str, kind: ProgKind) -> Result<AttachPoint> {
        let (head, rest) = section.split_once('/').unwrap_or((section, ""));
        let needs = |form: &str| -> Result<AttachPoint> {
            bail!("section '{section}' names no target: attach it with --attach {form}")
        };
        let point = match (kind, head) {
            (ProgKind::Tracepoint, "tp" | "tracepoint") => match rest.split_once('/') {
                Some((category, name)) if !category.is_empty() && !name.is_empty() => {
                    AttachPoint::Tracepoint { category: category.into(), name: name.into() }
                }
                _ => return needs("tp/CATEGORY/NAME (a tracepoint under /sys/kernel/tracing/events)"),
            },
            (ProgKind::RawTracepoint, "raw_tp" | "raw_tracepoint" | "raw_tp.w" | "raw_tracepoint.w") => match rest {
                "" => return needs("raw_tp/NAME (sys_enter, sched_switch, ...)"),
                name => AttachPoint::RawTracepoint { name: name.into() },
            },
            (ProgKind::Tracing, "tp_btf") => match rest {
                "" => return needs("tp_btf/NAME"),
                name => AttachPoint::BtfTracepoint { name: name.into() },
            },
            (ProgKind::Tracing | ProgKind::Lsm, _) => {
                let side = match head.trim_end_matches(".s") {
                    "fentry" => TrampolineSide::Fentry,
                    "fexit" => TrampolineSide::Fexit,
                    "fmod_ret" => TrampolineSide::FmodRet,
                    "lsm" => TrampolineSide::Lsm,
                    _ => {
                        bail!("section '{section}': bpfbench attaches fentry, fexit, fmod_ret, tp_btf and lsm programs")
                    }
                };
                match rest {
                    "" => return needs(&format!("{head}/FUNCTION")),
                    func => AttachPoint::Trampoline { side, func: func.into() },
                }
            }
            (ProgKind::Kprobe, "kprobe" | "kretprobe") => {
                let (func, offset) = match rest.split_once('+') {
                    Some((f, off)) => (f, parse_offset(off, section)?),
                    None => (rest, 0),
                };
                if func.is_empty() {
                    return needs(&format!("{head}/FUNCTION"));
                }
                AttachPoint::Kprobe { func: func.into(), offset, ret: head == "kretprobe" }
            }
            (ProgKind::Kprobe, "kprobe.multi" | "kretprobe.multi") => match rest {
                "" => return needs(&format!("{head}/PATTERN (a function name, or a glob: tcp_v4_*)")),
                pattern => AttachPoint::KprobeMulti { pattern: pattern.into(), ret: head == "kretprobe.multi" },
            },
            (ProgKind::Kprobe, "ksyscall" | "kretsyscall") => match rest {
                "" => return needs(&format!("{head}/SYSCALL")),
                name => AttachPoint::Ksyscall { name: name.into(), ret: head == "kretsyscall" },
            },
            (ProgKind::Kprobe, "uprobe" | "uretprobe" | "uprobe.s" | "uretprobe.s") => {
                let ret = head.starts_with("uretprobe");
                if rest.is_empty() {
                    AttachPoint::Uprobe { target: None, ret }
                } else {
                    let Some((binary, func)) = rest.rsplit_once(':').filter(|(b, f)| !b.is_empty() && !f.is_empty())
                    else {
                        bail!(
                            "section '{section}': a uprobe's target is BINARY:FUNCTION (uprobe//usr/bin/bash:readline)"
                        )
                    };
                    AttachPoint::Uprobe { target: Some((binary.into(), func.into())), ret }
                }
            }
            (ProgKind::Kprobe, "usdt" | "usdt.s") => {
                if rest.is_empty() {
                    AttachPoint::Usdt { target: None }
                } else {
                    let parts: Vec<&str> = rest.rsplitn(3, ':').collect();
                    let [name, provider, binary] = parts.as_slice() else {
                        bail!(
                            "section '{section}': a USDT probe is BINARY:PROVIDER:NAME (usdt//usr/lib/libc.so.6:libc:setjmp)"
                        )
                    };
                    AttachPoint::Usdt { target: Some(((*binary).into(), (*provider).into(), (*name).into())) }
                }
            }
            (ProgKind::Kprobe, _) => {
                bail!(
                    "section '{section}': bpfbench attaches kprobe, kretprobe, kprobe.multi, kretprobe.multi, ksyscall, uprobe, uretprobe and usdt programs"
                )
            }
            (ProgKind::PerfEvent, _) => match rest {
                "" => AttachPoint::PerfEvent { event: SoftwareEvent::PageFaults },
                name => match SoftwareEvent::ALL.iter().find(|e| e.name() == name) {
                    Some(event) => AttachPoint::PerfEvent { event: *event },
                    None => bail!(
                        "section '{section}': bpfbench attaches perf_event programs to the software events {}",
                        SoftwareEvent::ALL.map(|e| format!("perf_event/{}", e.name())).join(", ")
                    ),
                },
            },
            (ProgKind::CgroupSockAddr | ProgKind::SockOps | ProgKind::CgroupSock, _)
            | (ProgKind::CgroupSockopt | ProgKind::CgroupSysctl | ProgKind::CgroupSkb, _) => {
                match CGROUP_HOOKS.iter().find(|(s, _)| section_has_prefix(section, s)) {
                    Some((hook, attach)) => AttachPoint::Cgroup { attach: *attach, hook: hook.to_string() },
                    None => bail!("section '{section}' names no cgroup hook bpfbench knows"),
                }
            }
            (ProgKind::SkMsg | ProgKind::SkSkb, _) => {
                match SOCKMAP_HOOKS.iter().find(|(s, _)| section_has_prefix(section, s)) {
                    Some((hook, attach)) => AttachPoint::SockMap { attach: *attach, hook: hook.to_string() },
                    None => bail!(
                        "section '{section}' names no sockmap hook bpfbench knows (sk_msg, sk_skb/stream_verdict, ...)"
                    ),
                }
            }
            (
                ProgKind::Tracepoint
                | ProgKind::RawTracepoint
                | ProgKind::Xdp
                | ProgKind::Tc
                | ProgKind::SocketFilter
                | ProgKind::FlowDissector
                | ProgKind::SkLookup
                | ProgKind::Netfilter
                | ProgKind::Syscall,
                _,
            ) => bail!("section '{section}' is not one bpfbench attaches a {} program at", kind.desc().label),
        };
        Ok(point)
    }

    /// What enters the program at this point, named in tables and notes.
    pub fn mechanism(&self) -> &'static str {
        match self {
            AttachPoint::Tracepoint { .. } => "tracepoint",
            AttachPoint::RawTracepoint { .. } => "raw tracepoint",
            AttachPoint::BtfTracepoint { .. } => "BTF raw tracepoint",
            AttachPoint::Trampoline { side: TrampolineSide::Lsm, .. } => "LSM hook (BPF trampoline)",
            AttachPoint::Trampoline { .. } => "BPF trampoline",
            AttachPoint::Kprobe { ret: false, .. } | AttachPoint::Ksyscall { ret: false, .. } => "kprobe",
            AttachPoint::Kprobe { ret: true, .. } | AttachPoint::Ksyscall { ret: true, .. } => "kretprobe",
            AttachPoint::KprobeMulti { ret: false, .. } => "multi-kprobe (fprobe)",
            AttachPoint::KprobeMulti { ret: true, .. } => "multi-kretprobe (fprobe)",
            AttachPoint::Uprobe { ret: false, .. } => "uprobe",
            AttachPoint::Uprobe { ret: true, .. } => "uretprobe",
            AttachPoint::Usdt { .. } => "USDT probe (uprobe)",
            AttachPoint::Cgroup { .. } => "cgroup hook",
            AttachPoint::PerfEvent { .. } => "perf event",
            AttachPoint::SockMap { .. } => "sockmap",
        }
    }

    /// Whether the point needs a kernel function probed through kprobes.
    pub fn needs_kprobes(&self) -> bool {
        matches!(self, AttachPoint::Kprobe { .. } | AttachPoint::Ksyscall { .. } | AttachPoint::KprobeMulti { .. })
    }

    /// Whether the point needs a BPF trampoline (fentry, fexit, LSM).
    pub fn needs_trampoline(&self) -> bool {
        matches!(self, AttachPoint::Trampoline { .. })
    }
}

impl fmt::Display for AttachPoint {
    /// As a section name writes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttachPoint::Tracepoint { category, name } => write!(f, "tp/{category}/{name}"),
            AttachPoint::RawTracepoint { name } => write!(f, "raw_tp/{name}"),
            AttachPoint::BtfTracepoint { name } => write!(f, "tp_btf/{name}"),
            AttachPoint::Trampoline { side, func } => {
                let head = match side {
                    TrampolineSide::Fentry => "fentry",
                    TrampolineSide::Fexit => "fexit",
                    TrampolineSide::FmodRet => "fmod_ret",
                    TrampolineSide::Lsm => "lsm",
                };
                write!(f, "{head}/{func}")
            }
            AttachPoint::Kprobe { func, offset, ret } => {
                write!(f, "{}/{func}", if *ret { "kretprobe" } else { "kprobe" })?;
                if *offset > 0 {
                    write!(f, "+{offset:#x}")?;
                }
                Ok(())
            }
            AttachPoint::KprobeMulti { pattern, ret } => {
                write!(f, "{}/{pattern}", if *ret { "kretprobe.multi" } else { "kprobe.multi" })
            }
            AttachPoint::Ksyscall { name, ret } => {
                write!(f, "{}/{name}", if *ret { "kretsyscall" } else { "ksyscall" })
            }
            AttachPoint::Uprobe { target, ret } => {
                let head = if *ret { "uretprobe" } else { "uprobe" };
                match target {
                    Some((binary, func)) => write!(f, "{head}/{}:{func}", binary.display()),
                    None => write!(f, "{head} (bpfbench's trigger function)"),
                }
            }
            AttachPoint::Usdt { target } => match target {
                Some((binary, provider, name)) => write!(f, "usdt/{}:{provider}:{name}", binary.display()),
                None => write!(f, "usdt (bpfbench's probe bpfbench:trigger)"),
            },
            AttachPoint::Cgroup { hook, .. } | AttachPoint::SockMap { hook, .. } => f.write_str(hook),
            AttachPoint::PerfEvent { event } => write!(f, "perf_event/{}", event.name()),
        }
    }
}

fn parse_offset(text: &str, section: &str) -> Result<u64> {
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed
        .map_err(|_| anyhow::anyhow!("section '{section}': '{text}' is not an offset (a number, or 0x and hex digits)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(section: &str) -> AttachPoint {
        let kind = ProgKind::of_section(section).unwrap_or_else(|| panic!("no type for {section}"));
        AttachPoint::parse(section, kind).unwrap_or_else(|e| panic!("{section}: {e:#}"))
    }

    #[test]
    fn sections_name_their_points_and_print_back() {
        for (section, point) in [
            (
                "tp/syscalls/sys_enter_getppid",
                AttachPoint::Tracepoint { category: "syscalls".into(), name: "sys_enter_getppid".into() },
            ),
            ("raw_tp/sys_enter", AttachPoint::RawTracepoint { name: "sys_enter".into() }),
            ("tp_btf/sched_switch", AttachPoint::BtfTracepoint { name: "sched_switch".into() }),
            (
                "fentry/do_unlinkat",
                AttachPoint::Trampoline { side: TrampolineSide::Fentry, func: "do_unlinkat".into() },
            ),
            ("lsm/file_open", AttachPoint::Trampoline { side: TrampolineSide::Lsm, func: "file_open".into() }),
            ("kretprobe/do_sys_openat2", AttachPoint::Kprobe { func: "do_sys_openat2".into(), offset: 0, ret: true }),
            ("kprobe/tcp_connect+0x10", AttachPoint::Kprobe { func: "tcp_connect".into(), offset: 16, ret: false }),
            ("kretprobe.multi/tcp_v4_*", AttachPoint::KprobeMulti { pattern: "tcp_v4_*".into(), ret: true }),
            (
                "uprobe//usr/bin/bash:readline",
                AttachPoint::Uprobe { target: Some(("/usr/bin/bash".into(), "readline".into())), ret: false },
            ),
            ("uretprobe", AttachPoint::Uprobe { target: None, ret: true }),
            (
                "usdt//usr/lib/x86_64-linux-gnu/libc.so.6:libc:setjmp",
                AttachPoint::Usdt {
                    target: Some(("/usr/lib/x86_64-linux-gnu/libc.so.6".into(), "libc".into(), "setjmp".into())),
                },
            ),
            (
                "cgroup/connect4",
                AttachPoint::Cgroup { attach: sys::BPF_CGROUP_INET4_CONNECT, hook: "cgroup/connect4".into() },
            ),
            ("sockops", AttachPoint::Cgroup { attach: sys::BPF_CGROUP_SOCK_OPS, hook: "sockops".into() }),
            ("perf_event", AttachPoint::PerfEvent { event: SoftwareEvent::PageFaults }),
            ("perf_event/context-switches", AttachPoint::PerfEvent { event: SoftwareEvent::ContextSwitches }),
        ] {
            assert_eq!(parsed(section), point, "{section}");
        }
        for section in [
            "tp/syscalls/sys_enter_getppid",
            "raw_tp/sys_enter",
            "kprobe/tcp_connect+0x10",
            "cgroup/connect4",
            "perf_event/page-faults",
        ] {
            assert_eq!(parsed(section).to_string(), section);
        }
    }

    #[test]
    fn a_section_without_its_target_says_what_to_write() {
        let err = AttachPoint::parse("tp", ProgKind::Tracepoint).unwrap_err().to_string();
        assert!(err.contains("--attach tp/CATEGORY/NAME"), "{err}");
        let err = AttachPoint::parse("kprobe", ProgKind::Kprobe).unwrap_err().to_string();
        assert!(err.contains("--attach kprobe/FUNCTION"), "{err}");
        let err = AttachPoint::parse("uprobe/nocolon", ProgKind::Kprobe).unwrap_err().to_string();
        assert!(err.contains("BINARY:FUNCTION"), "{err}");
        let err = AttachPoint::parse("perf_event/cycles", ProgKind::PerfEvent).unwrap_err().to_string();
        assert!(err.contains("perf_event/page-faults, perf_event/context-switches"), "{err}");
    }
}
