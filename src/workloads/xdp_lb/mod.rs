//! The Katran-model XDP load balancer workload (`xdp-lb`).
//!
//! The BPF datapath is xdp_lb.bpf.c; [`datapath`] loads and configures it,
//! [`checks`] says what each scenario must do (verdict, byte-exact output
//! packet, counters that prove the code path), and this module ties them to
//! the harness: a validated scenario times batches of its packet.

mod addressing;
mod checks;
pub mod cross_check;
mod datapath;
mod jhash;
pub mod live;
mod maglev;
mod packets;
mod scenarios;

use std::collections::HashMap;
use std::sync::LazyLock;

use anyhow::{Context, Result, bail, ensure};
use libbpf_rs::MapHandle;

use crate::harness::timing::{BodyArgs, BodyChoice, RestoreMode, TimingChoice};
use crate::harness::{
    BatchTiming, LoadedWorkload, OverheadKey, PreparedScenario, ScenarioInfo, Validation, Variant, Workload,
};
use crate::kernel::prog_type::ProgKind;
use crate::kernel::skeleton::ObjectSource;
use crate::record::{InstructionCount, LoopConstruct, Runtime, Timing};
use crate::workloads::Registration;
use datapath::LoadedLb;
use scenarios::{Flows, LbScenario, SCENARIOS};

const XDP_PASS: u32 = 2;

pub const REGISTRATION: Registration = Registration {
    names: &["xdp-lb"],
    about: "Katran-model XDP load balancer: 24 scenarios over its code paths (the default suite)",
    claims: crate::workloads::no_files,
    selected_by: None,
    options: |cmd| <BodyArgs as clap::Args>::augment_args(cmd),
    build: |_, matches| Ok(Box::new(XdpLb { body: BodyArgs::from_matches(matches), ..Default::default() })),
    with_object: Some(|_, matches, object| {
        let body = BodyArgs::from_matches(matches);
        Ok(Box::new(XdpLb { object: Some(object.to_path_buf()), body, ..Default::default() }))
    }),
};

static INFOS: LazyLock<Vec<ScenarioInfo>> = LazyLock::new(|| SCENARIOS.iter().map(|s| s.info.clone()).collect());

/// The workload as configured: no options but the object, and test hooks.
#[derive(Debug, Default)]
pub struct XdpLb {
    /// A build of xdp_lb.bpf.c to load instead of bpfbench's own (`ab --workload xdp-lb`).
    pub object: Option<std::path::PathBuf>,
    /// Test hook: flip one byte of the expected packet to prove validation bites.
    pub corrupt_expected_byte: Option<usize>,
    /// Test hook: override the UDP LRU timeout (ns).
    pub udp_timeout_ns: Option<u64>,
    /// `--timing-mode`: the loop construct, or the best the kernel has.
    pub timing: TimingChoice,
    /// `--body`: the datapath inline in the loop, called, or inline where the kernel accepts it.
    pub body: BodyChoice,
}

impl Workload for XdpLb {
    fn name(&self) -> &str {
        "xdp-lb"
    }

    fn scenarios(&self) -> &[ScenarioInfo] {
        &INFOS
    }

    fn setup(&self, cpu: usize) -> Result<Box<dyn LoadedWorkload + '_>> {
        self.setup_in(cpu, Runtime::Kernel)
    }

    fn set_body(&mut self, choice: BodyChoice) -> Result<()> {
        self.body = choice;
        Ok(())
    }

    fn set_timing(&mut self, choice: TimingChoice) -> Result<()> {
        if choice == TimingChoice::PerCall {
            bail!("xdp-lb has no --timing-mode per-call: it times in BPF with may-goto, bpf-loop or bounded loops");
        }
        self.timing = choice;
        Ok(())
    }

    /// The kernel loads the object either way: setup fills its maps, and
    /// the userspace runtime copies them (one setup code for both).
    fn setup_in(&self, cpu: usize, runtime: Runtime) -> Result<Box<dyn LoadedWorkload + '_>> {
        let source = self.object.clone().map_or_else(LoadedLb::builtin, ObjectSource::File);
        // The userspace runtime runs the may_goto programs whatever the kernel has.
        let construct = match runtime {
            Runtime::User => LoopConstruct::MayGoto,
            Runtime::Kernel => self.timing.loop_construct()?,
        };
        let mut lb = LoadedLb::load_placed(&source, construct, self.body, runtime)?;
        if runtime == Runtime::User {
            lb.run_in_user(cpu)?;
        }
        Ok(Box::new(Loaded { lb, cpu, config: self, tables: HashMap::new() }))
    }
}

struct Loaded<'a> {
    lb: LoadedLb,
    cpu: usize,
    config: &'a XdpLb,
    /// Each validated scenario's connection table on the CPU it runs on,
    /// as it left it (None: its path uses none, [`scenarios::Path::uses_lru`]): a scenario resumed for
    /// another sweep gets its own back, so its LRU holds what it would
    /// have held had it been sampled in one stretch.
    tables: HashMap<String, Option<MapHandle>>,
}

impl LoadedWorkload for Loaded<'_> {
    fn validate(&mut self, info: &ScenarioInfo) -> Result<(Validation, Box<dyn PreparedScenario + '_>)> {
        let s = scenarios::find(&info.name).with_context(|| format!("unknown xdp-lb scenario {}", info.name))?;
        let lb = &mut self.lb;
        lb.set_udp_timeout(self.config.udp_timeout_ns.unwrap_or(addressing::UDP_LRU_TIMEOUT_NS))?;
        let (mut validation, packet) = checks::validate(lb, s, self.cpu, self.config.corrupt_expected_byte)?;
        validation.timing =
            Timing::InBpf { construct: lb.construct, body: lb.placement, why_called: lb.why_called.clone() };
        let verdict = checks::expected_verdict(s);
        // In the userspace runtime the tables live in the runtime: a resume validates again.
        if lb.user().is_none() {
            let table = if s.path.uses_lru() { Some(lb.lru_table(self.cpu)?) } else { None };
            self.tables.insert(info.name.to_string(), table);
        }
        Ok((validation, Box::new(Prepared { lb, cpu: self.cpu, scenario: s, packet, verdict })))
    }

    fn new_sweep(&mut self) -> Result<()> {
        self.lb.place_again()
    }

    /// Puts back the scenario's configuration and its own connection
    /// tables; the checks of its validation still hold for that state.
    fn resume(&mut self, info: &ScenarioInfo) -> Result<Box<dyn PreparedScenario + '_>> {
        let table = match self.tables.get(info.name.as_ref()) {
            Some(table) => table.as_ref().map(MapHandle::try_from).transpose()?,
            None => return self.validate(info).map(|(_, prepared)| prepared),
        };
        let s = scenarios::find(&info.name).with_context(|| format!("unknown xdp-lb scenario {}", info.name))?;
        let lb = &mut self.lb;
        lb.set_udp_timeout(self.config.udp_timeout_ns.unwrap_or(addressing::UDP_LRU_TIMEOUT_NS))?;
        let packet = packets::build_client_packet(&s.packet)?;
        lb.set_flowgen(checks::flowgen_for(&s.packet, &packet, s.flows)?)?;
        if let Some(table) = table {
            lb.use_lru_table(self.cpu, table)?;
        }
        let verdict = checks::expected_verdict(s);
        Ok(Box::new(Prepared { lb, cpu: self.cpu, scenario: s, packet, verdict }))
    }
}

/// A validated scenario: its packet, run through the datapath in batches.
struct Prepared<'a> {
    lb: &'a mut LoadedLb,
    cpu: usize,
    scenario: &'static LbScenario,
    packet: Vec<u8>,
    verdict: u32,
}

impl PreparedScenario for Prepared<'_> {
    fn run_batch(&mut self, variant: Variant, iters: u32) -> Result<BatchTiming> {
        let (prog, want) = match variant {
            Variant::Body => (&mut self.lb.body, self.verdict),
            Variant::Overhead => (&mut self.lb.overhead, XDP_PASS),
        };
        let (timing, out) = prog.run_batch(&self.packet, iters, RestoreMode::BENCH_RESTORE_ON_RESIZE, self.cpu)?;
        ensure!(
            out.retval == want,
            "{} returned {} during timing, expected {}",
            self.scenario.info.name,
            ProgKind::Xdp.verdict_name(out.retval),
            ProgKind::Xdp.verdict_name(want)
        );
        Ok(timing)
    }

    fn program(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        Some(self.lb.body.fd())
    }

    fn batch_cap(&self) -> Option<u32> {
        crate::harness::timing::batch_cap(self.lb.construct)
    }

    fn count_instructions(&mut self, iters: u32, profile: crate::harness::Profile) -> Result<Option<InstructionCount>> {
        let Some(rt) = self.lb.user().cloned() else { return Ok(None) };
        crate::harness::count_instructions(&rt, iters, profile, |variant, n| self.run_batch(variant, n)).map(Some)
    }

    /// The overhead loop runs the same flow generator: one measurement per
    /// generator shape.
    fn overhead_key(&self) -> OverheadKey {
        let s = self.scenario;
        OverheadKey::Named(match s.flows {
            Flows::Single => "single flow".into(),
            flows => {
                let fam = if s.packet.src.is_ipv4() { "v4" } else { "v6" };
                let proto = if s.packet.l4 == packets::L4::Udp { "udp" } else { "tcp" };
                format!("{flows:?} flows, {proto}/{fam}").to_lowercase().into()
            }
        })
    }
}

/// What `bpfbench fuzz-uvm` mutates and runs on: the load balancer's
/// programs as prepared, its maps as setup fills them, and its scenarios'
/// packets.
pub struct FuzzCorpus {
    pub runtime: crate::uvm::UserRuntime,
    pub names: Vec<String>,
    pub programs: Vec<Vec<crate::insn::Insn>>,
    pub packets: Vec<Vec<u8>>,
}

pub fn fuzz_corpus(cpu: usize) -> Result<FuzzCorpus> {
    let lb = LoadedLb::load(&LoadedLb::builtin(), TimingChoice::Auto.loop_construct()?)?;
    let runtime = crate::uvm::UserRuntime::new(&lb.code, cpu)?;
    let names: Vec<String> =
        ["xdp_lb_live", "xdp_lb"].iter().filter(|n| runtime.program(n).is_some()).map(|n| n.to_string()).collect();
    let programs = names.iter().filter_map(|n| runtime.program(n)).map(<[_]>::to_vec).collect();
    let packets = SCENARIOS.iter().map(|s| packets::build_client_packet(&s.packet)).collect::<Result<Vec<_>>>()?;
    Ok(FuzzCorpus { runtime, names, programs, packets })
}

/// `bpfbench fuzz-uvm`: `programs` programs, random and mutated from the
/// LB's, run in the userspace runtime on the LB's maps and packets; the
/// summary and the names of the LB programs the mutations started from.
pub fn fuzz_uvm(programs: u64, seed: u64, budget: u64) -> Result<(crate::record::probes::FuzzReport, Vec<String>)> {
    crate::system::check_privileges()?;
    let corpus = fuzz_corpus(crate::system::cpu::default_cpu()?)?;
    let mut runtime = corpus.runtime;
    let report = crate::uvm::fuzz::run(&mut runtime, &corpus.programs, &corpus.packets, programs, seed, budget);
    Ok((report, corpus.names))
}

/// The LB's datapath in the userspace runtime beside the kernel: same
/// object, same setup, same packets.
#[cfg(test)]
mod userspace_tests {
    use super::*;
    use crate::uvm::helpers::Helpers;
    use crate::uvm::maps::UserMaps;
    use crate::uvm::{Counts, Interpreter, xdp};
    use std::os::fd::AsFd;

    #[test]
    fn single_flow_scenarios_give_the_kernels_verdicts_and_packets() {
        crate::system::check_privileges().unwrap();
        let cpu = crate::system::cpu::default_cpu().unwrap();
        crate::system::cpu::pin_to_cpu(cpu).unwrap();
        let lb = LoadedLb::load(&LoadedLb::builtin(), LoopConstruct::MayGoto).unwrap();
        let live = lb.live.as_ref().expect("the built-in object has xdp_lb_live");
        let insns = lb.code.programs["xdp_lb_live"].clone();
        let mut maps = UserMaps::mirror_ids(&lb.code.maps).unwrap();
        let mut helpers = Helpers::new(cpu, 1);
        let interp = Interpreter::new(&insns);
        let single: Vec<&LbScenario> = SCENARIOS.iter().filter(|s| s.flows == Flows::Single).collect();
        assert_eq!(single.len(), 16, "the scenarios without generated flows");
        for s in single {
            let packet = packets::build_client_packet(&s.packet).unwrap();
            // Twice: a first packet may insert into the LRU, the second then hits.
            for round in 0..2 {
                let user = xdp::run(&interp, &packet, &mut helpers, Some(&mut maps), &mut Counts::default())
                    .unwrap_or_else(|e| panic!("{}: {e}", s.info.name));
                let kernel = crate::kernel::test_run::run(live.as_fd(), &packet).unwrap();
                assert_eq!(
                    ProgKind::Xdp.verdict_name(user.verdict),
                    ProgKind::Xdp.verdict_name(kernel.retval),
                    "{} round {round}",
                    s.info.name
                );
                assert!(user.packet == kernel.packet, "{} round {round}: the packets differ", s.info.name);
            }
        }
    }
}
