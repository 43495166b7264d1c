//! Host side of the in-BPF timing library (src/bpf/bench_timing.bpf.h).
//!
//! Every timed program carries the maps `bench_ctl` (batch size, enable flag,
//! restore mode) and `bench_result` (per-CPU: the last batch's elapsed time
//! and iteration count). `TimedProgram` sets the first, runs the program,
//! and reads the second.
//!
//! The Rust views of those structs and enums are the ones libbpf-cargo
//! generated from the loop probe's BTF: every object that includes
//! bench_timing.bpf.h has the same definitions.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use anyhow::{Context, Result, bail, ensure};
use libbpf_rs::{MapCore, MapFlags, MapHandle};

use crate::kernel::test_run::{RunOutput, run_in};
use crate::record::{Body, LoopConstruct, Runtime};
use crate::system::cpu::pin_to_cpu;
use skel::types::{bench_ctl, bench_result, bench_status};

// The loop probe (loops.rs) includes bench_timing.bpf.h: its skeleton gives
// the timing structs' Rust types, so it is compiled in here, where they are used.
crate::bpf_skeleton!("loop_probe");

/// How the loop undoes the body's packet changes (`enum bench_restore_mode`).
pub use skel::types::bench_restore_mode as RestoreMode;

crate::impl_pod!(bench_ctl, bench_result);

/// One timed batch, as measured inside BPF.
#[derive(Debug, Clone, Copy)]
pub struct BatchTiming {
    /// When the batch started (bpf_ktime_get_ns, CLOCK_MONOTONIC).
    pub started_ns: u64,
    pub elapsed_ns: u64,
    /// Iterations the loop really ran (may_goto can end a loop early).
    pub iters: u64,
}

impl BatchTiming {
    pub fn ns_per_op(&self) -> f64 {
        self.elapsed_ns as f64 / self.iters.max(1) as f64
    }
}

/// A program built on the timing library (BENCH_TIMED_LOOP and its kin, XDP
/// or tc), with the maps that drive it.
pub struct TimedProgram {
    prog: OwnedFd,
    ctl_map: MapHandle,
    result_map: MapHandle,
    ctl: bench_ctl,
    /// Where runs go instead of the kernel: the same program in the
    /// userspace runtime, timing itself with the same loop.
    user: Option<UserspaceProgram>,
    /// The context every kernel run gets (an skb program's `__sk_buff`).
    ctx: Option<Vec<u8>>,
}

/// A program of an object in the userspace runtime; the object's programs
/// share its runtime (and so its maps), as they share maps in the kernel.
pub struct UserspaceProgram {
    pub runtime: SharedRuntime,
    pub name: String,
}

pub type SharedRuntime = std::rc::Rc<std::cell::RefCell<crate::uvm::UserRuntime>>;

const KEY0: [u8; 4] = 0u32.to_ne_bytes();
/// BENCH_SAVE_BYTES in bench_timing.bpf.h.
pub const BENCH_SAVE_BYTES: usize = 64;

impl TimedProgram {
    /// `prog` must be a program of the object that owns `ctl_map` and `result_map`.
    pub fn new(prog: OwnedFd, ctl_map: MapHandle, result_map: MapHandle) -> Result<Self> {
        ensure!(
            ctl_map.value_size() as usize == size_of::<bench_ctl>()
                && result_map.value_size() as usize == size_of::<bench_result>(),
            "bench_ctl/bench_result differ between this object and the harness: rebuild bpfbench"
        );
        let mut p = Self { prog, ctl_map, result_map, ctl: bench_ctl::default(), user: None, ctx: None };
        p.write_ctl(bench_ctl::default())?;
        Ok(p)
    }

    /// Times `prog` from now on: a fresh load of the same instructions
    /// (same object, same maps), so a new JIT image at a new address.
    pub fn replace_program(&mut self, prog: OwnedFd) {
        self.prog = prog;
    }

    /// Runs this program in the userspace runtime from now on (its
    /// instructions as prepared for the kernel, under the same name).
    pub fn run_in_user(&mut self, runtime: SharedRuntime, name: &str) -> Result<()> {
        self.user = Some(UserspaceProgram { runtime, name: name.to_string() });
        self.write_ctl(self.ctl)
    }

    /// Gives every run in the kernel the context `ctx` from now on.
    pub fn set_context(&mut self, ctx: Option<Vec<u8>>) {
        self.ctx = ctx;
    }

    /// Whether runs go to the userspace runtime.
    pub fn user(&self) -> Option<&UserspaceProgram> {
        self.user.as_ref()
    }

    fn write_ctl(&mut self, ctl: bench_ctl) -> Result<()> {
        match &self.user {
            Some(u) => {
                let cpu = u.runtime.borrow().cpu();
                let rc =
                    u.runtime.borrow_mut().map_mut("bench_ctl")?.update(&KEY0, &[bytemuck::bytes_of(&ctl)], 0, cpu);
                ensure!(rc == 0, "writing bench_ctl in the userspace runtime: error {rc}");
            }
            None => self.ctl_map.update(&KEY0, bytemuck::bytes_of(&ctl), MapFlags::ANY).context("writing bench_ctl")?,
        }
        self.ctl = ctl;
        Ok(())
    }

    /// One run on `packet`, in the kernel or in the userspace runtime.
    fn run(&self, packet: &[u8]) -> Result<RunOutput> {
        match &self.user {
            Some(u) => Ok(u.runtime.borrow_mut().run(&u.name, packet)?.into()),
            None => run_in(self.prog.as_fd(), packet, self.ctx.as_deref()),
        }
    }

    fn set_ctl(&mut self, enabled: bool, iters: u32, restore: RestoreMode) -> Result<()> {
        let want = bench_ctl { enabled: enabled as u32, batch_iters: iters, restore_mode: restore, _pad: 0 };
        if bytemuck::bytes_of(&want) != bytemuck::bytes_of(&self.ctl) {
            self.write_ctl(want)?;
        }
        Ok(())
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.prog.as_fd()
    }

    /// Runs the program once, untimed, exactly as in production.
    pub fn run_once(&mut self, packet: &[u8]) -> Result<RunOutput> {
        self.set_ctl(false, 0, RestoreMode::BENCH_RESTORE_NONE)?;
        self.run(packet)
    }

    /// Runs one timed batch of `iters` iterations (plus, for programs built
    /// with BENCH_TIMED_LOOP, the untimed validation iteration) on the
    /// calling thread's CPU, `cpu`.
    pub fn run_batch(
        &mut self,
        packet: &[u8],
        iters: u32,
        restore: RestoreMode,
        cpu: usize,
    ) -> Result<(BatchTiming, RunOutput)> {
        ensure!(iters > 0, "a timed batch needs at least one iteration");
        self.set_ctl(true, iters, restore)?;
        let before = self.read_results()?;
        let out = self.run(packet)?;
        let after = self.read_results()?;
        Ok((fresh_sample(&before, &after, cpu)?, out))
    }

    /// Runs the same batch at once on every CPU of `cpus`, one pinned thread
    /// per CPU (the selftests bench's "producers"); one timing per CPU.
    pub fn run_batch_parallel(&mut self, packet: &[u8], iters: u32, cpus: &[usize]) -> Result<Vec<BatchTiming>> {
        ensure!(iters > 0, "a timed batch needs at least one iteration");
        ensure!(self.user.is_none(), "the userspace runtime runs on one thread");
        self.set_ctl(true, iters, RestoreMode::BENCH_RESTORE_NONE)?;
        let before = self.read_results()?;
        let prog = self.prog.as_fd();
        let ctx = self.ctx.as_deref();
        // A producer runs its whole batch with preemption off. Without the
        // barrier, the one on the spawning thread's own CPU would start first
        // and keep the others from being spawned until it had finished.
        let ready = std::sync::Barrier::new(cpus.len());
        std::thread::scope(|scope| -> Result<()> {
            let handles: Vec<_> = cpus
                .iter()
                .map(|&cpu| {
                    let ready = &ready;
                    scope.spawn(move || -> Result<()> {
                        let pinned = pin_to_cpu(cpu);
                        ready.wait();
                        pinned?;
                        run_in(prog, packet, ctx).map(|_| ())
                    })
                })
                .collect();
            for h in handles {
                h.join().map_err(|_| anyhow::anyhow!("a producer thread panicked"))??;
            }
            Ok(())
        })?;
        let after = self.read_results()?;
        cpus.iter().map(|&cpu| fresh_sample(&before, &after, cpu)).collect()
    }

    /// This program's bench_result, one entry per possible CPU.
    fn read_results(&self) -> Result<Vec<bench_result>> {
        if let Some(u) = &self.user {
            let rt = u.runtime.borrow();
            let per_cpu = rt.map("bench_result")?.peek_all(&KEY0).context("bench_result has no slot 0")?;
            return Ok(per_cpu.iter().map(|raw| bytemuck::pod_read_unaligned(raw)).collect());
        }
        let per_cpu = self
            .result_map
            .lookup_percpu(&KEY0, MapFlags::ANY)
            .context("reading bench_result")?
            .context("bench_result has no slot 0")?;
        Ok(per_cpu.iter().map(|raw| bytemuck::pod_read_unaligned(raw)).collect())
    }
}

/// The batch `cpu` ran between the two reads of bench_result.
fn fresh_sample(before: &[bench_result], after: &[bench_result], cpu: usize) -> Result<BatchTiming> {
    let (Some(b), Some(a)) = (before.get(cpu), after.get(cpu)) else {
        bail!("bench_result has no slot for CPU {cpu}");
    };
    if a.invocations == b.invocations {
        bail!(
            "no timing sample on CPU {cpu}: the run happened elsewhere (is the thread pinned?) or the program returned early"
        );
    }
    match a.status {
        bench_status::BENCH_OK => {}
        bench_status::BENCH_ERR_SHORT_PACKET => {
            bail!("packet shorter than the {BENCH_SAVE_BYTES} header bytes the timing loop saves")
        }
        bench_status::BENCH_ERR_RESTORE => {
            bail!("the timing loop could not restore the packet head between iterations")
        }
        s => bail!(
            "the loop could not put the packet back after an iteration (its reset block failed, status {}): a helper refused to restore the length or bytes the program changed",
            s.0
        ),
    }
    Ok(BatchTiming { started_ns: a.started_ns, elapsed_ns: a.elapsed_ns, iters: a.iters })
}

/// BENCH_BOUNDED_ITERS in bench_timing.bpf.h: a bounded loop's batch at most.
pub const BOUNDED_LOOP_ITERS: u32 = 256;

/// The most iterations a batch of `construct` runs (None: as many as asked).
pub fn batch_cap(construct: LoopConstruct) -> Option<u32> {
    (construct == LoopConstruct::Bounded).then_some(BOUNDED_LOOP_ITERS)
}

/// `--body`: where the timed body sits in the batch loop. `Auto` inlines
/// it where the verifier accepts that and calls it otherwise, saying why;
/// `Inline` refuses where it cannot inline; `Call` always calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BodyChoice {
    #[default]
    Auto,
    Inline,
    Call,
}

// `--body`, for the workloads whose body can be inlined (xdp-lb and your
// own objects). A plain comment: a doc comment here would become the help
// text of the command it joins.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct BodyArgs {
    /// Where the timed program sits in the batch loop: auto inlines it where
    /// the verifier accepts that (no call's cost per iteration) and calls it
    /// otherwise, saying why; inline refuses where it cannot; call always calls.
    #[arg(long, value_enum, default_value_t = BodyChoice::Auto)]
    pub body: BodyChoice,
}

impl BodyArgs {
    /// `--body` as parsed, where the command line has it (else auto).
    pub fn from_matches(matches: &clap::ArgMatches) -> BodyChoice {
        matches.try_get_one::<BodyChoice>("body").ok().flatten().copied().unwrap_or_default()
    }
}

/// Why a body cannot run inline in `construct`'s loop in `runtime`, if it cannot.
pub fn cannot_inline(construct: LoopConstruct, runtime: Runtime) -> Option<String> {
    if construct != LoopConstruct::MayGoto {
        Some(format!(
            "the {} loop's verifier would walk the body in every iteration; inline needs may_goto",
            construct.as_str()
        ))
    } else if runtime != Runtime::Kernel {
        Some("the userspace runtime runs the called form".to_string())
    } else {
        None
    }
}

/// A timed program placed as `--body` asked, with where it ended up and why.
pub struct Placed<T> {
    pub value: T,
    pub body: Body,
    /// Why it is called, where inline was asked for or possible.
    pub why_called: Option<String>,
}

/// Why the body is called rather than inline, from the inline build's error:
/// its first line.
pub fn why_not_inline(e: &anyhow::Error) -> String {
    format!("inline, {}", crate::record::error_line(e).lines().next().unwrap_or_default())
}

/// Builds the inline form where `choice` asks for it and nothing in
/// `cannot` forbids it, else the called form. Under `auto` a refused
/// inline form (the verifier's reason on its error's first line) falls
/// back to the call and is kept as the reason; asked for, it is the error.
pub fn place<T>(
    choice: BodyChoice,
    cannot: Option<String>,
    inline: impl FnOnce() -> Result<T>,
    call: impl FnOnce() -> Result<T>,
) -> Result<Placed<T>> {
    let called =
        |why: String| -> Result<Placed<T>> { Ok(Placed { value: call()?, body: Body::Call, why_called: Some(why) }) };
    match (choice, cannot) {
        (BodyChoice::Call, _) => called("asked for with --body call".into()),
        (BodyChoice::Inline, Some(why)) => bail!("--body inline: {why}"),
        (BodyChoice::Auto, Some(why)) => called(why),
        (choice, None) => match inline() {
            Ok(value) => Ok(Placed { value, body: Body::Inline, why_called: None }),
            Err(e) if choice == BodyChoice::Inline => Err(e.context("--body inline")),
            Err(e) => called(why_not_inline(&e)),
        },
    }
}

impl BodyChoice {
    pub fn as_str(self) -> &'static str {
        match self {
            BodyChoice::Auto => "auto",
            BodyChoice::Inline => "inline",
            BodyChoice::Call => "call",
        }
    }
}

/// `--timing-mode`: how batches are timed. `Auto` takes the best the kernel
/// and the workload allow; the others force one, or refuse in one line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TimingChoice {
    #[default]
    Auto,
    MayGoto,
    BpfLoop,
    Bounded,
    PerCall,
}

impl TimingChoice {
    pub fn as_str(self) -> &'static str {
        match self {
            TimingChoice::Auto => "auto",
            TimingChoice::MayGoto => "may-goto",
            TimingChoice::BpfLoop => "bpf-loop",
            TimingChoice::Bounded => "bounded",
            TimingChoice::PerCall => "per-call",
        }
    }

    /// The forced loop construct, if one is.
    pub fn forced_loop(self) -> Option<LoopConstruct> {
        match self {
            TimingChoice::MayGoto => Some(LoopConstruct::MayGoto),
            TimingChoice::BpfLoop => Some(LoopConstruct::BpfLoop),
            TimingChoice::Bounded => Some(LoopConstruct::Bounded),
            TimingChoice::Auto | TimingChoice::PerCall => None,
        }
    }

    /// The loop construct in-BPF batches use on this kernel: the forced one
    /// where the kernel verifies it (else an error saying what it lacks), or
    /// the best it verifies.
    pub fn loop_construct(self) -> Result<LoopConstruct> {
        let Some(caps) = crate::kernel::features::probe() else {
            // Unprivileged: the load that follows reports why.
            return Ok(self.forced_loop().unwrap_or_default());
        };
        match self.forced_loop() {
            Some(c) => caps.loop_construct(c).map(|()| c).map_err(|why| anyhow::anyhow!("--timing-mode {}: {why}", self.as_str())),
            None => caps.best_loop().context(
                "this kernel verifies none of the loops bpfbench times in (may_goto, bpf_loop, bounded loops); use --timing-mode per-call with your own object",
            ),
        }
    }
}

/// The names of the timed programs of `bases` built with each construct
/// but `keep` (`xdp_lb` → `xdp_lb_bpf_loop`, `xdp_lb_bounded`): the
/// programs to leave unloaded, so an old kernel never sees them.
pub fn programs_of_other_loops(bases: &[&str], keep: LoopConstruct) -> Vec<String> {
    LoopConstruct::ALL
        .into_iter()
        .filter(|c| *c != keep)
        .flat_map(|c| bases.iter().map(move |b| format!("{b}{}", c.program_suffix())))
        .collect()
}
