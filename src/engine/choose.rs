//! Which timer takes a program, and the fallbacks between them: spliced
//! into the driver's loop (at the tail's length reset, else at the MAC
//! header's), the chain loop for a program that makes tail calls or a type
//! without a spliced driver, and per call where neither can hold it, the
//! reason kept. Each choice's checks and notes go into the validation.

use std::collections::HashMap;
use std::os::fd::BorrowedFd;
use std::sync::Mutex;

use anyhow::{Result, bail};

use super::chain::{ChainRequest, ChainTimer};
use super::per_call::PerCall;
use super::restore::{self, Restore};
use super::splice::{self, ENCAPSULATED_FOR_GOOD, PreparedProgram};
use super::spliced::{Placement, SpliceRequest, Spliced};
use super::{HELPER_RESETS, PerCallBecause, Timed};
use crate::harness::OverheadKey;
use crate::harness::timing::BodyChoice;
use crate::insn::{Insn, helper};
use crate::kernel::FuncInfo;
use crate::kernel::object::ObjectFile;
use crate::kernel::prog_type::{BatchLoop, ProgKind};
use crate::kernel::test_run::{RunOutput, TestInput};
use crate::packet::mask::Mask;
use crate::record::{Body, LoopConstruct, Runtime, Timing, VerifierStats};

/// The program to time, loaded as its author's loader would load it.
pub struct Program<'a> {
    pub object: &'a ObjectFile,
    /// The objects whose programs fill its prog arrays.
    pub tail_call_objects: &'a [ObjectFile],
    pub name: &'a str,
    pub kind: ProgKind,
    /// libbpf's name of its type, for what is said of it.
    pub type_name: &'a str,
    /// Its final instructions and function records, as libbpf prepared them.
    pub insns: &'a [Insn],
    pub funcs: &'a [FuncInfo],
    pub stats: VerifierStats,
    /// A program of its type that returns at once: per-call timing's own cost.
    pub empty: BorrowedFd<'a>,
    pub cpu: usize,
    /// Where the batches run: the kernel, or the userspace runtime's JIT.
    pub runtime: Runtime,
    /// The driver's loop; `None` where the kernel verifies none of them.
    pub construct: Option<LoopConstruct>,
}

impl Program<'_> {
    /// Whether the program calls `bpf_tail_call`.
    pub fn makes_tail_calls(&self) -> bool {
        splice::calls_helper(self.insns, helper::TAIL_CALL)
    }
}

/// What the timed runs are given: the packets in turn (with the context
/// they share, if any), what each per-call test run takes, and the
/// program's own output for each, validated.
pub struct Input<'a> {
    pub packets: &'a [Vec<u8>],
    pub ctx: Option<&'a [u8]>,
    pub per_call: Vec<TestInput>,
    pub references: &'a [RunOutput],
    /// What comparisons with the references leave out.
    pub mask: &'a Mask,
}

/// How the client asks for the program to be timed.
#[derive(Clone, Copy)]
pub struct Options<'a> {
    /// Per call whatever loop there is, and why ("asked for with --per-call").
    pub per_call: Option<&'a str>,
    /// The loop the user forced (`--timing-mode`): a refusal of it is an error, not a fallback.
    pub forced: Option<&'a str>,
    pub body: BodyChoice,
    /// The case's name, in errors.
    pub case: &'a str,
    /// What its row is called in progress lines ("spec/case" in a corpus).
    pub row: &'a str,
}

/// The timer chosen, and what the validation says of it.
pub struct TimerChoice<'a> {
    pub timed: Timed<'a>,
    pub timing: Timing,
    pub checks: Vec<String>,
    pub notes: Vec<String>,
}

/// What a spliced driver is built from, but the packets' bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct DriverKey {
    construct: LoopConstruct,
    runtime: Runtime,
    restore: u32,
    packets: usize,
}

/// What the builds of one driver found: where the body went, at the tail
/// reset and at the MAC header's, and whether the tail reset failed.
#[derive(Debug, Default, Clone)]
struct KnownDriver {
    at_tail: Option<Placement>,
    at_mac: Option<Placement>,
    tail_fails: bool,
}

/// What earlier builds found of one program's drivers, kept across
/// set-ups: a case's driver is built again every sweep and, in `ab`, every
/// round, and cases of one program differ mostly in their packets, which
/// the verifier's verdict does not depend on.
#[derive(Default)]
pub struct DriverMemo {
    drivers: Mutex<HashMap<DriverKey, KnownDriver>>,
    /// Why the verifier refused the body inline, per loop: found once for
    /// any driver of that loop, it holds for all.
    inline_refused: Mutex<HashMap<(LoopConstruct, Runtime), String>>,
}

impl DriverMemo {
    /// Notes what a build found of driver `key`.
    fn remember(&self, key: DriverKey, found: impl FnOnce(&mut KnownDriver)) {
        found(self.drivers.lock().unwrap_or_else(|e| e.into_inner()).entry(key).or_default());
    }

    /// What earlier builds found of the driver `key`; where none built it,
    /// the refusal of the inline body in the same loop, if one was found
    /// (the same program's complexity in that loop; its packets and bytes
    /// written back change only the loop's reset block).
    fn known(&self, key: DriverKey) -> KnownDriver {
        let drivers = self.drivers.lock().unwrap_or_else(|e| e.into_inner());
        let refused = self.inline_refused.lock().unwrap_or_else(|e| e.into_inner());
        let called = refused.get(&(key.construct, key.runtime)).map(|why| Placement::Called(Some(why.clone())));
        let mut known = drivers.get(&key).cloned().unwrap_or_default();
        known.at_tail = known.at_tail.or_else(|| called.clone());
        known.at_mac = known.at_mac.or(called);
        known
    }

    fn refused_inline(&self, construct: LoopConstruct, runtime: Runtime, why: String) {
        let mut refused = self.inline_refused.lock().unwrap_or_else(|e| e.into_inner());
        refused.entry((construct, runtime)).or_insert(why);
    }
}

/// Chooses and builds the timer of `program` on `input`: in BPF where a
/// loop holds it, per call otherwise, the reason said.
pub fn choose<'a>(
    program: &Program<'a>,
    input: &Input<'_>,
    options: Options<'_>,
    memo: &DriverMemo,
) -> Result<TimerChoice<'a>> {
    match restore_plan(program, input, options) {
        Restore::PerCall(reason) if program.runtime == Runtime::User => {
            bail!(
                "case {}: the userspace runtime times in the batch loop only, and this case is timed per call because {reason}",
                options.case
            )
        }
        Restore::PerCall(reason) => Ok(per_call(program, input, PerCallBecause::new(reason))),
        Restore::Bytes(restore)
            if program.makes_tail_calls() || matches!(program.kind.batch_loop(), BatchLoop::Chain(_)) =>
        {
            chain(program, input, restore, options)
        }
        Restore::Bytes(restore) => spliced(program, input, restore, options, memo),
    }
}

/// Where the loop's restore can put the packet back: the bytes to write
/// back per iteration, or why the case is timed per call.
fn restore_plan(program: &Program<'_>, input: &Input<'_>, options: Options<'_>) -> Restore {
    if let Some(why) = options.per_call {
        Restore::PerCall(why.into())
    } else if let BatchLoop::PerCall(why) = program.kind.batch_loop() {
        Restore::PerCall(why.into())
    } else if program.construct.is_none() {
        Restore::PerCall("this kernel verifies neither may_goto nor bounded loops".into())
    } else {
        let outputs: Vec<Vec<u8>> = input.references.iter().map(|r| r.packet.clone()).collect();
        restore::plan(program.kind, input.packets, &outputs)
    }
}

/// Why case `case` cannot run in the userspace runtime (`what`: "" or " the
/// chain"): N/A where the runtime lacks what the path needs (a helper, a
/// map type), a failure otherwise.
fn not_in_user_runtime(case: &str, what: &str, e: anyhow::Error) -> anyhow::Error {
    let why = format!(
        "case {case}: cannot run{what} in the userspace runtime: {reason}",
        reason = crate::record::error_line(&e)
    );
    if crate::uvm::lacks(&e) { crate::harness::NotRunnable(why).into() } else { anyhow::anyhow!(why) }
}

/// The program spliced into the driver's loop (called or inline), or
/// per call when the verifier refuses the spliced program.
fn spliced<'a>(
    program: &Program<'a>,
    input: &Input<'_>,
    restore: u32,
    options: Options<'_>,
    memo: &DriverMemo,
) -> Result<TimerChoice<'a>> {
    let (kind, runtime) = (program.kind, program.runtime);
    let prepared = PreparedProgram {
        object: program.object,
        name: program.name,
        kind,
        insns: program.insns,
        funcs: program.funcs,
    };
    let construct = program.construct.unwrap_or_default();
    let refused_inline = |why: String| memo.refused_inline(construct, runtime, why);
    let request = SpliceRequest {
        program: &prepared,
        variants: input.packets,
        restore,
        references: input.references.to_vec(),
        mask: input.mask.clone(),
        cpu: program.cpu,
        runtime,
        ctx: input.ctx.map(<[u8]>::to_vec),
        construct,
        body: options.body,
        reset_at_mac: false,
        known: None,
        inline_refused: Some(&refused_inline),
    };
    let key = DriverKey { construct, runtime, restore, packets: input.packets.len() };
    let known = memo.known(key);
    // A tc program that changes the length is put back at the tail; where
    // that fails (a decapsulation's data walks forward), at the MAC
    // header, in the kernel (the userspace runtime has no
    // bpf_skb_adjust_room). The tail's reason stands if both fail.
    let resizes_tc = restore::resizes_skb(kind, input.packets, input.references);
    let in_kernel = runtime == Runtime::Kernel;
    let at_mac = |request: SpliceRequest<'_>| {
        // Asked now: the tail's build may have found the inline refusal.
        let known = memo.known(key).at_mac;
        let built = Spliced::build(SpliceRequest { reset_at_mac: true, known, ..request });
        if let Ok(s) = &built {
            memo.remember(key, |k| k.at_mac = Some(s.placement()));
        }
        built
    };
    let what = format!("{}: the verifier checks the {} loop around the program", options.row, construct.as_str());
    let built = crate::harness::activity::during(&what, || match known.tail_fails && resizes_tc && in_kernel {
        true => at_mac(request),
        false => match Spliced::build(SpliceRequest { known: known.at_tail.clone(), ..request.clone() }) {
            Err(at_tail) if resizes_tc && in_kernel => {
                memo.remember(key, |k| k.tail_fails = true);
                at_mac(request).map_err(|_| at_tail)
            }
            Ok(s) => {
                memo.remember(key, |k| k.at_tail = Some(s.placement()));
                Ok(s)
            }
            built => built,
        },
    });
    let s = match built {
        Ok(s) => s,
        Err(e) if runtime == Runtime::User => return Err(not_in_user_runtime(options.case, "", e)),
        Err(e) if let Some(forced) = options.forced => {
            bail!("case {}: --timing-mode {forced}: {reason}", options.case, reason = crate::record::error_line(&e))
        }
        Err(e) => {
            let mut because = PerCallBecause::of_error(&e);
            if because.reason.contains("another output") && splice::encapsulates_for_good(program.insns) {
                because.reason = format!("{} ({ENCAPSULATED_FOR_GOOD})", because.reason);
            }
            return Ok(per_call(program, input, because));
        }
    };
    let (mut checks, mut notes) = user_runtime_said(
        s.user_runtime().is_some(),
        "the program alone",
        "the spliced program as the kernel verified it",
        input,
    );
    checks.push(
        "spliced into the batch loop: the last iteration of every checked batch matched the program's own output"
            .into(),
    );
    if s.resized()? > 0 {
        notes.push(format!(
            "the program changes the packet's length: the loop puts it back after every iteration ({}), inside the timed region",
            s.length_reset
        ));
    }
    if s.helper_resets()? > 0 {
        notes.push(HELPER_RESETS.into());
    }
    let placement = match (&s.placement, &s.why_called) {
        (Body::Inline, _) => "inline in the batch loop".to_string(),
        (Body::Call, Some(why)) => format!("called from the batch loop (not inline: {why})"),
        (Body::Call, None) => "called from the batch loop".to_string(),
    };
    notes.push(format!("timing: in BPF, the program {placement}; {restore} bytes written back per iteration"));
    if s.placement_known {
        notes.push("placed as an earlier build of this loop placed it (the same program and loop; other packets or sweep): the verifier walked only that form".into());
    }
    let overhead = OverheadKey::DriverLoop {
        kind,
        construct: s.construct,
        body: s.placement,
        restore,
        packets: input.packets.len(),
    };
    let timing = Timing::InBpf { construct: s.construct, body: s.placement, why_called: s.why_called.clone() };
    let timed = timed(program, Box::new(s), overhead)?;
    Ok(TimerChoice { timed, timing, checks, notes })
}

/// A program that makes tail calls: the chain entered from the chain
/// driver's loop by a tail call, or per call where no loop can hold it.
fn chain<'a>(program: &Program<'a>, input: &Input<'_>, restore: u32, options: Options<'_>) -> Result<TimerChoice<'a>> {
    let in_user_runtime = match program.runtime {
        Runtime::User => {
            let mut code = program.object.loaded_code()?;
            for other in program.tail_call_objects {
                code.merge(other.loaded_code()?, &other.stem())?;
            }
            Some((program.name, code))
        }
        Runtime::Kernel => None,
    };
    // A raw tracepoint's runs take its arguments as their context and no packet.
    let no_packet = [Vec::new()];
    let (variants, ctx) = match program.kind.takes_raw_context() {
        true => (&no_packet[..], Some(input.packets[0].clone())),
        false => (input.packets, input.ctx.map(<[u8]>::to_vec)),
    };
    let req = ChainRequest {
        kind: program.kind,
        entry: program.object.prog_fd(program.name)?,
        in_user_runtime,
        load_attrs: program.object.load_attrs(program.name)?,
        variants,
        restore,
        references: input.references.to_vec(),
        mask: input.mask.clone(),
        ctx,
        cpu: program.cpu,
    };
    let what = format!("{}: the verifier checks the chain loop around the program", options.row);
    let built = crate::harness::activity::during(&what, || ChainTimer::build(req));
    let because = match built {
        Ok(Ok(timer)) => Ok(timer),
        Ok(Err(because)) if program.runtime == Runtime::User => {
            bail!(
                "case {}: the userspace runtime times chains in the batch loop only, and {}",
                options.case,
                because.reason
            )
        }
        Err(e) if program.runtime == Runtime::User => return Err(not_in_user_runtime(options.case, " the chain", e)),
        Ok(Err(because)) => Err(because),
        Err(e) => Err(PerCallBecause::of_error(&e).after("the loop that enters a chain could not run it: ")),
    };
    let timer = match because {
        Ok(timer) => timer,
        Err(mut because) => {
            if because.reason.contains("another output") && splice::object_encapsulates_for_good(program.object) {
                because.reason = format!("{} ({ENCAPSULATED_FOR_GOOD})", because.reason);
            }
            return Ok(per_call(program, input, because.after("it makes tail calls, and ")));
        }
    };
    let (mut checks, mut notes) = user_runtime_said(
        timer.user_runtime().is_some(),
        "the chain alone",
        "the chain driver and the chain's programs as the kernel verified them (tail calls through copies of the prog arrays: 33 per run, as kernels since 5.17 allow)",
        input,
    );
    checks.push("entered from the batch loop by a tail call, the chain's checked pass of every run matched the program's own output".into());
    let budget = match timer.tail_calls {
        0 => "this kernel counts tail calls per call of the loop's subprogram, so each pass has the whole budget"
            .to_string(),
        n => format!("{n} tail calls per packet, the loop's included, and this kernel allows {} per run", timer.limit),
    };
    notes.push(format!(
        "timing: in BPF, the chain entered by a tail call from the batch loop ({} timed passes per test run: {budget}); {restore} bytes written back per pass",
        timer.per_run
    ));
    notes.extend(timer.reset_notes("the chain"));
    let overhead =
        OverheadKey::ChainLoop { kind: program.kind, per_run: timer.per_run, restore, packets: input.packets.len() };
    let timing = Timing::Chain { tail_calls: timer.tail_calls, per_run: timer.per_run };
    let timed = timed(program, Box::new(timer), overhead)?;
    Ok(TimerChoice { timed, timing, checks, notes })
}

/// The check and note of a timer that runs in the userspace runtime
/// (`user`): `what` gave the kernel's outputs there, run as `runs`. None
/// of either for a timer in the kernel.
fn user_runtime_said(user: bool, what: &str, runs: &str, input: &Input<'_>) -> (Vec<String>, Vec<String>) {
    if !user {
        return (Vec::new(), Vec::new());
    }
    let packets = input.references.len();
    (
        vec![format!(
            "in the userspace runtime, {what} gave the kernel's verdict and output for each of the {packets} packet(s)"
        )],
        vec![format!("runtime: userspace, {runs}, compiled by bpfbench's JIT, with copies of the maps")],
    )
}

/// The program per call, `because` said in a note and in its timing.
fn per_call<'a>(program: &Program<'a>, input: &Input<'_>, because: PerCallBecause) -> TimerChoice<'a> {
    let kind = program.kind;
    let prog = program.object.prog_fd(program.name).expect("loaded before it is timed");
    let timer = PerCall {
        prog,
        empty: program.empty,
        inputs: input.per_call.clone(),
        references: input.references.to_vec(),
        mask: input.mask.clone(),
        kind,
        next: 0,
    };
    let host_timed = !kind.test_run_times();
    let by = match host_timed {
        true => format!(
            "timed by the host around its system call: the kernel reports no time for {} test runs",
            program.type_name
        ),
        false => "timed by the kernel".to_string(),
    };
    let mut notes = Vec::new();
    if let Some(tail) = &because.verifier_tail {
        notes.push(format!(
            "verifier log of the loop around the program (last lines):\n      {}",
            tail.replace('\n', "\n      ")
        ));
    }
    notes.push(format!("timing: per call (one BPF_PROG_TEST_RUN per packet, {by}), because {}", because.reason));
    let timed = Timed {
        timer: Box::new(timer),
        program: prog,
        stats: Some(program.stats.clone()),
        overhead: OverheadKey::EmptyTestRun { kind },
    };
    TimerChoice { timed, timing: Timing::PerCall { reason: because.reason, host_timed }, checks: Vec::new(), notes }
}

fn timed<'a>(
    program: &Program<'a>,
    timer: Box<dyn super::BatchTimer + 'a>,
    overhead: OverheadKey,
) -> Result<Timed<'a>> {
    let prog = program.object.prog_fd(program.name)?;
    Ok(Timed { timer, program: prog, stats: Some(program.stats.clone()), overhead })
}
