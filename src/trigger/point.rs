//! The trigger an attach point calls for, and how often a program there
//! runs per event: the syscall a tracepoint names, the kernel function a
//! probe or trampoline enters (a table of the common ones), the cgroup hook
//! a socket operation passes.

use crate::kernel::attach_point::{AttachPoint, SoftwareEvent, TrampolineSide};

use super::{SimpleSyscall, TriggerKind};

/// How many runs of a program one event gives, as validation expects them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    /// Exactly so many (other processes may add a few: validation allows them).
    Runs(u32),
    /// At least one: the hook's count per event is the kernel's affair
    /// (sockops callbacks, a command's events).
    AtLeastOne,
}

impl Expected {
    /// As records keep it: None for at least one.
    pub fn runs_per_event(self) -> Option<u32> {
        match self {
            Expected::Runs(n) => Some(n),
            Expected::AtLeastOne => None,
        }
    }
}

/// The trigger that fires `point`, and what validation expects of it;
/// None where bpfbench knows none (then `--trigger` names one).
pub fn for_point(point: &AttachPoint) -> Option<(TriggerKind, Expected)> {
    match point {
        AttachPoint::Tracepoint { category, name } => match category.as_str() {
            "syscalls" => {
                let syscall = name.strip_prefix("sys_enter_").or_else(|| name.strip_prefix("sys_exit_"))?;
                for_syscall(syscall)
            }
            // Every system call: getppid's only.
            "raw_syscalls" => Some((TriggerKind::Syscall(SimpleSyscall::Getppid), Expected::Runs(1))),
            "signal" if name == "signal_generate" => Some((TriggerKind::Kill, Expected::Runs(1))),
            // Several state changes a connection, on both its ends.
            "sock" if name == "inet_sock_set_state" => Some((TriggerKind::TcpConnect, Expected::AtLeastOne)),
            "sched" => for_sched_event(name),
            _ => None,
        },
        AttachPoint::RawTracepoint { name } | AttachPoint::BtfTracepoint { name } => match name.as_str() {
            // Every system call: getppid's only.
            "sys_enter" | "sys_exit" => Some((TriggerKind::Syscall(SimpleSyscall::Getppid), Expected::Runs(1))),
            other => for_sched_event(other),
        },
        AttachPoint::Ksyscall { name, .. } => for_syscall(name),
        AttachPoint::Kprobe { func, .. } => for_kernel_function(func),
        // One function by name: its trigger; a glob's functions are the user's to fire.
        AttachPoint::KprobeMulti { pattern, .. } if !pattern.contains(['*', '?']) => for_kernel_function(pattern),
        AttachPoint::KprobeMulti { .. } => None,
        AttachPoint::Trampoline { side: TrampolineSide::Lsm, func } => for_lsm_hook(func),
        AttachPoint::Trampoline { func, .. } => for_kernel_function(func),
        AttachPoint::Uprobe { target: None, .. } | AttachPoint::Usdt { target: None } => {
            Some((TriggerKind::FunctionCall, Expected::Runs(1)))
        }
        AttachPoint::Uprobe { .. } | AttachPoint::Usdt { .. } => None,
        AttachPoint::Cgroup { hook, .. } => for_cgroup_hook(hook),
        AttachPoint::PerfEvent { event: SoftwareEvent::PageFaults } => {
            Some((TriggerKind::PageFault, Expected::Runs(1)))
        }
        AttachPoint::PerfEvent { event: SoftwareEvent::ContextSwitches } => {
            Some((TriggerKind::PingPong, Expected::Runs(2)))
        }
        AttachPoint::SockMap { .. } => Some((TriggerKind::SockMapMessage, Expected::Runs(1))),
    }
}

/// A system call by its name in the kernel (`openat`, `getppid`).
fn for_syscall(name: &str) -> Option<(TriggerKind, Expected)> {
    if let Some(s) = SimpleSyscall::ALL.iter().find(|s| s.name() == name) {
        return Some((TriggerKind::Syscall(*s), Expected::Runs(1)));
    }
    let trigger = match name {
        "openat" | "close" => TriggerKind::OpenClose,
        "read" | "write" => TriggerKind::Pipe,
        "execve" => TriggerKind::ForkExec,
        "connect" | "accept" | "accept4" => TriggerKind::TcpConnect,
        "sendto" | "recvfrom" => TriggerKind::UdpSend,
        "socket" => TriggerKind::Socket,
        "setsockopt" | "getsockopt" => TriggerKind::Sockopt,
        "pread64" => TriggerKind::SysctlRead,
        "statx" => TriggerKind::Stat,
        "kill" => TriggerKind::Kill,
        _ => return None,
    };
    Some((trigger, Expected::Runs(1)))
}

/// A scheduler event (tracepoint, raw or BTF tracepoint of that name).
fn for_sched_event(name: &str) -> Option<(TriggerKind, Expected)> {
    match name {
        "sched_switch" => Some((TriggerKind::PingPong, Expected::Runs(2))),
        "sched_wakeup" | "sched_waking" => Some((TriggerKind::PingPong, Expected::AtLeastOne)),
        "sched_process_fork" | "sched_process_exec" | "sched_process_exit" | "sched_wakeup_new" => {
            Some((TriggerKind::ForkExec, Expected::Runs(1)))
        }
        "sched_process_free" | "sched_process_wait" => Some((TriggerKind::ForkExec, Expected::AtLeastOne)),
        _ => None,
    }
}

/// A kernel function a kprobe or an fentry/fexit program enters.
fn for_kernel_function(func: &str) -> Option<(TriggerKind, Expected)> {
    for prefix in ["__x64_sys_", "__se_sys_", "__do_sys_", "__ia32_sys_"] {
        if let Some(syscall) = func.strip_prefix(prefix) {
            return for_syscall(syscall);
        }
    }
    let trigger = match func {
        "do_sys_openat2" | "do_sys_open" | "do_filp_open" | "vfs_open" => TriggerKind::OpenClose,
        "vfs_statx" | "vfs_getattr" => TriggerKind::Stat,
        "ksys_read" | "vfs_read" | "ksys_write" | "vfs_write" => TriggerKind::Pipe,
        "tcp_connect" | "tcp_v4_connect" | "inet_csk_accept" => TriggerKind::TcpConnect,
        "tcp_v6_connect" => TriggerKind::TcpConnect6,
        "udp_sendmsg" | "udp_recvmsg" => TriggerKind::UdpSend,
        "__sys_socket" | "inet_bind" | "inet6_bind" => TriggerKind::Socket,
        "wake_up_new_task" | "kernel_clone" | "do_exit" => TriggerKind::ForkExec,
        _ => return None,
    };
    Some((trigger, Expected::Runs(1)))
}

/// An LSM hook (`lsm/file_open`).
fn for_lsm_hook(hook: &str) -> Option<(TriggerKind, Expected)> {
    let trigger = match hook {
        "file_open" => TriggerKind::OpenClose,
        "socket_create" | "socket_post_create" => TriggerKind::Socket,
        "socket_connect" => TriggerKind::TcpConnect,
        "socket_setsockopt" | "socket_getsockopt" => TriggerKind::Sockopt,
        "bprm_check_security" | "bprm_committed_creds" => TriggerKind::ForkExec,
        _ => return None,
    };
    Some((trigger, Expected::Runs(1)))
}

/// A cgroup hook, by its section name.
fn for_cgroup_hook(hook: &str) -> Option<(TriggerKind, Expected)> {
    Some(match hook {
        "cgroup/connect4" => (TriggerKind::TcpConnect, Expected::Runs(1)),
        "cgroup/connect6" => (TriggerKind::TcpConnect6, Expected::Runs(1)),
        "cgroup/bind4" | "cgroup/post_bind4" | "cgroup/sock_create" | "cgroup/sock" | "cgroup/sock_release" => {
            (TriggerKind::Socket, Expected::Runs(1))
        }
        "cgroup/sendmsg4" | "cgroup/recvmsg4" | "cgroup/getsockname4" | "cgroup/getpeername4" => {
            (TriggerKind::UdpSend, Expected::AtLeastOne)
        }
        "cgroup/setsockopt" | "cgroup/getsockopt" => (TriggerKind::Sockopt, Expected::Runs(1)),
        "cgroup/sysctl" => (TriggerKind::SysctlRead, Expected::Runs(1)),
        // Several callbacks a connection (connect, established on both ends, ...).
        "sockops" => (TriggerKind::TcpConnect, Expected::AtLeastOne),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::prog_type::ProgKind;

    fn trigger(section: &str) -> Option<(TriggerKind, Expected)> {
        let kind = ProgKind::of_section(section).unwrap();
        for_point(&AttachPoint::parse(section, kind).unwrap())
    }

    #[test]
    fn points_pick_the_workload_that_fires_them() {
        assert_eq!(
            trigger("tp/syscalls/sys_enter_getppid"),
            Some((TriggerKind::Syscall(SimpleSyscall::Getppid), Expected::Runs(1)))
        );
        assert_eq!(trigger("tp/syscalls/sys_exit_openat"), Some((TriggerKind::OpenClose, Expected::Runs(1))));
        assert_eq!(trigger("tp/sched/sched_switch"), Some((TriggerKind::PingPong, Expected::Runs(2))));
        assert_eq!(
            trigger("kprobe/__x64_sys_getpid"),
            Some((TriggerKind::Syscall(SimpleSyscall::Getpid), Expected::Runs(1)))
        );
        assert_eq!(trigger("fentry/do_sys_openat2"), Some((TriggerKind::OpenClose, Expected::Runs(1))));
        assert_eq!(trigger("lsm/file_open"), Some((TriggerKind::OpenClose, Expected::Runs(1))));
        assert_eq!(trigger("uprobe"), Some((TriggerKind::FunctionCall, Expected::Runs(1))));
        assert_eq!(trigger("usdt"), Some((TriggerKind::FunctionCall, Expected::Runs(1))));
        assert_eq!(trigger("cgroup/connect4"), Some((TriggerKind::TcpConnect, Expected::Runs(1))));
        assert_eq!(trigger("sockops"), Some((TriggerKind::TcpConnect, Expected::AtLeastOne)));
        assert_eq!(trigger("tp/irq/irq_handler_entry"), None);
        assert_eq!(trigger("uprobe//bin/bash:readline"), None);
    }
}
