//! A folder of spec files as one suite (`bpfbench run corpus`, or `bpfbench
//! run DIR/`): every spec whose object is built is validated and timed as
//! `bpfbench run SPEC.toml` would, its cases named `SPEC/CASE` and grouped
//! by the project the spec names (`project = "katran"`). A spec whose
//! object is not built stands as one row saying the command that builds it
//! (the spec's `build`); one that cannot be read or opened, as one failed
//! row. Each spec's object is loaded when its first case runs.
//!
//! A spec that names a `tool` (libbpf-tools' opensnoop, ...) is a tool
//! measured as it runs (`bpfbench overhead`): its programs' rows are named
//! `SPEC/PROGRAM`; one tool runs at a time, started when its first row runs
//! and stopped before another member's.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::{Args, FromArgMatches};

use crate::harness::timing::{BodyChoice, TimingChoice};
use crate::harness::{LoadedWorkload, PreparedScenario, ScenarioInfo, Validation, Workload};
use crate::record::{Runtime, ScenarioFacts};
use crate::workloads::Registration;
use crate::workloads::object::{ObjectArgs, ObjectBench, ObjectSetup};
use crate::workloads::tool::{ToolBench, ToolSpec};

/// The folder `bpfbench run corpus` runs, relative to bpfbench's checkout.
pub const CORPUS_DIR: &str = "examples/corpus";

pub const REGISTRATION: Registration = Registration {
    names: &["corpus"],
    about: "a folder of spec files as one suite, grouped by project (corpus: examples/corpus/)",
    claims: |target| match holds_specs(Path::new(target)) {
        true => crate::workloads::Claim::Yes,
        false => crate::workloads::Claim::No,
    },
    selected_by: None,
    options: ObjectArgs::augment_args,
    build: |target, matches| {
        let args = ObjectArgs::from_arg_matches(matches).map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(Box::new(Corpus::new(&folder(target)?, &args)?))
    },
    with_object: None,
};

/// Whether `path` is a folder holding spec files (`*.toml`).
fn holds_specs(path: &Path) -> bool {
    path.is_dir() && spec_files(path).is_ok_and(|s| !s.is_empty())
}

/// The folder `target` names: `corpus` is [`CORPUS_DIR`].
fn folder(target: &str) -> Result<PathBuf> {
    if target != "corpus" {
        return Ok(PathBuf::from(target));
    }
    let dir = PathBuf::from(CORPUS_DIR);
    if !dir.is_dir() {
        bail!(
            "bpfbench run corpus runs the spec files of {CORPUS_DIR}/ in bpfbench's checkout, and there is none here: run it from the checkout, or give the folder (bpfbench run PATH/TO/corpus/)"
        );
    }
    Ok(dir)
}

/// The spec files of `dir`, sorted by name.
fn spec_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut specs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml") && p.is_file())
        .collect();
    specs.sort();
    Ok(specs)
}

/// One spec file of the folder, as far as it could be configured.
enum Member {
    /// Its object is there: its cases run.
    Built(Box<ObjectBench>),
    /// A tool that is installed: its programs run, one tool at a time.
    Tool(Box<ToolBench>),
    /// Its object is missing: the command that builds it.
    NotBuilt(String),
    /// It cannot be read, or its object not opened: why.
    Broken(String),
}

/// A spec of an object: built, not built, or broken; and its project.
fn object_member(path: &Path, args: &ObjectArgs, stem: &str) -> (Member, Option<String>) {
    match ObjectSetup::from_target(path, args) {
        Err(e) => (
            Member::Broken(format!("{}: {reason}", path.display(), reason = crate::record::error_line(&e))),
            Some("unreadable specs".to_string()),
        ),
        Ok(setup) => {
            let project = setup.user.project.clone();
            let member = if setup.user.object.exists() {
                match ObjectBench::new(setup) {
                    Ok(bench) => Member::Built(Box::new(bench.rows_named_under(stem))),
                    Err(e) => {
                        Member::Broken(format!("{}: {reason}", path.display(), reason = crate::record::error_line(&e)))
                    }
                }
            } else {
                Member::NotBuilt(format!(
                    "not built: {} is missing; {}",
                    setup.user.object.display(),
                    setup.user.build.as_deref().map_or_else(
                        || format!("build it as {} says", path.display()),
                        |b| format!("build it with {b}")
                    )
                ))
            };
            (member, project)
        }
    }
}

/// A spec of a tool: installed and able to run here (its programs found),
/// or why not; and its project.
fn tool_member(path: &Path) -> (Member, Option<String>) {
    let spec = match ToolSpec::read(path) {
        Ok(spec) => spec,
        Err(e) => {
            return (Member::Broken(crate::record::error_line(&e)), Some("unreadable specs".to_string()));
        }
    };
    let project = spec.project.clone();
    if let Some(why) = spec.unavailable() {
        return (Member::NotBuilt(why), project);
    }
    let member = match spec.args().and_then(ToolBench::new) {
        Ok(tool) => Member::Tool(Box::new(tool)),
        Err(e) => Member::Broken(format!("{}: {reason}", path.display(), reason = crate::record::error_line(&e))),
    };
    (member, project)
}

/// Where a scenario is: (member, its case's index in the member; None for
/// the member's one row when it has no cases to run).
type Place = (usize, Option<usize>);

/// The spec files of a folder, configured, nothing loaded.
pub struct Corpus {
    name: String,
    members: Vec<Member>,
    infos: Vec<ScenarioInfo>,
    places: Vec<Place>,
}

impl Corpus {
    pub fn new(dir: &Path, args: &ObjectArgs) -> Result<Corpus> {
        let specs = spec_files(dir)?;
        if specs.is_empty() {
            bail!("{} holds no spec files (*.toml): give a folder of them, e.g. {CORPUS_DIR}/", dir.display());
        }
        let (mut members, mut infos, mut places) = (Vec::new(), Vec::new(), Vec::new());
        for path in &specs {
            let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            let m = members.len();
            let (member, project) = match std::fs::read_to_string(path).map(|t| ToolSpec::is_one(&t)) {
                Ok(true) => tool_member(path),
                _ => object_member(path, args, &stem),
            };
            let project = project.unwrap_or_else(|| stem.clone());
            match &member {
                Member::Built(_) | Member::Tool(_) => {
                    let scenarios = match &member {
                        Member::Built(bench) => bench.scenarios(),
                        Member::Tool(tool) => tool.scenarios(),
                        Member::NotBuilt(_) | Member::Broken(_) => unreachable!("matched above"),
                    };
                    for (i, case) in scenarios.iter().enumerate() {
                        infos.push(ScenarioInfo {
                            name: format!("{stem}/{}", case.name).into(),
                            group: project.clone().into(),
                            description: format!("{} ({})", case.description, path.display()).into(),
                            facts: case.facts.clone(),
                        });
                        places.push((m, Some(i)));
                    }
                }
                Member::NotBuilt(_) | Member::Broken(_) => {
                    infos.push(ScenarioInfo {
                        name: stem.clone().into(),
                        group: project.into(),
                        description: format!("the cases of {}", path.display()).into(),
                        facts: ScenarioFacts::TABLE_ROW,
                    });
                    places.push((m, None));
                }
            }
            members.push(member);
        }
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "corpus".into());
        Ok(Corpus { name, members, infos, places })
    }

    fn place(&self, info: &ScenarioInfo) -> Result<Place> {
        match self.infos.iter().position(|i| i.name == info.name) {
            Some(i) => Ok(self.places[i]),
            None => bail!("{} has no scenario '{}'", self.name, info.name),
        }
    }

    /// Every spec whose cases run.
    fn benches_mut(&mut self) -> impl Iterator<Item = &mut ObjectBench> {
        self.members.iter_mut().filter_map(|m| match m {
            Member::Built(b) => Some(b.as_mut()),
            Member::Tool(_) | Member::NotBuilt(_) | Member::Broken(_) => None,
        })
    }
}

impl Workload for Corpus {
    fn name(&self) -> &str {
        &self.name
    }

    fn scenarios(&self) -> &[ScenarioInfo] {
        &self.infos
    }

    fn is_suite(&self) -> bool {
        true
    }

    fn set_timing(&mut self, choice: TimingChoice) -> Result<()> {
        self.benches_mut().try_for_each(|b| b.set_timing(choice))
    }

    fn set_body(&mut self, choice: BodyChoice) -> Result<()> {
        self.benches_mut().try_for_each(|b| b.set_body(choice))
    }

    fn setup(&self, cpu: usize) -> Result<Box<dyn LoadedWorkload + '_>> {
        self.setup_in(cpu, Runtime::Kernel)
    }

    fn setup_in(&self, cpu: usize, runtime: Runtime) -> Result<Box<dyn LoadedWorkload + '_>> {
        let loaded = self.members.iter().map(|_| None).collect();
        Ok(Box::new(Loaded { corpus: self, cpu, runtime, loaded }))
    }
}

/// A member set up in the run's runtime, or why it could not be.
type MemberSetup<'a> = std::result::Result<Box<dyn LoadedWorkload + 'a>, String>;

/// The corpus with each spec's object loaded when its first case runs.
struct Loaded<'a> {
    corpus: &'a Corpus,
    cpu: usize,
    runtime: Runtime,
    loaded: Vec<Option<MemberSetup<'a>>>,
}

impl<'a> Loaded<'a> {
    /// Member `m` set up (once), and the case's own scenario. A tool's
    /// set-up starts it: any other tool running is stopped first.
    fn member(&mut self, m: usize, case: usize) -> (&mut MemberSetup<'a>, &'a ScenarioInfo) {
        let workload: &'a dyn Workload = match &self.corpus.members[m] {
            Member::Built(bench) => bench.as_ref(),
            Member::Tool(tool) => {
                for (other, member) in self.corpus.members.iter().enumerate() {
                    if other != m && matches!(member, Member::Tool(_)) {
                        self.loaded[other] = None;
                    }
                }
                tool.as_ref()
            }
            Member::NotBuilt(_) | Member::Broken(_) => unreachable!("only built members have cases"),
        };
        let (cpu, runtime) = (self.cpu, self.runtime);
        let setup = self.loaded[m]
            .get_or_insert_with(|| workload.setup_in(cpu, runtime).map_err(|e| crate::record::error_line(&e)));
        (setup, &workload.scenarios()[case])
    }
}

impl LoadedWorkload for Loaded<'_> {
    fn unavailable(&mut self, info: &ScenarioInfo) -> Option<String> {
        let (m, case) = self.corpus.place(info).ok()?;
        match (&self.corpus.members[m], case) {
            (Member::NotBuilt(why), _) => Some(why.clone()),
            (Member::Built(_) | Member::Tool(_), Some(case)) => {
                let runtime = self.runtime;
                match self.member(m, case) {
                    // A program the userspace runtime refuses (its type, a
                    // helper it lacks) runs in the kernel only: not a failure.
                    (Err(why), _) if runtime == Runtime::User => Some(format!("not in the userspace runtime: {why}")),
                    (Err(_), _) => None,
                    (Ok(loaded), inner) => loaded.unavailable(inner),
                }
            }
            _ => None,
        }
    }

    fn validate(&mut self, info: &ScenarioInfo) -> Result<(Validation, Box<dyn PreparedScenario + '_>)> {
        let (m, case) = self.corpus.place(info)?;
        match (&self.corpus.members[m], case) {
            (Member::Broken(why) | Member::NotBuilt(why), _) => bail!("{why}"),
            (Member::Built(_) | Member::Tool(_), Some(case)) => match self.member(m, case) {
                (Err(why), _) => bail!("{why}"),
                (Ok(loaded), inner) => loaded.validate(inner),
            },
            (Member::Built(_) | Member::Tool(_), None) => bail!("no case '{}'", info.name),
        }
    }

    fn resume(&mut self, info: &ScenarioInfo) -> Result<Box<dyn PreparedScenario + '_>> {
        let (m, case) = self.corpus.place(info)?;
        match (&self.corpus.members[m], case) {
            (Member::Built(_) | Member::Tool(_), Some(case)) => match self.member(m, case) {
                (Err(why), _) => bail!("{why}"),
                (Ok(loaded), inner) => loaded.resume(inner),
            },
            _ => self.validate(info).map(|(_, prepared)| prepared),
        }
    }

    fn new_sweep(&mut self) -> Result<()> {
        self.loaded.iter_mut().flatten().flatten().try_for_each(|l| l.new_sweep())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_of_specs_is_claimed_and_one_without_is_not() {
        let folder = tempfile::tempdir().unwrap();
        let dir = folder.path();
        assert!(!holds_specs(dir), "an empty folder holds no specs");
        std::fs::write(dir.join("a.toml"), "object = \"a.bpf.o\"\n").unwrap();
        assert!(holds_specs(dir));
        assert!(!holds_specs(&dir.join("a.toml")), "a spec file is the object workload's");
    }
}
