//! Command-line interface.

use clap::{Args, Parser, Subcommand};

use crate::report::Format;
use crate::workloads::maps::{MapKind, MapOp};

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
        output: Option<std::path::PathBuf>,
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
        gate: GateArgs,
        /// table, or json for machines.
        #[arg(long, value_enum, default_value_t = CompareFormat::Table)]
        format: CompareFormat,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Interleaved A/B of two bpfbench builds (e.g. before and after a BPF
    /// change): runs A, B, A, B, ... and compares per-run medians, so a slow
    /// phase of the machine hits both sides alike.
    Ab {
        /// bpfbench binary of the baseline build.
        a: std::path::PathBuf,
        /// bpfbench binary of the candidate build.
        b: std::path::PathBuf,
        /// Runs of each build.
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(3..=100))]
        rounds: u64,
        #[command(flatten)]
        gate: GateArgs,
        /// table, or json for machines.
        #[arg(long, value_enum, default_value_t = CompareFormat::Table)]
        format: CompareFormat,
        /// Arguments of `bpfbench run` for both builds (after --), e.g. -- -s tcp-v4-lru-hit
        #[arg(last = true)]
        run_args: Vec<String>,
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
    /// Write the output to this file instead of standard output.
    #[arg(long)]
    pub output: Option<std::path::PathBuf>,
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
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub repeat: u64,
    #[command(flatten)]
    pub gate: GateArgs,
    #[command(flatten)]
    pub db: DbArgs,
    #[command(flatten)]
    pub maps: MapArgs,
}

#[derive(Debug, Args, Clone, Default)]
pub struct DbArgs {
    /// History database (default: $XDG_DATA_HOME/bpfbench/history.sqlite or ~/.local/share/...).
    #[arg(long, value_name = "PATH")]
    pub db: Option<std::path::PathBuf>,
}

impl DbArgs {
    pub fn path(&self) -> std::path::PathBuf {
        self.db.clone().unwrap_or_else(crate::history::default_path)
    }
}

/// Settings of an A/B comparison.
#[derive(Debug, Args, Clone)]
pub struct GateArgs {
    /// Changes smaller than this many percent count as noise.
    #[arg(long, default_value_t = 2.0, value_name = "PCT")]
    pub threshold: f64,
    /// Exit with status 1 when any benchmark is confidently slower by more than PCT percent.
    #[arg(long, value_name = "PCT")]
    pub fail_on_regression: Option<f64>,
    /// A tag stands for up to this many of its newest runs.
    #[arg(long, default_value_t = 10, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub tag_runs: u64,
    /// With `run --compare-to`: re-measure a suspected regression up to N
    /// times and fail only if every re-measurement confirms it.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub confirm: u32,
}

impl Default for GateArgs {
    fn default() -> Self {
        Self { threshold: 2.0, fail_on_regression: None, tag_runs: 10, confirm: 2 }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompareFormat {
    Table,
    Json,
}

/// Options of the map workloads (`lpm-trie`, `maps`).
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Map benchmarks (lpm-trie, maps)")]
pub struct MapArgs {
    /// Operations to time, comma-separated (default: all for lpm-trie;
    /// lookup,update,insert,delete for maps).
    #[arg(long = "op", value_enum, value_delimiter = ',')]
    pub ops: Vec<MapOp>,
    /// Map types, comma-separated (maps only; default: all six).
    #[arg(long = "map", value_enum, value_delimiter = ',')]
    pub maps: Vec<MapKind>,
    /// Map sizes, comma-separated; several make a size sweep (default 10000).
    #[arg(long, value_delimiter = ',')]
    pub entries: Vec<u32>,
    /// LPM prefix length in bits, 1-32 (default 32).
    #[arg(long)]
    pub prefix_len: Option<u32>,
    /// Key size of hash maps in bytes (arrays use 4, lpm_trie 8; default 4).
    #[arg(long)]
    pub key_size: Option<u32>,
    /// Value size in bytes (default 8).
    #[arg(long)]
    pub value_size: Option<u32>,
    /// Random keys instead of sequential ones (baseline, lookup, update only).
    #[arg(long)]
    pub random: bool,
    /// Threads running the op at once, each pinned to its own CPU.
    #[arg(long)]
    pub producers: Option<usize>,
}

impl MapArgs {
    /// Whether any map option was given (they mean nothing to other workloads).
    pub fn any(&self) -> bool {
        !self.ops.is_empty()
            || !self.maps.is_empty()
            || !self.entries.is_empty()
            || self.prefix_len.is_some()
            || self.key_size.is_some()
            || self.value_size.is_some()
            || self.random
            || self.producers.is_some()
    }
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
