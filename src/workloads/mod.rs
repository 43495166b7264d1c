//! The registry of workloads. Each lives in its own folder with its BPF C
//! beside the Rust that drives it, and registers here in one line.

pub mod maps;
pub mod xdp_lb;

use anyhow::{Result, bail};
use clap::parser::ValueSource;

use crate::harness::Workload;

/// Every workload, in `bpfbench list` order. Adding a workload is one line here.
pub const REGISTRY: &[&Registration] = &[&xdp_lb::REGISTRATION, &maps::REGISTRATION];

/// The workload `bpfbench run` runs when none is named.
pub const DEFAULT: &str = "xdp-lb";

/// How a workload is found and built from the command line.
pub struct Registration {
    /// Names `bpfbench run NAME` accepts (a folder may offer several suites).
    pub names: &'static [&'static str],
    /// One line for help texts.
    pub about: &'static str,
    /// Adds the workload's own options to a command (clap's
    /// `Args::augment_args` of its options struct); other workloads refuse them.
    pub options: fn(clap::Command) -> clap::Command,
    /// Builds workload `name` from the parsed command line.
    pub build: fn(name: &str, matches: &clap::ArgMatches) -> Result<Box<dyn Workload>>,
}

impl Registration {
    /// (id, flag) of each option this registration adds.
    fn options(&self) -> Vec<(String, String)> {
        (self.options)(clap::Command::new("bpfbench"))
            .get_arguments()
            .map(|a| (a.get_id().to_string(), a.get_long().map_or_else(|| a.get_id().to_string(), |l| format!("--{l}"))))
            .collect()
    }
}

fn find(name: &str) -> Result<&'static Registration> {
    match REGISTRY.iter().find(|r| r.names.contains(&name)) {
        Some(r) => Ok(r),
        None => bail!("unknown workload '{name}'; valid workloads: {}", names().join(", ")),
    }
}

/// Every workload name, in registry order.
pub fn names() -> Vec<&'static str> {
    REGISTRY.iter().flat_map(|r| r.names.iter().copied()).collect()
}

/// Adds every workload's options to `cmd` (the `run` command).
pub fn with_options(cmd: clap::Command) -> clap::Command {
    REGISTRY.iter().fold(cmd, |cmd, r| (r.options)(cmd))
}

/// Builds workload `name` from a command parsed with [`with_options`].
/// An option given on the command line that belongs only to other
/// workloads is an error naming the workloads it applies to.
pub fn build(name: &str, matches: &clap::ArgMatches) -> Result<Box<dyn Workload>> {
    let chosen = find(name)?;
    let own = chosen.options();
    for other in REGISTRY.iter().filter(|r| !std::ptr::eq(**r, chosen)) {
        for (id, flag) in other.options().iter().filter(|o| !own.contains(o)) {
            if matches.value_source(id) == Some(ValueSource::CommandLine) {
                bail!("{flag} applies to the {} workloads, not to {name}", other.names.join(" and "));
            }
        }
    }
    (chosen.build)(name, matches)
}

/// Workload `name` with default options (for listing its scenarios).
pub fn with_defaults(name: &str) -> Result<Box<dyn Workload>> {
    let r = find(name)?;
    let matches = (r.options)(clap::Command::new("bpfbench")).try_get_matches_from(["bpfbench"])?;
    (r.build)(name, &matches)
}
