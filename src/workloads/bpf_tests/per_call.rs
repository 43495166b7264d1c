//! A test's entry timed per call. From its fresh state: before every call the maps
//! are put back as the test's setup left them, so every call is the
//! flow's first packet (conntrack and NAT entries created, a backend
//! chosen), the path the test's `CHECK` asserts. One BPF_PROG_TEST_RUN per
//! call, timed by the kernel around the program; the restore is outside
//! the timed region. Every verdict must be validation's, and the last
//! call's output must pass the test's own `CHECK`: a first packet's bytes
//! may differ from call to call (a SNAT port or a backend chosen at
//! random), which the test allows and a byte comparison would not.
//!
//! The steady state falls back to this timer, with the state kept, where
//! the chain loop cannot hold the entry (its later packets keep changing
//! path, or change the packet's length at the front): each call then must
//! give the steady reference's verdict.

use std::os::fd::BorrowedFd;

use anyhow::{Result, bail};

use super::framework::{Entry, ReplayedFile, Test};
use crate::engine::BatchTimer;
use crate::harness::BatchTiming;
use crate::kernel::map_snapshot::{Dirty, MapSnapshot, restore_all};
use crate::kernel::prog_type::ProgKind;
use crate::kernel::test_run::{RunOutput, run_in};

/// Calls per batch at most: each call first writes the maps back (a
/// system call per entry), so a batch of this many stays within tens of
/// milliseconds.
pub const MAX_CALLS: u32 = 200;

/// From which state each call runs.
pub enum CallState {
    /// The maps as the setup left them, put back before every call.
    Fresh { state: Vec<MapSnapshot>, dirty: Dirty },
    /// The state the calls before left.
    Kept,
}

pub struct CallTimer<'a> {
    pub collection: &'a dyn ReplayedFile,
    pub test: &'a Test,
    pub input: Entry,
    pub entry: BorrowedFd<'a>,
    /// A program that returns at once: the test run's own cost.
    pub empty: BorrowedFd<'a>,
    pub state: CallState,
    /// The entry's output from that state.
    pub reference: RunOutput,
    pub kind: ProgKind,
}

impl BatchTimer for CallTimer<'_> {
    fn batch_cap(&self) -> Option<u32> {
        Some(MAX_CALLS)
    }

    /// `iters` calls (at most [`MAX_CALLS`]), each from its state; every verdict and the last packet are checked.
    fn run_batch(&mut self, body: bool, iters: u32) -> Result<BatchTiming> {
        let n = iters.min(MAX_CALLS);
        let started_ns = crate::system::monotonic_ns();
        let mut elapsed = 0u64;
        if body && let CallState::Fresh { state, dirty } = &self.state {
            // Every map back, then one call untimed: each timed call then
            // follows a call and the restore of what it changed alike (the
            // first after a whole restore ran ~1.2x slower, and batches of
            // 2N took 1.85x batches of N).
            restore_all(state)?;
            run_in(self.entry, &self.input.packet, self.input.ctx.as_deref())?;
            dirty.restore(state)?;
        }
        let what = match self.state {
            CallState::Fresh { .. } => "from the fresh state",
            CallState::Kept => "with the state kept",
        };
        for call in 0..n {
            let prog = match body {
                true => {
                    if call > 0
                        && let CallState::Fresh { state, dirty } = &self.state
                    {
                        dirty.restore(state)?;
                    }
                    self.entry
                }
                false => self.empty,
            };
            let out = run_in(prog, &self.input.packet, self.input.ctx.as_deref())?;
            elapsed += u64::from(out.duration_ns);
            if !body {
                continue;
            }
            if out.retval != self.reference.retval {
                bail!(
                    "{what} the entry returned {}, not {} as in validation",
                    self.kind.verdict_name(out.retval),
                    self.kind.verdict_name(self.reference.retval)
                );
            }
            if call + 1 == n
                && let CallState::Fresh { state, dirty } = &self.state
            {
                // The last call again, its output given to the test's CHECK.
                dirty.restore(state)?;
                let (_, outcome) = self.collection.run_entry_and_check(self.test, &self.input)?;
                if !outcome.passed {
                    bail!(
                        "from the fresh state the entry's output failed the test's own CHECK: {}",
                        outcome.explanation
                    );
                }
            }
        }
        Ok(BatchTiming { started_ns, elapsed_ns: elapsed, iters: n.into() })
    }
}
