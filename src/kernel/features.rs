//! Kernel features bpfbench uses where they exist, probed at run time so a
//! missing one is reported with the kernel's reason, never faked. Each
//! feature is proved by loading (or running) the smallest program that
//! needs it (`capability_probe.bpf.c`), not read off the version number:
//! distributions backport features, and configurations turn them off.

use std::mem::MaybeUninit;
use std::sync::OnceLock;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};

use crate::record::probes::Capabilities;
use crate::record::{KernelFeatures, LoopConstruct};

crate::bpf_skeleton!("tracing_probe");

mod capability {
    crate::bpf_skeleton!("capability_probe");
    pub use skel::*;
}

/// Whether the kernel loads and attaches fentry/fexit programs; the
/// error is the kernel's refusal, in one line.
pub fn tracing_programs() -> Result<(), String> {
    let mut storage = MaybeUninit::uninit();
    let open = skel::TracingProbeSkelBuilder::default()
        .open(&mut storage)
        .map_err(|e| format!("opening a tracing program: {e}"))?;
    let skel = open.load().map_err(|e| format!("fentry programs are refused by the kernel: {e}"))?;
    skel.progs.tracing_probe.attach().map(drop).map_err(|e| format!("fentry programs cannot be attached: {e}"))
}

/// The probe programs, one per feature, by name in capability_probe.bpf.c.
const PROBES: [&str; 5] = ["probe_may_goto", "probe_bpf_loop", "probe_bounded", "probe_global_pkt", "probe_xdp"];

/// Loads `capability_probe.bpf.c` with only `keep` of its programs, and
/// runs `then` on the loaded skeleton.
fn load_only<T>(
    keep: &str,
    then: impl FnOnce(&capability::CapabilityProbeSkel<'_>) -> Result<T, String>,
) -> Result<T, String> {
    let mut storage = MaybeUninit::uninit();
    let mut open = capability::CapabilityProbeSkelBuilder::default()
        .open(&mut storage)
        .map_err(|e| format!("opening the capability probe: {e}"))?;
    for mut prog in open.open_object_mut().progs_mut() {
        let name = prog.name().to_string_lossy().into_owned();
        prog.set_autoload(name == keep);
    }
    crate::kernel::libbpf_log::take();
    let skel = open.load().map_err(|e| {
        let log = crate::kernel::libbpf_log::tail(40);
        // The verifier's own words, without libbpf's framing: its last line
        // before the dump ends says why.
        let why = log
            .lines()
            .rev()
            .filter(|l| !l.starts_with("libbpf:") && !l.trim().is_empty() && !l.contains("PROG LOAD LOG"))
            .find(|l| !l.starts_with("processed ") && !l.starts_with("verification time"))
            .map(|l| l.trim().to_string())
            .unwrap_or_else(|| e.to_string());
        format!("the kernel refused it: {why}")
    })?;
    then(&skel)
}

impl Capabilities {
    fn probe() -> Capabilities {
        let loads = |name: &str| load_only(name, |_| Ok(()));
        let live_frames = load_only("probe_xdp", |skel| {
            use std::os::fd::AsFd;
            let packet = [0u8; 64];
            crate::kernel::test_run::run_live_frames(skel.progs.probe_xdp.as_fd(), &packet, 1, 1)
                .map_err(|e| format!("BPF_PROG_TEST_RUN refused live frames: {e}"))
        });
        Capabilities {
            may_goto: loads(PROBES[0]),
            bpf_loop: loads(PROBES[1]),
            bounded_loops: loads(PROBES[2]),
            global_subprog_changes_packet: loads(PROBES[3]),
            xdp_live_frames: live_frames,
            bpf_stats: crate::kernel::bpf_stats::enable().map(drop).map_err(|e| e.to_string()),
            btf: if std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
                Ok(())
            } else {
                Err("the kernel has no BTF of its own (/sys/kernel/btf/vmlinux; CONFIG_DEBUG_INFO_BTF)".into())
            },
        }
    }

    /// Whether the kernel verifies batches in `construct`, or why not.
    pub fn loop_construct(&self, construct: LoopConstruct) -> Result<(), String> {
        let (r, feature) = match construct {
            LoopConstruct::MayGoto => (&self.may_goto, "may_goto loops (Linux 6.9)"),
            LoopConstruct::BpfLoop => (&self.bpf_loop, "the bpf_loop helper (Linux 5.17)"),
            LoopConstruct::Bounded => (&self.bounded_loops, "bounded loops (Linux 5.3)"),
        };
        r.clone().map_err(|why| format!("this kernel lacks {feature}: {why}"))
    }

    /// The best loop construct the kernel verifies, in bpfbench's order of
    /// preference (cheapest per iteration and uncapped first).
    pub fn best_loop(&self) -> Option<LoopConstruct> {
        LoopConstruct::ALL.into_iter().find(|c| self.loop_construct(*c).is_ok())
    }

    /// `gen` and `live` send with live frames: refuses in one line without them.
    pub fn require_live_frames(&self) -> anyhow::Result<()> {
        match &self.xdp_live_frames {
            Ok(()) => Ok(()),
            Err(why) => anyhow::bail!(
                "this kernel cannot send XDP live frames (BPF_PROG_TEST_RUN with BPF_F_TEST_XDP_LIVE_FRAMES, Linux 5.18), which gen and live need: {why}"
            ),
        }
    }

    /// The features as a run records them.
    pub fn record(&self) -> KernelFeatures {
        KernelFeatures {
            may_goto: self.may_goto.is_ok(),
            bpf_loop: self.bpf_loop.is_ok(),
            bounded_loops: self.bounded_loops.is_ok(),
            global_subprog_changes_packet: self.global_subprog_changes_packet.is_ok(),
            xdp_live_frames: self.xdp_live_frames.is_ok(),
            bpf_stats: self.bpf_stats.is_ok(),
            btf: self.btf.is_ok(),
        }
    }
}

/// The running kernel's capabilities, probed once per process; None where
/// this process may not load BPF programs at all.
pub fn probe() -> Option<&'static Capabilities> {
    static PROBED: OnceLock<Option<Capabilities>> = OnceLock::new();
    PROBED
        .get_or_init(|| {
            // Without the rights to load a program every probe fails alike,
            // and that says nothing about the kernel.
            let caps = Capabilities::probe();
            let all_refused = caps.may_goto.is_err() && caps.bpf_loop.is_err() && caps.bounded_loops.is_err();
            let may_load = || {
                crate::kernel::load::constant_program(
                    crate::kernel::prog_type::ProgKind::Xdp,
                    "bpfbench_probe",
                    2,
                    0,
                    0,
                )
                .is_ok()
            };
            (!all_refused || may_load()).then_some(caps)
        })
        .as_ref()
}
