//! A project's own BPF unit tests as benchmarks (`bpfbench run --tests
//! cilium PATH`): each test object is replayed as its framework's runner
//! replays it, every test reporting its own pass or fail from its own
//! `CHECK` ([`collection`]), then the datapath entry each test drives is
//! timed on the packet and context the test's setup hands it, in two
//! states, named in every benchmark (`cilium/FILE/TEST/steady|fresh`):
//!
//! - `steady`: the flow's Nth packet. State is kept between iterations, as
//!   on a live datapath once a connection is established; timed in BPF, the
//!   entry entered by a tail call from the chain loop.
//! - `fresh`: the flow's first packet every time: the maps put back as the
//!   setup left them before each call ([`per_call`]); timed per call.
//!
//! A test whose later packets take another path than its first (its
//! output differs, or its own `CHECK` fails after the timed batches) is
//! labelled state-dependent: its steady figure is of another path than the
//! one the test asserts.

mod cilium;
pub mod framework;
mod per_call;

use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, FromArgMatches};

use crate::engine::{
    BatchTimer, ChainRequest, ChainTimer, ENCAPSULATED_FOR_GOOD, PerCallBecause, Restore, Timed, empty_program,
    outputs_differ, restore_plan,
};
use crate::harness::{LoadedWorkload, NotRunnable, OverheadKey, PreparedScenario, ScenarioInfo, Validation, Workload};
use crate::kernel::map_snapshot::{Dirty, MapSnapshot, restore_all as restore};
use crate::kernel::prog_type::ProgKind;
use crate::packet::mask::Mask;
use crate::record::{ScenarioFacts, Timing};
use crate::workloads::{Claim, Registration};
use framework::{Entry, Replayed, ReplayedFile, Split, Test, TestFile, TestFramework};
use per_call::{CallState, CallTimer, MAX_CALLS};

pub const REGISTRATION: Registration = Registration {
    names: &[],
    about: "a test framework's BPF unit tests replayed and timed: Cilium's test objects (FILE.o or a folder of them)",
    claims,
    selected_by: Some("tests"),
    options: TestsArgs::augment_args,
    build: |target, matches| {
        let args = TestsArgs::from_arg_matches(matches).map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(Box::new(TestSuite::new(Path::new(target), framework::named(&args.tests)?)?))
    },
    with_object: None,
};

/// A test object of any framework, or a folder holding one, is this
/// workload's; any other folder is too, as a fallback (it then says it
/// holds no tests), after the folders other workloads claim (a corpus).
fn claims(target: &str) -> Claim {
    let path = Path::new(target);
    if framework::FRAMEWORKS.iter().any(|f| f.holds_tests(path))
        || (path.is_dir() && framework::holds_test_objects(path))
    {
        Claim::Yes
    } else if path.is_dir() {
        Claim::Fallback
    } else {
        Claim::No
    }
}

/// Options of a test framework's objects.
#[derive(Args, Debug, Clone)]
pub struct TestsArgs {
    /// The framework the test objects are written for: each test is replayed
    /// as its runner replays it, validated by its own CHECK, then its datapath
    /// timed (steady and fresh)
    #[arg(long = "tests", default_value = "cilium", value_parser = clap::builder::PossibleValuesParser::new(framework::names()))]
    pub tests: String,
}

/// The state a test's entry is timed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Steady,
    Fresh,
}

impl State {
    fn as_str(self) -> &'static str {
        match self {
            State::Steady => "steady",
            State::Fresh => "fresh",
        }
    }
}

/// Where a scenario is: (file, test, state; None for a test that drives no entry).
type Place = (usize, usize, Option<State>);

/// Open descriptors a run of many test objects asks for (Cilium's 87
/// files hold ~20,000 loaded).
const OPEN_FILES: u64 = 1 << 16;

/// Test objects, configured: their tests found, nothing loaded.
pub struct TestSuite {
    framework: &'static dyn TestFramework,
    files: Vec<TestFile>,
    infos: Vec<ScenarioInfo>,
    places: Vec<Place>,
}

impl TestSuite {
    pub fn new(path: &Path, framework: &'static dyn TestFramework) -> Result<TestSuite> {
        let files =
            framework::test_files(framework, path)?.iter().map(|p| framework.read(p)).collect::<Result<Vec<_>>>()?;
        let (mut infos, mut places) = (Vec::new(), Vec::new());
        for (f, file) in files.iter().enumerate() {
            if file.refused.is_some() {
                infos.push(ScenarioInfo {
                    name: file.stem.clone().into(),
                    group: file.stem.clone().into(),
                    description: "a test object libbpf cannot open".into(),
                    facts: ScenarioFacts::TABLE_ROW,
                });
                places.push((f, usize::MAX, None));
                continue;
            }
            for (t, test) in file.tests.iter().enumerate() {
                let base = format!("{}/{}", file.stem, test.name);
                let states: &[Option<State>] = match test.enters_datapath {
                    true => &[Some(State::Steady), Some(State::Fresh)],
                    false => &[None],
                };
                for state in states {
                    let (name, description) = match state {
                        Some(s) => (
                            format!("{base}/{}", s.as_str()),
                            format!(
                                "{} {}: the entry its setup jumps into, {} state",
                                file.kind_name(),
                                test.name,
                                s.as_str()
                            ),
                        ),
                        None => (
                            base.clone(),
                            format!("{} {}: no datapath entry, checked only", file.kind_name(), test.name),
                        ),
                    };
                    infos.push(ScenarioInfo {
                        name: name.into(),
                        group: file.stem.clone().into(),
                        description: description.into(),
                        facts: ScenarioFacts::TABLE_ROW,
                    });
                    places.push((f, t, *state));
                }
            }
        }
        Ok(TestSuite { framework, files, infos, places })
    }

    fn place(&self, info: &ScenarioInfo) -> Result<Place> {
        let i =
            self.infos.iter().position(|s| s.name == info.name).with_context(|| format!("no test '{}'", info.name))?;
        Ok(self.places[i])
    }
}

impl TestFile {
    fn kind_name(&self) -> &'static str {
        self.kind.desc().label
    }
}

impl Workload for TestSuite {
    fn name(&self) -> &str {
        self.framework.name()
    }

    fn scenarios(&self) -> &[ScenarioInfo] {
        &self.infos
    }

    fn is_suite(&self) -> bool {
        true
    }

    fn setup(&self, cpu: usize) -> Result<Box<dyn LoadedWorkload + '_>> {
        // Every file stays loaded: a descriptor per program and map of each.
        crate::system::raise_open_files(OPEN_FILES);
        Ok(Box::new(Loaded { suite: self, cpu, collections: HashMap::new(), empties: HashMap::new() }))
    }
}

/// The test objects loaded so far: each is loaded and replayed when its
/// first test is validated, so that a selection loads only its files.
struct Loaded<'a> {
    suite: &'a TestSuite,
    cpu: usize,
    collections: HashMap<usize, Box<dyn ReplayedFile>>,
    /// An empty program per kind: per-call timing's own cost.
    empties: HashMap<ProgKind, OwnedFd>,
}

impl Loaded<'_> {
    fn collection(&mut self, f: usize) -> Result<&dyn ReplayedFile> {
        if !self.collections.contains_key(&f) {
            let file = &self.suite.files[f];
            let what = format!("{}: loading and replaying its tests", file.stem);
            let framework = self.suite.framework;
            let c = crate::harness::activity::during(&what, || framework.replay(file))
                .with_context(|| format!("replaying {}", file.path.display()))?;
            self.collections.insert(f, c);
        }
        Ok(self.collections[&f].as_ref())
    }
}

/// Fails with the test's own report unless its replay passed.
fn replay_passed(file: &Path, r: &Replayed) -> Result<String> {
    match &r.outcome {
        Err(e) => bail!("test {} of {}: {e}", r.test.name, file.display()),
        Ok(o) if !o.passed => bail!("test {} failed its own CHECK in the replay: {}", r.test.name, o.explanation),
        Ok(o) => Ok(match o.subtests.as_slice() {
            [] => "its own CHECK passed in the replay".to_string(),
            subtests => format!("its own CHECK passed in the replay ({})", subtests.join(", ")),
        }),
    }
}

impl LoadedWorkload for Loaded<'_> {
    fn unavailable(&mut self, info: &ScenarioInfo) -> Option<String> {
        let (f, t, state) = self.suite.place(info).ok()?;
        // A file bpfbench cannot open has no test it could replay: none
        // failed its CHECK, and none is timed (bpfbench's limit, said).
        if let Some(why) = &self.suite.files[f].refused {
            return Some(format!("not replayed: {why}"));
        }
        let file = self.suite.files[f].path.clone();
        let c = self.collection(f).ok()?;
        let r = &c.replayed()[t];
        let passed = replay_passed(&file, r).ok()?;
        match (state, &r.entry) {
            (None, _) => {
                Some(format!("not timed: the test drives no datapath entry (its setup makes no tail call); {passed}"))
            }
            (Some(_), Some(Err(why))) => Some(format!("not timed: {why}; {passed}")),
            _ => None,
        }
    }

    fn validate(&mut self, info: &ScenarioInfo) -> Result<(Validation, Box<dyn PreparedScenario + '_>)> {
        let (f, t, state) = self.suite.place(info)?;
        if let Some(why) = &self.suite.files[f].refused {
            bail!("{why}");
        }
        let cpu = self.cpu;
        let file_path: PathBuf = self.suite.files[f].path.clone();
        self.collection(f)?;
        let kind = self.collections[&f].kind();
        if !self.empties.contains_key(&kind) {
            let c = self.collections[&f].as_ref();
            let (attach, flags) = c.load_attrs(&c.replayed()[t].test.check)?;
            self.empties.insert(kind, empty_program(kind, attach, flags)?);
        }
        let (c, empty) = (self.collections[&f].as_ref(), self.empties[&kind].as_fd());
        let r = &c.replayed()[t];
        let passed = replay_passed(&file_path, r)?;
        let Some(state) = state else {
            bail!("test {} drives no datapath entry: nothing to time", r.test.name);
        };
        let replayed_output = match &r.entry {
            Some(Ok(e)) => e.output.clone(),
            Some(Err(why)) => bail!("test {}: {why}: nothing to time", r.test.name),
            None => bail!("test {}: its setup reached no datapath entry", r.test.name),
        };
        // The setup again, from the maps as they were before it: the state it makes now.
        let Split { entry, fresh } = match c.split(t)? {
            Ok(split) => split,
            Err(why) => bail!("test {}: run again, {why}", r.test.name),
        };
        let mut checks = vec![passed];
        let mut notes = c.notes().to_vec();
        notes.push(format!(
            "entry: {} (slot {}), on the {}-byte packet and the context its setup handed it",
            entry.program,
            entry.slot,
            entry.packet.len()
        ));
        // Validated again from the fresh state: the entry's output, then the
        // test's own CHECK on it, in the maps the packet left.
        let first_run = c.run_entry(&entry)?;
        let outcome = c.judge(&r.test, &first_run, &c.snapshot()?)?;
        let first = first_run.output;
        if !outcome.passed {
            bail!("test {}: from its fresh state, its own CHECK fails: {}", r.test.name, outcome.explanation);
        }
        checks.push(
            "from the fresh state (the maps as its setup left them), the entry's output passed the test's own CHECK"
                .into(),
        );
        let mut labels = Vec::new();
        if let Some(diff) = outputs_differ(kind, &Mask::default(), &replayed_output, &first) {
            // Its own CHECK passed on both: chosen afresh for each first packet (a SNAT port, a backend).
            notes.push(format!("from the fresh state the entry's output differs from the replay's, and both pass the test's own CHECK: {}", one_line(&diff)));
        }
        let fd = c.entry_fd(&entry)?;
        let (prepared, timing): (Box<dyn PreparedScenario + '_>, Timing) = match state {
            State::Fresh => {
                let dirty = Dirty::after(&fresh, || {
                    crate::kernel::test_run::run_in(fd, &entry.packet, entry.ctx.as_deref()).map(|_| ())
                })?;
                notes.push(format!(
                    "the first packet changes {} map(s); their changed entries are put back before every call, every map before every batch",
                    dirty.maps()
                ));
                let timer = CallTimer {
                    state: CallState::Fresh { state: fresh, dirty },
                    collection: c,
                    test: &r.test,
                    input: entry,
                    entry: fd,
                    empty,
                    reference: first.clone(),
                    kind,
                };
                notes.push(format!(
                    "timing: per call (one BPF_PROG_TEST_RUN of the entry, timed by the kernel), the maps put back as the setup left them before each call, outside the timed region; at most {MAX_CALLS} calls a batch"
                ));
                let timing = Timing::PerCall {
                    reason: "fresh state: the maps are put back as the test's setup left them before every call".into(),
                    host_timed: false,
                };
                let prepared = Timed {
                    timer: Box::new(timer),
                    program: fd,
                    stats: None,
                    overhead: OverheadKey::EmptyTestRun { kind },
                };
                (Box::new(prepared), timing)
            }
            State::Steady => {
                // After the packets the timer runs: the Nth packet, checked by the test's own CHECK.
                let late_input = entry.clone();
                let Steady { timer, timing, overhead, after_first } =
                    steady(c, &r.test, entry, &fresh, kind, cpu, empty, &mut labels, &mut notes).map_err(|e| {
                        match e.is::<NotRunnable>() {
                            true => e,
                            false => e.context(format!("test {}: timing its entry in the steady state", r.test.name)),
                        }
                    })?;
                // The flow's next packet, judged by the test's CHECK in the maps
                // as the same flow's first packet left them (a CHECK that counts
                // packets counts one; a SNAT port drawn is this flow's), then
                // the kept state back for the timed batches.
                let late_run = c.run_entry(&late_input)?;
                let kept = c.snapshot()?;
                let late = c.judge(&r.test, &late_run, &after_first)?;
                restore(&kept)?;
                if !late.passed {
                    labels.push(format!(
                        "after the batches, the flow's next packet fails its own CHECK: {}",
                        late.explanation
                    ));
                }
                if labels.is_empty() {
                    checks.push("the flow's later packets take the first packet's path: same output, and its own CHECK still passes after the batches".into());
                }
                let prepared = Timed { timer, program: fd, stats: None, overhead };
                (Box::new(prepared), timing)
            }
        };
        let state_dependent = !labels.is_empty();
        if state_dependent {
            notes.push(format!("state-dependent: {}", labels.join("; ")));
        }
        let verdict = match state_dependent {
            true => format!("{} (state-dependent)", kind.verdict_name(first.retval)),
            false => kind.verdict_name(first.retval),
        };
        let validation =
            Validation { verdict, outcome: None, timing, checks, notes, outputs: vec![first], attached: None };
        Ok((validation, prepared))
    }
}

/// A comparison's lines on one.
fn one_line(text: &str) -> String {
    text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
}

/// Packets of the flow run before the steady state's reference is taken:
/// a path that settles after its first few packets (a rate limiter, a
/// connection's state machine) is timed where it settled.
const WARM_PACKETS: usize = 8;

/// Packets of the flow run after the warm ones, each to give the same
/// output: more than a rate limiter's burst (Cilium's: 1000).
const SETTLE_PACKETS: u32 = 4096;

/// Passes of the chain loop run before the steady state is timed, every
/// run's last pass checked against the reference.
const STABLE_PASSES: u32 = 100_000;

/// The entry in the chain loop, from the state the flow's first packets
/// left; the reference is the last of them. Per call, the state kept,
/// where the loop cannot hold it (the state-dependent label says why the
/// packets differ).
#[allow(clippy::too_many_arguments)]
fn steady<'a>(
    c: &'a dyn ReplayedFile,
    test: &'a Test,
    entry: Entry,
    fresh: &[MapSnapshot],
    kind: ProgKind,
    cpu: usize,
    empty: BorrowedFd<'a>,
    labels: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Result<Steady<'a>> {
    restore(fresh)?;
    let fd = c.entry_fd(&entry)?;
    let run = || crate::kernel::test_run::run_in(fd, &entry.packet, entry.ctx.as_deref());
    let first = run()?;
    let after_first = c.snapshot()?;
    let mut outputs = Vec::with_capacity(WARM_PACKETS);
    for _ in 0..WARM_PACKETS {
        outputs.push(run()?);
    }
    if let Some(diff) = outputs_differ(kind, &Mask::default(), &first, &outputs[0]) {
        labels.push(format!("the flow's second packet takes another path than its first ({})", one_line(&diff)));
    }
    let last = outputs.last().expect("warm packets").clone();
    if let Some(diff) = outputs_differ(kind, &Mask::default(), &outputs[0], &last) {
        labels.push(format!("its packets still change path after the second ({})", one_line(&diff)));
    }
    // A path that changes after more packets than these has no steady
    // state to time: Cilium's ICMPv6 replies to a service without backends
    // are rate-limited after a burst of 1000, and topped up by the second.
    for k in 0..SETTLE_PACKETS {
        let out = run()?;
        if let Some(diff) = outputs_differ(kind, &Mask::default(), &last, &out) {
            let n = WARM_PACKETS + 2 + k as usize;
            bail!(NotRunnable(format!(
                "not timed: the flow's packets keep changing path (its packet {n} went another way than its packet {}: {}), as behind a rate limiter or a timer: no steady state to time; its fresh row times the first packet",
                WARM_PACKETS + 1,
                one_line(&diff)
            )));
        }
    }
    let restore_bytes =
        match restore_plan(kind, std::slice::from_ref(&entry.packet), std::slice::from_ref(&last.packet)) {
            Restore::Bytes(n) => Ok(n),
            Restore::PerCall(why) => Err(why),
        };
    let built = restore_bytes.map_err(|why| format!("the loop cannot put the packet back: {why}")).and_then(|n| {
        let req = ChainRequest {
            kind,
            entry: fd,
            in_user_runtime: None,
            load_attrs: c.load_attrs(&entry.program).map_err(|e| crate::record::error_line(&e))?,
            variants: std::slice::from_ref(&entry.packet),
            restore: n,
            references: vec![last.clone()],
            mask: Mask::default(),
            ctx: entry.ctx.clone(),
            cpu,
        };
        let what = format!("test {}: the verifier checks the chain loop around its entry", test.name);
        match crate::harness::activity::during(&what, || ChainTimer::build(req)) {
            // A path that changes after many packets fails in the batches:
            // one long batch here finds it before any is timed.
            Ok(Ok(mut t)) => match t.run_batch(true, t.cap().min(STABLE_PASSES)) {
                Ok(_) => Ok((t, n)),
                Err(e) => Err(format!("after many packets, {}", one_line(&crate::record::error_line(&e)))),
            },
            Ok(Err(PerCallBecause { reason, .. })) => Err(reason),
            Err(e) => Err(one_line(&crate::record::error_line(&e))),
        }
    });
    match built {
        Ok((timer, n)) => {
            notes.push(format!(
                "timing: in BPF, the entry entered by a tail call from the chain loop ({} timed passes per test run), state kept between passes; the skb put back after each as the test run made it (mark, cb[], tc_index, priority, queue mapping, timestamp, protocol, packet type, hash); {n} bytes written back per pass",
                timer.per_run
            ));
            notes.extend(timer.reset_notes("the entry"));
            let timing = Timing::Chain { tail_calls: timer.tail_calls, per_run: timer.per_run };
            let overhead = OverheadKey::ChainLoop { kind, per_run: timer.per_run, restore: n, packets: 1 };
            Ok(Steady { timer: Box::new(timer), timing, overhead, after_first })
        }
        Err(why) => {
            let why = match c.encapsulates_for_good() {
                true if why.contains("another output") => format!("{why} ({ENCAPSULATED_FOR_GOOD})"),
                _ => why,
            };
            let reason = format!("the chain loop cannot hold the entry in its steady state: {why}");
            notes.push(format!(
                "timing: per call (one BPF_PROG_TEST_RUN of the entry, timed by the kernel), state kept between calls, because {reason}"
            ));
            let timer = CallTimer {
                state: CallState::Kept,
                collection: c,
                test,
                input: entry,
                entry: fd,
                empty,
                reference: last,
                kind,
            };
            let timing = Timing::PerCall { reason, host_timed: false };
            Ok(Steady { timer: Box::new(timer), timing, overhead: OverheadKey::EmptyTestRun { kind }, after_first })
        }
    }
}

/// The entry's steady state: its timer, and the maps as the flow's first
/// packet left them (what the test's CHECK judges a later packet in).
struct Steady<'a> {
    timer: Box<dyn BatchTimer + 'a>,
    timing: Timing,
    overhead: OverheadKey,
    after_first: Vec<MapSnapshot>,
}
