//! The traffic generator: threads pinned one per CPU, each calling
//! BPF_PROG_RUN in live-frames mode on the generator program, which writes
//! each frame's flow and redirects it out of the interface. Pacing, limits
//! and per-second counting happen here, between kernel calls; no userspace
//! work is done per frame.

use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use libbpf_rs::skel::SkelBuilder;
use libbpf_rs::{MapCore, MapFlags, MapHandle};

use super::flows::FlowPlan;
use super::tcp::TcpConnection;
use crate::kernel::netdev::{TxCounters, ifindex};
use crate::kernel::skeleton::{self, map_handle, prog_fd};
use crate::kernel::test_run::run_live_frames;
use crate::record::traffic::{FlowOrder, GEN_SCHEMA, GenInterval, GenRate, GenRecord, StopReason};
use crate::system::{cpu, environment, interrupt};

crate::bpf_skeleton!("traffic_gen");

/// What a kernel call aims to last. A live-frames call costs ~20 ms on its
/// own (page-pool set-up and teardown, measured here on 6.18), so short
/// calls lose that much sending time each; a second's call loses ~2%.
const CALL_TARGET: Duration = Duration::from_secs(1);
/// The first call's size, before the speed is known.
const FIRST_REPEAT: u32 = 1 << 20;
/// How often the reporter reads the counters (and checks the limits):
/// each read is a syscall per program, on the senders' CPUs. Paced runs
/// end exactly anyway: their deadline is in BPF.
const POLL: Duration = Duration::from_millis(10);
/// How long a TCP stream cut short (duration, Ctrl-C) may take to have
/// its FIN acknowledged before the run stops anyway.
const FIN_GRACE: Duration = Duration::from_secs(1);
/// A TCP stream whose receiver acknowledges nothing new for this long is
/// given up (the receiver vanished or drops everything): else a run
/// bounded only by --count would send forever.
pub const TCP_STALL: Duration = Duration::from_secs(5);
/// Packets (programs) one generator sends at most.
const MAX_PLANS: usize = 256;
/// The kernel's page-pool batch allows at most this many frames.
pub const MAX_BATCH_SIZE: u32 = 256;

/// How the generator sends: shared by `gen` and `live`.
#[derive(Debug, clap::Args, Clone)]
pub struct SendOptions {
    /// Pad the packet to this frame size in bytes (without FCS).
    #[arg(long, value_name = "BYTES")]
    pub size: Option<usize>,
    /// Sending threads, each pinned to its own CPU.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// The CPUs for the threads, in order (default: the allowed CPUs, last first).
    #[arg(long, value_delimiter = ',')]
    pub cpus: Vec<usize>,
    /// Frames per second over all threads (e.g. 10000, 250k, 1M); default: as fast as it goes.
    #[arg(long, value_name = "PPS", value_parser = parse_rate)]
    pub rate: Option<f64>,
    /// Frames per kernel page-pool batch and redirect flush (1 to 256).
    #[arg(long, default_value_t = 64)]
    pub batch_size: u32,
}

impl SendOptions {
    /// The CPUs given, or None for the default.
    pub fn cpus(&self) -> Option<Vec<usize>> {
        (!self.cpus.is_empty()).then(|| self.cpus.clone())
    }
}

/// A rate in frames per second: 10000, 250k, 1M.
fn parse_rate(s: &str) -> Result<f64, String> {
    let (digits, scale) = match s.trim().to_ascii_lowercase() {
        t if t.ends_with('k') => (t.trim_end_matches('k').to_string(), 1e3),
        t if t.ends_with('m') => (t.trim_end_matches('m').to_string(), 1e6),
        t => (t, 1.0),
    };
    match digits.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v * scale),
        _ => Err(format!("'{s}' is not a rate: give frames per second, e.g. 10000, 250k or 1M")),
    }
}

/// How long and how fast to send.
#[derive(Debug, Clone)]
pub struct GenSettings {
    pub threads: usize,
    /// CPUs to pin the threads to, one each (None: the allowed CPUs, last first).
    pub cpus: Option<Vec<usize>>,
    /// Frames per second over all threads (None: as fast as possible).
    pub rate_pps: Option<f64>,
    pub duration: Option<Duration>,
    pub count: Option<u64>,
    /// Frames per page-pool refill and redirect flush (1..=256).
    pub batch_size: u32,
    /// How often `run` reports an interval (the per-second lines: 1 s).
    pub interval: Duration,
}

/// A loaded generator program and its maps.
struct Program {
    fd: OwnedFd,
    /// Per CPU: odometer, frames and bytes sent, quota, pacing.
    state: MapHandle,
    /// The stop flag.
    ctl: MapHandle,
}

/// The per-CPU `struct gen_state` of traffic_gen.bpf.c, as bytes.
#[derive(Debug, Clone, Copy, Default)]
struct CpuState {
    sent: u64,
    bytes: u64,
    quota: u64,
    interval_ps: u64,
    next_due_ps: u64,
    deadline_ps: u64,
}

/// Bytes of the odometer before the counters.
const ODOMETER_BYTES: usize = 4 * 8;
/// Bytes after the counters: the composed-header flag, the checksums'
/// partial sums, the random-order state and the header itself
/// (GEN_RESTORE_MAX), zero for a new run.
const COMPOSED_BYTES: usize = 4 + 4 * 4 + 4 + 8 + 128;
const STATE_BYTES: usize = ODOMETER_BYTES + 6 * 8 + COMPOSED_BYTES;

impl CpuState {
    fn to_bytes(self) -> Vec<u8> {
        let mut v = vec![0u8; ODOMETER_BYTES];
        for x in [self.sent, self.bytes, self.quota, self.interval_ps, self.next_due_ps, self.deadline_ps] {
            v.extend_from_slice(&x.to_ne_bytes());
        }
        v.resize(STATE_BYTES, 0);
        v
    }

    fn from_bytes(b: &[u8]) -> CpuState {
        let at = |i: usize| {
            u64::from_ne_bytes(b[ODOMETER_BYTES + 8 * i..ODOMETER_BYTES + 8 * i + 8].try_into().expect("8 bytes"))
        };
        CpuState { sent: at(0), bytes: at(1), quota: at(2), interval_ps: at(3), next_due_ps: at(4), deadline_ps: at(5) }
    }
}

impl Program {
    fn cpu_states(&self) -> Result<Vec<CpuState>> {
        let values =
            self.state.lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)?.context("reading the generator's state")?;
        Ok(values.iter().map(|v| CpuState::from_bytes(v)).collect())
    }

    fn set_cpu_states(&self, states: &[CpuState]) -> Result<()> {
        let values: Vec<Vec<u8>> = states.iter().map(|s| s.to_bytes()).collect();
        self.state.update_percpu(&0u32.to_ne_bytes(), &values, MapFlags::ANY).context("setting the generator's state")
    }

    fn set_stop(&self, stop: bool) -> Result<()> {
        self.ctl
            .update(&0u32.to_ne_bytes(), &u32::from(stop).to_ne_bytes(), MapFlags::ANY)
            .context("setting the generator's stop flag")
    }
}

/// A frame to send: the template and the program that varies it.
struct Stream {
    prog: usize,
    label: String,
    template: Vec<u8>,
}

/// The loaded generator for one interface.
pub struct Generator {
    interface: String,
    ifindex: u32,
    progs: Vec<Program>,
    streams: Vec<Stream>,
    flows: u64,
    order: FlowOrder,
    /// TCP mode's connection: its stream ends runs, not a frame count.
    tcp: Option<TcpConnection>,
}

/// What a generator program does to each frame.
enum Varying<'a> {
    /// Writes the plan's flows (None: sends the template as it is).
    Flows(Option<&'a FlowPlan>, FlowOrder),
    /// Makes it the connection's next in-window segment.
    Tcp(&'a TcpConnection),
}

/// Loads the generator program for one frame's template.
fn load_program(ifindex: u32, template: &[u8], varying: Varying<'_>) -> Result<Program> {
    let mut storage = MaybeUninit::uninit();
    let mut open =
        skel::TrafficGenSkelBuilder::default().open(&mut storage).context("opening the generator program")?;
    // One of the two programs is loaded: the other would only cost verifier time.
    let tcp = matches!(varying, Varying::Tcp(_));
    open.progs.xdp_gen.set_autoload(!tcp);
    open.progs.xdp_gen_tcp.set_autoload(tcp);
    if let Varying::Tcp(conn) = varying {
        open.maps.tcp_conn.reuse_fd(conn.map_fd()).context("sharing the TCP connection's map with the generator")?;
        open.maps.tcp_ctl.reuse_fd(conn.ctl_fd()).context("sharing the TCP connection's control with the generator")?;
    }
    let ro = open.maps.rodata_data.as_deref_mut().context("the generator program has no .rodata")?;
    let cfg = &mut ro.cfg;
    // The frame's first bytes come back from the template on every send
    // (the receiver may have written into the recycled page).
    let restore = template.len().min(cfg.template.len()) & !1;
    cfg.template[..restore].copy_from_slice(&template[..restore]);
    cfg.restore_len = restore as u32;
    match varying {
        Varying::Tcp(conn) => {
            cfg.tcp.off = conn.tcp_offset as u16;
            cfg.tcp.has_ts = u16::from(conn.timestamps);
            cfg.tcp.csum_start = conn.checksum_start();
        }
        Varying::Flows(plan, order) => {
            cfg.random = u32::from(order == FlowOrder::Random);
            if let Some(plan) = plan {
                cfg.nfields = plan.layout.fields.len() as u32;
                cfg.ncsums = plan.layout.checksums.len() as u32;
                // Fields and checksums are written into the composed header,
                // which covers the frame's first `restore` bytes.
                let beyond = plan
                    .layout
                    .fields
                    .iter()
                    .map(|f| (f.offset, f.width))
                    .chain(plan.layout.checksums.iter().map(|c| (c.offset, 2)))
                    .find(|&(o, w)| o + w > restore);
                if let Some((o, w)) = beyond {
                    bail!(
                        "a varied field or checksum at bytes {o}..{} lies beyond the first {restore} bytes of the frame, which the generator rewrites: vary a header field",
                        o + w
                    );
                }
                for (i, f) in plan.layout.fields.iter().enumerate() {
                    let slot = &mut cfg.fields[i];
                    slot.off = f.offset as u16;
                    slot.width = f.width as u16;
                    slot.csums = f.checksums.iter().fold(0, |bits, &c| bits | 1 << c);
                    slot.lo = f.lo;
                    slot.span = f.hi - f.lo + 1;
                    slot.old_comp = plan.old_complement(i);
                }
                for (j, c) in plan.layout.checksums.iter().enumerate() {
                    cfg.csums[j].off = c.offset as u16;
                    cfg.csums[j].udp = c.udp as u16;
                    cfg.csums[j].start = plan.checksum_start(c.offset);
                }
            }
        }
    }
    let skel = skeleton::load(open, "the traffic generator program")?;
    skel.maps
        .tx_port
        .update(&0u32.to_ne_bytes(), &ifindex.to_ne_bytes(), MapFlags::ANY)
        .context("naming the interface in the generator's device map (does it take XDP redirects?)")?;
    let state = map_handle(&skel.maps.gen_state)?;
    if state.value_size() as usize != STATE_BYTES {
        bail!("the generator's gen_state holds {} bytes where {STATE_BYTES} are expected", state.value_size());
    }
    let prog = if tcp { &skel.progs.xdp_gen_tcp } else { &skel.progs.xdp_gen };
    Ok(Program { fd: prog_fd(prog)?, state, ctl: map_handle(&skel.maps.gen_ctl)? })
}

impl Generator {
    /// Loads one program per plan: each restores its own template.
    pub fn new(interface: &str, plans: &[FlowPlan], order: FlowOrder) -> Result<Generator> {
        if plans.is_empty() {
            bail!("nothing to send: give --packet or --pcap");
        }
        if plans.len() > MAX_PLANS {
            bail!(
                "{} packets to send; the generator takes at most {MAX_PLANS} (a program each): give a shorter capture",
                plans.len()
            );
        }
        let ifindex = ifindex(interface)?;
        let mut progs = Vec::new();
        let mut streams = Vec::new();
        for plan in plans {
            let fields = (!plan.layout.fields.is_empty()).then_some(plan);
            progs.push(load_program(ifindex, &plan.template, Varying::Flows(fields, order))?);
            streams.push(Stream {
                prog: progs.len() - 1,
                label: plan.spec_text.clone(),
                template: plan.template.clone(),
            });
        }
        let flows = plans.iter().map(|p| p.flows).sum();
        Ok(Generator { interface: interface.to_string(), ifindex, progs, streams, flows, order, tcp: None })
    }

    /// TCP mode: sends the connection's stream (it was opened over `interface`).
    pub fn tcp(interface: &str, conn: TcpConnection) -> Result<Generator> {
        let ifindex = ifindex(interface)?;
        let prog = load_program(ifindex, &conn.template, Varying::Tcp(&conn))?;
        let stream =
            Stream { prog: 0, label: format!("tcp {} -> {}", conn.local, conn.peer), template: conn.template.clone() };
        Ok(Generator {
            interface: interface.to_string(),
            ifindex,
            progs: vec![prog],
            streams: vec![stream],
            flows: 1,
            order: FlowOrder::Sequential,
            tcp: Some(conn),
        })
    }

    /// Each packet's frame length in bytes.
    pub fn frame_sizes(&self) -> Vec<usize> {
        self.streams.iter().map(|st| st.template.len()).collect()
    }

    /// Distinct flows over all packets.
    pub fn flows(&self) -> u64 {
        self.flows
    }

    /// Frames and bytes sent so far, over every program and CPU.
    fn totals(&self) -> Result<(u64, u64)> {
        let mut totals = (0, 0);
        for p in &self.progs {
            for st in p.cpu_states()? {
                totals.0 += st.sent;
                totals.1 += st.bytes;
            }
        }
        Ok(totals)
    }

    /// Readies every program's per-CPU state for a run starting at
    /// `start_ns` (CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns).
    fn prepare(&self, s: &GenSettings, cpus: &[usize], start_ns: u64) -> Result<()> {
        let n = crate::system::cpu::possible_cpus()?;
        let threads = cpus.len() as u64;
        for p in &self.progs {
            let mut states = vec![CpuState::default(); n];
            for (t, &cpu) in cpus.iter().enumerate() {
                let st = &mut states[cpu];
                // Each thread's share of the count, the first ones taking the remainder.
                st.quota = self.frame_count(s).map_or(0, |c| c / threads + u64::from((t as u64) < c % threads));
                if let Some(rate) = s.rate_pps {
                    st.interval_ps = (1e12 / (rate / threads as f64)).round().max(1.0) as u64;
                    st.next_due_ps = start_ns * 1000;
                    // A TCP stream still has its FIN to send at the end.
                    if self.tcp.is_none() {
                        st.deadline_ps = s.duration.map_or(0, |d| (start_ns + d.as_nanos() as u64) * 1000);
                    }
                }
            }
            p.set_cpu_states(&states)?;
            p.set_stop(false)?;
        }
        Ok(())
    }

    /// The frames a run sends at most: TCP mode's count is of new
    /// segments, kept by the connection (retransmissions come on top).
    fn frame_count(&self, s: &GenSettings) -> Option<u64> {
        if self.tcp.is_some() { None } else { s.count }
    }

    fn stop_all(&self, stop: &AtomicBool) {
        stop.store(true, Ordering::SeqCst);
        for p in &self.progs {
            let _ = p.set_stop(true);
        }
    }

    /// Sends until the duration or count is reached, or Ctrl-C; calls
    /// `on_interval` every `interval` (and for the last, shorter one).
    pub fn run(&self, s: &GenSettings, mut on_interval: impl FnMut(&GenInterval)) -> Result<GenRecord> {
        self.check(s)?;
        let cpus = pick_cpus(s)?;
        let capture = environment::start(cpus[0]);
        // Set by the reporter at a limit or Ctrl-C, or by a failing thread.
        let stop = AtomicBool::new(false);
        let tx_start = TxCounters::read(&self.interface);
        let start_ns = crate::system::monotonic_ns();
        let start = Instant::now();
        self.prepare(s, &cpus, start_ns)?;
        let mut seconds = Vec::new();
        let mut ended: Option<Duration> = None;
        // Why the run ended, decided when it did.
        let mut stopped_by = StopReason::Duration;
        // TCP mode: until when the stream's FIN may take to be acknowledged.
        let mut fin_deadline: Option<Duration> = None;
        let mut acked_before = 0u64;
        // TCP mode: the bytes acknowledged, and when that last grew.
        let mut last_ack = (0u64, Duration::ZERO);
        let outcome = std::thread::scope(|scope| -> Result<()> {
            let workers: Vec<_> = cpus
                .iter()
                .enumerate()
                .map(|(t, &cpu)| {
                    let stop = &stop;
                    scope.spawn(move || self.worker(t, cpu, s, stop))
                })
                .collect();
            let (mut last_t, mut last_frames, mut last_bytes, mut last_tx) = (Duration::ZERO, 0u64, 0u64, tx_start);
            let mut next_tick = s.interval;
            loop {
                let done = workers.iter().all(|w| w.is_finished());
                let now = start.elapsed();
                let (frames, bytes) = self.totals()?;
                let progress = self.tcp.as_ref().map(|t| t.progress()).transpose()?;
                // TCP mode's stream is over: its FIN acknowledged, or reset.
                let stream_over = progress.is_some_and(|p| p.finished || p.reset);
                if let Some(p) = progress
                    && p.bytes_acked != last_ack.0
                {
                    last_ack = (p.bytes_acked, now);
                }
                let stalled = progress.is_some() && !stream_over && now.saturating_sub(last_ack.1) >= TCP_STALL;
                // The run's end: the duration, the count, or Ctrl-C, whichever first.
                if ended.is_none() {
                    let count_reached = match progress {
                        Some(p) => p.finished,
                        None => s.count.is_some_and(|c| frames >= c),
                    };
                    let duration_over = s.duration.is_some_and(|d| now >= d);
                    if duration_over || count_reached || stream_over || stalled || interrupt::interrupted() || done {
                        ended = Some(s.duration.filter(|&d| now >= d).unwrap_or(now));
                        stopped_by = stop_reason(progress.is_some_and(|p| p.reset), count_reached, stalled);
                        match &self.tcp {
                            // A stream cut short still ends with FIN, so the receiver sees its end.
                            Some(tcp) if !stream_over && !done => {
                                tcp.request_fin()?;
                                fin_deadline = Some(now + FIN_GRACE);
                            }
                            _ => self.stop_all(&stop),
                        }
                    }
                }
                if let Some(deadline) = fin_deadline
                    && (now >= deadline || stream_over)
                {
                    fin_deadline = None;
                    self.stop_all(&stop);
                }
                if done || now >= next_tick {
                    let at = if done { ended.unwrap_or(now) } else { now };
                    let tx = TxCounters::read(&self.interface);
                    let dt = (at.saturating_sub(last_t)).as_secs_f64().max(1e-9);
                    // A last interval of a few milliseconds has no rate worth printing;
                    // its frames are in the totals.
                    if !done || (frames > last_frames && dt >= 0.05) {
                        let interval = GenInterval {
                            t_s: at.as_secs_f64(),
                            rate: GenRate::over(
                                frames - last_frames,
                                bytes - last_bytes,
                                dt,
                                tx.zip(last_tx).map(|(now, then)| now.since(then).failed),
                            ),
                            goodput_gbps: progress.map(|p| {
                                let g = (p.bytes_acked - acked_before) as f64 * 8.0 / dt / 1e9;
                                acked_before = p.bytes_acked;
                                g
                            }),
                        };
                        on_interval(&interval);
                        seconds.push(interval);
                    }
                    (last_t, last_frames, last_bytes, last_tx) = (at, frames, bytes, tx);
                    next_tick += s.interval;
                }
                if done {
                    break;
                }
                std::thread::sleep(POLL);
            }
            for w in workers {
                w.join().map_err(|_| anyhow::anyhow!("a generator thread panicked"))??;
            }
            Ok(())
        });
        if outcome.is_err() {
            self.stop_all(&stop);
        }
        outcome?;
        // Frames sent after the reporter saw the end (at most a poll's worth) count too.
        let (sent, bytes) = self.totals()?;
        let elapsed = ended.unwrap_or_else(|| start.elapsed()).as_secs_f64().max(1e-9);
        let tx = TxCounters::read(&self.interface).zip(tx_start).map(|(end, begin)| end.since(begin));
        // Ctrl-C during the FIN's grace still counts as an interruption.
        if interrupt::interrupted() {
            stopped_by = StopReason::Interrupted;
        }
        Ok(GenRecord {
            schema: GEN_SCHEMA.into(),
            environment: capture.finish(),
            interface: self.interface.clone(),
            ifindex: self.ifindex,
            packets: self.streams.iter().map(|st| st.label.clone()).collect(),
            frame_bytes: self.streams.iter().map(|st| st.template.len()).collect(),
            flows: self.flows,
            flow_order: self.order,
            threads: s.threads,
            cpus,
            rate_asked_pps: s.rate_pps,
            batch_size: s.batch_size,
            elapsed_s: elapsed,
            rate: GenRate::over(sent, bytes, elapsed, tx.map(|t| t.failed)),
            device_tx: tx.map(|t| t.packets),
            stopped_by,
            seconds,
            tcp: self.tcp.as_ref().map(|t| t.record(elapsed)).transpose()?,
        })
    }

    /// Refuses settings this generator cannot run.
    fn check(&self, s: &GenSettings) -> Result<()> {
        if s.threads == 0 {
            bail!("--threads must be at least 1");
        }
        if s.interval < POLL {
            bail!("a reporting interval must be at least {} ms", POLL.as_millis());
        }
        if !(1..=MAX_BATCH_SIZE).contains(&s.batch_size) {
            bail!("--batch-size must be 1 to {MAX_BATCH_SIZE} (the kernel's page-pool batch)");
        }
        if s.rate_pps.is_some_and(|r| r <= 0.0 || !r.is_finite()) {
            bail!("--rate must be a positive number of frames per second");
        }
        if s.rate_pps.is_some() && s.count.is_some() && self.progs.len() > 1 {
            // Each program keeps its own per-CPU quota, so a count cannot be split among them.
            bail!("--rate with --count takes one --packet spec (or a capture); give --duration instead");
        }
        if self.tcp.is_some() {
            super::tcp::check_threads(s.threads)?;
        }
        Ok(())
    }

    /// One thread's loop: long kernel calls until the reporter says stop.
    fn worker(&self, t: usize, cpu: usize, s: &GenSettings, stop: &AtomicBool) -> Result<()> {
        let result = self.send(t, cpu, s, stop);
        if result.is_err() {
            self.stop_all(stop);
        }
        result
    }

    fn send(&self, t: usize, cpu: usize, s: &GenSettings, stop: &AtomicBool) -> Result<()> {
        cpu::pin_to_cpu(cpu)?;
        let paced = s.rate_pps.is_some();
        let mut repeat = FIRST_REPEAT;
        let mut stream = t % self.streams.len();
        let mut left = self.frame_count(s).map(|c| c / s.threads as u64 + u64::from((t as u64) < c % s.threads as u64));
        while !stop.load(Ordering::SeqCst) {
            // Unpaced, every iteration sends: a call never asks for more than is left.
            let n = match left {
                Some(0) => return Ok(()),
                Some(l) if !paced => repeat.min(l.min(u64::from(u32::MAX)) as u32),
                _ => repeat,
            };
            let st = &self.streams[stream];
            let prog = &self.progs[st.prog];
            let sent_before = prog.cpu_states()?[cpu].sent;
            let began = Instant::now();
            run_live_frames(prog.fd.as_fd(), &st.template, n, s.batch_size).map_err(|e| {
                anyhow::anyhow!("sending on {} with live frames (BPF_PROG_RUN, BPF_F_TEST_XDP_LIVE_FRAMES) failed: {e}; it needs Linux 5.18 or newer", self.interface)
            })?;
            let took = began.elapsed().as_secs_f64().max(1e-6);
            if let Some(l) = &mut left {
                *l = l.saturating_sub(prog.cpu_states()?[cpu].sent - sent_before);
            }
            // Size the next call to last CALL_TARGET at this call's pace
            // (iterations, sent or polled), halfway to the estimate.
            let want = f64::from(n) * CALL_TARGET.as_secs_f64() / took;
            repeat = ((f64::from(repeat) + want) / 2.0).clamp(1024.0, f64::from(u32::MAX / 2)) as u32;
            stream = (stream + 1) % self.streams.len();
        }
        Ok(())
    }
}

/// One CPU per thread: the given ones, or the allowed ones, last first.
fn pick_cpus(s: &GenSettings) -> Result<Vec<usize>> {
    let allowed = cpu::allowed_cpus()?;
    let cpus = match &s.cpus {
        Some(c) => c.clone(),
        None => allowed.iter().rev().copied().take(s.threads).collect(),
    };
    if cpus.len() < s.threads {
        bail!("--threads {} needs as many CPUs; this process may use {} ({:?})", s.threads, allowed.len(), allowed);
    }
    let mut seen = cpus.clone();
    seen.sort_unstable();
    seen.dedup();
    if seen.len() != cpus.len() {
        bail!("--cpus names a CPU twice; each thread needs its own");
    }
    Ok(cpus.into_iter().take(s.threads).collect())
}

/// Why a run ended, at the moment it did: Ctrl-C first, then the peer's
/// reset, the count reached, the stream stalled, else the duration.
fn stop_reason(reset_by_peer: bool, count_reached: bool, stalled: bool) -> StopReason {
    if interrupt::interrupted() {
        StopReason::Interrupted
    } else if reset_by_peer {
        StopReason::ResetByPeer
    } else if count_reached {
        StopReason::Count
    } else if stalled {
        StopReason::Stalled
    } else {
        StopReason::Duration
    }
}
