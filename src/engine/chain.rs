//! An XDP or tc program that makes tail calls, timed in BPF: driver_chain.bpf.c's
//! loop enters the chain through a tail call from a subprogram each
//! iteration and gets the chain's verdict back when its last program exits.
//! The kernel allows 33 tail calls per run, so the host first counts the
//! tail calls one pass makes (the probe), then runs as many passes per
//! test run as fit, and a batch as many runs as it needs.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use anyhow::{Context, Result, bail, ensure};
use libbpf_rs::{MapCore, MapFlags, MapHandle};

use super::user_context::give_contexts;
use super::{BatchTimer, DriverState, PerCallBecause, outputs_differ, write_variants};
use crate::harness::timing::SharedRuntime;
use crate::harness::{BatchTiming, Profile, Variant};
use crate::kernel::AttachType;
use crate::kernel::prepared::PreparedCode;
use crate::kernel::prog_type::{BatchLoop, ProgKind};
use crate::kernel::skeleton::{self, ObjectSource};
use crate::kernel::test_run::{RunOutput, run_in};
use crate::packet::mask::Mask;
use crate::record::InstructionCount;
use crate::uvm::UserRuntime;

crate::bpf_skeleton!("driver_chain");
use skel::types::{bench_chain_slot, bench_chain_totals, rodata as Rodata};

crate::impl_pod!(bench_chain_totals, Rodata);

/// Test runs per batch at most: a run is a system call of a microsecond or
/// two around a few passes, so a batch stays within milliseconds.
const MAX_RUNS_PER_BATCH: u64 = 2_000;

/// BENCH_MAX_PASSES in driver_chain.bpf.c: the probes' and the loop's bound.
const MAX_PASSES: u32 = 33;

/// The chain of a user's XDP or tc program, driven by the chain driver.
pub struct ChainTimer {
    body: OwnedFd,
    overhead: OwnedFd,
    totals: MapHandle,
    state: MapHandle,
    /// Held: the slots of a prog array are cleared when its last user
    /// reference goes, and the empty program is in one of them.
    _chain: MapHandle,
    _empty: OwnedFd,
    packet: Vec<u8>,
    /// The test runs' context (a tc program's `__sk_buff`), if any.
    ctx: Option<Vec<u8>>,
    references: Vec<RunOutput>,
    mask: Mask,
    kind: ProgKind,
    cpu: usize,
    /// Where the runs go when they are the userspace runtime's.
    in_user_runtime: Option<UserChain>,
    /// Tail calls one pass through the chain makes, its entry's included;
    /// 0 where the kernel counts per call of the loop's subprogram (before
    /// 6.10), so that the probe cannot count them and need not.
    pub tail_calls: u32,
    /// Timed passes per test run.
    pub per_run: u32,
    /// Tail calls the kernel allows one run, as probed (33 since 5.17, 32
    /// before; 0 where it counts per call of the loop's subprogram).
    pub limit: u32,
    /// How a tc chain's changed length is put back, where it changes it.
    pub length_reset: Option<&'static str>,
}

/// The chain driver and the user's programs in the userspace runtime: the
/// same driver, its prog array's slots holding the same programs (by the
/// kernel's ids), run by the runtime's tail calls.
struct UserChain {
    rt: SharedRuntime,
    /// The user's entry program.
    entry: String,
    /// The case's packets.
    variants: Vec<Vec<u8>>,
}

/// What the chain driver needs of the user's program and case.
pub struct ChainRequest<'a> {
    pub kind: ProgKind,
    pub entry: BorrowedFd<'a>,
    /// The entry's name, and the code of its object and of the objects
    /// whose programs fill its prog arrays, when the batches run in the
    /// userspace runtime.
    pub in_user_runtime: Option<(&'a str, PreparedCode)>,
    /// The entry program's expected attach type and flags: a prog array
    /// takes only programs like the one that first used it.
    pub load_attrs: (AttachType, u32),
    pub variants: &'a [Vec<u8>],
    /// Bytes written back per pass (restore::plan's).
    pub restore: u32,
    pub references: Vec<RunOutput>,
    /// What comparisons with the references leave out (the case's --ignore).
    pub mask: Mask,
    /// The test runs' context (a tc program's `__sk_buff`), if any.
    pub ctx: Option<Vec<u8>>,
    pub cpu: usize,
}

/// The loaded driver, held by descriptors (the skeleton is gone).
struct Driver {
    body: OwnedFd,
    overhead: OwnedFd,
    probe: OwnedFd,
    probe_limit: OwnedFd,
    totals: MapHandle,
    state: MapHandle,
    chain: MapHandle,
    /// The program in the overhead's slot: held with the array.
    _empty: OwnedFd,
    /// The driver's code for the userspace runtime, when it runs there.
    code: Option<PreparedCode>,
}

/// The suffix of the chain driver's programs of `kind` (each kind has its
/// own, and its own prog array: an array takes programs of one type).
fn kind_suffix(kind: ProgKind) -> Result<&'static str> {
    match kind.batch_loop() {
        BatchLoop::Spliced { chain, .. } | BatchLoop::Chain(chain) => Ok(chain),
        BatchLoop::PerCall(why) => bail!("no chain loop for {}: {why}", kind.desc().plural),
    }
}

/// The names of the chain driver's programs of `kind`: the loop, its overhead.
fn driver_names(kind: ProgKind) -> Result<(String, String)> {
    let suffix = kind_suffix(kind)?;
    Ok((format!("bench_chain_driver{suffix}"), format!("bench_chain_overhead{suffix}")))
}

/// Where a tc chain's packet gets its length back after each pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LengthReset {
    /// At the tail (bpf_skb_change_tail): driver_chain.
    Tail,
    /// At the MAC header (bpf_skb_adjust_room): driver_chain_mac, for
    /// chains that grow or shrink the packet at its front.
    Mac,
}

impl LengthReset {
    /// The driver's object and how notes name its reset.
    fn driver(self) -> (ObjectSource, &'static str) {
        match self {
            LengthReset::Tail => (
                ObjectSource::Builtin { name: "driver_chain", bytes: crate::bpf_object_bytes!("driver_chain") },
                "bpf_skb_change_tail",
            ),
            LengthReset::Mac => (
                ObjectSource::Builtin { name: "driver_chain_mac", bytes: crate::bpf_object_bytes!("driver_chain_mac") },
                "bpf_skb_adjust_room at the MAC header",
            ),
        }
    }
}

/// Loads the chain driver for `req` with `per_run` timed passes per run,
/// its prog array holding the user's entry and the empty program; `probing`:
/// the probes' driver, which only the kernel runs.
fn load_driver(req: &ChainRequest<'_>, per_run: u32, probing: bool, reset: LengthReset) -> Result<Driver> {
    let (source, _) = reset.driver();
    let what = "the chain driver";
    let mut open = source.open()?;
    let (attach, flags) = req.load_attrs;
    // The programs of the user's kind only, loaded as the user's program is.
    let suffix = kind_suffix(req.kind)?;
    for mut p in open.progs_mut() {
        let ours = p.name().to_string_lossy().ends_with(suffix);
        p.set_autoload(ours);
        if ours {
            p.set_attach_type(attach.into());
            p.set_flags(flags);
        }
    }
    let n = req.variants.len() as u32;
    {
        let mut variants = skeleton::open_map_mut(&mut open, "bench_variants", what)?;
        variants.set_max_entries(n)?;
        // Only the bytes written back, as the spliced driver's.
        variants.set_value_size(req.restore.max(8))?;
    }
    skeleton::edit_section(&mut open, ".rodata", what, |r: &mut Rodata| {
        r.cfg_variants = n;
        // Any program of an XDP chain may leave metadata.
        r.cfg_restore_bytes = req.restore | super::spliced::drop_meta(req.kind == ProgKind::Xdp);
        r.cfg_chain_iters = per_run;
    })?;
    // The final instructions, for the userspace runtime, before loading takes them.
    // (Not for the probes' driver: it never runs in userspace.)
    let mut code = match req.in_user_runtime {
        Some(_) if !probing => Some(PreparedCode::capture(&mut open).context("preparing the chain driver")?),
        _ => None,
    };
    let obj = skeleton::load_object(open, what)?;
    let prog = |name: &str| skeleton::object_prog(&obj, &format!("{name}{suffix}"), what);
    let empty_name = format!("bench_chain_empty{suffix}");
    let d = Driver {
        body: prog("bench_chain_driver")?,
        overhead: prog("bench_chain_overhead")?,
        probe: prog("bench_chain_probe")?,
        probe_limit: prog("bench_chain_probe_limit")?,
        totals: skeleton::object_map(&obj, "bench_chain_totals", what)?,
        state: skeleton::object_map(&obj, "bench_driver_state", what)?,
        chain: skeleton::object_map(&obj, &format!("bench_chain{suffix}"), what)?,
        _empty: prog("bench_chain_empty")?,
        code: None,
    };
    if let Some(code) = code.as_mut() {
        // Loaded: the kernel's verifier accepted every program taken.
        code.verified = code.programs.keys().cloned().collect();
        code.prog_ids.insert(empty_name, crate::kernel::prog_info::prog_id(d._empty.as_fd())?);
    }
    let mut d = d;
    d.code = code;
    let set_slot = |slot: bench_chain_slot, fd: BorrowedFd<'_>| -> Result<()> {
        d.chain.update(&slot.0.to_ne_bytes(), &(fd.as_raw_fd() as u32).to_ne_bytes(), MapFlags::ANY).context(
            "the kernel refused the program for the chain driver's prog array (its type, attach type or flags differ)",
        )
    };
    set_slot(bench_chain_slot::BENCH_CHAIN_ENTRY, req.entry)?;
    set_slot(bench_chain_slot::BENCH_CHAIN_EMPTY, d._empty.as_fd())?;
    write_variants(&skeleton::object_map(&obj, "bench_variants", what)?, req.variants, req.restore)?;
    Ok(d)
}

impl ChainTimer {
    /// Loads the driver, counts the chain's tail calls on every packet and
    /// checks the last pass of a run against the program's own outputs.
    /// `Ok(Err(_))`: the chain runs, but no loop can hold it. A tc chain
    /// that changes the packet's length gets it back at the tail; where
    /// its later passes then go another way, at the MAC header (in the
    /// kernel: the userspace runtime has no bpf_skb_adjust_room). The
    /// tail's reason stands if both fail.
    pub fn build(req: ChainRequest<'_>) -> Result<std::result::Result<ChainTimer, PerCallBecause>> {
        let resizes = super::restore::resizes_skb(req.kind, req.variants, &req.references);
        match ChainTimer::build_with(&req, LengthReset::Tail) {
            Err(at_tail) if resizes && req.in_user_runtime.is_none() => {
                ChainTimer::build_with(&req, LengthReset::Mac).map_err(|_| at_tail)
            }
            built => built,
        }
    }

    fn build_with(
        req: &ChainRequest<'_>,
        reset: LengthReset,
    ) -> Result<std::result::Result<ChainTimer, PerCallBecause>> {
        // The probe: on every packet, the tail calls one pass leaves.
        let d = load_driver(req, 1, true, reset)?;
        // The kernel's limit per run (33 since 5.17, 32 before).
        let ctx = req.ctx.as_deref();
        run_in(d.probe_limit.as_fd(), &req.variants[0], ctx)?;
        let limit = read_totals(&d.totals, req.cpu)?.probe_calls + 1;
        if limit > MAX_PASSES {
            // Never refused: this kernel (before 6.10) counts tail calls per
            // call of the subprogram, from the loop's count, so every pass
            // has the whole budget and the loop may hold any number.
            drop(d);
            let per_run = MAX_PASSES - 1;
            let d = load_driver(req, per_run, false, reset)?;
            return ChainTimer::ready(d, req, reset, (0, per_run, 0)).map(Ok);
        }
        let mut tail_calls = 0;
        for p in req.variants {
            run_in(d.probe.as_fd(), p, ctx)?;
            let left = read_totals(&d.totals, req.cpu)?.probe_calls;
            if left == 0 {
                if let Some((entry, code)) = &req.in_user_runtime {
                    // The chain alone still runs in userspace as in the kernel (to its limit).
                    let mut rt = UserRuntime::new(code, req.cpu)?;
                    give_contexts(&mut rt, req.kind, req.variants, req.ctx.as_deref())?;
                    check_user_outputs(&mut rt, entry, req)?;
                }
                return Ok(Err(PerCallBecause::new(format!(
                    "it makes {limit} tail calls or more per packet with the loop's own (the kernel's limit per run): no loop can hold it"
                ))));
            }
            tail_calls = tail_calls.max(limit - left);
        }
        // The timed passes and the checked one, all within the limit.
        let per_run = limit / tail_calls - 1;
        if per_run == 0 {
            return Ok(Err(PerCallBecause::new(format!(
                "it makes {tail_calls} tail calls per packet with the loop's own: a run (at most {limit}) holds only the pass that is checked"
            ))));
        }
        // cfg_chain_iters is read-only once loaded: load again with the count.
        drop(d);
        let d = load_driver(req, per_run, false, reset)?;
        ChainTimer::ready(d, req, reset, (tail_calls, per_run, limit)).map(Ok)
    }

    /// The timer over the driver `d`, loaded with `per_run` passes per
    /// run, a few runs checked before any is timed (a tc chain that
    /// resizes the packet: one batch longer than a walk of its data).
    fn ready(
        mut d: Driver,
        req: &ChainRequest<'_>,
        reset: LengthReset,
        (tail_calls, per_run, limit): (u32, u32, u32),
    ) -> Result<ChainTimer> {
        let in_user_runtime = match (d.code.take(), &req.in_user_runtime) {
            (Some(mut code), Some((entry, user_code))) => {
                if tail_calls == 0 {
                    bail!(
                        "this kernel counts tail calls per call of a subprogram (before 6.10) and the userspace runtime counts them per run, as later kernels do: use --runtime kernel"
                    );
                }
                code.merge(user_code.clone(), "user")?;
                let rt = std::rc::Rc::new(std::cell::RefCell::new(UserRuntime::new(&code, req.cpu)?));
                give_contexts(&mut rt.borrow_mut(), req.kind, req.variants, req.ctx.as_deref())?;
                check_user_outputs(&mut rt.borrow_mut(), entry, req)?;
                Some(UserChain { rt, entry: entry.to_string(), variants: req.variants.to_vec() })
            }
            _ => None,
        };
        let resizes = super::restore::resizes_skb(req.kind, req.variants, &req.references);
        let mut timer = ChainTimer {
            body: d.body,
            overhead: d.overhead,
            totals: d.totals,
            state: d.state,
            _chain: d.chain,
            _empty: d._empty,
            packet: req.variants[0].clone(),
            ctx: req.ctx.clone(),
            references: req.references.clone(),
            mask: req.mask.clone(),
            kind: req.kind,
            cpu: req.cpu,
            in_user_runtime,
            tail_calls,
            per_run,
            limit,
            length_reset: (req.kind.has_skb() && resizes).then(|| reset.driver().1),
        };
        timer.run(true, per_run * (req.variants.len() as u32 + 1))?;
        if resizes && timer.in_user_runtime.is_none() {
            let n = super::spliced::WALK_CHECK_ITERATIONS.min(timer.cap());
            timer.run(true, n).with_context(|| format!("in a check batch of {n} passes before timing"))?;
        }
        Ok(timer)
    }

    /// Timed passes per batch at most.
    pub fn cap(&self) -> u32 {
        self.per_run * MAX_RUNS_PER_BATCH as u32
    }

    /// Runs of the driver (or of its overhead) until `iters` passes are
    /// timed, at most MAX_RUNS_PER_BATCH; each run's checked pass of the
    /// body must give the program's own output for its packet.
    fn run(&mut self, body: bool, iters: u32) -> Result<BatchTiming> {
        let runs = u64::from(iters).div_ceil(u64::from(self.per_run)).clamp(1, MAX_RUNS_PER_BATCH);
        let before = self.totals()?;
        let started_ns = crate::system::monotonic_ns();
        let prog = if body { self.body.as_fd() } else { self.overhead.as_fd() };
        let (body_name, overhead_name) = driver_names(self.kind)?;
        let name = if body { body_name } else { overhead_name };
        for _ in 0..runs {
            let out = match &self.in_user_runtime {
                Some(u) => u.rt.borrow_mut().run(&name, &self.packet)?.into(),
                None => run_in(prog, &self.packet, self.ctx.as_deref())?,
            };
            if body {
                let i = self.variant()?;
                if let Some(diff) = outputs_differ(self.kind, &self.mask, &self.references[i], &out) {
                    bail!(
                        "the chain, entered from the loop, gave another output than the program itself for packet {i}: {diff}"
                    );
                }
            }
        }
        let after = self.totals()?;
        ensure!(after.status == 0, "the chain driver could not put the packet back between passes");
        ensure!(
            after.runs - before.runs == runs,
            "no timing from the chain driver on CPU {} (is the thread pinned?)",
            self.cpu
        );
        Ok(BatchTiming {
            started_ns,
            elapsed_ns: after.elapsed_ns - before.elapsed_ns,
            iters: after.iters - before.iters,
        })
    }

    /// The packet variant the last run's checked pass saw (read only where
    /// the case has several: a read is a system call per run).
    fn variant(&self) -> Result<usize> {
        if self.references.len() == 1 {
            return Ok(0);
        }
        let state: DriverState = match &self.in_user_runtime {
            Some(u) => user_cpu(&u.rt, "bench_driver_state", self.cpu)?,
            None => this_cpu(&self.state, self.cpu, "state")?,
        };
        Ok(state.idx as usize)
    }

    /// How many passes so far ended with a helper call putting the skb's
    /// protocol, packet type or hash back (inside the timed region; the
    /// empty chain of the overhead's loop never needs one).
    pub fn helper_resets(&self) -> Result<u64> {
        let state: DriverState = match &self.in_user_runtime {
            Some(u) => user_cpu(&u.rt, "bench_driver_state", self.cpu)?,
            None => this_cpu(&self.state, self.cpu, "state")?,
        };
        Ok(state.rehelped)
    }

    /// This CPU's totals, from the kernel's map or the userspace runtime's.
    fn totals(&self) -> Result<bench_chain_totals> {
        match &self.in_user_runtime {
            Some(u) => user_cpu(&u.rt, "bench_chain_totals", self.cpu),
            None => read_totals(&self.totals, self.cpu),
        }
    }

    /// What the loop puts back after every pass beyond the bytes written
    /// back, inside the timed region: a changed length, the skb's state by
    /// helper calls. `what` is what changed it ("the chain", "the entry").
    pub fn reset_notes(&self, what: &str) -> Vec<String> {
        let mut notes = Vec::new();
        if let Some(how) = self.length_reset {
            notes.push(format!(
                "{what} changes the packet's length: the loop puts it back after every pass ({how}), inside the timed region"
            ));
        }
        if self.helper_resets().is_ok_and(|n| n > 0) {
            notes.push(super::HELPER_RESETS.into());
        }
        notes
    }

    /// The userspace runtime the batches run in, if they do.
    pub fn user_runtime(&self) -> Option<&SharedRuntime> {
        self.in_user_runtime.as_ref().map(|u| &u.rt)
    }

    /// `n` runs of the user's entry alone in the userspace runtime, the
    /// case's packets in turn: what its instructions per packet are
    /// counted on (the driver's loop has no share in them).
    pub fn run_entry(&self, n: u32) -> Result<BatchTiming> {
        let u = self.in_user_runtime.as_ref().context("the chain runs in the kernel")?;
        let started_ns = crate::system::monotonic_ns();
        for i in 0..n as usize {
            u.rt.borrow_mut().run(&u.entry, &u.variants[i % u.variants.len()])?;
        }
        Ok(BatchTiming { started_ns, elapsed_ns: crate::system::monotonic_ns() - started_ns, iters: u64::from(n) })
    }
}

/// The chain from `entry` in the userspace runtime `rt` gives the
/// kernel's output for each of the case's packets.
impl BatchTimer for ChainTimer {
    fn run_batch(&mut self, body: bool, iters: u32) -> Result<BatchTiming> {
        self.run(body, iters)
    }

    fn batch_cap(&self) -> Option<u32> {
        Some(self.cap())
    }

    /// The chain's own instructions: its entry run alone per packet, no loop around it.
    fn count_instructions(&mut self, iters: u32, profile: Profile) -> Result<Option<InstructionCount>> {
        let Some(rt) = self.user_runtime().cloned() else { return Ok(None) };
        crate::harness::count_instructions(&rt, iters, profile, |variant, n| match variant {
            Variant::Body => self.run_entry(n),
            Variant::Overhead => {
                Ok(BatchTiming { started_ns: crate::system::monotonic_ns(), elapsed_ns: 0, iters: u64::from(n) })
            }
        })
        .map(Some)
    }
}

fn check_user_outputs(rt: &mut UserRuntime, entry: &str, req: &ChainRequest<'_>) -> Result<()> {
    for (i, (packet, want)) in req.variants.iter().zip(&req.references).enumerate() {
        let got: RunOutput = rt.run(entry, packet)?.into();
        if let Some(diff) = outputs_differ(req.kind, &req.mask, want, &got) {
            bail!("packet {i}: the userspace runtime gave another output than the kernel: {diff}");
        }
    }
    Ok(())
}

/// This CPU's value of the userspace runtime's per-CPU map `map`.
fn user_cpu<T: bytemuck::Pod>(rt: &SharedRuntime, map: &str, cpu: usize) -> Result<T> {
    let all = rt.borrow().map(map)?.peek_all(&0u32.to_ne_bytes()).with_context(|| format!("{map} has no slot 0"))?;
    let raw = all.get(cpu).with_context(|| format!("no {map} value for CPU {cpu}"))?;
    Ok(bytemuck::pod_read_unaligned(raw))
}

/// This CPU's totals.
fn read_totals(totals: &MapHandle, cpu: usize) -> Result<bench_chain_totals> {
    this_cpu(totals, cpu, "totals")
}

/// This CPU's value of the chain driver's per-CPU map `map` (its `what`).
fn this_cpu<T: bytemuck::Pod>(map: &MapHandle, cpu: usize, what: &str) -> Result<T> {
    let all = map
        .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
        .with_context(|| format!("reading the chain driver's {what}"))?
        .with_context(|| format!("the chain driver has no {what} slot"))?;
    let raw = all.get(cpu).with_context(|| format!("no chain driver {what} for this CPU"))?;
    Ok(bytemuck::pod_read_unaligned(raw))
}
