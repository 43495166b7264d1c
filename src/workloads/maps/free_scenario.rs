//! `free`: the time the kernel takes to free a filled map, seen by
//! fentry/fexit on bpf_map_free_deferred. Each sample creates, fills and
//! drops one map; the kernel refuses the probe on lockdown kernels, and the
//! scenario is then unavailable.

use anyhow::{Result, ensure};

use super::PACKET;
use super::free_probe::FreeProbe;
use super::instance::{LoadedMapBench, MapConfig, create_bare_map, fill_map};
use crate::harness::timing::RestoreMode;
use crate::harness::{BatchTiming, PreparedScenario, Validation, Variant};
use crate::record::Timing;
use crate::system::cpu::possible_cpus;

pub struct FreeScenario<'a> {
    config: MapConfig,
    probe: &'a mut FreeProbe,
    empty_loop: &'a mut LoadedMapBench,
    cpu: usize,
}

/// Frees one filled map and checks the probe saw it.
pub fn validate<'a>(
    config: MapConfig,
    probe: &'a mut FreeProbe,
    empty_loop: &'a mut LoadedMapBench,
    cpu: usize,
) -> Result<(Validation, FreeScenario<'a>)> {
    let mut s = FreeScenario { config, probe, empty_loop, cpu };
    let (count, took) = s.free_one()?;
    let entries = config.entries;
    ensure!(count == entries as usize, "the filled {} holds {count} of {entries} keys", config.kind);
    let checks = vec![
        format!("filled map holds all {entries} keys"),
        format!("fexit saw the map freed ({:.3} ms)", took.elapsed_ns as f64 / 1e6),
    ];
    let timing = Timing::Traced { function: "bpf_map_free_deferred".into() };
    Ok((Validation { verdict: "freed".into(), checks, timing, ..Default::default() }, s))
}

impl FreeScenario<'_> {
    /// Creates and fills a map, frees it; returns the keys it held and the
    /// free as one batch of one operation.
    fn free_one(&mut self) -> Result<(usize, BatchTiming)> {
        let map = create_bare_map(&self.config, &super::free_probe::unique_name())?;
        fill_map(&map, &self.config, possible_cpus()?, 0, self.config.entries)?;
        let count = libbpf_rs::MapCore::keys(&map).count();
        let (started_ns, took) = self.probe.time_free(map)?;
        Ok((count, BatchTiming { started_ns, elapsed_ns: took.as_nanos() as u64, iters: 1 }))
    }
}

impl PreparedScenario for FreeScenario<'_> {
    /// A body batch is one map freed, whatever `iters` says.
    fn run_batch(&mut self, variant: Variant, iters: u32) -> Result<BatchTiming> {
        match variant {
            Variant::Body => Ok(self.free_one()?.1),
            Variant::Overhead => {
                Ok(self.empty_loop.overhead.run_batch(&PACKET, iters, RestoreMode::BENCH_RESTORE_NONE, self.cpu)?.0)
            }
        }
    }

    fn overhead_key(&self) -> crate::harness::OverheadKey {
        crate::harness::OverheadKey::Named("map-ops empty loop".into())
    }
}
