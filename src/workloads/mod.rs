//! The registry of workloads. Each lives in its own folder with its BPF C
//! beside the Rust that drives it, and registers here in one line.

pub mod attached;
pub mod bpf_tests;
pub mod corpus;
#[cfg(test)]
mod example;
pub mod live;
pub mod maps;
pub mod object;
pub mod tool;
pub mod xdp_lb;

use std::collections::HashSet;

use anyhow::{Result, bail};
use clap::parser::ValueSource;
use clap::{Arg, ArgAction, Command};

use crate::harness::Workload;

/// Every workload, in `bpfbench list` order. Adding a workload is one line here.
pub const REGISTRY: &[&Registration] = &[
    &xdp_lb::REGISTRATION,
    &maps::REGISTRATION,
    &corpus::REGISTRATION,
    &bpf_tests::REGISTRATION,
    &attached::REGISTRATION,
    &tool::REGISTRATION,
    &object::REGISTRATION,
];

/// The workload `bpfbench run` runs when none is named.
pub const DEFAULT: &str = "xdp-lb";

/// How a workload is found and built from the command line.
pub struct Registration {
    /// Names `bpfbench run NAME` accepts (a folder may offer several suites).
    pub names: &'static [&'static str],
    /// One line for help texts.
    pub about: &'static str,
    /// Whether a target that is no workload's name is this workload's (a
    /// file, a folder): the one registration that claims it for sure, else
    /// the one that takes it as a fallback, whatever the registry's order.
    pub claims: fn(&str) -> Claim,
    /// An option of this workload's that, given on the command line, makes
    /// the target this workload's whatever it names (`--tests cilium DIR`).
    pub selected_by: Option<&'static str>,
    /// Adds the workload's own options to a command (clap's
    /// `Args::augment_args` of its options struct).
    pub options: fn(Command) -> Command,
    /// Builds the workload for `target` (a name or a file) from the parsed command line.
    pub build: fn(target: &str, matches: &clap::ArgMatches) -> Result<Box<dyn Workload>>,
    /// Builds the workload on another build of its own BPF object (for
    /// `bpfbench ab --workload NAME A.o B.o`); None where it has none.
    pub with_object: Option<BuildWithObject>,
}

/// Builds a workload for `target` on the BPF object at `object`.
pub type BuildWithObject =
    fn(target: &str, matches: &clap::ArgMatches, object: &std::path::Path) -> Result<Box<dyn Workload>>;

/// How a registration claims a target that names no workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    No,
    /// Its, unless another registration claims it for sure (any file is a
    /// BPF object to the own-object workload, unless it holds a test
    /// framework's tests).
    Fallback,
    /// Its for sure: no other registration may say so too.
    Yes,
}

/// Claims nothing beyond the registration's names.
pub fn no_files(_: &str) -> Claim {
    Claim::No
}

impl Registration {
    /// (id, flag) of each option this registration adds.
    fn flags(&self) -> Vec<(String, String)> {
        (self.options)(Command::new("bpfbench"))
            .get_arguments()
            .map(|a| {
                (a.get_id().to_string(), a.get_long().map_or_else(|| a.get_id().to_string(), |l| format!("--{l}")))
            })
            .collect()
    }

    fn describe(&self) -> String {
        if self.names.is_empty() { self.about.to_string() } else { self.names.join(" and ") }
    }
}

/// The registration an option given on the command line selects, if any.
fn selected(matches: Option<&clap::ArgMatches>) -> Option<&'static Registration> {
    let m = matches?;
    REGISTRY.iter().copied().find(|r| {
        r.selected_by.is_some_and(|id| {
            m.try_contains_id(id).unwrap_or(false) && m.value_source(id) == Some(ValueSource::CommandLine)
        })
    })
}

/// Whether an option given on the command line names the workload
/// (`--tests cilium`), whatever its target is.
pub fn chosen_by_option(matches: &clap::ArgMatches) -> bool {
    selected(Some(matches)).is_some()
}

/// The registration that runs `target` on the command line `matches`: the
/// one an option given selects, else as [`find`].
fn find_given(target: &str, matches: Option<&clap::ArgMatches>) -> Result<&'static Registration> {
    match selected(matches) {
        Some(r) => Ok(r),
        None => find(target),
    }
}

/// The registration that runs `target`: the one naming it, else the one claiming it.
fn find(target: &str) -> Result<&'static Registration> {
    find_in(REGISTRY, target)
}

/// The registration of `registry` that runs `target`: the one naming it,
/// else the one claiming it for sure, else the one taking it as a
/// fallback. Two that claim it alike are a bug of theirs, said as such.
fn find_in(registry: &[&'static Registration], target: &str) -> Result<&'static Registration> {
    if let Some(r) = registry.iter().find(|r| r.names.contains(&target)) {
        return Ok(r);
    }
    // Each asked once: a claim may read the file (a test object's sections).
    let claims: Vec<(Claim, &'static Registration)> = registry.iter().map(|r| ((r.claims)(target), *r)).collect();
    for claim in [Claim::Yes, Claim::Fallback] {
        let claimants: Vec<&'static Registration> =
            claims.iter().filter(|(c, _)| *c == claim).map(|(_, r)| *r).collect();
        match claimants.as_slice() {
            [] => continue,
            [r] => return Ok(r),
            many => bail!(
                "'{target}' is claimed alike by {}: bpfbench cannot tell which runs it (a bug: report it); name the workload's option to choose (--tests)",
                many.iter().map(|r| r.about).collect::<Vec<_>>().join(" and ")
            ),
        }
    }
    bail!(
        "unknown workload '{target}'; valid workloads: {}, or a BPF object (FILE.bpf.o) or spec file (FILE.toml)",
        names().join(", ")
    )
}

/// Every workload name, in registry order.
pub fn names() -> Vec<&'static str> {
    REGISTRY.iter().flat_map(|r| r.names.iter().copied()).collect()
}

/// An object file named that is not there: which workload takes a file
/// (and so which options it has) is read from it, so any workload's
/// options parse, and building it says the file is missing.
fn missing_object(target: &str) -> bool {
    target.ends_with(".o") && !std::path::Path::new(target).exists()
}

/// Adds `target`'s options to `cmd` (the `run` command); none when the
/// target is unknown, so that its error comes from `build`.
pub fn with_options_of(target: &str, probed: Option<&clap::ArgMatches>, cmd: Command) -> Command {
    if missing_object(target) {
        return with_all_options(cmd);
    }
    match find_given(target, probed) {
        Ok(r) => (r.options)(cmd),
        Err(_) => cmd,
    }
}

/// Adds every workload's options to `cmd`, each taking any value: enough to
/// parse any command line far enough to find the workload it names.
pub fn with_all_options(cmd: Command) -> Command {
    let mut seen = HashSet::new();
    let mut cmd = cmd;
    for r in REGISTRY {
        for a in (r.options)(Command::new("bpfbench")).get_arguments() {
            if !seen.insert(a.get_id().to_string()) {
                continue;
            }
            let mut p = Arg::new(a.get_id().to_string()).hide(true);
            if let Some(l) = a.get_long() {
                p = p.long(l.to_string());
            }
            p = if a.get_action().takes_values() {
                p = p.action(ArgAction::Append).value_parser(clap::value_parser!(String));
                // An option whose value may be left out (`--attach`, `--trigger`).
                match a.get_num_args().is_some_and(|n| n.min_values() == 0) {
                    true => p.num_args(0..=1).default_missing_value(""),
                    false => p,
                }
            } else {
                p.action(ArgAction::SetTrue)
            };
            cmd = cmd.arg(p);
        }
    }
    cmd
}

/// Refuses, in one line, an option given on the command line (`matches`
/// from a command built by [`with_all_options`]) that only other
/// workloads than `target`'s take.
pub fn check_options(target: &str, matches: &clap::ArgMatches) -> Result<()> {
    if missing_object(target) {
        return Ok(());
    }
    let Ok(chosen) = find_given(target, Some(matches)) else { return Ok(()) };
    let own = chosen.flags();
    for other in REGISTRY.iter().filter(|r| !std::ptr::eq(**r, chosen)) {
        for (id, flag) in other.flags().iter().filter(|(id, _)| !own.iter().any(|(o, _)| o == id)) {
            if matches.value_source(id) == Some(ValueSource::CommandLine) {
                // Every workload that takes it (an option may be shared).
                let takers: Vec<String> =
                    REGISTRY.iter().filter(|r| r.flags().iter().any(|(i, _)| i == id)).map(|r| r.describe()).collect();
                bail!("{flag} applies to {}, not to {target}", takers.join(" and "));
            }
        }
    }
    Ok(())
}

/// Builds the workload for `target` from a command parsed with its options.
pub fn build(target: &str, matches: &clap::ArgMatches) -> Result<Box<dyn Workload>> {
    if missing_object(target) {
        bail!("{target} does not exist");
    }
    (find_given(target, Some(matches))?.build)(target, matches)
}

/// Builds the workload `name` on `object`, a build of its own BPF source.
pub fn build_with_object(
    name: &str,
    matches: &clap::ArgMatches,
    object: &std::path::Path,
) -> Result<Box<dyn Workload>> {
    let r = find(name)?;
    match r.with_object {
        Some(build) if r.names.contains(&name) => build(name, matches, object),
        _ => bail!(
            "{name} does not load another build of its BPF object; --workload takes: {}",
            with_objects().join(", ")
        ),
    }
}

/// The workloads that can load other builds of their BPF object.
pub fn with_objects() -> Vec<&'static str> {
    REGISTRY.iter().filter(|r| r.with_object.is_some()).flat_map(|r| r.names.iter().copied()).collect()
}

/// The workload for `target` with default options (for listing its scenarios).
pub fn with_defaults(target: &str) -> Result<Box<dyn Workload>> {
    let r = find(target)?;
    let matches = (r.options)(Command::new("bpfbench")).try_get_matches_from(["bpfbench"])?;
    (r.build)(target, &matches)
}

/// `bpfbench list`: each workload (or the one named), its groups and
/// their scenarios with what each measures.
pub fn listing(workload: Option<&str>) -> Result<String> {
    let mut out = String::new();
    let all: Vec<&str> = match workload {
        Some(w) => vec![w],
        None => names(),
    };
    for name in all {
        let w = match with_defaults(name) {
            Ok(w) => w,
            // Its scenarios come from what it is given (a tool's command).
            Err(e) if workload.is_none() => {
                out += &format!(
                    "{name}\n  (its scenarios come from what it is given: {})\n",
                    crate::record::error_line(&e)
                );
                continue;
            }
            Err(e) => return Err(e),
        };
        out += &format!("{}\n", w.name());
        for g in crate::harness::groups(w.scenarios()) {
            out += &format!("  {g}\n");
            for s in w.scenarios().iter().filter(|s| s.group == g) {
                out += &format!("    {:<24} {}\n", s.name, s.description);
            }
        }
    }
    Ok(out)
}

/// The registry with the command line's workload options, as the paired
/// comparison takes its builds.
pub struct FromCommandLine<'m>(pub &'m clap::ArgMatches);

impl crate::session::paired_request::WorkloadSource for FromCommandLine<'_> {
    fn build(&self, target: &str) -> Result<Box<dyn Workload>> {
        build(target, self.0)
    }

    fn build_with_object(&self, name: &str, object: &std::path::Path) -> Result<Box<dyn Workload>> {
        build_with_object(name, self.0, object)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which workload runs a target does not depend on the registry's
    /// order: each target is found alike in the registry as it is and
    /// reversed, and a test object is the test runner's, not a BPF object
    /// to time whole.
    #[test]
    fn a_target_is_found_alike_whatever_the_registry_order() {
        let objects = concat!(env!("OUT_DIR"), "/test-objects");
        let (empty, tests_only) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (empty, tests_only) = (empty.path(), tests_only.path());
        std::fs::copy(format!("{objects}/tc_framework_tests.bpf.o"), tests_only.join("tc_framework_tests.o")).unwrap();
        let cases = [
            ("xdp-lb".to_string(), &xdp_lb::REGISTRATION),
            ("examples/corpus".to_string(), &corpus::REGISTRATION),
            ("examples/corpus/katran-root.toml".to_string(), &object::REGISTRATION),
            (format!("{objects}/xdp_drop.bpf.o"), &object::REGISTRATION),
            (format!("{objects}/tc_framework_tests.bpf.o"), &bpf_tests::REGISTRATION),
            (tests_only.display().to_string(), &bpf_tests::REGISTRATION),
            // A folder of nothing: the test runner says it holds no tests.
            (empty.display().to_string(), &bpf_tests::REGISTRATION),
        ];
        let reversed: Vec<&'static Registration> = REGISTRY.iter().rev().copied().collect();
        for (target, want) in cases {
            for registry in [REGISTRY, &reversed[..]] {
                let got = find_in(registry, &target).unwrap();
                assert!(std::ptr::eq(got, want), "{target}: found {}, not {}", got.about, want.about);
            }
        }
    }
}
