//! The timing engine: times any loaded program, by the best way it can
//! take, and says which and why.
//!
//! - in BPF, the program spliced into a driver's batch loop ([`splice`],
//!   [`spliced`]), called or inline;
//! - in BPF, entered by a tail call from the chain loop ([`chain`]), where
//!   it makes tail calls or its type has no spliced driver;
//! - per call ([`per_call`]): one `BPF_PROG_TEST_RUN` per input, where no
//!   loop can hold it, for a typed reason ([`PerCallBecause`]).
//!
//! Every timer implements [`BatchTimer`]; [`Timed`] is the one prepared
//! scenario around any of them, with the program it times and a typed
//! overhead key. [`choose`] picks the timer for a program and falls back
//! along the way. Its clients: the own-object workload
//! (`workloads/object`) and the test runner (`workloads/bpf_tests`, whose
//! fresh-state timer is its own `BatchTimer`).

mod chain;
mod choose;
mod per_call;
mod restore;
mod splice;
mod spliced;
mod user_context;

use std::os::fd::{BorrowedFd, OwnedFd};

use anyhow::{Context, Result};
use libbpf_rs::{MapCore, MapFlags, MapHandle};

use crate::harness::{BatchTiming, OverheadKey, PreparedScenario, Profile, Variant};
use crate::kernel::AttachType;
use crate::kernel::load::{Refusal, constant_program};
use crate::kernel::prog_type::ProgKind;
use crate::kernel::test_run::RunOutput;
use crate::packet::diff_packets;
use crate::packet::mask::Mask;
use crate::record::{InstructionCount, VerifierStats};

pub use chain::{ChainRequest, ChainTimer};
pub use choose::{DriverMemo, Input, Options, Program, TimerChoice, choose};
pub use per_call::PerCall;
pub use restore::{Restore, plan as restore_plan};
pub use splice::{DRIVER_LOOPS, ENCAPSULATED_FOR_GOOD, calls_helper, object_encapsulates_for_good};

crate::bpf_skeleton!("driver_xdp");
/// The drivers' configuration and per-CPU state, from their BTF (driver.h).
pub(crate) use skel::types::{bench_driver_state as DriverState, rodata as Rodata};
crate::impl_pod!(DriverState, Rodata);

/// Said of a tc case whose skb state the loop puts back with helpers.
pub const HELPER_RESETS: &str = "the program changes the skb's protocol, packet type or flow hash: the loop puts them back with a helper call after every iteration that changed them (a test run starts each skb without a hash), inside the timed region; the empty loop needs none";

/// Bytes the driver writes back per iteration at most.
pub const MAX_RESTORE: u32 = size_of::<skel::types::bench_variant>() as u32;

/// Why a program is timed per call rather than in a batch loop: the
/// reason, said in every output, and the verifier's last lines where the
/// verifier refused the loop around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerCallBecause {
    pub reason: String,
    pub verifier_tail: Option<String>,
}

impl PerCallBecause {
    pub fn new(reason: impl Into<String>) -> PerCallBecause {
        PerCallBecause { reason: reason.into(), verifier_tail: None }
    }

    /// The reason an error gives to time per call: a verifier's refusal
    /// ([`Refusal`]) as its reason, the contexts around it before, its last
    /// lines kept apart; any other error on one line.
    pub fn of_error(e: &anyhow::Error) -> PerCallBecause {
        let mut said = Vec::new();
        for cause in e.chain() {
            if let Some(r) = cause.downcast_ref::<Refusal>() {
                said.push(format!("{} ({})", r.reason, r.errno));
                return PerCallBecause {
                    reason: said.join(": "),
                    verifier_tail: Some(r.log_tail.clone()).filter(|t| !t.trim().is_empty()),
                };
            }
            said.push(cause.to_string());
        }
        let text = crate::record::error_line(e);
        PerCallBecause::new(text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" "))
    }

    /// The same, its reason put after `before` ("it makes tail calls, and ").
    pub fn after(self, before: &str) -> PerCallBecause {
        PerCallBecause { reason: format!("{before}{}", self.reason), ..self }
    }
}

/// A way to run a prepared program in timed batches.
pub trait BatchTimer {
    /// One timed batch of `iters` iterations of the body (`body`) or of
    /// the same loop around an empty program.
    fn run_batch(&mut self, body: bool, iters: u32) -> Result<BatchTiming>;
    /// The most iterations a batch runs, where the timer caps them.
    fn batch_cap(&self) -> Option<u32>;
    /// What a body batch of `iters` executes beyond the empty loop's,
    /// where the batches run in the userspace runtime.
    fn count_instructions(&mut self, _iters: u32, _profile: Profile) -> Result<Option<InstructionCount>> {
        Ok(None)
    }
}

/// A validated program ready to be timed: its timer, the program as loaded
/// (its tag and verifier figures are the record's) and what its overhead
/// is measured with.
pub struct Timed<'a> {
    pub timer: Box<dyn BatchTimer + 'a>,
    pub program: BorrowedFd<'a>,
    /// The verifier's figures, where the client kept its log.
    pub stats: Option<VerifierStats>,
    pub overhead: OverheadKey,
}

impl PreparedScenario for Timed<'_> {
    fn run_batch(&mut self, variant: Variant, iters: u32) -> Result<BatchTiming> {
        self.timer.run_batch(variant == Variant::Body, iters)
    }

    fn batch_cap(&self) -> Option<u32> {
        self.timer.batch_cap()
    }

    fn overhead_key(&self) -> OverheadKey {
        self.overhead.clone()
    }

    fn program(&self) -> Option<BorrowedFd<'_>> {
        Some(self.program)
    }

    fn verifier_stats(&self) -> Option<VerifierStats> {
        self.stats.clone()
    }

    fn count_instructions(&mut self, iters: u32, profile: Profile) -> Result<Option<InstructionCount>> {
        self.timer.count_instructions(iters, profile)
    }
}

/// How two outputs of a program differ, if they do, outside what `mask`
/// leaves out.
pub fn outputs_differ(kind: ProgKind, mask: &Mask, want: &RunOutput, got: &RunOutput) -> Option<String> {
    if want.retval != got.retval {
        return Some(format!("verdict {}, expected {}", kind.verdict_name(got.retval), kind.verdict_name(want.retval)));
    }
    if kind.outputs_flow_keys() {
        return crate::kernel::btf_value::struct_differs("bpf_flow_keys", &want.packet, &got.packet)
            .map(|d| format!("flow keys differ: {d}"));
    }
    if mask.is_empty() {
        return diff_packets(&want.packet, &got.packet).map(|d| format!("output packet differs: {d}"));
    }
    let (want, got) = mask.blank(&want.packet, &got.packet);
    diff_packets(&want, &got).map(|d| format!("output packet differs (outside {mask}): {d}"))
}

/// The cure for outputs that differ only in fields a clock or a random
/// draw fills (after `mask`): the `--ignore` flags that accept them.
pub fn ignore_hint(mask: &Mask, want: &RunOutput, got: &RunOutput) -> Option<String> {
    if want.retval != got.retval {
        return None;
    }
    let (want, got) = mask.blank(&want.packet, &got.packet);
    let keys = crate::packet::mask::drawn_fields(&want, &got)?;
    let flags: Vec<String> = keys.iter().map(|k| format!("--ignore {k}")).collect();
    Some(format!(
        "they differ only in fields a clock or a random draw fills: {} accepts them (ignore = [{}] in a spec's case)",
        flags.join(" "),
        keys.iter().map(|k| format!("\"{k}\"")).collect::<Vec<_>>().join(", ")
    ))
}

/// The program the per-call overhead is measured with: it returns at once.
pub fn empty_program(kind: ProgKind, attach: AttachType, flags: u32) -> Result<OwnedFd> {
    constant_program(kind, "bench_empty", kind.pass_verdict(), attach, flags)
        .context("loading the empty program of per-call timing")
}

/// Writes the first `restore` bytes of each of a case's packets into a
/// driver's `bench_variants` (sized to the bytes written back).
fn write_variants(map: &MapHandle, variants: &[Vec<u8>], restore: u32) -> Result<()> {
    let n = restore as usize;
    for (i, v) in variants.iter().enumerate() {
        let mut value = vec![0u8; map.value_size() as usize];
        value[..n].copy_from_slice(&v[..n]);
        map.update(&(i as u32).to_ne_bytes(), &value, MapFlags::ANY).context("writing the case's packets")?;
    }
    Ok(())
}
