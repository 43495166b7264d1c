//! A whole live run: the set-up, the statistics' cost, each step of the
//! sweep in turn, the program's cross-check, and the record of it all.
//! The caller shows progress through [`LiveObserver`].

use anyhow::Result;

use super::sweep::StepTraffic;
use super::{Attached, LiveProgram, LiveSettings, Sweep};
use crate::kernel::netdev::XdpMode;
use crate::record::live::{LIVE_SCHEMA, LiveRecord, LiveStep};
use crate::system::{self, environment, interrupt};

/// Everything a live run does, decided before it starts.
pub struct LivePlan {
    /// The base packet spec each step starts from.
    pub packet: String,
    pub sweep: Option<Sweep>,
    /// Each step's value of the swept variable (None: one step) and traffic.
    pub steps: Vec<(Option<u64>, StepTraffic)>,
    pub settings: LiveSettings,
    /// Set the live figures beside the program's in-BPF ones, where it has them.
    pub cross_check: bool,
    pub tag: Option<String>,
    /// Notes on the program's set-up (maps filled, pinned maps used).
    pub notes: Vec<String>,
}

impl LivePlan {
    /// Each step as a progress line names it ("size=512"; empty without a sweep).
    pub fn step_labels(&self) -> Vec<String> {
        let label = |v: &Option<u64>| self.sweep.as_ref().zip(*v).map(|(s, v)| format!("{}={v}", s.var.name()));
        self.steps.iter().map(|(v, _)| label(v).unwrap_or_default()).collect()
    }
}

/// What happens during a live run, for the caller to show.
pub trait LiveObserver {
    /// The statistics' own cost is being measured on `interface`.
    fn measuring_overhead(&mut self, _interface: &str) {}
    /// Step `index` of the plan starts.
    fn step_started(&mut self, _index: usize, _value: Option<u64>) {}
    fn step_done(&mut self, _step: &LiveStep) {}
    /// The program's in-BPF figures are being timed on `cpu`.
    fn cross_checking(&mut self, _cpu: usize) {}
}

/// Runs `plan` with `program` on a veth under generated traffic. Ctrl-C
/// ends it between steps with the steps measured so far (`interrupted`).
pub fn run(program: &mut dyn LiveProgram, plan: LivePlan, observer: &mut dyn LiveObserver) -> Result<LiveRecord> {
    let capture = environment::start(system::cpu::default_cpu()?);
    let label = program.label();
    let xdp_mode = match plan.settings.mode {
        XdpMode::Native => "native",
        XdpMode::Generic => "generic",
    };
    let (warmup_s, step_s, flow_order) =
        (plan.settings.warmup.as_secs_f64(), plan.settings.step.as_secs_f64(), plan.settings.flow_order);
    let mut measured = Vec::new();
    let overhead = {
        let mut attached = Attached::start(program, plan.settings)?;
        observer.measuring_overhead(&attached.topology().inner);
        let overhead = attached.stats_overhead(&plan.steps[0].1)?;
        for (index, (value, traffic)) in plan.steps.iter().enumerate() {
            if interrupt::interrupted() {
                break;
            }
            observer.step_started(index, *value);
            let step = attached.measure(*value, traffic)?;
            if interrupt::interrupted() {
                break;
            }
            observer.step_done(&step);
            measured.push(step);
        }
        overhead
        // The set-up goes here: programs detached, namespace and veths removed.
    };
    let interrupted = interrupt::interrupted();
    let cross_check = match measured.first() {
        Some(first) if plan.cross_check && !interrupted && program.cross_checks(&measured) => {
            let cpu = first.cpus[0];
            observer.cross_checking(cpu);
            Some(program.cross_check(&measured, cpu)?)
        }
        _ => None,
    };
    Ok(LiveRecord {
        schema: LIVE_SCHEMA.into(),
        tag: plan.tag,
        environment: capture.finish(),
        program: label,
        xdp_mode: xdp_mode.into(),
        packet: plan.packet,
        flow_order,
        warmup_s,
        step_s,
        sweep: plan.sweep.map(|s| s.var),
        stats_overhead: overhead,
        steps: measured,
        cross_check,
        notes: plan.notes,
        interrupted,
    })
}
