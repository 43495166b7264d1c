//! The triggers' workloads: what each event does, and the files, sockets
//! and threads made once for them (removed when the trigger is dropped).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::JoinHandle;

use anyhow::{Context, Result, bail};

use super::{SimpleSyscall, TriggerKind};
use crate::kernel::sockmap::SockMap;

/// The function a bare `uprobe` section attaches to, by its symbol.
pub const TRIGGER_FUNCTION: &str = "bpfbench_trigger";
/// The USDT probe a bare `usdt` section attaches to: (provider, name).
pub const TRIGGER_USDT: (&str, &str) = ("bpfbench", "trigger");

/// bpfbench's trigger function: a uprobe on its entry and its USDT probe
/// `bpfbench:trigger` (the argument: the event's number) fire once per
/// call. Not inlined, and kept in the executable's symbol table by name.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn bpfbench_trigger(event: u64) -> u64 {
    probe::probe!(bpfbench, trigger, event);
    std::hint::black_box(event)
}

pub(super) enum State {
    Syscall(SimpleSyscall),
    OpenClose {
        path: PathBuf,
    },
    Pipe {
        read: OwnedFd,
        write: OwnedFd,
    },
    ForkExec,
    PingPong {
        to_peer: std::fs::File,
        from_peer: std::fs::File,
        peer: Option<JoinHandle<()>>,
    },
    TcpConnect {
        listener: TcpListener,
        at: SocketAddr,
    },
    UdpSend {
        sender: UdpSocket,
        receiver: UdpSocket,
    },
    Socket,
    Sockopt {
        socket: UdpSocket,
    },
    SysctlRead {
        file: std::fs::File,
    },
    Stat {
        path: PathBuf,
    },
    Kill,
    /// One page of anonymous memory, mapped once.
    PageFault {
        page: memmap2::MmapMut,
    },
    FunctionCall {
        next: u64,
    },
    SockMapMessage {
        client: TcpStream,
        server: TcpStream,
        sockmap: SockMap,
    },
    Command(Vec<String>),
}

/// The sockmap trigger's message: 64 bytes, one send and one receipt.
const MESSAGE: [u8; 64] = [0x5a; 64];

/// The page-fault trigger's page: a private mapping its state owns and
/// unmaps.
impl State {
    pub(super) fn prepare(kind: &TriggerKind, sockmap: Option<BorrowedFd<'_>>) -> Result<State> {
        Ok(match kind {
            TriggerKind::Syscall(s) => State::Syscall(*s),
            TriggerKind::OpenClose | TriggerKind::Stat => {
                let dir = files_dir();
                remove_killed_runs_files(&dir);
                let stat = matches!(kind, TriggerKind::Stat);
                // Each trigger its own file: one is dropped (and its file removed) while another fires.
                static MADE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
                let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let what = if stat { "stat" } else { "openat" };
                let path = dir.join(format!("{FILE_PREFIX}{}-{n}-{what}", std::process::id()));
                std::fs::write(&path, b"bpfbench").with_context(|| format!("making {}", path.display()))?;
                if stat { State::Stat { path } } else { State::OpenClose { path } }
            }
            TriggerKind::Pipe => {
                let (read, write) = pipe()?;
                State::Pipe { read, write }
            }
            TriggerKind::ForkExec => {
                if !std::path::Path::new("/bin/true").exists() {
                    bail!("the fork-exec trigger runs /bin/true, which this machine lacks");
                }
                State::ForkExec
            }
            TriggerKind::PingPong => {
                let (peer_read, to_peer) = pipe()?;
                let (from_peer, peer_write) = pipe()?;
                let (mut peer_in, mut peer_out) = (std::fs::File::from(peer_read), std::fs::File::from(peer_write));
                // The thread inherits this thread's CPU: each hand-over is a switch.
                let peer = std::thread::spawn(move || {
                    let mut b = [0u8; 1];
                    while peer_in.read_exact(&mut b).is_ok() {
                        if peer_out.write_all(&b).is_err() {
                            return;
                        }
                    }
                });
                State::PingPong { to_peer: to_peer.into(), from_peer: from_peer.into(), peer: Some(peer) }
            }
            TriggerKind::TcpConnect | TriggerKind::TcpConnect6 => {
                let local = if matches!(kind, TriggerKind::TcpConnect6) { "[::1]:0" } else { "127.0.0.1:0" };
                let listener = TcpListener::bind(local).with_context(|| format!("listening on {local}"))?;
                let at = listener.local_addr()?;
                State::TcpConnect { listener, at }
            }
            TriggerKind::UdpSend => {
                let receiver = UdpSocket::bind("127.0.0.1:0").context("binding a UDP socket on loopback")?;
                let sender = UdpSocket::bind("127.0.0.1:0").context("binding a UDP socket on loopback")?;
                sender.connect(receiver.local_addr()?)?;
                State::UdpSend { sender, receiver }
            }
            TriggerKind::Socket => State::Socket,
            TriggerKind::Sockopt => State::Sockopt { socket: UdpSocket::bind("127.0.0.1:0")? },
            TriggerKind::SysctlRead => {
                let path = "/proc/sys/net/ipv4/ip_local_port_range";
                State::SysctlRead { file: std::fs::File::open(path).with_context(|| format!("opening {path}"))? }
            }
            TriggerKind::FunctionCall => State::FunctionCall { next: 0 },
            TriggerKind::SockMapMessage => {
                let Some(map) = sockmap else {
                    bail!(
                        "the sockmap-message trigger sends over sockets it puts into the object's sockmap; this object has none"
                    )
                };
                let listener = TcpListener::bind("127.0.0.1:0").context("listening on loopback")?;
                let client = TcpStream::connect(listener.local_addr()?).context("connecting on loopback")?;
                let (server, _) = listener.accept().context("accepting on loopback")?;
                client.set_nodelay(true)?;
                State::SockMapMessage { client, server, sockmap: SockMap::of(map)? }
            }
            TriggerKind::Kill => State::Kill,
            TriggerKind::PageFault => {
                // SAFETY: sysconf has no preconditions.
                let len = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
                let page = memmap2::MmapMut::map_anon(len).context("mapping a page for the page-fault trigger")?;
                State::PageFault { page }
            }
            TriggerKind::Command(argv) => {
                if argv.is_empty() {
                    bail!("--trigger -- needs a command after the --");
                }
                State::Command(argv.clone())
            }
        })
    }

    pub(super) fn fire(&mut self, events: u64) -> Result<()> {
        match self {
            State::Syscall(s) => {
                let nr = match s {
                    SimpleSyscall::Getpid => libc::SYS_getpid,
                    SimpleSyscall::Getppid => libc::SYS_getppid,
                    SimpleSyscall::Gettid => libc::SYS_gettid,
                    SimpleSyscall::Getuid => libc::SYS_getuid,
                    SimpleSyscall::SchedYield => libc::SYS_sched_yield,
                    SimpleSyscall::Uname => libc::SYS_uname,
                };
                let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
                for _ in 0..events {
                    // SAFETY: system calls without effects; uname writes the struct given.
                    unsafe { libc::syscall(nr, &mut uts as *mut libc::utsname) };
                }
            }
            State::OpenClose { path } => open_close(path, events)?,
            State::Pipe { read, write } => {
                let mut b = [7u8];
                for _ in 0..events {
                    // SAFETY: one byte to and from the pipe's own ends.
                    unsafe {
                        if libc::write(write.as_raw_fd(), b.as_ptr().cast(), 1) != 1
                            || libc::read(read.as_raw_fd(), b.as_mut_ptr().cast(), 1) != 1
                        {
                            bail!("the pipe trigger: {}", std::io::Error::last_os_error());
                        }
                    }
                }
            }
            State::ForkExec => run_each(&["/bin/true".to_string()], events, Stdio::null)?,
            State::PingPong { to_peer, from_peer, .. } => {
                let mut b = [1u8];
                for _ in 0..events {
                    to_peer.write_all(&b).context("the ping-pong trigger's pipe")?;
                    from_peer.read_exact(&mut b).context("the ping-pong trigger's pipe")?;
                }
            }
            State::TcpConnect { listener, at } => {
                for _ in 0..events {
                    let client = TcpStream::connect(*at).context("connecting on loopback")?;
                    let (server, _) = listener.accept().context("accepting on loopback")?;
                    // Reset, not closed: no TIME_WAIT left to run out of ports.
                    reset_on_close(&client)?;
                    reset_on_close(&server)?;
                }
            }
            State::UdpSend { sender, receiver } => {
                let mut buf = [0u8; 16];
                for _ in 0..events {
                    sender.send(b"bpfbench").context("sending on loopback")?;
                    receiver.recv(&mut buf).context("receiving on loopback")?;
                }
            }
            State::Socket => {
                for _ in 0..events {
                    drop(UdpSocket::bind("127.0.0.1:0").context("making a UDP socket")?);
                }
            }
            State::Sockopt { socket } => set_and_get_priority(socket.as_raw_fd(), events),
            State::SysctlRead { file } => {
                let mut buf = [0u8; 64];
                for _ in 0..events {
                    // SAFETY: reads into the buffer given.
                    if unsafe { libc::pread(file.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) } < 0 {
                        bail!("reading a sysctl: {}", std::io::Error::last_os_error());
                    }
                }
            }
            State::Stat { path } => stat(path, events)?,
            State::Kill => {
                // SAFETY: SIGURG's default action is to ignore it; this process sets no handler.
                unsafe {
                    let pid = libc::getpid();
                    for _ in 0..events {
                        libc::kill(pid, libc::SIGURG);
                    }
                }
            }
            State::PageFault { page } => {
                for i in 0..events {
                    // SAFETY: the page this state mapped, which nothing else
                    // reads. Given back, its next write faults a zeroed page
                    // in: exactly one fault an event.
                    unsafe { page.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) }
                        .context("madvise(MADV_DONTNEED)")?;
                    // SAFETY: the page's first byte, in the mapping.
                    unsafe { std::ptr::write_volatile(page.as_mut_ptr(), i as u8) };
                }
            }
            State::FunctionCall { next } => {
                for _ in 0..events {
                    bpfbench_trigger(*next);
                    *next += 1;
                }
            }
            State::SockMapMessage { client, server, sockmap } => {
                // In the map for this batch only: the sockets take the
                // programs attached now (a socket keeps those its map had
                // when it joined), and leave before they may detach.
                let _joined = sockmap.join(&[client.as_fd(), server.as_fd()])?;
                let mut buf = [0u8; MESSAGE.len()];
                for _ in 0..events {
                    client.write_all(&MESSAGE).context("sending on loopback")?;
                    server.read_exact(&mut buf).context("receiving on loopback")?;
                }
            }
            // The command's errors stay on the terminal: the user's to read.
            State::Command(argv) => {
                run_each(argv, events, Stdio::inherit).with_context(|| format!("--trigger -- {}", argv.join(" ")))?
            }
        }
        Ok(())
    }
}

/// `path` opened and closed `events` times.
fn open_close(path: &Path, events: u64) -> Result<()> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("no NUL in the path");
    for _ in 0..events {
        // SAFETY: a valid path; the descriptor is closed at once.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            bail!("opening {}: {}", path.display(), std::io::Error::last_os_error());
        }
        unsafe { libc::close(fd) };
    }
    Ok(())
}

/// `path`'s statx `events` times.
fn stat(path: &Path, events: u64) -> Result<()> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("no NUL in the path");
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    for _ in 0..events {
        // SAFETY: a valid path and a statx buffer to fill.
        let rc = unsafe { libc::statx(libc::AT_FDCWD, c.as_ptr(), 0, libc::STATX_BASIC_STATS, &mut st) };
        if rc != 0 {
            bail!("statx of {}: {}", path.display(), std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// SO_PRIORITY of socket `fd` set and read back, `events` times.
fn set_and_get_priority(fd: RawFd, events: u64) {
    let mut v: libc::c_int = 0;
    for _ in 0..events {
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        let at = (libc::SOL_SOCKET, libc::SO_PRIORITY);
        // SAFETY: an int option of the socket's own.
        unsafe {
            libc::setsockopt(fd, at.0, at.1, (&v as *const libc::c_int).cast(), len);
            libc::getsockopt(fd, at.0, at.1, (&mut v as *mut libc::c_int).cast(), &mut len);
        }
    }
}

/// `argv` run to its end `events` times, its input and output null, its
/// errors to `stderr`; an error says which failed.
fn run_each(argv: &[String], events: u64, stderr: fn() -> Stdio) -> Result<()> {
    for _ in 0..events {
        let status = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr())
            .status()
            .with_context(|| format!("running {}", argv[0]))?;
        if !status.success() {
            bail!("{} failed ({status})", argv[0]);
        }
    }
    Ok(())
}

impl Drop for State {
    fn drop(&mut self) {
        match self {
            State::OpenClose { path } | State::Stat { path } => {
                let _ = std::fs::remove_file(path);
            }
            State::PingPong { to_peer, peer, .. } => {
                // The peer's read ends when its pipe has no writer left.
                let dead = std::fs::File::open("/dev/null");
                if let Ok(null) = dead {
                    *to_peer = null;
                }
                if let Some(p) = peer.take() {
                    let _ = p.join();
                }
            }
            _ => {}
        }
    }
}

/// The openat and stat triggers' files: `bpfbench-trigger-PID-N-openat`, `-stat`.
const FILE_PREFIX: &str = "bpfbench-trigger-";

/// Where the trigger files are made: memory, where there is a tmpfs.
fn files_dir() -> PathBuf {
    if std::path::Path::new("/dev/shm").is_dir() { "/dev/shm".into() } else { std::env::temp_dir() }
}

/// Removes the trigger files of runs killed before they could (SIGKILL);
/// what was removed, a line each.
pub fn remove_leftovers() -> Vec<String> {
    remove_killed_runs_files(&files_dir())
}

fn remove_killed_runs_files(dir: &std::path::Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let pid = name.strip_prefix(FILE_PREFIX).and_then(|p| p.split('-').next()).and_then(|p| p.parse::<u32>().ok());
        let Some(pid) = pid else { continue };
        if pid != std::process::id()
            && !crate::system::other_bpfbench_alive(pid)
            && std::fs::remove_file(e.path()).is_ok()
        {
            removed.push(format!("removed the trigger file {} a killed run left", e.path().display()));
        }
    }
    removed
}

fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: a two-int array for the new descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        bail!("making a pipe: {}", std::io::Error::last_os_error());
    }
    // SAFETY: two new descriptors this process owns.
    Ok(unsafe { (std::os::fd::FromRawFd::from_raw_fd(fds[0]), std::os::fd::FromRawFd::from_raw_fd(fds[1])) })
}

/// SO_LINGER with a zero timeout: the close resets the connection.
fn reset_on_close(s: &TcpStream) -> Result<()> {
    let linger = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: a linger struct for the socket's own option.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        bail!("SO_LINGER: {}", std::io::Error::last_os_error());
    }
    Ok(())
}
