//! BPF_PROG_TEST_RUN on a program file descriptor: the one place that turns
//! a descriptor and a packet into a kernel run (XDP and tc alike).

use std::os::fd::{AsRawFd, BorrowedFd};

use anyhow::{Result, bail};
use libbpf_rs::libbpf_sys;

/// What one test run returned.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunOutput {
    pub retval: u32,
    /// The packet as the program left it.
    pub packet: Vec<u8>,
    /// The kernel's own timing of the run (ns per repetition), around the
    /// program alone: no syscall, but the clock reads of the test run.
    pub duration_ns: u32,
}

/// Room for the output packet: the input plus any headers the program pushes.
const HEADROOM_GROWTH: usize = 256;

/// Runs a program once on `packet` (the program may loop inside).
pub fn run(prog: BorrowedFd<'_>, packet: &[u8]) -> Result<RunOutput> {
    run_in(prog, packet, None)
}

/// Runs a program once on `packet` with the context `ctx` (an skb
/// program's `__sk_buff` with the fields a test may set), if given. An
/// empty `packet` passes none, for the types that take a context alone
/// (sk_lookup), whose test run refuses packet buffers.
pub fn run_in(prog: BorrowedFd<'_>, packet: &[u8], ctx: Option<&[u8]>) -> Result<RunOutput> {
    run_keeping_ctx(prog, packet, ctx).map(|(out, _)| out)
}

/// As [`run_in`], with the context as the run left it (`ctx_out`): the
/// `__sk_buff` fields a tc program wrote (mark, priority, cb[], ...), which
/// a test framework hands to the next program of a test as its input.
pub fn run_keeping_ctx(
    prog: BorrowedFd<'_>,
    packet: &[u8],
    ctx: Option<&[u8]>,
) -> Result<(RunOutput, Option<Vec<u8>>)> {
    let mut ctx_out = ctx.filter(|_| !packet.is_empty()).map(|c| vec![0u8; c.len()]);
    let mut out = if packet.is_empty() { Vec::new() } else { vec![0u8; packet.len() + HEADROOM_GROWTH] };
    // The kernel writes a syscall program's context back into ctx_in: a copy.
    let mut ctx_copy = ctx.map(<[u8]>::to_vec);
    // SAFETY: zero is a valid bit pattern for this plain C struct.
    let mut opts: libbpf_sys::bpf_test_run_opts = unsafe { std::mem::zeroed() };
    opts.sz = std::mem::size_of::<libbpf_sys::bpf_test_run_opts>() as _;
    if !packet.is_empty() {
        opts.data_in = packet.as_ptr().cast();
        opts.data_size_in = packet.len() as u32;
        opts.data_out = out.as_mut_ptr().cast();
        opts.data_size_out = out.len() as u32;
    }
    // Raw tracepoint and syscall test runs (no packet) refuse any repeat;
    // the others take 0 as 1.
    opts.repeat = if packet.is_empty() { 0 } else { 1 };
    if let Some(ctx) = ctx_copy.as_mut() {
        opts.ctx_in = ctx.as_mut_ptr().cast();
        opts.ctx_size_in = ctx.len() as u32;
    }
    if let Some(out) = ctx_out.as_mut() {
        opts.ctx_out = out.as_mut_ptr().cast();
        opts.ctx_size_out = out.len() as u32;
    }
    // SAFETY: the buffers outlive the call and their sizes are passed with them.
    let rc = unsafe { libbpf_sys::bpf_prog_test_run_opts(prog.as_raw_fd(), &mut opts) };
    if rc != 0 {
        let err = std::io::Error::last_os_error();
        if ctx.is_some() && packet.is_empty() && err.raw_os_error() == Some(libc::EINVAL) {
            bail!(
                "BPF_PROG_TEST_RUN refused the context ({err}): it must hold every byte the program reads (a raw tracepoint's at most 12 u64 arguments)"
            );
        }
        if ctx.is_some() && err.raw_os_error() == Some(libc::EINVAL) {
            bail!(
                "BPF_PROG_TEST_RUN refused the context ({err}): a test may set only some of its fields (of __sk_buff: mark, priority, ingress_ifindex, ifindex, cb, tstamp, wire_len, gso_segs, gso_size and hwtstamp)"
            );
        }
        bail!("BPF_PROG_TEST_RUN failed: {err}");
    }
    out.truncate(opts.data_size_out as usize);
    if let Some(c) = ctx_out.as_mut() {
        c.truncate(opts.ctx_size_out as usize);
    }
    // Without a packet, the output is the context as the run left it (a
    // syscall program's; the other types leave ctx_in as it was).
    let packet = match ctx_copy {
        Some(ctx) if packet.is_empty() => ctx,
        _ => out,
    };
    Ok((RunOutput { retval: opts.retval, packet, duration_ns: opts.duration }, ctx_out))
}

/// What one test run is given.
#[derive(Debug, Clone)]
pub enum TestInput {
    /// A packet, and the context of an skb program if one is set.
    Packet { data: Vec<u8>, ctx: Option<Vec<u8>> },
    /// A context alone (an sk_lookup program's).
    Context(Vec<u8>),
}

/// Runs a program once on `input`.
pub fn run_input(prog: BorrowedFd<'_>, input: &TestInput) -> Result<RunOutput> {
    match input {
        TestInput::Packet { data, ctx } => run_in(prog, data, ctx.as_deref()),
        TestInput::Context(ctx) => run_in(prog, &[], Some(ctx)),
    }
}

/// Runs an XDP program in live-frames mode (`BPF_F_TEST_XDP_LIVE_FRAMES`,
/// Linux 5.18): `repeat` copies of `packet` go through the program and the
/// kernel acts on its verdicts for real (a redirect transmits the frame).
/// `batch_size` frames share one page-pool refill and one redirect flush
/// (0: the kernel's default, 64). Nothing comes back but success.
pub fn run_live_frames(prog: BorrowedFd<'_>, packet: &[u8], repeat: u32, batch_size: u32) -> std::io::Result<()> {
    // SAFETY: zero is a valid bit pattern for this plain C struct.
    let mut opts: libbpf_sys::bpf_test_run_opts = unsafe { std::mem::zeroed() };
    opts.sz = std::mem::size_of::<libbpf_sys::bpf_test_run_opts>() as _;
    opts.data_in = packet.as_ptr().cast();
    opts.data_size_in = packet.len() as u32;
    opts.repeat = repeat.min(i32::MAX as u32) as i32;
    opts.batch_size = batch_size;
    opts.flags = libbpf_sys::BPF_F_TEST_XDP_LIVE_FRAMES;
    // SAFETY: the packet outlives the call; no output buffers in live mode.
    let rc = unsafe { libbpf_sys::bpf_prog_test_run_opts(prog.as_raw_fd(), &mut opts) };
    if rc != 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) }
}
