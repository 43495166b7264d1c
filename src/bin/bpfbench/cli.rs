//! The command line. Workload options are not listed here: each workload
//! adds its own to `run` through the registry (see `parse`).

use std::path::PathBuf;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use bpfbench::compare::Gate;
use bpfbench::record::Sampling;
use bpfbench::report::Format;
use bpfbench::workloads;

#[derive(Debug, Parser)]
#[command(name = "bpfbench", version, about = "Benchmarks eBPF programs inside the kernel with BPF_PROG_TEST_RUN and in-BPF batch timing")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List workloads and their scenarios.
    List {
        /// Only this workload.
        workload: Option<String>,
    },
    /// Validate and time scenarios (the default suite when no workload is named).
    Run(RunArgs),
    /// List stored runs, newest first (with one benchmark's median via --scenario).
    History {
        /// Show this benchmark's median per run ("xdp-lb/tcp-v4-lru-hit" or just the scenario name).
        #[arg(long, short = 's')]
        scenario: Option<String>,
        /// How many runs to list.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Print a stored run again (by id or tag), in any output format.
    Show {
        /// Run id or tag (the newest run with that tag).
        run: String,
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// Write the output to this file instead of standard output.
        #[arg(long)]
        output: Option<PathBuf>,
        #[arg(short, long)]
        verbose: bool,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Compare two runs (run ids, tags or JSON files): B against A.
    Compare {
        a: String,
        b: String,
        #[command(flatten)]
        gate: Gate,
        #[command(flatten)]
        tags: TagArgs,
        /// table, or json for machines.
        #[arg(long, value_enum, default_value_t = CompareFormat::Table)]
        format: CompareFormat,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Interleaved A/B of two bpfbench builds (e.g. before and after a BPF
    /// change): runs A, B, B, A, ... and compares per-run medians, so a slow
    /// phase of the machine hits both sides alike.
    Ab {
        /// bpfbench binary of the reference build (A).
        a: PathBuf,
        /// bpfbench binary of the candidate build.
        b: PathBuf,
        /// Runs of each build.
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(3..=100))]
        rounds: u64,
        #[command(flatten)]
        gate: Gate,
        /// table, or json for machines.
        #[arg(long, value_enum, default_value_t = CompareFormat::Table)]
        format: CompareFormat,
        /// Arguments of `bpfbench run` for both builds (after --), e.g. -- -s tcp-v4-lru-hit
        #[arg(last = true)]
        run_args: Vec<String>,
    },
    /// What the kernel's verifier makes of each program of an object (two
    /// objects: side by side, with deltas).
    Verifier {
        /// A BPF object file.
        a: PathBuf,
        /// A second object to compare with the first.
        b: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = VerifierFormat::Table)]
        format: VerifierFormat,
    },
    /// Measure the candidate loop constructs for the in-BPF timing loop.
    Loops {
        #[arg(long)]
        cpu: Option<usize>,
        /// Iterations per batch.
        #[arg(long, default_value_t = 1_000_000)]
        iters: u32,
        #[arg(long, default_value_t = 50)]
        samples: usize,
    },
}

#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    /// Workload to run (default: xdp-lb); see 'bpfbench list'.
    pub workload: Option<String>,
    /// Run only this scenario (repeatable).
    #[arg(long = "scenario", short = 's')]
    pub scenarios: Vec<String>,
    /// Run only this group of scenarios (repeatable).
    #[arg(long = "group", short = 'g')]
    pub groups: Vec<String>,
    #[command(flatten)]
    pub sampling: Sampling,
    /// Pin the run to this CPU (default: the last CPU this process may use).
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Show validation, calibration, proportionality and a histogram per scenario.
    #[arg(short, long)]
    pub verbose: bool,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the output to this file instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Name this run in the history (e.g. a branch or commit).
    #[arg(long)]
    pub tag: Option<String>,
    /// Do not store this run in the history.
    #[arg(long)]
    pub no_store: bool,
    /// After the run, compare it against the stored runs with this tag.
    #[arg(long, value_name = "TAG")]
    pub compare_to: Option<String>,
    /// Measure the selection N times over (each round stored as a run);
    /// comparisons then work on per-run medians. The output shows the last round.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    #[command(flatten)]
    pub gate: Gate,
    /// With --compare-to: re-measure a suspected regression up to N times
    /// and fail only if every re-measurement confirms it.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub confirm: u32,
    #[command(flatten)]
    pub tags: TagArgs,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Debug, Args, Clone, Default)]
pub struct DbArgs {
    /// History database (default: $XDG_DATA_HOME/bpfbench/history.sqlite or ~/.local/share/...).
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

impl DbArgs {
    pub fn path(&self) -> PathBuf {
        self.db.clone().unwrap_or_else(bpfbench::history::default_path)
    }
}

#[derive(Debug, Args, Clone)]
pub struct TagArgs {
    /// A tag stands for up to this many of its newest runs.
    #[arg(long, default_value_t = 10, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub tag_runs: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum VerifierFormat {
    Table,
    Json,
    Csv,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompareFormat {
    Table,
    Json,
}

/// The parsed command line, and the `run` options the workloads read.
pub struct Parsed {
    pub cli: Cli,
    /// `run`'s matches (the default suite's when no command was given).
    pub run_matches: Option<clap::ArgMatches>,
}

/// Parses the process's arguments; `bpfbench` alone means `bpfbench run`.
///
/// Each workload has options of its own (two may even share a flag with
/// different meanings), so `run` is parsed twice: once with every
/// workload's options, loosely, to find the workload named; then with that
/// workload's options only.
pub fn parse() -> Parsed {
    let mut argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv.len() == 1 {
        argv.push("run".into());
    }
    // Help would end the probe before it found the workload: leave it out.
    let without_help: Vec<&std::ffi::OsString> = argv.iter().filter(|a| *a != "--help" && *a != "-h").collect();
    let probe = Cli::command().mut_subcommand("run", workloads::with_all_options).try_get_matches_from(without_help).ok();
    let probed_run = probe.as_ref().and_then(|m| m.subcommand_matches("run"));
    let target = probed_run.and_then(|m| m.get_one::<String>("workload").cloned()).unwrap_or_else(|| workloads::DEFAULT.to_string());
    if let Some(run) = probed_run
        && let Err(e) = workloads::check_options(&target, run)
    {
        eprintln!("bpfbench: error: {e}");
        std::process::exit(1);
    }
    let command = Cli::command().mut_subcommand("run", |c| {
        workloads::with_options_of(&target, c).after_help(
            "Workloads have options of their own: 'bpfbench run WORKLOAD --help' shows them (lpm-trie and maps: the map options; FILE.bpf.o or FILE.toml: your own program's).",
        )
    });
    let matches = command.get_matches_from(&argv);
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let run_matches = matches.subcommand_matches("run").cloned();
    Parsed { cli, run_matches }
}
