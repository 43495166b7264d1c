//! A map operation timed in BPF (noop, baseline, lookup, insert, update,
//! delete, drain): its own instance of map_ops.bpf.c, validated by the
//! operation's effect on the map, then timed. Between batches the host
//! refills or empties the map for operations that consume keys, outside the
//! timed region.

use anyhow::{Result, bail, ensure};

use super::instance::{self, LoadedMapBench, MapConfig, OpState, WRITTEN_BYTE};
use super::options::MapParams;
use super::{MapKind, MapOp, PACKET};
use crate::harness::timing::RestoreMode;
use crate::harness::{BatchTiming, PreparedScenario, Validation, Variant};
use crate::kernel::skeleton::ObjectSource;
use crate::record::{InstructionCount, Runtime, Timing};

/// Keys a validation batch covers at most (all of them up to this size).
const MAX_VALIDATION_KEYS: u32 = 1 << 20;

/// A validated map operation.
pub struct OpScenario<'a> {
    inst: LoadedMapBench,
    /// The producers' CPUs; the first is the run's CPU.
    cpus: &'a [usize],
    empty_loop: &'a mut LoadedMapBench,
}

/// Checks and their wording, collected while validating.
struct Checks(Vec<String>);

impl Checks {
    fn expect(&mut self, ok: bool, what: String) -> Result<()> {
        ensure!(ok, "{what}");
        self.0.push(what);
        Ok(())
    }
}

/// Loads the operation's instance and checks, over one batch of every key
/// (up to 1M), that it does what it should.
pub fn validate<'a>(
    config: MapConfig,
    source: &ObjectSource,
    params: &MapParams,
    cpus: &'a [usize],
    empty_loop: &'a mut LoadedMapBench,
    runtime: Runtime,
) -> Result<(Validation, OpScenario<'a>)> {
    let mut s = OpScenario {
        inst: LoadedMapBench::load(config, source, empty_loop.construct, runtime, cpus[0])?,
        cpus,
        empty_loop,
    };
    let (op, kind, e) = (config.op, config.kind, config.entries);
    let n = e.min(MAX_VALIDATION_KEYS);
    let mut c = Checks(Vec::new());
    let written = |s: &OpScenario<'_>, idx: u32| -> Result<bool> {
        let v = s.inst.value(idx, s.cpus[0])?;
        Ok(v.is_some_and(|v| v.iter().all(|&x| x == WRITTEN_BYTE)))
    };
    if matches!(op, MapOp::Lookup | MapOp::Update | MapOp::Delete | MapOp::Drain) {
        s.inst.fill(0, e)?;
        let have = s.inst.count();
        c.expect(have == e as usize, format!("filled from userspace: {have} of {e} keys present"))?;
    }
    s.rewind()?;
    let (ops, failures) = s.validation_batch(n)?;
    c.expect(ops == u64::from(n), format!("{op} ran {ops} of {n} operations"))?;
    let what = match op {
        MapOp::Lookup => "lookups missed",
        MapOp::Insert => "inserts failed",
        MapOp::Update => "updates failed",
        MapOp::Delete | MapOp::Drain => "deletes failed",
        _ => "operations failed",
    };
    c.expect(failures == 0, format!("{what}: {failures} of {n}"))?;
    let cursor = s.producer_states()?[0].cursor;
    match op {
        MapOp::Noop | MapOp::Baseline | MapOp::Lookup | MapOp::Update if !config.random => {
            let want = u64::from(n % e);
            c.expect(
                cursor == want,
                format!("key sequence wrapped over [0, {e}): next key {cursor}, expected {want}"),
            )?;
        }
        _ => {}
    }
    match op {
        MapOp::Insert => {
            let have = s.inst.count();
            c.expect(have == n as usize, format!("map holds {have} of the {n} inserted keys"))?;
            c.expect(written(&s, 0)? && written(&s, n - 1)?, format!("keys 0 and {} hold the inserted value", n - 1))?;
        }
        MapOp::Update => {
            let have = s.inst.count();
            c.expect(have == e as usize, format!("map still holds {have} of {e} keys"))?;
            if !config.random {
                c.expect(written(&s, 0)? && written(&s, n - 1)?, format!("keys 0 and {} hold the new value", n - 1))?;
            }
        }
        MapOp::Delete | MapOp::Drain => {
            let have = s.inst.count();
            let want = (e - n) as usize;
            c.expect(have == want, format!("map holds {have} keys after deleting {n} of {e} (want {want})"))?;
            c.expect(!s.inst.contains(0)?, "key 0 is gone".into())?;
        }
        MapOp::Lookup => {
            c.expect(!s.inst.contains(e)?, format!("key {e}, outside the range, is absent"))?;
        }
        _ => {}
    }
    if op.consumes_keys() {
        let p = s.cpus.len() as u32;
        ensure!(
            e % p == 0,
            "{op} with {p} producers needs --entries divisible by {p} (each producer owns an equal slice of keys)"
        );
        s.restore_start()?;
        if op.starts_empty() {
            c.expect(s.inst.count() == 0, "map emptied again for timing".into())?;
        } else {
            c.expect(s.inst.count() == e as usize, "map refilled for timing".into())?;
        }
    } else {
        s.rewind()?;
    }
    let mut notes = vec![format!("{kind}: {e} entries, key {} B, value {} B", config.key.size, params.value_size)];
    if kind.is_lru() {
        let cap = instance::capacity(kind, e, s.inst.possible_cpus());
        notes.push(format!("max_entries {cap}: headroom for the LRU's per-CPU free lists, so no key is evicted"));
    }
    if kind == MapKind::LpmTrie {
        notes.push(format!("max_entries {}: one free slot, without which older kernels refuse updates", e + 1));
    }
    if config.random {
        notes.push("keys: bpf_get_prandom_u32() % entries".into());
    }
    if s.cpus.len() > 1 {
        notes.push(format!("producers on CPUs {:?}", s.cpus));
    }
    if s.inst.user().is_some() {
        notes.push("runtime: userspace, map_ops as the kernel verified it, compiled by bpfbench's JIT; the map is the runtime's own".into());
    }
    let timing = Timing::in_bpf(s.inst.construct);
    Ok((Validation { verdict: "ok".into(), checks: c.0, notes, timing, ..Default::default() }, s))
}

impl OpScenario<'_> {
    fn config(&self) -> &MapConfig {
        &self.inst.config
    }

    /// Keys each producer owns when the op consumes keys: equal slices.
    fn slice_len(&self) -> u32 {
        self.config().entries / self.cpus.len() as u32
    }

    /// Writes the cursors each producer starts from, and zeroes the counts.
    fn rewind(&self) -> Result<()> {
        let mut states = vec![OpState::default(); self.inst.possible_cpus()];
        let n = self.cpus.len() as u64;
        let entries = u64::from(self.config().entries);
        for (p, &cpu) in self.cpus.iter().enumerate() {
            states[cpu].cursor = if self.config().op.consumes_keys() {
                u64::from(self.slice_len()) * p as u64
            } else {
                // Spread the producers over the key range.
                entries * p as u64 / n
            };
        }
        self.inst.set_states(&states)
    }

    /// Puts the map back into the state the op starts from: empty for
    /// insert, full for delete.
    fn restore_start(&self) -> Result<()> {
        let used = self.slice_len() * self.cpus.len() as u32;
        if self.config().op.starts_empty() {
            self.inst.empty(0, used)?;
        } else {
            self.inst.fill(0, used)?;
        }
        self.rewind()
    }

    fn producer_states(&self) -> Result<Vec<OpState>> {
        let all = self.inst.states()?;
        Ok(self.cpus.iter().map(|&c| all[c]).collect())
    }

    /// Runs `n` operations on this CPU, in as many batches as the kernel's
    /// may_goto time limit (about 250 ms per invocation) needs, and returns
    /// the change in (ops, failures).
    fn validation_batch(&mut self, n: u32) -> Result<(u64, u64)> {
        let cpu = self.cpus[0];
        let before = self.inst.states()?[cpu];
        let mut done = 0u64;
        while done < u64::from(n) {
            let (t, _) = self.inst.body.run_batch(&PACKET, n - done as u32, RestoreMode::BENCH_RESTORE_NONE, cpu)?;
            ensure!(t.iters > 0, "a validation batch ran no iteration");
            done += t.iters;
        }
        let after = self.inst.states()?[cpu];
        Ok((after.ops - before.ops, after.failures - before.failures))
    }

    /// One batch of `iters` on every producer; a batch never crosses the
    /// point where an op that consumes keys must be refilled or emptied.
    fn run_body(&mut self, iters: u32) -> Result<BatchTiming> {
        let op = self.config().op;
        let before = self.producer_states()?;
        let mut failures_before: u64 = before.iter().map(|s| s.failures).sum();
        let mut iters = iters;
        if op.consumes_keys() {
            let slice = self.slice_len();
            // Producer 0's slice starts at key 0, so its cursor is its progress.
            let mut remaining = slice.saturating_sub(before[0].cursor as u32);
            if remaining == 0 || (op == MapOp::Drain && remaining != slice) {
                self.restore_start()?; // also zeroes the counts
                remaining = slice;
                failures_before = 0;
            }
            iters = if op == MapOp::Drain { slice } else { iters.min(remaining) };
        }
        let timings = match self.cpus {
            [cpu] => vec![self.inst.body.run_batch(&PACKET, iters, RestoreMode::BENCH_RESTORE_NONE, *cpu)?.0],
            cpus => self.inst.body.run_batch_parallel(&PACKET, iters, cpus)?,
        };
        let failures: u64 = self.producer_states()?.iter().map(|s| s.failures).sum::<u64>() - failures_before;
        if failures > 0 {
            bail!("{failures} {op} operations failed while timing: the map did not hold the keys it should");
        }
        Ok(combine(&timings))
    }
}

/// Producers' batches as one: per-producer mean time and iterations, so
/// ns/op is the latency one producer sees.
fn combine(timings: &[BatchTiming]) -> BatchTiming {
    let n = timings.len().max(1) as u64;
    BatchTiming {
        started_ns: timings.iter().map(|t| t.started_ns).min().unwrap_or(0),
        elapsed_ns: timings.iter().map(|t| t.elapsed_ns).sum::<u64>() / n,
        iters: timings.iter().map(|t| t.iters).sum::<u64>() / n,
    }
}

impl PreparedScenario for OpScenario<'_> {
    fn run_batch(&mut self, variant: Variant, iters: u32) -> Result<BatchTiming> {
        match variant {
            Variant::Body => self.run_body(iters),
            Variant::Overhead => {
                Ok(self.empty_loop.overhead.run_batch(&PACKET, iters, RestoreMode::BENCH_RESTORE_NONE, self.cpus[0])?.0)
            }
        }
    }

    fn program(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        Some(self.inst.body.fd())
    }

    /// Every map scenario runs the same empty loop (of one construct per run).
    fn overhead_key(&self) -> crate::harness::OverheadKey {
        crate::harness::OverheadKey::Named("map-ops empty loop".into())
    }

    fn batch_cap(&self) -> Option<u32> {
        crate::harness::timing::batch_cap(self.inst.construct)
    }

    /// Counted against this instance's own empty loop: the shared one
    /// runs in another runtime, whose counts this one does not see.
    fn count_instructions(&mut self, iters: u32, profile: crate::harness::Profile) -> Result<Option<InstructionCount>> {
        let Some(rt) = self.inst.user().cloned() else { return Ok(None) };
        let cpu = self.cpus[0];
        let op = self.config().op;
        ensure!(
            op != MapOp::Drain,
            "drain deletes a whole map per batch, which a count of N against 2N iterations cannot split; count delete (the same operation, per key)"
        );
        let mut iters = iters;
        if op.consumes_keys() {
            // Both batches (N, then 2N) must fit in what is left of the keys,
            // without a refill between: else use up the rest and start afresh.
            iters = iters.min(self.slice_len() / 3).max(1);
            let remaining = self.slice_len().saturating_sub(self.producer_states()?[0].cursor as u32);
            if remaining < 3 * iters {
                if remaining > 0 {
                    self.run_body(remaining)?;
                }
                self.restore_start()?;
            }
        }
        // Sampling runs batches back to back: an operation that uses up keys cannot.
        let profile = match profile {
            crate::harness::Profile::LinesAndTime if op.consumes_keys() => crate::harness::Profile::Lines,
            p => p,
        };
        crate::harness::count_instructions(&rt, iters, profile, |variant, n| match variant {
            Variant::Body => self.run_body(n),
            Variant::Overhead => {
                self.inst.overhead.run_batch(&PACKET, n, RestoreMode::BENCH_RESTORE_NONE, cpu).map(|(t, _)| t)
            }
        })
        .map(Some)
    }
}
