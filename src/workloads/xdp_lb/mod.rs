//! The Katran-model XDP load balancer workload (`xdp-lb`).
//!
//! The BPF datapath is xdp_lb.bpf.c; [`datapath`] loads and configures it,
//! [`checks`] says what each scenario must do (verdict, byte-exact output
//! packet, counters that prove the code path), and this module ties them to
//! the harness: a validated scenario times batches of its packet.

mod checks;
pub mod cross_check;
mod datapath;
mod jhash;
pub mod live;
mod maglev;
mod packets;
mod scenarios;
mod topology;

use std::sync::LazyLock;

use anyhow::{Context, Result, ensure};

use crate::harness::test_run::xdp_action_name;
use crate::harness::skeleton::ObjectSource;
use crate::harness::timing::RestoreMode;
use crate::harness::{BatchTiming, LoadedWorkload, PreparedScenario, ScenarioInfo, Validation, Variant, Workload};
use crate::workloads::Registration;
use datapath::LoadedLb;
use scenarios::{Flows, LbScenario, SCENARIOS};

const XDP_PASS: u32 = 2;

pub const REGISTRATION: Registration = Registration {
    names: &["xdp-lb"],
    about: "Katran-model XDP load balancer: 24 scenarios over its code paths (the default suite)",
    claims: crate::workloads::no_files,
    options: |cmd| cmd,
    build: |_, _| Ok(Box::new(XdpLb::default())),
    with_object: Some(|_, _, object| Ok(Box::new(XdpLb { object: Some(object.to_path_buf()), ..Default::default() }))),
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
}

impl Workload for XdpLb {
    fn name(&self) -> &str {
        "xdp-lb"
    }

    fn scenarios(&self) -> &[ScenarioInfo] {
        &INFOS
    }

    fn setup(&self, cpu: usize) -> Result<Box<dyn LoadedWorkload + '_>> {
        let source = self.object.clone().map_or_else(LoadedLb::builtin, ObjectSource::File);
        Ok(Box::new(Loaded { lb: LoadedLb::load(&source)?, cpu, config: self }))
    }
}

struct Loaded<'a> {
    lb: LoadedLb,
    cpu: usize,
    config: &'a XdpLb,
}

impl LoadedWorkload for Loaded<'_> {
    fn validate(&mut self, info: &ScenarioInfo) -> Result<(Validation, Box<dyn PreparedScenario + '_>)> {
        let s = scenarios::find(&info.name).with_context(|| format!("unknown xdp-lb scenario {}", info.name))?;
        let lb = &mut self.lb;
        lb.set_udp_timeout(self.config.udp_timeout_ns.unwrap_or(topology::UDP_LRU_TIMEOUT_NS))?;
        let (validation, packet) = checks::validate(lb, s, self.cpu, self.config.corrupt_expected_byte)?;
        let verdict = checks::expected_verdict(s);
        Ok((validation, Box::new(Prepared { lb, cpu: self.cpu, scenario: s, packet, verdict })))
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
            xdp_action_name(out.retval),
            xdp_action_name(want)
        );
        Ok(timing)
    }

    fn program(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        Some(self.lb.body.fd())
    }

    /// The overhead loop runs the same flow generator: one measurement per
    /// generator shape.
    fn overhead_key(&self) -> String {
        let s = self.scenario;
        match s.flows {
            Flows::Single => "single flow".into(),
            flows => {
                let fam = if s.packet.src.is_ipv4() { "v4" } else { "v6" };
                let proto = if s.packet.l4 == packets::L4::Udp { "udp" } else { "tcp" };
                format!("{flows:?} flows, {proto}/{fam}").to_lowercase()
            }
        }
    }
}
