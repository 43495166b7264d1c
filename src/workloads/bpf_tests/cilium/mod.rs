//! Cilium's bpf/tests as a test framework: test programs in sections
//! `tc/test/NAME/pktgen|setup|check` (or `xdp/...`), found before anything
//! is loaded ([`suite`]); each object replayed as Cilium's Go runner
//! replays it ([`collection`]); a `CHECK`'s report decoded from its
//! protobuf ([`result`]).

mod collection;
mod result;
mod suite;

use std::path::Path;

use anyhow::Result;

use super::framework::{Judgement, ReplayedFile, TestFile, TestFramework};

/// Cilium's bpf/tests: PKTGEN, SETUP and CHECK programs per test.
pub struct Cilium;

impl TestFramework for Cilium {
    fn name(&self) -> &'static str {
        "cilium"
    }

    fn holds_tests(&self, path: &Path) -> bool {
        suite::holds_tests(path)
    }

    fn no_tests_in_file(&self, path: &Path) -> String {
        format!(
            "{} holds no test programs (no section PREFIX/test/NAME/check): give a test object built from Cilium's bpf/tests (examples/corpus/build.sh --cilium-tests builds them)",
            path.display()
        )
    }

    fn no_tests_in_folder(&self, path: &Path) -> String {
        format!(
            "{} holds no test objects (*.o with sections PREFIX/test/NAME/check): build them with examples/corpus/build.sh --cilium-tests {}",
            path.display(),
            path.display()
        )
    }

    fn read(&self, path: &Path) -> Result<TestFile> {
        suite::read(path)
    }

    fn replay(&self, file: &TestFile) -> Result<Box<dyn ReplayedFile>> {
        Ok(Box::new(collection::Collection::load(file)?))
    }
}

impl From<result::CheckOutcome> for Judgement {
    fn from(o: result::CheckOutcome) -> Judgement {
        Judgement { passed: o.passed(), subtests: o.subtests(), explanation: o.explain() }
    }
}
