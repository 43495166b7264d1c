//! One side of `ab --sysctl`: a build of this process whose programs load
//! under one value of a kernel setting. The JIT applies settings such as
//! `net.core.bpf_jit_harden` when a program loads, so the value is set
//! before every set-up and validation, and again before each of the side's
//! batches (a workload may load a program lazily, on its first batch).
//! Setting it is a write to /proc outside the timed region; the guard puts
//! the original back when the comparison ends.

use std::os::fd::BorrowedFd;

use anyhow::Result;

use super::paired::LocalBuild;
use crate::harness::paired::Build;
use crate::harness::runner::Profile;
use crate::harness::{BatchTiming, PreparedScenario, ScenarioInfo, Validation, Variant};
use crate::record::{InstructionCount, VerifierStats};
use crate::system::sysctl::SysctlGuard;

pub struct SettingBuild<'w, 'g> {
    inner: LocalBuild<'w>,
    guard: &'g SysctlGuard,
    value: String,
}

impl<'w, 'g> SettingBuild<'w, 'g> {
    pub fn new(inner: LocalBuild<'w>, guard: &'g SysctlGuard, value: &str) -> Self {
        SettingBuild { inner, guard, value: value.to_string() }
    }
}

impl Build for SettingBuild<'_, '_> {
    fn unavailable(&mut self, s: &ScenarioInfo) -> Option<String> {
        if let Err(e) = self.guard.set(&self.value) {
            return Some(crate::record::error_line(&e));
        }
        self.inner.unavailable(s)
    }

    fn fresh(&mut self, s: &ScenarioInfo) -> Result<(Validation, Box<dyn PreparedScenario + '_>)> {
        self.guard.set(&self.value)?;
        let (validation, inner) = self.inner.fresh(s)?;
        Ok((validation, Box::new(UnderSetting { inner, guard: self.guard, value: &self.value })))
    }
}

/// A validated scenario whose batches run with the side's value set.
struct UnderSetting<'p, 'g> {
    inner: Box<dyn PreparedScenario + 'p>,
    guard: &'g SysctlGuard,
    value: &'p str,
}

impl PreparedScenario for UnderSetting<'_, '_> {
    fn run_batch(&mut self, variant: Variant, iters: u32) -> Result<BatchTiming> {
        self.guard.set(self.value)?;
        self.inner.run_batch(variant, iters)
    }

    fn batch_cap(&self) -> Option<u32> {
        self.inner.batch_cap()
    }

    fn overhead_key(&self) -> crate::harness::OverheadKey {
        self.inner.overhead_key()
    }

    fn program(&self) -> Option<BorrowedFd<'_>> {
        self.inner.program()
    }

    fn verifier_stats(&self) -> Option<VerifierStats> {
        self.inner.verifier_stats()
    }

    fn count_instructions(&mut self, iters: u32, profile: Profile) -> Result<Option<InstructionCount>> {
        self.guard.set(self.value)?;
        self.inner.count_instructions(iters, profile)
    }
}
