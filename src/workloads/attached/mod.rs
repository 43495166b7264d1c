//! Your own tracing, probe or cgroup programs (`bpfbench run FILE.bpf.o`
//! for an object of tracepoint, raw tracepoint, tp_btf, fentry/fexit,
//! kprobe, uprobe, USDT, LSM, cgroup or sockops programs; `--attach` for
//! any program the kernel can attach): the object loaded as its loader
//! would load it, every program attached where its section says, fired by
//! the trigger its point calls for (or `--trigger`). A row per program:
//! its ns per run from `bpf_stats`, beside an empty program's on the same
//! point; its runs per event; and, for each trigger, what the whole object
//! cost it (the slowdown).

mod loaded;
mod options;

use std::path::Path;

use anyhow::{Context, Result, bail};
use clap::{Args, FromArgMatches};

use crate::harness::{LoadedWorkload, ScenarioInfo, Workload};
use crate::kernel::attach_point::AttachPoint;
use crate::kernel::prog_type::ProgKind;
use crate::trigger::{Expected, TriggerKind};
use crate::workloads::{Claim, Registration};
pub use options::{AttachedArgs, AttachedSetup};

pub const REGISTRATION: Registration = Registration {
    names: &[],
    about: "your own tracing, probe or cgroup programs, attached on their hooks under a trigger",
    // An object of programs the kernel cannot test-run is this workload's;
    // `--attach` makes any object's (a raw tracepoint's, say).
    claims: |target| match target.ends_with(".o") && holds_only_attached_programs(Path::new(target)) {
        true => Claim::Yes,
        false => Claim::No,
    },
    selected_by: Some("attach"),
    options: AttachedArgs::augment_args,
    build: |target, matches| {
        let args = AttachedArgs::from_arg_matches(matches).map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(Box::new(AttachedBench::new(AttachedSetup::from_args(Path::new(target), &args)?)?))
    },
    with_object: Some(|target, matches, object| {
        let args = AttachedArgs::from_arg_matches(matches).map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut setup = AttachedSetup::from_args(Path::new(target), &args)?;
        setup.user.object = object.to_path_buf();
        Ok(Box::new(AttachedBench::new(setup)?))
    }),
};

/// Whether every program of the ELF object at `path` is of a type the
/// kernel cannot test-run (read from its sections; false for anything
/// that is no such object).
fn holds_only_attached_programs(path: &Path) -> bool {
    use object::{Object, ObjectSection, SectionKind};
    let Ok(bytes) = std::fs::read(path) else { return false };
    let Ok(file) = object::File::parse(&*bytes) else { return false };
    let mut kinds = file
        .sections()
        // Executable sections: the programs, and .text's subprograms.
        .filter(|s| s.kind() == SectionKind::Text && s.size() > 0)
        .filter_map(|s| s.name().ok().filter(|n| *n != ".text").map(ProgKind::of_section))
        .peekable();
    kinds.peek().is_some() && kinds.all(|k| k.is_some_and(|k| !k.test_runs()))
}

/// One program of the object, where it attaches and what fires it.
#[derive(Debug, Clone)]
pub struct Attachable {
    pub name: String,
    pub kind: ProgKind,
    pub point: AttachPoint,
    /// The trigger, and the runs per event validation expects.
    pub trigger: TriggerKind,
    pub expected: Expected,
}

/// A user's object of attached programs, as configured.
pub struct AttachedBench {
    setup: AttachedSetup,
    programs: Vec<Attachable>,
    infos: Vec<ScenarioInfo>,
}

impl AttachedBench {
    /// Reads the object's programs, their points and triggers, so that bad
    /// input is refused before anything is loaded.
    pub fn new(setup: AttachedSetup) -> Result<AttachedBench> {
        let object = setup.open()?;
        let file = setup.user.object.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        let mut programs = Vec::new();
        for p in object.programs() {
            let Some(kind) = p.kind else {
                bail!(
                    "program '{}' in {} is a {} program (section {}), which bpfbench does not run; it runs {}",
                    p.name,
                    setup.user.object.display(),
                    p.type_name,
                    p.section,
                    ProgKind::names(|_| true)
                );
            };
            let section = match &setup.attach {
                Some(a) if !a.is_empty() => a.as_str(),
                _ => p.section.as_str(),
            };
            let point = AttachPoint::parse(section, kind).with_context(|| format!("program '{}'", p.name))?;
            let (trigger, expected) = match (&setup.trigger, crate::trigger::for_point(&point)) {
                (Some(t), picked) => {
                    // The expectation holds where the given trigger is the one the point calls for.
                    let expected = picked.filter(|(k, _)| k == t).map_or(Expected::AtLeastOne, |(_, e)| e);
                    (t.clone(), expected)
                }
                (None, Some(picked)) => picked,
                (None, None) => bail!(
                    "program '{}' attaches at {point}, and bpfbench knows no workload that fires it: name one with --trigger NAME ({}) or give a command: --trigger -- CMD ARGS",
                    p.name,
                    crate::trigger::NAMED.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                ),
            };
            let expected = setup.expect_runs.map_or(expected, Expected::Runs);
            programs.push(Attachable { name: p.name, kind, point, trigger, expected });
        }
        if let Some(only) = &setup.user.program
            && !programs.iter().any(|p| &p.name == only)
        {
            bail!(
                "{} has no program '{only}'; it has {}",
                setup.user.object.display(),
                programs.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")
            );
        }
        if programs.is_empty() {
            bail!("{} holds no BPF program", setup.user.object.display());
        }
        let infos = programs
            .iter()
            .filter(|p| setup.user.program.as_ref().is_none_or(|only| &p.name == only))
            .map(|p| ScenarioInfo {
                name: p.name.clone().into(),
                group: format!("{file}, fired by {}", p.trigger.describe()).into(),
                description: format!("{} at {}", p.kind.desc().label, p.point).into(),
                facts: crate::record::ScenarioFacts::TABLE_ROW,
            })
            .collect();
        drop(object);
        Ok(AttachedBench { setup, programs, infos })
    }

    fn program(&self, name: &str) -> Result<(usize, &Attachable)> {
        self.programs.iter().enumerate().find(|(_, p)| p.name == name).with_context(|| format!("no program '{name}'"))
    }
}

impl Workload for AttachedBench {
    fn name(&self) -> &str {
        &self.setup.user.name
    }

    fn scenarios(&self) -> &[ScenarioInfo] {
        &self.infos
    }

    fn setup(&self, cpu: usize) -> Result<Box<dyn LoadedWorkload + '_>> {
        Ok(Box::new(loaded::Loaded::new(self, cpu)?))
    }
}
