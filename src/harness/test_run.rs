//! BPF_PROG_TEST_RUN on a program file descriptor.
//!
//! Workloads keep owned descriptors rather than libbpf-rs `Program`s so that
//! their state does not borrow a skeleton; this is the one place that turns a
//! descriptor and a packet into a kernel run.

use std::os::fd::{AsRawFd, BorrowedFd};

use anyhow::{Result, bail};
use libbpf_rs::libbpf_sys;

/// What one XDP test run returned.
#[derive(Debug, Clone)]
pub struct XdpRunOutput {
    pub retval: u32,
    /// The packet as the program left it.
    pub packet: Vec<u8>,
}

/// Room for the output packet: the input plus any headers the program pushes.
const HEADROOM_GROWTH: usize = 256;

/// Runs an XDP program once on `packet` (the program may loop inside).
pub fn run_xdp(prog: BorrowedFd<'_>, packet: &[u8]) -> Result<XdpRunOutput> {
    let mut out = vec![0u8; packet.len() + HEADROOM_GROWTH];
    // SAFETY: zero is a valid bit pattern for this plain C struct.
    let mut opts: libbpf_sys::bpf_test_run_opts = unsafe { std::mem::zeroed() };
    opts.sz = std::mem::size_of::<libbpf_sys::bpf_test_run_opts>() as _;
    opts.data_in = packet.as_ptr().cast();
    opts.data_size_in = packet.len() as u32;
    opts.data_out = out.as_mut_ptr().cast();
    opts.data_size_out = out.len() as u32;
    opts.repeat = 1;
    // SAFETY: the buffers outlive the call and their sizes are passed with them.
    let rc = unsafe { libbpf_sys::bpf_prog_test_run_opts(prog.as_raw_fd(), &mut opts) };
    if rc != 0 {
        let err = std::io::Error::last_os_error();
        bail!("BPF_PROG_TEST_RUN failed: {err}");
    }
    out.truncate(opts.data_size_out as usize);
    Ok(XdpRunOutput {
        retval: opts.retval,
        packet: out,
    })
}

/// Name of an XDP action, as the kernel's uapi spells it.
pub fn xdp_action_name(action: u32) -> String {
    match action {
        0 => "XDP_ABORTED".into(),
        1 => "XDP_DROP".into(),
        2 => "XDP_PASS".into(),
        3 => "XDP_TX".into(),
        4 => "XDP_REDIRECT".into(),
        other => format!("action {other}"),
    }
}
