//! The seam between the generic test runner (find, replay, split, time in
//! the steady and fresh states: `mod.rs`, `per_call.rs`) and one test
//! framework's ways: where its tests are, how its runner replays them, how
//! a test judges an output, and which entry a test drives. Cilium's
//! bpf/tests is the first framework ([`super::cilium`]); another is one
//! more `impl TestFramework` and one entry in [`FRAMEWORKS`].

use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::kernel::AttachType;
use crate::kernel::map_snapshot::MapSnapshot;
use crate::kernel::prog_type::ProgKind;
use crate::kernel::test_run::RunOutput;

/// Every framework bpfbench replays, by the name `--tests NAME` takes.
pub static FRAMEWORKS: &[&dyn TestFramework] = &[&super::cilium::Cilium];

/// The framework `--tests NAME` names.
pub fn named(name: &str) -> Result<&'static dyn TestFramework> {
    match FRAMEWORKS.iter().find(|f| f.name() == name) {
        Some(f) => Ok(*f),
        None => bail!("--tests {name}: no such test framework; bpfbench replays: {}", names().join(", ")),
    }
}

/// The frameworks' names, for `--tests`.
pub fn names() -> Vec<&'static str> {
    FRAMEWORKS.iter().map(|f| f.name()).collect()
}

/// A framework of BPF unit tests.
pub trait TestFramework: Sync {
    /// Its name in `--tests NAME` and in benchmark names ("cilium").
    fn name(&self) -> &'static str;
    /// Whether the file at `path` holds this framework's tests.
    fn holds_tests(&self, path: &Path) -> bool;
    /// What to say of a file at `path` that holds none of its tests, and
    /// of a folder that holds no object of them: what its tests look like
    /// and what builds them.
    fn no_tests_in_file(&self, path: &Path) -> String;
    fn no_tests_in_folder(&self, path: &Path) -> String;
    /// The tests of the object at `path`, in the order its runner replays
    /// them (opened, not loaded); a file that cannot be opened is kept with
    /// the reason.
    fn read(&self, path: &Path) -> Result<TestFile>;
    /// Loads `file` and replays its tests as the framework's runner does.
    fn replay(&self, file: &TestFile) -> Result<Box<dyn ReplayedFile>>;
}

/// A test: the programs its framework runs (a packet generator and a
/// setup, both optional, and the check that judges), and whether its
/// setup jumps into a datapath entry, which is what gets timed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Test {
    pub name: String,
    pub pktgen: Option<String>,
    pub setup: Option<String>,
    pub check: String,
    pub enters_datapath: bool,
}

/// A test object: its tests, in the order its runner replays them.
#[derive(Debug, Clone)]
pub struct TestFile {
    pub path: PathBuf,
    /// The file's name without `.o`: its benchmarks' group.
    pub stem: String,
    pub kind: ProgKind,
    pub tests: Vec<Test>,
    /// Why the file cannot be replayed, if it cannot: it then stands as
    /// one scenario that fails with this reason.
    pub refused: Option<String>,
}

/// What a test's check said of an output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    pub passed: bool,
    /// Its subtests, as "name: status".
    pub subtests: Vec<String>,
    /// Why it did not pass, on one line.
    pub explanation: String,
}

/// The datapath entry a test's setup jumps into, and what it is given.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The program in the slot the setup reached.
    pub program: String,
    /// "entry_call_map[0]", for notes.
    pub slot: String,
    pub packet: Vec<u8>,
    /// The context (tc: `__sk_buff` as the setup left it), if any.
    pub ctx: Option<Vec<u8>>,
    /// The entry's output in the replay.
    pub output: RunOutput,
}

/// One run of a test's entry: its output and the context after it.
pub struct EntryRun {
    pub output: RunOutput,
    pub ctx: Option<Vec<u8>>,
}

/// One test as the replay ran it.
pub struct Replayed {
    pub test: Test,
    /// What its check said, or why the replay could not get that far.
    pub outcome: std::result::Result<Judgement, String>,
    /// The entry the setup jumped into in the replay, or why it cannot be
    /// timed on its own (None: the test drives no entry).
    pub entry: Option<std::result::Result<Entry, String>>,
}

/// The setup run again up to its jump: the entry's input and the maps as
/// the setup left them (the test's fresh state).
pub struct Split {
    pub entry: Entry,
    pub fresh: Vec<MapSnapshot>,
}

/// A test object loaded and replayed: what the generic runner asks of it.
pub trait ReplayedFile {
    fn kind(&self) -> ProgKind;
    /// Each test as the replay ran it, in its order.
    fn replayed(&self) -> &[Replayed];
    /// Facts for every test's notes (slots filled, programs made global).
    fn notes(&self) -> &[String];
    /// Whether a program of the object encapsulates for good: said where
    /// the chain loop then gives another output.
    fn encapsulates_for_good(&self) -> bool;
    /// Test `t`'s setup run again from the maps as they were before it, up
    /// to its jump; or why it reached no entry.
    fn split(&self, t: usize) -> Result<std::result::Result<Split, String>>;
    /// The entry run once on `entry`'s input, from the maps as they are.
    fn run_entry(&self, entry: &Entry) -> Result<EntryRun>;
    /// The entry run, then `test`'s check on its output as the runner's
    /// sequence gives it; what the check writes stays.
    fn run_entry_and_check(&self, test: &Test, entry: &Entry) -> Result<(RunOutput, Judgement)>;
    /// `test`'s check on `run`, seeing the maps `seen`, which are `seen` again after it.
    fn judge(&self, test: &Test, run: &EntryRun, seen: &[MapSnapshot]) -> Result<Judgement>;
    /// Every map a program may write and bpfbench can put back, now.
    fn snapshot(&self) -> Result<Vec<MapSnapshot>>;
    fn entry_fd(&self, entry: &Entry) -> Result<BorrowedFd<'_>>;
    /// A program's expected attach type and flags.
    fn load_attrs(&self, program: &str) -> Result<(AttachType, u32)>;
}

/// The test objects at `path` for `framework`: the file, or a folder's
/// `*.o` files that hold its tests, by name.
pub fn test_files(framework: &dyn TestFramework, path: &Path) -> Result<Vec<PathBuf>> {
    if !path.exists() {
        bail!("{} does not exist: give a test object or a folder of them", path.display());
    }
    if !path.is_dir() {
        if !framework.holds_tests(path) {
            bail!(framework.no_tests_in_file(path));
        }
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .with_context(|| format!("cannot read the folder {}", path.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "o") && framework.holds_tests(p))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!(framework.no_tests_in_folder(path));
    }
    Ok(files)
}

/// Whether the folder at `path` holds an object of any framework's tests.
pub fn holds_test_objects(path: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(path) else { return false };
    entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .any(|p| p.extension().is_some_and(|e| e == "o") && FRAMEWORKS.iter().any(|f| f.holds_tests(&p)))
}
