//! What fires an attached program: a workload run in a loop on the timed
//! CPU, one event at a time. A trigger is picked from the program's attach
//! point (a syscall's tracepoint fires with that syscall; a uprobe on
//! bpfbench's own trigger function fires with a call to it) or named with
//! `--trigger NAME`, or any command with `--trigger -- CMD ARGS` (an event
//! is one run of it).

mod point;
mod threads;
mod workload;

use std::os::fd::BorrowedFd;
use std::time::Instant;

use anyhow::{Result, bail};

pub use point::{Expected, for_point};
pub use threads::{FIRING_THREADS, FiringThreads};
pub use workload::{TRIGGER_FUNCTION, TRIGGER_USDT, bpfbench_trigger, remove_leftovers};

/// A trigger as the command line names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TriggerKind {
    /// A system call without effects, in a loop (`getpid`, `getppid`, `gettid`, `sched_yield`, `uname`).
    Syscall(SimpleSyscall),
    /// `openat` and `close` of a file on tmpfs.
    OpenClose,
    /// `write` and `read` of one byte through a pipe.
    Pipe,
    /// `fork`, `execve` of /bin/true and `wait`: a process born, run and reaped.
    ForkExec,
    /// Two threads on the timed CPU handing a byte back and forth: two
    /// context switches an event.
    PingPong,
    /// A TCP connection on loopback: `connect`, `accept`, and both closed (reset).
    TcpConnect,
    /// The same over IPv6 (::1).
    TcpConnect6,
    /// A UDP datagram on loopback: `sendto` and the `recv` that drains it.
    UdpSend,
    /// A UDP socket made and closed.
    Socket,
    /// `setsockopt` and `getsockopt` (SO_PRIORITY) on a UDP socket.
    Sockopt,
    /// A read of a sysctl file (`/proc/sys/net/ipv4/ip_local_port_range`).
    SysctlRead,
    /// `statx` of a file on tmpfs.
    Stat,
    /// `kill` of this process with SIGURG, which it ignores: the signal is
    /// generated (and traced) and dropped.
    Kill,
    /// A write to a page of memory given back just before
    /// (`madvise(MADV_DONTNEED)`): one page fault.
    PageFault,
    /// A call of bpfbench's own trigger function, whose entry a uprobe and
    /// whose USDT probe (bpfbench:trigger) fire.
    FunctionCall,
    /// A 64-byte message sent over a TCP connection on loopback and read
    /// at the other end, both sockets in the object's sockmap: its sk_msg
    /// programs run on the send, its sk_skb programs on the receipt.
    SockMapMessage,
    /// One run of a command, waited for.
    Command(Vec<String>),
}

/// The system calls [`TriggerKind::Syscall`] makes: none has an effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimpleSyscall {
    Getpid,
    Getppid,
    Gettid,
    Getuid,
    SchedYield,
    Uname,
}

impl SimpleSyscall {
    pub const ALL: [SimpleSyscall; 6] = [
        SimpleSyscall::Getpid,
        SimpleSyscall::Getppid,
        SimpleSyscall::Gettid,
        SimpleSyscall::Getuid,
        SimpleSyscall::SchedYield,
        SimpleSyscall::Uname,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SimpleSyscall::Getpid => "getpid",
            SimpleSyscall::Getppid => "getppid",
            SimpleSyscall::Gettid => "gettid",
            SimpleSyscall::Getuid => "getuid",
            SimpleSyscall::SchedYield => "sched_yield",
            SimpleSyscall::Uname => "uname",
        }
    }
}

/// Every named trigger, for `--trigger` and its help: (name, what one event is).
pub const NAMED: &[(&str, &str)] = &[
    ("getpid", "a getpid() system call (also getppid, gettid, getuid, sched_yield, uname)"),
    ("openat", "openat() and close() of a file on tmpfs"),
    ("pipe", "write() and read() of one byte through a pipe"),
    ("fork-exec", "fork, execve of /bin/true, exit and wait"),
    ("ping-pong", "two threads on the CPU handing a byte back and forth: two context switches"),
    ("tcp-connect", "a TCP connection on loopback, accepted and reset"),
    ("tcp-connect6", "the same over IPv6 (::1)"),
    ("udp-send", "a UDP datagram sent on loopback and received"),
    ("socket", "a UDP socket made and closed"),
    ("sockopt", "setsockopt() and getsockopt() of SO_PRIORITY"),
    ("sysctl", "a read of /proc/sys/net/ipv4/ip_local_port_range"),
    ("stat", "statx() of a file on tmpfs"),
    ("kill", "kill() of bpfbench itself with SIGURG, which it ignores"),
    ("page-fault", "a write to a page given back with madvise(MADV_DONTNEED): one page fault"),
    ("call", "a call of bpfbench's trigger function (its uprobe and its USDT probe bpfbench:trigger)"),
    (
        "sockmap-message",
        "a message sent and read over a TCP connection on loopback whose sockets are in the object's sockmap",
    ),
];

impl TriggerKind {
    /// `--trigger NAME`.
    pub fn parse(name: &str) -> Result<TriggerKind> {
        if let Some(s) = SimpleSyscall::ALL.iter().find(|s| s.name() == name) {
            return Ok(TriggerKind::Syscall(*s));
        }
        Ok(match name {
            "openat" => TriggerKind::OpenClose,
            "pipe" => TriggerKind::Pipe,
            "fork-exec" => TriggerKind::ForkExec,
            "ping-pong" => TriggerKind::PingPong,
            "tcp-connect" => TriggerKind::TcpConnect,
            "tcp-connect6" => TriggerKind::TcpConnect6,
            "udp-send" => TriggerKind::UdpSend,
            "socket" => TriggerKind::Socket,
            "sockopt" => TriggerKind::Sockopt,
            "sysctl" => TriggerKind::SysctlRead,
            "stat" => TriggerKind::Stat,
            "kill" => TriggerKind::Kill,
            "page-fault" => TriggerKind::PageFault,
            "call" => TriggerKind::FunctionCall,
            "sockmap-message" => TriggerKind::SockMapMessage,
            _ => bail!(
                "--trigger {name}: give one of {}, or a command after --: --trigger -- CMD ARGS",
                NAMED.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            ),
        })
    }

    /// What one event is, for tables and notes.
    pub fn describe(&self) -> String {
        match self {
            TriggerKind::Syscall(s) => format!("{}()", s.name()),
            TriggerKind::OpenClose => "openat() + close() on tmpfs".into(),
            TriggerKind::Pipe => "write() + read() of a byte on a pipe".into(),
            TriggerKind::ForkExec => "fork + exec /bin/true + wait".into(),
            TriggerKind::PingPong => "a pipe ping-pong between two threads (2 context switches)".into(),
            TriggerKind::TcpConnect => "a TCP connect + accept on loopback".into(),
            TriggerKind::TcpConnect6 => "a TCP connect + accept on IPv6 loopback".into(),
            TriggerKind::UdpSend => "a UDP send + recv on loopback".into(),
            TriggerKind::Socket => "socket() + close()".into(),
            TriggerKind::Sockopt => "setsockopt() + getsockopt()".into(),
            TriggerKind::SysctlRead => "a read of a sysctl".into(),
            TriggerKind::Stat => "statx() on tmpfs".into(),
            TriggerKind::Kill => "kill() of itself with an ignored signal".into(),
            TriggerKind::PageFault => "a page fault (a write after madvise(MADV_DONTNEED))".into(),
            TriggerKind::FunctionCall => "a call of bpfbench_trigger()".into(),
            TriggerKind::SockMapMessage => "a 64-byte message over loopback TCP, its sockets in the sockmap".into(),
            TriggerKind::Command(argv) => format!("a run of `{}`", argv.join(" ")),
        }
    }
}

/// A trigger ready to fire: its files, sockets and threads made once.
pub struct Trigger {
    kind: TriggerKind,
    state: workload::State,
}

impl Trigger {
    pub fn prepare(kind: TriggerKind) -> Result<Trigger> {
        Trigger::prepare_for(kind, None)
    }

    /// A trigger for an object whose sk_msg or sk_skb programs attach to
    /// `sockmap` (the `sockmap-message` trigger's sockets join it).
    pub fn prepare_for(kind: TriggerKind, sockmap: Option<BorrowedFd<'_>>) -> Result<Trigger> {
        let state = workload::State::prepare(&kind, sockmap)?;
        Ok(Trigger { kind, state })
    }

    pub fn kind(&self) -> &TriggerKind {
        &self.kind
    }

    /// Fires `events` events, one after another on this thread's CPU.
    pub fn fire(&mut self, events: u64) -> Result<()> {
        self.state.fire(events)
    }

    /// Fires `events` events and returns the wall-clock ns they took.
    pub fn timed(&mut self, events: u64) -> Result<u64> {
        let t0 = Instant::now();
        self.fire(events)?;
        Ok(t0.elapsed().as_nanos() as u64)
    }
}
