//! The program types bpfbench runs, one descriptor each: everything that
//! differs between types — what libbpf calls them, what their test run
//! takes and gives back, their verdicts, whether the kernel times them,
//! which batch loop can enter them, where they attach — is read from
//! [`PROG_TYPES`], so a new type is one entry there (and its tests).

use libbpf_rs::libbpf_sys as sys;

use super::AttachType;

/// Program types bpfbench can time, as the kernel calls them. The order is
/// [`PROG_TYPES`]'; each variant's descriptor is [`ProgKind::desc`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProgKind {
    Xdp,
    /// tc (BPF_PROG_TYPE_SCHED_CLS).
    Tc,
    SocketFilter,
    CgroupSkb,
    FlowDissector,
    SkLookup,
    Netfilter,
    RawTracepoint,
    Syscall,
    Tracepoint,
    /// kprobe, kretprobe, uprobe, uretprobe and USDT programs (BPF_PROG_TYPE_KPROBE).
    Kprobe,
    /// fentry, fexit, fmod_ret and tp_btf programs (BPF_PROG_TYPE_TRACING).
    Tracing,
    Lsm,
    PerfEvent,
    CgroupSockAddr,
    SockOps,
    CgroupSock,
    CgroupSockopt,
    CgroupSysctl,
    SkMsg,
    SkSkb,
}

/// What a type's test run is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    /// A packet alone (XDP).
    Packet,
    /// A packet, and an `__sk_buff` whose fields a case may set (`--skb`).
    Skb,
    /// A packet, and `struct bpf_flow_keys` whose flags a case may set (`--flow-flags`).
    PacketAndFlowFlags,
    /// A packet, and the state of the netfilter hook it passes (`struct nf_hook_state`, from the packet).
    PacketAndHookState,
    /// No packet: the socket lookup of each packet's flow (`struct bpf_sk_lookup`).
    SocketLookup,
    /// No packet: a context of the program's own (`--ctx`), of at most
    /// `max_bytes` (zeroes beyond, so a program reads nothing the kernel did not copy).
    Context { max_bytes: Option<usize> },
}

/// What a type's test run hands back besides the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gives {
    /// The packet as the program left it.
    Packet,
    /// The flow keys the program filled.
    FlowKeys,
    /// The context as the program left it.
    Context,
    /// Nothing but the verdict.
    Verdict,
}

/// How a type's return values read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdicts {
    /// The kernel's names of its actions (any others shown as numbers).
    Named(&'static [(&'static str, i32)]),
    /// The number of bytes of the packet to keep (a socket filter's); 0 drops it.
    BytesToKeep,
    /// A number with no names.
    Number,
}

/// How a batch loop in BPF reaches programs of a type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchLoop {
    /// Spliced into the driver object `driver` (`driver_xdp`, `driver_tc`);
    /// one that makes tail calls is entered from the chain loop, whose
    /// programs for this type end in `chain`.
    Spliced { driver: &'static str, chain: &'static str },
    /// Always entered by a tail call from the chain loop's programs ending in
    /// this suffix (each type has its own: a prog array holds one type).
    Chain(&'static str),
    /// None: timed per call, for this reason.
    PerCall(&'static str),
}

/// Where a program of the type attaches outside a test run, and what fires it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// An interface's XDP hook, fired by frames arriving (`bpfbench live`).
    Interface,
    /// A tc (clsact/tcx) hook of an interface, fired by packets in or out.
    TcHook,
    /// A socket, fired by packets it receives.
    Socket,
    /// A cgroup, fired by its sockets' packets.
    Cgroup,
    /// A network namespace, fired by flows to dissect or sockets to look up.
    Netns,
    /// A netfilter hook, fired by packets passing it.
    NetfilterHook,
    /// A raw tracepoint, fired by the kernel reaching it.
    RawTracepoint,
    /// A tracepoint (perf's), fired by the kernel reaching it.
    Tracepoint,
    /// A kprobe or uprobe (a USDT probe is a uprobe at its note's address),
    /// fired by the kernel or the process reaching the probed instruction.
    Probe,
    /// A BPF trampoline on a kernel function (fentry, fexit, fmod_ret, LSM),
    /// fired by the function's call; tp_btf programs enter a raw tracepoint.
    Trampoline,
    /// A perf event's overflow (a sample), fired by the counter it counts.
    PerfEvent,
    /// A sockmap's sockets, fired by their messages (sk_msg) or data (sk_skb).
    SockMap,
    /// Nothing: called by `BPF_PROG_RUN` alone.
    NotAttached,
}

/// One program type.
#[derive(Debug)]
pub struct ProgType {
    pub kind: ProgKind,
    /// libbpf's name of the type (`libbpf_bpf_prog_type_str`): "xdp", "sched_cls".
    pub name: &'static str,
    /// The type in a phrase: "XDP", "socket filter" ("XDP test", "a socket filter").
    pub label: &'static str,
    /// Its programs, in a sentence: "XDP programs", "socket filters".
    pub plural: &'static str,
    pub libbpf_type: sys::bpf_prog_type,
    /// The first parts of the section names libbpf gives the type ("tc",
    /// as in "tc/ingress"; "cgroup/connect4", a whole name), and the names
    /// `--program-type` takes (with [`ProgType::name`]).
    pub sections: &'static [&'static str],
    /// The attach type a program of the type given by hand is loaded with.
    pub expected_attach: AttachType,
    /// How `BPF_PROG_TEST_RUN` runs it; None where the kernel has no test
    /// run for the type: its programs are measured attached, on their hook
    /// under a trigger.
    pub test_run: Option<TestRun>,
    pub hook: Hook,
}

/// What a type's test run takes and gives, and how it is timed.
#[derive(Debug)]
pub struct TestRun {
    pub takes: Takes,
    pub gives: Gives,
    pub verdicts: Verdicts,
    /// What a program that does nothing returns (XDP_PASS, TC_ACT_OK, the
    /// whole packet: a socket filter's length is clamped to it, allow).
    pub pass: i32,
    /// What a program returns to drop the packet (XDP_DROP, TC_ACT_SHOT, 0).
    pub drop: i32,
    /// Whether `BPF_PROG_TEST_RUN` reports a duration (it does not for raw
    /// tracepoint and syscall programs).
    pub kernel_times: bool,
    pub batch_loop: BatchLoop,
    /// Whether the userspace runtime runs it.
    pub user_runtime: bool,
}

/// The kernel's XDP actions (uapi `enum xdp_action`).
pub const XDP_ACTIONS: [(&str, i32); 5] =
    [("XDP_ABORTED", 0), ("XDP_DROP", 1), ("XDP_PASS", 2), ("XDP_TX", 3), ("XDP_REDIRECT", 4)];

/// tc actions (linux/pkt_cls.h), as returned by sched_cls programs.
pub const TC_ACTIONS: [(&str, i32); 10] = [
    ("TC_ACT_UNSPEC", -1),
    ("TC_ACT_OK", 0),
    ("TC_ACT_RECLASSIFY", 1),
    ("TC_ACT_SHOT", 2),
    ("TC_ACT_PIPE", 3),
    ("TC_ACT_STOLEN", 4),
    ("TC_ACT_QUEUED", 5),
    ("TC_ACT_REPEAT", 6),
    ("TC_ACT_REDIRECT", 7),
    ("TC_ACT_TRAP", 8),
];

/// Why no batch loop runs an attached type.
const NO_TEST_RUN: &str = "the kernel has no test run for programs of this type: they are measured attached";

/// Why no batch loop runs a type yet.
const NO_LOOP_YET: &str = "no batch loop runs programs of this type yet";

/// Every type bpfbench runs, in [`ProgKind`]'s order: those the kernel
/// test-runs first, then those measured attached.
pub static PROG_TYPES: [ProgType; 21] = [
    ProgType {
        kind: ProgKind::Xdp,
        name: "xdp",
        label: "XDP",
        plural: "XDP programs",
        libbpf_type: sys::BPF_PROG_TYPE_XDP,
        sections: &["xdp"],
        expected_attach: sys::BPF_XDP,
        test_run: Some(TestRun {
            takes: Takes::Packet,
            gives: Gives::Packet,
            verdicts: Verdicts::Named(&XDP_ACTIONS),
            pass: 2,
            drop: 1,
            kernel_times: true,
            batch_loop: BatchLoop::Spliced { driver: "driver_xdp", chain: "_xdp" },
            user_runtime: true,
        }),
        hook: Hook::Interface,
    },
    ProgType {
        kind: ProgKind::Tc,
        name: "sched_cls",
        label: "tc",
        plural: "tc programs",
        libbpf_type: sys::BPF_PROG_TYPE_SCHED_CLS,
        sections: &["tc", "tcx", "classifier"],
        expected_attach: 0,
        test_run: Some(TestRun {
            takes: Takes::Skb,
            gives: Gives::Packet,
            verdicts: Verdicts::Named(&TC_ACTIONS),
            pass: 0,
            drop: 2,
            kernel_times: true,
            batch_loop: BatchLoop::Spliced { driver: "driver_tc", chain: "_tc" },
            user_runtime: true,
        }),
        hook: Hook::TcHook,
    },
    ProgType {
        kind: ProgKind::SocketFilter,
        name: "socket_filter",
        label: "socket filter",
        plural: "socket filters",
        libbpf_type: sys::BPF_PROG_TYPE_SOCKET_FILTER,
        sections: &["socket"],
        expected_attach: 0,
        test_run: Some(TestRun {
            takes: Takes::Skb,
            gives: Gives::Packet,
            verdicts: Verdicts::BytesToKeep,
            pass: i32::MAX,
            drop: 0,
            kernel_times: true,
            batch_loop: BatchLoop::PerCall(NO_LOOP_YET),
            user_runtime: false,
        }),
        hook: Hook::Socket,
    },
    ProgType {
        kind: ProgKind::CgroupSkb,
        name: "cgroup_skb",
        label: "cgroup_skb",
        plural: "cgroup_skb programs",
        libbpf_type: sys::BPF_PROG_TYPE_CGROUP_SKB,
        sections: &["cgroup_skb"],
        expected_attach: sys::BPF_CGROUP_INET_INGRESS,
        test_run: Some(TestRun {
            takes: Takes::Skb,
            gives: Gives::Packet,
            // Bit 1, congestion notification, aside.
            verdicts: Verdicts::Named(&[("DENY", 0), ("ALLOW", 1)]),
            pass: 1,
            drop: 0,
            kernel_times: true,
            batch_loop: BatchLoop::PerCall(NO_LOOP_YET),
            user_runtime: false,
        }),
        hook: Hook::Cgroup,
    },
    ProgType {
        kind: ProgKind::FlowDissector,
        name: "flow_dissector",
        label: "flow dissector",
        plural: "flow dissectors",
        libbpf_type: sys::BPF_PROG_TYPE_FLOW_DISSECTOR,
        sections: &["flow_dissector"],
        expected_attach: sys::BPF_FLOW_DISSECTOR,
        test_run: Some(TestRun {
            takes: Takes::PacketAndFlowFlags,
            gives: Gives::FlowKeys,
            verdicts: Verdicts::Named(&[("BPF_OK", 0), ("BPF_DROP", 2), ("BPF_FLOW_DISSECTOR_CONTINUE", 129)]),
            pass: 0,
            drop: 2,
            kernel_times: true,
            batch_loop: BatchLoop::PerCall(NO_LOOP_YET),
            user_runtime: false,
        }),
        hook: Hook::Netns,
    },
    ProgType {
        kind: ProgKind::SkLookup,
        name: "sk_lookup",
        label: "sk_lookup",
        plural: "sk_lookup programs",
        libbpf_type: sys::BPF_PROG_TYPE_SK_LOOKUP,
        sections: &["sk_lookup"],
        expected_attach: sys::BPF_SK_LOOKUP,
        test_run: Some(TestRun {
            takes: Takes::SocketLookup,
            gives: Gives::Verdict,
            verdicts: Verdicts::Named(&[("SK_DROP", 0), ("SK_PASS", 1)]),
            pass: 1,
            drop: 0,
            kernel_times: true,
            batch_loop: BatchLoop::PerCall(NO_LOOP_YET),
            user_runtime: false,
        }),
        hook: Hook::Netns,
    },
    ProgType {
        kind: ProgKind::Netfilter,
        name: "netfilter",
        label: "netfilter",
        plural: "netfilter programs",
        libbpf_type: sys::BPF_PROG_TYPE_NETFILTER,
        sections: &["netfilter"],
        expected_attach: sys::BPF_NETFILTER,
        test_run: Some(TestRun {
            takes: Takes::PacketAndHookState,
            gives: Gives::Verdict,
            verdicts: Verdicts::Named(&[("NF_DROP", 0), ("NF_ACCEPT", 1)]),
            pass: 1,
            drop: 0,
            kernel_times: true,
            batch_loop: BatchLoop::PerCall(NO_LOOP_YET),
            user_runtime: false,
        }),
        hook: Hook::NetfilterHook,
    },
    ProgType {
        kind: ProgKind::RawTracepoint,
        name: "raw_tracepoint",
        label: "raw tracepoint",
        plural: "raw tracepoint programs",
        libbpf_type: sys::BPF_PROG_TYPE_RAW_TRACEPOINT,
        sections: &["raw_tp", "raw_tracepoint"],
        expected_attach: 0,
        // A raw tracepoint has at most 12 u64 arguments.
        test_run: Some(TestRun {
            takes: Takes::Context { max_bytes: Some(12 * 8) },
            gives: Gives::Verdict,
            verdicts: Verdicts::Number,
            pass: 0,
            drop: 0,
            kernel_times: false,
            batch_loop: BatchLoop::Chain("_raw_tp"),
            user_runtime: false,
        }),
        hook: Hook::RawTracepoint,
    },
    ProgType {
        kind: ProgKind::Syscall,
        name: "syscall",
        label: "syscall",
        plural: "syscall programs",
        libbpf_type: sys::BPF_PROG_TYPE_SYSCALL,
        sections: &["syscall"],
        expected_attach: 0,
        test_run: Some(TestRun {
            takes: Takes::Context { max_bytes: None },
            gives: Gives::Context,
            verdicts: Verdicts::Number,
            pass: 0,
            drop: 0,
            kernel_times: false,
            batch_loop: BatchLoop::PerCall(
                "a syscall program is sleepable and a sleepable program may use no prog array, so no loop can enter it as the chain loop does (nor is one spliced yet)",
            ),
            user_runtime: false,
        }),
        hook: Hook::NotAttached,
    },
    ProgType {
        kind: ProgKind::Tracepoint,
        name: "tracepoint",
        label: "tracepoint",
        plural: "tracepoint programs",
        libbpf_type: sys::BPF_PROG_TYPE_TRACEPOINT,
        sections: &["tp", "tracepoint"],
        expected_attach: 0,
        test_run: None,
        hook: Hook::Tracepoint,
    },
    ProgType {
        kind: ProgKind::Kprobe,
        name: "kprobe",
        label: "kprobe",
        plural: "kprobe, uprobe and USDT programs",
        libbpf_type: sys::BPF_PROG_TYPE_KPROBE,
        sections: &[
            "kprobe",
            "kretprobe",
            "kprobe.multi",
            "kretprobe.multi",
            "ksyscall",
            "kretsyscall",
            "uprobe",
            "uretprobe",
            "uprobe.s",
            "uretprobe.s",
            "uprobe.multi",
            "uretprobe.multi",
            "usdt",
            "usdt.s",
        ],
        expected_attach: 0,
        test_run: None,
        hook: Hook::Probe,
    },
    ProgType {
        kind: ProgKind::Tracing,
        name: "tracing",
        label: "tracing",
        plural: "fentry, fexit and tp_btf programs",
        libbpf_type: sys::BPF_PROG_TYPE_TRACING,
        sections: &["fentry", "fexit", "fmod_ret", "fentry.s", "fexit.s", "fmod_ret.s", "tp_btf"],
        expected_attach: sys::BPF_TRACE_FENTRY,
        test_run: None,
        hook: Hook::Trampoline,
    },
    ProgType {
        kind: ProgKind::Lsm,
        name: "lsm",
        label: "LSM",
        plural: "LSM programs",
        libbpf_type: sys::BPF_PROG_TYPE_LSM,
        sections: &["lsm", "lsm.s"],
        expected_attach: sys::BPF_LSM_MAC,
        test_run: None,
        hook: Hook::Trampoline,
    },
    ProgType {
        kind: ProgKind::PerfEvent,
        name: "perf_event",
        label: "perf_event",
        plural: "perf_event programs",
        libbpf_type: sys::BPF_PROG_TYPE_PERF_EVENT,
        sections: &["perf_event"],
        expected_attach: 0,
        test_run: None,
        hook: Hook::PerfEvent,
    },
    ProgType {
        kind: ProgKind::CgroupSockAddr,
        name: "cgroup_sock_addr",
        label: "cgroup sock_addr",
        plural: "cgroup sock_addr programs",
        libbpf_type: sys::BPF_PROG_TYPE_CGROUP_SOCK_ADDR,
        sections: &[
            "cgroup/bind4",
            "cgroup/bind6",
            "cgroup/connect4",
            "cgroup/connect6",
            "cgroup/connect_unix",
            "cgroup/sendmsg4",
            "cgroup/sendmsg6",
            "cgroup/sendmsg_unix",
            "cgroup/recvmsg4",
            "cgroup/recvmsg6",
            "cgroup/recvmsg_unix",
            "cgroup/getpeername4",
            "cgroup/getpeername6",
            "cgroup/getpeername_unix",
            "cgroup/getsockname4",
            "cgroup/getsockname6",
            "cgroup/getsockname_unix",
        ],
        expected_attach: sys::BPF_CGROUP_INET4_CONNECT,
        test_run: None,
        hook: Hook::Cgroup,
    },
    ProgType {
        kind: ProgKind::SockOps,
        name: "sock_ops",
        label: "sockops",
        plural: "sockops programs",
        libbpf_type: sys::BPF_PROG_TYPE_SOCK_OPS,
        sections: &["sockops"],
        expected_attach: sys::BPF_CGROUP_SOCK_OPS,
        test_run: None,
        hook: Hook::Cgroup,
    },
    ProgType {
        kind: ProgKind::CgroupSock,
        name: "cgroup_sock",
        label: "cgroup sock",
        plural: "cgroup sock programs",
        libbpf_type: sys::BPF_PROG_TYPE_CGROUP_SOCK,
        sections: &[
            "cgroup/sock_create",
            "cgroup/sock_release",
            "cgroup/sock",
            "cgroup/post_bind4",
            "cgroup/post_bind6",
        ],
        expected_attach: sys::BPF_CGROUP_INET_SOCK_CREATE,
        test_run: None,
        hook: Hook::Cgroup,
    },
    ProgType {
        kind: ProgKind::CgroupSockopt,
        name: "cgroup_sockopt",
        label: "cgroup sockopt",
        plural: "cgroup sockopt programs",
        libbpf_type: sys::BPF_PROG_TYPE_CGROUP_SOCKOPT,
        sections: &["cgroup/getsockopt", "cgroup/setsockopt"],
        expected_attach: sys::BPF_CGROUP_SETSOCKOPT,
        test_run: None,
        hook: Hook::Cgroup,
    },
    ProgType {
        kind: ProgKind::CgroupSysctl,
        name: "cgroup_sysctl",
        label: "cgroup sysctl",
        plural: "cgroup sysctl programs",
        libbpf_type: sys::BPF_PROG_TYPE_CGROUP_SYSCTL,
        sections: &["cgroup/sysctl"],
        expected_attach: sys::BPF_CGROUP_SYSCTL,
        test_run: None,
        hook: Hook::Cgroup,
    },
    ProgType {
        kind: ProgKind::SkMsg,
        name: "sk_msg",
        label: "sk_msg",
        plural: "sk_msg programs",
        libbpf_type: sys::BPF_PROG_TYPE_SK_MSG,
        sections: &["sk_msg"],
        expected_attach: sys::BPF_SK_MSG_VERDICT,
        test_run: None,
        hook: Hook::SockMap,
    },
    ProgType {
        kind: ProgKind::SkSkb,
        name: "sk_skb",
        label: "sk_skb",
        plural: "sk_skb programs",
        libbpf_type: sys::BPF_PROG_TYPE_SK_SKB,
        sections: &["sk_skb"],
        expected_attach: sys::BPF_SK_SKB_STREAM_VERDICT,
        test_run: None,
        hook: Hook::SockMap,
    },
];

impl ProgKind {
    /// The type's descriptor.
    pub fn desc(self) -> &'static ProgType {
        &PROG_TYPES[self as usize]
    }

    /// How the kernel test-runs the type (None: it is measured attached).
    pub fn test_run(self) -> Option<&'static TestRun> {
        self.desc().test_run.as_ref()
    }

    /// The type libbpf gives as `ty`, if bpfbench runs it.
    pub fn of_libbpf(ty: sys::bpf_prog_type) -> Option<ProgKind> {
        PROG_TYPES.iter().find(|t| t.libbpf_type == ty).map(|t| t.kind)
    }

    /// The type a section name gives by its first parts (`tc/...`, `xdp`,
    /// `cgroup/connect4`).
    pub fn of_section(section: &str) -> Option<ProgKind> {
        PROG_TYPES.iter().find(|t| t.sections.iter().any(|p| section_has_prefix(section, p))).map(|t| t.kind)
    }

    /// The type `--program-type` names: libbpf's name or a section's first part.
    pub fn parse(name: &str) -> Result<ProgKind, String> {
        PROG_TYPES
            .iter()
            .find(|t| t.name == name || t.sections.contains(&name))
            .map(|t| t.kind)
            .ok_or_else(|| format!("'{name}': give one of {}", ProgKind::names(|_| true)))
    }

    /// libbpf's names of the types that `which`, for messages: "xdp, sched_cls and syscall".
    pub fn names(which: impl Fn(&ProgType) -> bool) -> String {
        and_list(PROG_TYPES.iter().filter(|t| which(t)).map(|t| t.name).collect())
    }

    /// The labels of the types that `which`, for sentences: "XDP and tc".
    pub fn labels(which: impl Fn(&ProgType) -> bool) -> String {
        and_list(PROG_TYPES.iter().filter(|t| which(t)).map(|t| t.label).collect())
    }

    /// How a batch loop reaches the type's programs (per call, saying why,
    /// where the kernel has no test run for them at all).
    pub fn batch_loop(self) -> BatchLoop {
        self.test_run().map_or(BatchLoop::PerCall(NO_TEST_RUN), |r| r.batch_loop)
    }

    /// Whether the kernel test-runs the type (else it is measured attached).
    pub fn test_runs(self) -> bool {
        self.test_run().is_some()
    }

    pub fn pass_verdict(self) -> i32 {
        self.test_run().map_or(0, |r| r.pass)
    }

    pub fn drop_verdict(self) -> i32 {
        self.test_run().map_or(0, |r| r.drop)
    }

    /// Whether the program's test run takes an `__sk_buff`.
    pub fn has_skb(self) -> bool {
        self.takes(|t| t == Takes::Skb)
    }

    /// Whether a test run hands back the flow keys rather than the packet.
    pub fn outputs_flow_keys(self) -> bool {
        self.test_run().is_some_and(|r| r.gives == Gives::FlowKeys)
    }

    /// Whether a test run takes a context and no packet.
    pub fn takes_no_packet(self) -> bool {
        self.takes(|t| matches!(t, Takes::SocketLookup | Takes::Context { .. }))
    }

    /// Whether a test run hands back no packet (only a verdict; a syscall
    /// program's its context).
    pub fn outputs_no_packet(self) -> bool {
        self.test_run().is_some_and(|r| matches!(r.gives, Gives::Verdict | Gives::Context))
    }

    /// Whether the case gives the test run's context itself (`--ctx`).
    pub fn takes_raw_context(self) -> bool {
        self.takes(|t| matches!(t, Takes::Context { .. }))
    }

    fn takes(self, what: impl Fn(Takes) -> bool) -> bool {
        self.test_run().is_some_and(|r| what(r.takes))
    }

    /// Whether BPF_PROG_TEST_RUN times the program.
    pub fn test_run_times(self) -> bool {
        self.test_run().is_some_and(|r| r.kernel_times)
    }

    /// Whether the userspace runtime runs the type.
    pub fn user_runtime(self) -> bool {
        self.test_run().is_some_and(|r| r.user_runtime)
    }

    /// The name of verdict `value`: "XDP_PASS", "1500 (keep up to 1500 bytes)", "7".
    pub fn verdict_name(self, value: u32) -> String {
        match self.test_run().map_or(Verdicts::Number, |r| r.verdicts) {
            Verdicts::Named(names) => names
                .iter()
                .find(|(_, v)| *v as u32 == value)
                .map_or_else(|| format!("{}", value as i32), |(n, _)| n.to_string()),
            Verdicts::BytesToKeep if value == 0 => "0 (drop)".into(),
            Verdicts::BytesToKeep => format!("{value} (keep up to {value} bytes)"),
            Verdicts::Number => format!("{value}"),
        }
    }
}

/// Whether `section` begins with the section prefix `prefix`: is it, or
/// it and a `/` ("tc/ingress" has "tc"; "xdp.frags" has not "xdp").
pub fn section_has_prefix(section: &str, prefix: &str) -> bool {
    section.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// "a, b and c".
fn and_list(names: Vec<&str>) -> String {
    match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CONTRIBUTING.md's recipe for a new type names every field of the
    /// descriptor, so the recipe grows with it.
    #[test]
    fn the_recipe_for_a_type_names_every_field() {
        let doc = include_str!("../../CONTRIBUTING.md");
        let recipe = &doc[doc.find("## Adding a program type").expect("CONTRIBUTING.md has the recipe")..];
        let source = include_str!("prog_type.rs");
        let fields_of = |s: &str| {
            let f = &source[source.find(s).unwrap()..];
            f[..f.find("\n}").unwrap()].to_string()
        };
        let fields = fields_of("pub struct ProgType {") + &fields_of("pub struct TestRun {");
        let names: Vec<&str> = fields
            .lines()
            .filter_map(|l| l.trim().strip_prefix("pub ")?.split(':').next())
            .filter(|n| !n.contains(' '))
            .collect();
        assert!(names.len() >= 15, "{names:?}");
        for n in names {
            assert!(recipe.contains(&format!("`{n}`")), "the recipe in CONTRIBUTING.md does not name `{n}`");
        }
    }

    #[test]
    fn each_descriptor_stands_at_its_kinds_place() {
        for (i, t) in PROG_TYPES.iter().enumerate() {
            assert_eq!(t.kind as usize, i, "{} stands at {i}", t.name);
            assert_eq!(ProgKind::of_libbpf(t.libbpf_type), Some(t.kind));
        }
    }

    #[test]
    fn libbpf_names_the_types_as_the_table_does() {
        for t in &PROG_TYPES {
            // SAFETY: returns a static string or NULL.
            let p = unsafe { sys::libbpf_bpf_prog_type_str(t.libbpf_type) };
            assert!(!p.is_null());
            // SAFETY: libbpf's static, NUL-terminated name.
            assert_eq!(unsafe { std::ffi::CStr::from_ptr(p) }.to_str().unwrap(), t.name);
        }
    }

    #[test]
    fn sections_and_names_parse_to_their_type() {
        assert_eq!(ProgKind::of_section("tc/test/x/check"), Some(ProgKind::Tc));
        assert_eq!(ProgKind::of_section("xdp.frags"), None);
        assert_eq!(ProgKind::of_section("cgroup/connect4"), Some(ProgKind::CgroupSockAddr));
        assert_eq!(ProgKind::of_section("cgroup/sock_create"), Some(ProgKind::CgroupSock));
        assert_eq!(ProgKind::of_section("cgroup_skb/ingress"), Some(ProgKind::CgroupSkb));
        assert_eq!(ProgKind::of_section("tp/syscalls/sys_enter_getppid"), Some(ProgKind::Tracepoint));
        assert_eq!(ProgKind::of_section("uprobe.s//bin/true:main"), Some(ProgKind::Kprobe));
        assert_eq!(ProgKind::of_section("tp_btf/sched_switch"), Some(ProgKind::Tracing));
        assert_eq!(ProgKind::parse("sched_cls"), Ok(ProgKind::Tc));
        assert_eq!(ProgKind::parse("raw_tp"), Ok(ProgKind::RawTracepoint));
        assert_eq!(ProgKind::parse("kprobe"), Ok(ProgKind::Kprobe));
        let err = ProgKind::parse("struct_ops").unwrap_err();
        assert!(err.contains("xdp, sched_cls, socket_filter") && err.ends_with("sk_msg and sk_skb"), "{err}");
    }

    #[test]
    fn verdicts_are_named_by_their_type() {
        assert_eq!(ProgKind::Xdp.verdict_name(3), "XDP_TX");
        assert_eq!(ProgKind::Tc.verdict_name(u32::MAX), "TC_ACT_UNSPEC");
        assert_eq!(ProgKind::Tc.verdict_name(42), "42");
        assert_eq!(ProgKind::SocketFilter.verdict_name(64), "64 (keep up to 64 bytes)");
        assert_eq!(ProgKind::FlowDissector.verdict_name(129), "BPF_FLOW_DISSECTOR_CONTINUE");
        assert_eq!(ProgKind::Syscall.verdict_name(5), "5");
        for t in &PROG_TYPES {
            if let Some(TestRun { verdicts: Verdicts::Named(_), pass, .. }) = t.test_run {
                assert_ne!(t.kind.verdict_name(pass as u32), format!("{pass}"), "{} names its pass", t.name);
            }
        }
    }
}
