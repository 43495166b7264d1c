//! Map microbenchmarks. Two suites share this code:
//! - `lpm-trie`: the kernel selftests' LPM-trie suite (noop, baseline,
//!   lookup, insert, update, delete, free) on tries without gaps;
//! - `maps`: the same operations across map types and sizes, for a matrix
//!   (map type x op) and size sweeps.
//!
//! Every (map type, op, entries) is one scenario. An operation that runs in
//! BPF gets its own loaded instance of map_ops.bpf.c ([`op_scenario`]);
//! `free` times the kernel freeing a map ([`free_scenario`]).

mod free_probe;
mod free_scenario;
pub mod instance;
mod op_scenario;
pub mod ops;
pub mod options;

use anyhow::{Context, Result, bail};
use clap::Args;

use crate::harness::timing::TimingChoice;
use crate::harness::{LoadedWorkload, PreparedScenario, ScenarioInfo, Validation, Workload};
use crate::kernel::skeleton::ObjectSource;
use crate::record::{Layout, LoopConstruct, MapFacts, Runtime, ScenarioFacts, Unit};
use crate::system::cpu::allowed_cpus;
use crate::workloads::Registration;
use free_probe::FreeProbe;
use instance::{LoadedMapBench, MapConfig};
pub use ops::{KeyLayout, MapKind, MapOp};
pub use options::{MapParams, Suite};

pub const REGISTRATION: Registration = Registration {
    names: &["lpm-trie", "maps"],
    about: "map operations in BPF: the kernel selftests' LPM-trie suite, and a map type x op x size matrix",
    claims: crate::workloads::no_files,
    selected_by: None,
    options: options::MapArgs::augment_args,
    build: |name, matches| {
        let suite = if name == Suite::LpmTrie.name() { Suite::LpmTrie } else { Suite::Maps };
        Ok(Box::new(MapBench::new(suite, MapParams::from_matches(suite, matches)?)?))
    },
    with_object: Some(|name, matches, object| {
        let suite = if name == Suite::LpmTrie.name() { Suite::LpmTrie } else { Suite::Maps };
        let mut bench = MapBench::new(suite, MapParams::from_matches(suite, matches)?)?;
        bench.object = ObjectSource::File(object.to_path_buf());
        Ok(Box::new(bench))
    }),
};

/// The program ignores the packet; XDP test runs need at least an Ethernet header.
const PACKET: [u8; 64] = [0; 64];

/// One scenario's configuration.
#[derive(Debug, Clone, Copy)]
struct Plan {
    kind: MapKind,
    op: MapOp,
    entries: u32,
}

/// A map suite as configured.
pub struct MapBench {
    suite: Suite,
    params: MapParams,
    infos: Vec<ScenarioInfo>,
    plans: Vec<Plan>,
    /// The build of map_ops.bpf.c every instance loads.
    pub object: ObjectSource,
    /// Test hook: shifts every key BPF uses, so lookups miss on purpose.
    pub key_offset: u32,
    /// `--timing-mode`: the loop the batches run in, or the best there is.
    timing: TimingChoice,
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
                    let plan = Plan { kind, op, entries };
                    infos.push(ScenarioInfo {
                        name: name.into(),
                        group: group.into(),
                        description: op.description().into(),
                        facts: facts(&params, plan),
                    });
                    plans.push(plan);
                }
            }
        }
        Ok(MapBench {
            suite,
            params,
            infos,
            plans,
            object: LoadedMapBench::builtin(),
            key_offset: 0,
            timing: TimingChoice::Auto,
        })
    }

    fn plan(&self, s: &ScenarioInfo) -> Result<Plan> {
        let i = self
            .infos
            .iter()
            .position(|i| i.name == s.name)
            .with_context(|| format!("unknown map scenario {}", s.name))?;
        Ok(self.plans[i])
    }

    fn config(&self, plan: Plan) -> MapConfig {
        MapConfig {
            kind: plan.kind,
            op: plan.op,
            entries: plan.entries,
            key: self.params.key_layout(plan.kind),
            value_size: self.params.value_size,
            random: self.params.random_for(plan.op),
            key_offset: self.key_offset,
        }
    }
}

/// What a scenario's results carry about it.
fn facts(params: &MapParams, plan: Plan) -> ScenarioFacts {
    let key = params.key_layout(plan.kind);
    ScenarioFacts {
        layout: Layout::OpLines,
        producers: params.producers as u32,
        // Drain deletes a whole map per batch: report per map, not per key.
        unit: if plan.op == MapOp::Drain { Unit::Map { keys: plan.entries.into() } } else { Unit::Op },
        map: Some(MapFacts {
            map_type: plan.kind.to_string(),
            op: plan.op.to_string(),
            entries: plan.entries,
            key_size: key.size,
            value_size: params.value_size,
            prefix_len: key.lpm_prefix,
            random: params.random_for(plan.op),
        }),
    }
}

impl Workload for MapBench {
    fn name(&self) -> &str {
        self.suite.name()
    }

    fn scenarios(&self) -> &[ScenarioInfo] {
        &self.infos
    }

    fn set_timing(&mut self, choice: TimingChoice) -> Result<()> {
        if choice == TimingChoice::PerCall {
            bail!(
                "{} has no --timing-mode per-call: it times in BPF with may-goto, bpf-loop or bounded loops",
                self.name()
            );
        }
        self.timing = choice;
        Ok(())
    }

    fn setup(&self, cpu: usize) -> Result<Box<dyn LoadedWorkload + '_>> {
        self.setup_in(cpu, Runtime::Kernel)
    }

    fn setup_in(&self, cpu: usize, runtime: Runtime) -> Result<Box<dyn LoadedWorkload + '_>> {
        // The userspace runtime runs the may_goto programs whatever the kernel has.
        let construct = match runtime {
            Runtime::User => LoopConstruct::MayGoto,
            Runtime::Kernel => self.timing.loop_construct()?,
        };
        let allowed = allowed_cpus()?;
        let want = self.params.producers;
        if runtime == Runtime::User && want > 1 {
            bail!(
                "--producers {want}: the userspace runtime runs one producer; drop --producers or use --runtime kernel"
            );
        }
        let mut cpus = vec![cpu];
        cpus.extend(allowed.iter().copied().filter(|&c| c != cpu));
        if cpus.len() < want {
            bail!("--producers {want} needs {want} CPUs, but this process may use only {} ({allowed:?})", cpus.len());
        }
        cpus.truncate(want);
        let empty_loop = LoadedMapBench::load(
            MapConfig {
                kind: MapKind::Array,
                op: MapOp::Noop,
                entries: 1,
                key: KeyLayout { size: 4, lpm_prefix: None },
                value_size: 8,
                random: false,
                key_offset: 0,
            },
            &self.object,
            construct,
            runtime,
            cpu,
        )?;
        Ok(Box::new(Loaded { bench: self, cpus, empty_loop, free_probe: None, runtime }))
    }
}

/// A map suite ready to validate scenarios.
struct Loaded<'a> {
    bench: &'a MapBench,
    /// The producers' CPUs; the first is the run's CPU.
    cpus: Vec<usize>,
    /// Runs the empty loop for every scenario's overhead measurement.
    empty_loop: LoadedMapBench,
    /// Attached on first use; the error says why this kernel cannot.
    free_probe: Option<std::result::Result<FreeProbe, String>>,
    /// Where the operations run: the kernel, or the userspace runtime's JIT.
    runtime: Runtime,
}

impl LoadedWorkload for Loaded<'_> {
    fn unavailable(&mut self, s: &ScenarioInfo) -> Option<String> {
        let plan = self.bench.plan(s).ok()?;
        if let Some(why) = plan.kind.refuses(plan.op) {
            return Some(why.into());
        }
        if self.bench.params.random
            && let Some(why) = plan.op.refuses_random()
        {
            return Some(format!("--random: {why}"));
        }
        if plan.op == MapOp::Drain
            && let Some(cap) = crate::harness::timing::batch_cap(self.empty_loop.construct)
            && plan.entries > cap
        {
            return Some(format!(
                "drain deletes the whole map in one batch, and a bounded loop's batch stops at {cap} keys; 'delete' times the same operation per key"
            ));
        }
        if plan.op == MapOp::Free {
            if self.runtime == Runtime::User {
                return Some("times the kernel freeing a map; the userspace runtime has no such step ('drain' deletes every key from BPF)".into());
            }
            if self.cpus.len() > 1 {
                return Some("maps are freed one at a time; --producers does not apply".into());
            }
            if let Err(why) = self.free_probe.get_or_insert_with(FreeProbe::attach) {
                return Some(format!("{why}; 'drain' measures deleting every key from BPF instead"));
            }
        }
        None
    }

    fn validate(&mut self, s: &ScenarioInfo) -> Result<(Validation, Box<dyn PreparedScenario + '_>)> {
        let plan = self.bench.plan(s)?;
        let config = self.bench.config(plan);
        if plan.op == MapOp::Free {
            let probe = match self.free_probe.get_or_insert_with(FreeProbe::attach) {
                Ok(p) => p,
                Err(why) => bail!("{why}"),
            };
            let (v, prepared) = free_scenario::validate(config, probe, &mut self.empty_loop, self.cpus[0])?;
            return Ok((v, Box::new(prepared)));
        }
        let (v, prepared) = op_scenario::validate(
            config,
            &self.bench.object,
            &self.bench.params,
            &self.cpus,
            &mut self.empty_loop,
            self.runtime,
        )?;
        Ok((v, Box::new(prepared)))
    }
}
