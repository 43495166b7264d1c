//! Command-line interface.

use clap::{Args, Parser, Subcommand};

use crate::report::Format;

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
    /// Workload to run (default: xdp-lb).
    pub workload: Option<String>,
    /// Run only this scenario (repeatable).
    #[arg(long = "scenario", short = 's')]
    pub scenarios: Vec<String>,
    /// Run only this group of scenarios (repeatable).
    #[arg(long = "group", short = 'g')]
    pub groups: Vec<String>,
    /// Samples (timed batches) per scenario.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(2..=100_000))]
    pub samples: u64,
    /// Target duration of one batch, in milliseconds.
    #[arg(long, default_value_t = 10.0)]
    pub batch_ms: f64,
    /// Warm-up per scenario, in seconds.
    #[arg(long, default_value_t = 0.1)]
    pub warmup: f64,
    /// Stop sampling a scenario after this many seconds.
    #[arg(long, default_value_t = 10.0)]
    pub max_time: f64,
    /// Pin the run to this CPU (default: the last CPU this process may use).
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Show validation, calibration, proportionality and a histogram per scenario.
    #[arg(short, long)]
    pub verbose: bool,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

impl RunArgs {
    /// `bpfbench` with no subcommand: the default suite with default options.
    pub fn default_suite() -> RunArgs {
        match Cli::parse_from(["bpfbench", "run"]).command {
            Some(Command::Run(args)) => args,
            _ => unreachable!("'run' parses to Command::Run"),
        }
    }
}
