//! The tracing filesystem, where libbpf reads a tracepoint's id. Where the
//! machine has not mounted it, bpfbench mounts it in a mount namespace of
//! its own: nothing changes on the machine, and the mount ends with the
//! process however it ends (a SIGKILL included).

use std::ffi::CString;
use std::path::Path;
use std::sync::Mutex;

use anyhow::{Result, bail};

/// Where libbpf looks first.
pub const TRACEFS: &str = "/sys/kernel/tracing";

/// What happened the first time (the answer holds for the process).
static ONCE: Mutex<Option<Result<Mounted, String>>> = Mutex::new(None);

/// How the tracing filesystem came to be there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mounted {
    /// The machine had it mounted.
    Already,
    /// bpfbench mounted it in its own mount namespace.
    Privately,
}

/// Makes the tracing filesystem readable at [`TRACEFS`] for this thread
/// (the namespace is the calling thread's: call it from the thread that
/// attaches, before any other thread is started for the work).
pub fn ensure() -> Result<Mounted> {
    let mut once = ONCE.lock().unwrap_or_else(|e| e.into_inner());
    let answer = once.get_or_insert_with(|| mount_if_missing().map_err(|e| crate::record::error_line(&e)));
    answer.clone().map_err(|e| anyhow::anyhow!(e))
}

fn mounted_here() -> bool {
    Path::new(TRACEFS).join("events").is_dir()
}

fn mount_if_missing() -> Result<Mounted> {
    if mounted_here() {
        return Ok(Mounted::Already);
    }
    // SAFETY: plain syscalls with valid C strings; the namespace is this thread's.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            bail!(
                "the tracing filesystem is not mounted, and bpfbench cannot mount it in a namespace of its own (unshare: {}); mount it: mount -t tracefs tracefs {TRACEFS}",
                std::io::Error::last_os_error()
            );
        }
        let root = CString::new("/").expect("no NUL");
        // Private: nothing mounted here reaches the machine's namespace.
        if libc::mount(
            std::ptr::null(),
            root.as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            bail!("making bpfbench's mount namespace private: {}", std::io::Error::last_os_error());
        }
        let (source, target, kind) = (
            CString::new("tracefs").expect("no NUL"),
            CString::new(TRACEFS).expect("no NUL"),
            CString::new("tracefs").expect("no NUL"),
        );
        if libc::mount(source.as_ptr(), target.as_ptr(), kind.as_ptr(), 0, std::ptr::null()) != 0 {
            bail!(
                "mounting the tracing filesystem at {TRACEFS} (in bpfbench's own namespace): {}",
                std::io::Error::last_os_error()
            );
        }
    }
    if !mounted_here() {
        bail!("the tracing filesystem mounted at {TRACEFS} has no events/ (a kernel without CONFIG_TRACING?)");
    }
    Ok(Mounted::Privately)
}
