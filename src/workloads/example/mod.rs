//! CONTRIBUTING.md's example workload, compiled and run by the tests so the
//! example stays true: an XDP program that passes every packet.
//! Registered for real, it would be `&example::REGISTRATION` in `REGISTRY`.

use anyhow::{Result, ensure};
use libbpf_rs::skel::SkelBuilder;

use crate::harness::timing::{RestoreMode, TimedProgram};
use crate::harness::{
    BatchTiming, LoadedWorkload, OverheadKey, PreparedScenario, ScenarioInfo, Validation, Variant, Workload,
};
use crate::kernel::skeleton::{self, map_handle, prog_fd};
use crate::workloads::{Registration, no_files};

crate::bpf_skeleton!("xdp_pass");

pub const REGISTRATION: Registration = Registration {
    names: &["xdp-pass"],
    about: "XDP_PASS in the timing loop",
    claims: no_files,
    selected_by: None,
    options: |command| command,
    build: |_, _| Ok(Box::new(XdpPass)),
    with_object: None,
};

static SCENARIOS: [ScenarioInfo; 1] = [ScenarioInfo::fixed("pass", "XDP", "XDP_PASS on a 64-byte frame")];
const PACKET: [u8; 64] = [0; 64];
const XDP_PASS: u32 = 2;

pub struct XdpPass;

/// The loaded state: the timed program and its empty twin.
struct Loaded {
    body: TimedProgram,
    overhead: TimedProgram,
    cpu: usize,
}

impl Workload for XdpPass {
    fn name(&self) -> &str {
        "xdp-pass"
    }

    fn scenarios(&self) -> &[ScenarioInfo] {
        &SCENARIOS
    }

    fn setup(&self, cpu: usize) -> Result<Box<dyn LoadedWorkload + '_>> {
        let mut storage = std::mem::MaybeUninit::uninit();
        let s = skeleton::load(skel::XdpPassSkelBuilder::default().open(&mut storage)?, "xdp-pass")?;
        let timed =
            |p| TimedProgram::new(prog_fd(p)?, map_handle(&s.maps.bench_ctl)?, map_handle(&s.maps.bench_result)?);
        Ok(Box::new(Loaded { body: timed(&s.progs.xdp_pass)?, overhead: timed(&s.progs.xdp_pass_overhead)?, cpu }))
    }
}

impl LoadedWorkload for Loaded {
    fn validate(&mut self, _: &ScenarioInfo) -> Result<(Validation, Box<dyn PreparedScenario + '_>)> {
        let (_, out) = self.body.run_batch(&PACKET, 100, RestoreMode::BENCH_RESTORE_NONE, self.cpu)?;
        ensure!(out.retval == XDP_PASS && out.packet == PACKET, "expected XDP_PASS and the packet unchanged");
        let validation =
            Validation { verdict: "XDP_PASS".into(), checks: vec!["verdict and packet".into()], ..Default::default() };
        Ok((validation, Box::new(self)))
    }
}

impl PreparedScenario for &mut Loaded {
    fn run_batch(&mut self, variant: Variant, iters: u32) -> Result<BatchTiming> {
        let program = if variant == Variant::Body { &mut self.body } else { &mut self.overhead };
        Ok(program.run_batch(&PACKET, iters, RestoreMode::BENCH_RESTORE_NONE, self.cpu)?.0)
    }

    fn overhead_key(&self) -> OverheadKey {
        OverheadKey::Named("empty call".into())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;
    use crate::harness::runner::Runner;
    use crate::record::Sampling;

    /// The example runs as CONTRIBUTING.md says: validated, then timed.
    #[test]
    fn the_example_workload_validates_and_times() {
        crate::system::check_privileges().expect("kernel tests run as root");
        let cpu = crate::system::cpu::default_cpu().unwrap();
        crate::system::cpu::pin_to_cpu(cpu).unwrap();
        let workload = (REGISTRATION.build)("xdp-pass", &clap::ArgMatches::default()).unwrap();
        static NEVER: AtomicBool = AtomicBool::new(false);
        let mut runner = Runner::new(
            Sampling { samples: 5, batch_ms: 1.0, warmup_s: 0.01, max_scenario_s: 5.0, sweeps: 1 },
            false,
            &NEVER,
        );
        let mut loaded = workload.setup(cpu).unwrap();
        let result = runner.run_scenario("xdp-pass", loaded.as_mut(), &SCENARIOS[0]).unwrap();
        assert!(result.validated, "{result:?}");
        assert_eq!(result.verdict.as_deref(), Some("XDP_PASS"));
        assert!(result.measurement().is_some_and(|m| m.summary.median > 0.0), "{result:?}");
    }

    /// CONTRIBUTING.md shows this workload's two files as they are.
    #[test]
    fn contributing_shows_the_example_as_it_is() {
        let doc = include_str!("../../../CONTRIBUTING.md");
        for (file, text) in [("mod.rs", include_str!("mod.rs")), ("xdp_pass.bpf.c", include_str!("xdp_pass.bpf.c"))] {
            assert!(
                doc.contains(text.trim_end()),
                "CONTRIBUTING.md does not show src/workloads/example/{file} as it is"
            );
        }
    }
}
