//! A case timed per call: one BPF_PROG_TEST_RUN per packet, the kernel's
//! own timing of each run (around the program alone, clock reads included)
//! summed over a batch, or the host's around the system call for the types
//! whose test runs report no time (raw tracepoint, syscall). The fallback when the program cannot run inside the
//! batch loop; labelled in every output, never mixed with in-BPF figures.

use std::os::fd::BorrowedFd;

use anyhow::{Result, bail};

use super::{BatchTimer, outputs_differ};
use crate::harness::BatchTiming;
use crate::kernel::prog_type::ProgKind;
use crate::kernel::test_run::{RunOutput, TestInput, run_input};
use crate::packet::mask::Mask;

/// Calls per batch at most: a call costs microseconds of syscall, so a batch
/// of this many stays near the runner's few milliseconds of wall time.
pub const MAX_CALLS_PER_BATCH: u32 = 2_000;

pub struct PerCall<'a> {
    pub prog: BorrowedFd<'a>,
    /// A program that returns at once: the test run's own cost.
    pub empty: BorrowedFd<'a>,
    /// What each test run is given, in turn.
    pub inputs: Vec<TestInput>,
    pub references: Vec<RunOutput>,
    /// What comparisons with the references leave out.
    pub mask: Mask,
    pub kind: ProgKind,
    /// The input the next call takes.
    pub next: usize,
}

impl BatchTimer for PerCall<'_> {
    fn batch_cap(&self) -> Option<u32> {
        None
    }

    /// `iters` runs (at most MAX_CALLS_PER_BATCH), cycling the packets;
    /// each verdict and the last packet are checked.
    fn run_batch(&mut self, body: bool, iters: u32) -> Result<BatchTiming> {
        let n = iters.min(MAX_CALLS_PER_BATCH);
        let started_ns = crate::system::monotonic_ns();
        let mut elapsed = 0u64;
        for call in 0..n {
            let i = self.next % self.inputs.len();
            self.next += 1;
            let t0 = crate::system::monotonic_ns();
            let out = run_input(if body { self.prog } else { self.empty }, &self.inputs[i])?;
            // The kernel times the program, except where its type's test run reports no time.
            elapsed += match self.kind.test_run_times() {
                true => u64::from(out.duration_ns),
                false => crate::system::monotonic_ns() - t0,
            };
            if body {
                let want = &self.references[i];
                let last = call + 1 == n;
                if (out.retval != want.retval || last)
                    && let Some(diff) = outputs_differ(self.kind, &self.mask, want, &out)
                {
                    bail!("packet {i} got another output than in validation: {diff}");
                }
            }
        }
        Ok(BatchTiming { started_ns, elapsed_ns: elapsed, iters: n.into() })
    }
}
