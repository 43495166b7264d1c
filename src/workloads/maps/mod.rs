//! Map microbenchmarks. Two suites share this code:
//! - `lpm-trie`: the kernel selftests' LPM-trie suite (noop, baseline,
//!   lookup, insert, update, delete, free) on tries without gaps;
//! - `maps`: the same operations across map types and sizes, for a matrix
//!   (map type x op) and size sweeps.
//!
//! Every (map type, op, entries) is one scenario with its own loaded
//! instance of map_ops.bpf.c. Validation checks each op's effect on the map
//! before timing; between batches the host refills or empties the map for
//! ops that consume keys, outside the timed region.

pub mod free_probe;
pub mod instance;
pub mod ops;

use anyhow::{Context, Result, bail, ensure};
use libbpf_rs::MapCore;

use crate::harness::system;
use crate::harness::timing::RestoreMode;
use crate::harness::{BatchTiming, ScenarioInfo, Validation, Variant, Workload};
use free_probe::FreeProbe;
use instance::{LoadedMapBench, MapConfig, OpState, WRITTEN_BYTE, create_bare_map, fill_map};
pub use ops::{KeyLayout, MapKind, MapOp};

/// The program ignores the packet; XDP test runs need at least an Ethernet header.
const PACKET: [u8; 64] = [0; 64];
/// Keys a validation batch covers at most (all of them up to this size).
const MAX_VALIDATION_KEYS: u32 = 1 << 20;
/// Bigger maps make fills and validation walks take minutes.
pub const MAX_ENTRIES: u32 = 1 << 24;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suite {
    LpmTrie,
    Maps,
}

/// What the user asked for on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapParams {
    pub maps: Vec<MapKind>,
    pub ops: Vec<MapOp>,
    /// The user named the ops (an impossible combination is then an error,
    /// not an N/A row).
    pub ops_explicit: bool,
    pub entries: Vec<u32>,
    pub prefix_len: u32,
    /// Key size of hash maps (arrays take 4 bytes, LPM tries 8).
    pub key_size: u32,
    pub value_size: u32,
    pub random: bool,
    pub producers: usize,
}

impl MapParams {
    pub fn defaults(suite: Suite) -> MapParams {
        let (maps, ops) = match suite {
            Suite::LpmTrie => (vec![MapKind::LpmTrie], MapOp::SEED_ORDER.to_vec()),
            Suite::Maps => (MapKind::ALL.to_vec(), vec![MapOp::Lookup, MapOp::Update, MapOp::Insert, MapOp::Delete]),
        };
        MapParams {
            maps,
            ops,
            ops_explicit: false,
            entries: vec![10_000],
            prefix_len: 32,
            key_size: 4,
            value_size: 8,
            random: false,
            producers: 1,
        }
    }

    fn key_layout(&self, kind: MapKind) -> KeyLayout {
        match kind {
            MapKind::LpmTrie => KeyLayout { size: 8, lpm_prefix: Some(self.prefix_len) },
            k if k.is_array() => KeyLayout { size: 4, lpm_prefix: None },
            _ => KeyLayout { size: self.key_size, lpm_prefix: None },
        }
    }

    /// Refuses combinations that cannot mean anything, in one line each.
    fn check(&self) -> Result<()> {
        ensure!(!self.maps.is_empty() && !self.ops.is_empty() && !self.entries.is_empty(), "nothing to run: no map, op or size selected");
        ensure!((1..=32).contains(&self.prefix_len), "--prefix-len must be between 1 and 32, got {}", self.prefix_len);
        ensure!(
            (4..=instance::MAX_KEY_SIZE).contains(&self.key_size),
            "--key-size must be between 4 and {} bytes, got {}",
            instance::MAX_KEY_SIZE,
            self.key_size
        );
        ensure!(
            (1..=instance::MAX_VALUE_SIZE).contains(&self.value_size),
            "--value-size must be between 1 and {} bytes, got {}",
            instance::MAX_VALUE_SIZE,
            self.value_size
        );
        ensure!(self.producers >= 1, "--producers must be at least 1");
        for &e in &self.entries {
            ensure!((1..=MAX_ENTRIES).contains(&e), "--entries must be between 1 and {MAX_ENTRIES}, got {e}");
            if self.maps.contains(&MapKind::LpmTrie) && self.prefix_len < 32 && u64::from(e) > 1u64 << self.prefix_len {
                bail!("--entries {e} does not fit in /{} prefixes (at most {}); raise --prefix-len or lower --entries", self.prefix_len, 1u64 << self.prefix_len);
            }
        }
        if self.random && self.ops_explicit {
            for op in &self.ops {
                if let Some(why) = op.refuses_random() {
                    bail!("--random cannot be used with --op {op}: {why}; use it with baseline, lookup or update");
                }
            }
        }
        Ok(())
    }
}

/// One scenario's configuration.
#[derive(Debug, Clone, Copy)]
struct Plan {
    kind: MapKind,
    op: MapOp,
    entries: u32,
}

pub struct MapBench {
    suite: Suite,
    params: MapParams,
    infos: Vec<ScenarioInfo>,
    plans: Vec<Plan>,
    /// The producers' CPUs; the first is the run's CPU.
    cpus: Vec<usize>,
    /// The instance of the scenario being validated or timed, and its plan.
    active: Option<LoadedMapBench>,
    active_plan: Option<Plan>,
    /// Runs the empty loop for every scenario's overhead baseline.
    baseline: Option<LoadedMapBench>,
    free_probe: Option<std::result::Result<FreeProbe, String>>,
    /// Test hook: shifts every key BPF uses, so lookups miss on purpose.
    pub key_offset: u32,
}

impl MapBench {
    pub fn new(suite: Suite, params: MapParams) -> Result<MapBench> {
        params.check()?;
        let mut infos = Vec::new();
        let mut plans = Vec::new();
        for &entries in &params.entries {
            for &kind in &params.maps {
                for &op in &params.ops {
                    let (name, group) = match suite {
                        Suite::LpmTrie if params.entries.len() == 1 => (op.to_string(), "lpm-trie".to_string()),
                        Suite::LpmTrie => (format!("{op}/{entries}"), format!("{entries} entries")),
                        Suite::Maps => (format!("{kind}/{op}/{entries}"), kind.to_string()),
                    };
                    infos.push(ScenarioInfo { name: name.into(), group: group.into(), description: op.description().into() });
                    plans.push(Plan { kind, op, entries });
                }
            }
        }
        Ok(MapBench {
            suite,
            params,
            infos,
            plans,
            cpus: Vec::new(),
            active: None,
            active_plan: None,
            baseline: None,
            free_probe: None,
            key_offset: 0,
        })
    }

    fn plan(&self, s: &ScenarioInfo) -> Result<Plan> {
        let i = self.infos.iter().position(|i| i.name == s.name).with_context(|| format!("unknown map scenario {}", s.name))?;
        Ok(self.plans[i])
    }

    fn config(&self, plan: Plan) -> MapConfig {
        MapConfig {
            kind: plan.kind,
            op: plan.op,
            entries: plan.entries,
            key: self.params.key_layout(plan.kind),
            value_size: self.params.value_size,
            random: self.params.random && plan.op.refuses_random().is_none(),
            key_offset: self.key_offset,
        }
    }

    /// Keys each producer owns when an op consumes keys: equal slices.
    fn slice_len(&self, plan: Plan) -> u32 {
        plan.entries / self.cpus.len() as u32
    }

    fn active(&self) -> Result<&LoadedMapBench> {
        self.active.as_ref().context("no map scenario has been validated")
    }

    /// Writes the cursors each producer starts from, and zeroes the counts.
    fn rewind(&self, plan: Plan) -> Result<()> {
        let inst = self.active()?;
        let mut states = vec![OpState::default(); inst.possible_cpus()];
        let n = self.cpus.len() as u64;
        for (p, &cpu) in self.cpus.iter().enumerate() {
            let start = if plan.op.consumes_keys() {
                u64::from(self.slice_len(plan)) * p as u64
            } else {
                // Spread the producers over the key range.
                u64::from(plan.entries) * p as u64 / n
            };
            states[cpu].cursor = start;
        }
        inst.set_states(&states)
    }

    /// Puts the map back into the state the op starts from: empty for
    /// insert, full for delete.
    fn restore_start(&self, plan: Plan) -> Result<()> {
        let inst = self.active()?;
        let used = self.slice_len(plan) * self.cpus.len() as u32;
        if plan.op.starts_empty() {
            inst.empty(0, used)?;
        } else {
            inst.fill(0, used)?;
        }
        self.rewind(plan)
    }

    fn producer_states(&self) -> Result<Vec<OpState>> {
        let all = self.active()?.states()?;
        Ok(self.cpus.iter().map(|&c| all[c]).collect())
    }

    /// One untimed-setup, timed-run batch of `iters` on the body program,
    /// over all producers.
    fn run_body(&mut self, iters: u32) -> Result<BatchTiming> {
        let plan = self.active_plan.context("no map scenario has been validated")?;
        let before = self.producer_states()?;
        let mut failures_before: u64 = before.iter().map(|s| s.failures).sum();
        let mut iters = iters;
        if plan.op.consumes_keys() {
            let slice = self.slice_len(plan);
            // Producer 0's slice starts at key 0, so its cursor is its progress.
            let mut remaining = slice.saturating_sub(before[0].cursor as u32);
            if remaining == 0 || (plan.op == MapOp::Drain && remaining != slice) {
                self.restore_start(plan)?; // also zeroes the counts
                remaining = slice;
                failures_before = 0;
            }
            iters = if plan.op == MapOp::Drain { slice } else { iters.min(remaining) };
        }
        let cpus = self.cpus.clone();
        let inst = self.active.as_mut().context("no map scenario has been validated")?;
        let timings = if cpus.len() == 1 {
            vec![inst.body.run_batch(&PACKET, iters, RestoreMode::None, cpus[0])?.0]
        } else {
            inst.body.run_batch_parallel(&PACKET, iters, &cpus)?
        };
        let failures: u64 = self.producer_states()?.iter().map(|s| s.failures).sum::<u64>() - failures_before;
        if failures > 0 {
            bail!("{failures} {} operations failed while timing: the map did not hold the keys it should", plan.op);
        }
        Ok(combine(&timings))
    }
}

/// Producers' batches as one: per-producer mean time and iterations, so
/// ns/op is the latency one producer sees.
fn combine(timings: &[BatchTiming]) -> BatchTiming {
    let n = timings.len().max(1) as u64;
    BatchTiming {
        elapsed_ns: timings.iter().map(|t| t.elapsed_ns).sum::<u64>() / n,
        iters: timings.iter().map(|t| t.iters).sum::<u64>() / n,
    }
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

impl MapBench {
    /// Runs `n` operations on this CPU, in as many batches as the kernel's
    /// may_goto time limit (about 250 ms per invocation) needs, and returns
    /// the change in (ops, failures).
    fn validation_batch(&mut self, n: u32) -> Result<(u64, u64)> {
        let cpu = self.cpus[0];
        let inst = self.active.as_mut().context("no instance")?;
        let before = inst.states()?[cpu];
        let mut done = 0u64;
        while done < u64::from(n) {
            let (t, _) = inst.body.run_batch(&PACKET, n - done as u32, RestoreMode::None, cpu)?;
            ensure!(t.iters > 0, "a validation batch ran no iteration");
            done += t.iters;
        }
        let after = inst.states()?[cpu];
        Ok((after.ops - before.ops, after.failures - before.failures))
    }

    fn validate_free(&mut self, plan: Plan) -> Result<Validation> {
        let config = self.config(plan);
        let map = create_bare_map(&config)?;
        fill_map(&map, &config, system::possible_cpus()?, 0, plan.entries)?;
        let count = map.keys().count();
        ensure!(count == plan.entries as usize, "the filled {} holds {count} of {} keys", plan.kind, plan.entries);
        let probe = self.free_probe.as_mut().and_then(|p| p.as_mut().ok()).context("the free probe is not attached")?;
        let took = probe.time_free(map)?;
        Ok(Validation {
            verdict: "freed".into(),
            checks: vec![
                format!("filled map holds all {} keys", plan.entries),
                format!("fexit saw the map freed ({:.3} ms)", took.as_secs_f64() * 1e3),
            ],
            notes: Vec::new(),
        })
    }

    fn validate_op(&mut self, plan: Plan) -> Result<Validation> {
        self.active = None;
        self.active = Some(LoadedMapBench::load(self.config(plan))?);
        self.active_plan = Some(plan);
        let e = plan.entries;
        let n = e.min(MAX_VALIDATION_KEYS);
        let random = self.config(plan).random;
        let kind = plan.kind;
        let mut c = Checks(Vec::new());
        let count = |b: &MapBench| -> Result<usize> { Ok(b.active()?.count()) };
        let written = |b: &MapBench, idx: u32| -> Result<bool> {
            let v = b.active()?.value(idx, b.cpus[0])?;
            Ok(v.is_some_and(|v| v.iter().all(|&x| x == WRITTEN_BYTE)))
        };
        if matches!(plan.op, MapOp::Lookup | MapOp::Update | MapOp::Delete | MapOp::Drain) {
            self.active()?.fill(0, e)?;
            let have = count(self)?;
            c.expect(have == e as usize, format!("filled from userspace: {have} of {e} keys present"))?;
        }
        self.rewind(plan)?;
        let (ops, failures) = self.validation_batch(n)?;
        c.expect(ops == u64::from(n), format!("{} ran {ops} of {n} operations", plan.op))?;
        let what = match plan.op {
            MapOp::Lookup => "lookups missed",
            MapOp::Insert => "inserts failed",
            MapOp::Update => "updates failed",
            MapOp::Delete | MapOp::Drain => "deletes failed",
            _ => "operations failed",
        };
        c.expect(failures == 0, format!("{what}: {failures} of {n}"))?;
        let cursor = self.producer_states()?[0].cursor;
        match plan.op {
            MapOp::Noop | MapOp::Baseline | MapOp::Lookup | MapOp::Update if !random => {
                let want = u64::from(n % e);
                c.expect(cursor == want, format!("key sequence wrapped over [0, {e}): next key {cursor}, expected {want}"))?;
            }
            _ => {}
        }
        match plan.op {
            MapOp::Insert => {
                let have = count(self)?;
                c.expect(have == n as usize, format!("map holds {have} of the {n} inserted keys"))?;
                c.expect(written(self, 0)? && written(self, n - 1)?, format!("keys 0 and {} hold the inserted value", n - 1))?;
            }
            MapOp::Update => {
                let have = count(self)?;
                c.expect(have == e as usize, format!("map still holds {have} of {e} keys"))?;
                if !random {
                    c.expect(written(self, 0)? && written(self, n - 1)?, format!("keys 0 and {} hold the new value", n - 1))?;
                }
            }
            MapOp::Delete | MapOp::Drain => {
                let have = count(self)?;
                let want = (e - n) as usize;
                c.expect(have == want, format!("map holds {have} keys after deleting {n} of {e} (want {want})"))?;
                c.expect(!self.active()?.contains(0)?, "key 0 is gone".into())?;
            }
            MapOp::Lookup => {
                c.expect(!self.active()?.contains(e)?, format!("key {e}, outside the range, is absent"))?;
            }
            _ => {}
        }
        if plan.op.consumes_keys() {
            let p = self.cpus.len() as u32;
            ensure!(
                e % p == 0,
                "{} with {p} producers needs --entries divisible by {p} (each producer owns an equal slice of keys)",
                plan.op
            );
            self.restore_start(plan)?;
            if plan.op.starts_empty() {
                c.expect(count(self)? == 0, "map emptied again for timing".into())?;
            } else {
                c.expect(count(self)? == e as usize, "map refilled for timing".into())?;
            }
        } else {
            self.rewind(plan)?;
        }
        let mut notes = vec![format!("{kind}: {e} entries, key {} B, value {} B", self.params.key_layout(kind).size, self.params.value_size)];
        if kind == MapKind::LruHash {
            let cap = instance::capacity(kind, e, self.active()?.possible_cpus());
            notes.push(format!("max_entries {cap}: headroom for the LRU's per-CPU free lists, so no key is evicted"));
        }
        if random {
            notes.push("keys: bpf_get_prandom_u32() % entries".into());
        }
        if self.cpus.len() > 1 {
            notes.push(format!("producers on CPUs {:?}", self.cpus));
        }
        Ok(Validation { verdict: "ok".into(), checks: c.0, notes })
    }
}

impl Workload for MapBench {
    fn name(&self) -> &'static str {
        match self.suite {
            Suite::LpmTrie => "lpm-trie",
            Suite::Maps => "maps",
        }
    }

    fn scenarios(&self) -> &[ScenarioInfo] {
        &self.infos
    }

    fn setup(&mut self, cpu: usize) -> Result<()> {
        let allowed = system::allowed_cpus()?;
        let want = self.params.producers;
        let mut cpus = vec![cpu];
        cpus.extend(allowed.iter().copied().filter(|&c| c != cpu));
        if cpus.len() < want {
            bail!("--producers {want} needs {want} CPUs, but this process may use only {} ({allowed:?})", cpus.len());
        }
        cpus.truncate(want);
        self.cpus = cpus;
        let config = MapConfig {
            kind: MapKind::Array,
            op: MapOp::Noop,
            entries: 1,
            key: KeyLayout { size: 4, lpm_prefix: None },
            value_size: 8,
            random: false,
            key_offset: 0,
        };
        self.baseline = Some(LoadedMapBench::load(config)?);
        Ok(())
    }

    fn unavailable(&mut self, s: &ScenarioInfo) -> Option<String> {
        let plan = self.plan(s).ok()?;
        if let Some(why) = plan.kind.refuses(plan.op) {
            return Some(why.into());
        }
        if self.params.random
            && let Some(why) = plan.op.refuses_random()
        {
            return Some(format!("--random: {why}"));
        }
        if plan.op == MapOp::Free {
            if self.cpus.len() > 1 {
                return Some("maps are freed one at a time; --producers does not apply".into());
            }
            let probe = self.free_probe.get_or_insert_with(FreeProbe::attach);
            if let Err(why) = probe {
                return Some(format!("{why}; 'drain' measures deleting every key from BPF instead"));
            }
        }
        None
    }

    fn validate(&mut self, s: &ScenarioInfo) -> Result<Validation> {
        let plan = self.plan(s)?;
        if plan.op == MapOp::Free {
            self.active = None;
            self.active_plan = Some(plan);
            return self.validate_free(plan);
        }
        self.validate_op(plan)
    }

    fn run_batch(&mut self, variant: Variant, iters: u32) -> Result<BatchTiming> {
        let plan = self.active_plan.context("no map scenario has been validated")?;
        match variant {
            Variant::Baseline => {
                let cpu = self.cpus[0];
                let b = self.baseline.as_mut().context("setup() was not called")?;
                Ok(b.empty.run_batch(&PACKET, iters, RestoreMode::None, cpu)?.0)
            }
            Variant::Body if plan.op == MapOp::Free => {
                let config = self.config(plan);
                let map = create_bare_map(&config)?;
                fill_map(&map, &config, system::possible_cpus()?, 0, plan.entries)?;
                let probe = self.free_probe.as_mut().and_then(|p| p.as_mut().ok()).context("the free probe is not attached")?;
                let took = probe.time_free(map)?;
                Ok(BatchTiming { elapsed_ns: took.as_nanos() as u64, iters: 1 })
            }
            Variant::Body => self.run_body(iters),
        }
    }

    fn body_program(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.active.as_ref().map(|a| a.body.fd())
    }

    fn baseline_key(&self, _s: &ScenarioInfo) -> String {
        // Every scenario runs the same empty loop.
        "map-ops empty loop".into()
    }

    fn params(&self, s: &ScenarioInfo) -> Vec<(String, String)> {
        let Ok(plan) = self.plan(s) else { return Vec::new() };
        let key = self.params.key_layout(plan.kind);
        let mut out = vec![
            ("map".to_string(), plan.kind.to_string()),
            ("op".to_string(), plan.op.to_string()),
            ("entries".to_string(), plan.entries.to_string()),
            ("key_size".to_string(), key.size.to_string()),
            ("value_size".to_string(), self.params.value_size.to_string()),
            ("random".to_string(), self.config(plan).random.to_string()),
            ("producers".to_string(), self.params.producers.to_string()),
        ];
        if let Some(p) = key.lpm_prefix {
            out.push(("prefix_len".to_string(), p.to_string()));
        }
        out
    }
}
