//! Finding a test framework's tests in its objects, before anything is
//! loaded: Cilium's test programs sit in sections
//! `tc/test/NAME/pktgen|setup|check` (or `xdp/...`), one test a name, and
//! its runner replays a file's tests in sorted name order.

use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::insn::helper;
use crate::kernel::object::ObjectFile;
use crate::kernel::prog_type::ProgKind;
use crate::workloads::bpf_tests::framework::{Test, TestFile};

/// The program type a Cilium section name gives (`tc/...`, `xdp/...`):
/// Cilium's tests are tc and XDP programs, and the replay knows no others.
pub fn section_kind(section: &str) -> Option<ProgKind> {
    ProgKind::of_section(section).filter(|k| matches!(k, ProgKind::Tc | ProgKind::Xdp))
}

/// (test, role) of a test program's section: `PREFIX/test/NAME/ROLE`.
fn test_section(section: &str) -> Option<(&str, &str)> {
    let mut parts = section.split('/');
    let (_, test, name, role) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    (test == "test" && parts.next().is_none() && matches!(role, "pktgen" | "setup" | "check")).then_some((name, role))
}

/// Whether the ELF file at `path` holds test programs (a section
/// `.../test/NAME/check`): what tells a test object from any other.
pub fn holds_tests(path: &Path) -> bool {
    use object::{Object, ObjectSection};
    let Ok(data) = std::fs::read(path) else { return false };
    let Ok(file) = object::File::parse(&*data) else { return false };
    file.sections().any(|s| s.name().is_ok_and(|n| test_section(n).is_some_and(|(_, role)| role == "check")))
}

/// Whether the instructions call `bpf_tail_call`.
fn makes_tail_call(insns: &[crate::insn::Insn]) -> bool {
    insns.iter().any(|i| i.calls_helper(helper::TAIL_CALL))
}

/// Reads the tests of the object at `path` (opened, not loaded); a file
/// libbpf cannot open is kept with the reason.
pub fn read(path: &Path) -> Result<TestFile> {
    let stem = path
        .file_name()
        .map(|f| f.to_string_lossy().trim_end_matches(".o").trim_end_matches(".bpf").to_string())
        .unwrap_or_default();
    let object = match ObjectFile::open_mended(path) {
        Ok((object, _)) => object,
        Err(e) => {
            let why = crate::record::error_line(&e);
            return Ok(TestFile {
                path: path.to_path_buf(),
                stem,
                kind: ProgKind::Tc,
                tests: Vec::new(),
                refused: Some(why),
            });
        }
    };
    let mut tests: Vec<Test> = Vec::new();
    let mut kind = None;
    for p in object.programs() {
        let Some((name, role)) = test_section(&p.section) else { continue };
        kind = kind.or(section_kind(&p.section));
        let i = match tests.iter().position(|t| t.name == name) {
            Some(i) => i,
            None => {
                tests.push(Test {
                    name: name.to_string(),
                    pktgen: None,
                    setup: None,
                    check: String::new(),
                    enters_datapath: false,
                });
                tests.len() - 1
            }
        };
        let t = &mut tests[i];
        match role {
            "pktgen" => t.pktgen = Some(p.name.clone()),
            "setup" => {
                t.enters_datapath = makes_tail_call(&object.insns(&p.name)?);
                t.setup = Some(p.name.clone());
            }
            _ => t.check = p.name.clone(),
        }
    }
    if let Some(t) = tests.iter().find(|t| t.check.is_empty()) {
        bail!("{}: test '{}' has a pktgen or setup program but no check program", path.display(), t.name);
    }
    // Go's sort.Strings: byte order, as Rust's.
    tests.sort_by(|a, b| a.name.cmp(&b.name));
    let kind = kind.with_context(|| format!("{} holds no test programs", path.display()))?;
    Ok(TestFile { path: path.to_path_buf(), stem, kind, tests, refused: None })
}
