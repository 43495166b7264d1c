//! The command line. Workload options are not listed here: each workload
//! adds its own to `run` through the registry (see `parse`).

use std::path::PathBuf;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use bpfbench::compare::Gate;
use bpfbench::harness::paired::PairedSettings;
use bpfbench::history::{DbOption, StoreOptions, TagRuns};
use bpfbench::record::traffic::FlowOrder;
use bpfbench::record::{Metric, Runtime, Sampling};
use bpfbench::report::Format;
use bpfbench::session::Selection;
use bpfbench::traffic::SendOptions;
use bpfbench::workloads;

#[derive(Debug, Parser)]
#[command(
    name = "bpfbench",
    version,
    about = "Benchmarks eBPF programs inside the kernel with BPF_PROG_TEST_RUN and in-BPF batch timing"
)]
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
        /// List stored paired comparisons ('bpfbench ab') instead of runs.
        #[arg(long, conflicts_with = "scenario")]
        ab: bool,
        /// List stored live runs ('bpfbench live') instead of runs.
        #[arg(long, conflicts_with_all = ["scenario", "ab"])]
        live: bool,
        #[command(flatten)]
        db: DbOption,
    },
    /// Print a stored run again (by id or tag), in any output format.
    Show {
        /// Run id or tag (the newest run with that tag); with --ab, a paired comparison's id.
        run: String,
        /// Show a stored paired comparison ('bpfbench history --ab' lists them).
        #[arg(long)]
        ab: bool,
        /// Show a stored live run ('bpfbench history --live' lists them).
        #[arg(long, conflicts_with = "ab")]
        live: bool,
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// Write the output to this file instead of standard output.
        #[arg(long)]
        output: Option<PathBuf>,
        #[arg(short, long)]
        verbose: bool,
        #[command(flatten)]
        db: DbOption,
    },
    /// Compare two runs (run ids, tags or JSON files): B against A.
    Compare {
        a: String,
        b: String,
        #[command(flatten)]
        gate: Gate,
        #[command(flatten)]
        tags: TagRuns,
        /// table, or json for machines.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        #[command(flatten)]
        db: DbOption,
    },
    /// Paired A/B of two builds: each case timed in alternation on one CPU
    /// in ~1 ms batches (A B B A ...), in rounds that set both builds up
    /// afresh and validate the case on both (outputs compared); per case the
    /// B/A ratio with its 95% interval and a verdict. A and B are two BPF
    /// objects of your own, two builds of a built-in workload's object
    /// (--workload), or two bpfbench executables (run arguments after --).
    Ab(PairedArgs),
    /// Serves a paired comparison's batches on stdin/stdout (started by
    /// 'bpfbench ab' with two executables; takes the arguments of 'run').
    #[command(hide = true)]
    AbWorker {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        run_args: Vec<String>,
    },
    /// Send packets out of an interface at line rate with XDP live frames
    /// (BPF_PROG_RUN), the flows of a packet spec varied inside BPF.
    Gen(GenArgs),
    /// Attach a program to a veth in a namespace of bpfbench's own and
    /// measure it under generated traffic: packet rates, verdicts, ns/packet
    /// (bpf_stats), optionally swept over ports, sizes, flows or threads.
    Live(LiveArgs),
    /// What the kernel's verifier makes of each program of an object (two
    /// objects: side by side, with deltas).
    Verifier {
        /// A BPF object file.
        a: PathBuf,
        /// A second object to compare with the first.
        b: Option<PathBuf>,
        /// table, json or csv.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Fuzz the userspace runtime: random bytecode, and xdp-lb's programs
    /// with a few instructions mutated, run on its maps and packets; every
    /// program must end in a verdict or an error, never a crash or a hang.
    FuzzUvm {
        /// Programs to run.
        #[arg(long, default_value_t = 1_000_000)]
        programs: u64,
        /// Seed of the program generator (the same seed, the same programs).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Instructions a program may execute before it is stopped.
        #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
        budget: u64,
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
    #[command(flatten)]
    pub select: Selection,
    #[command(flatten)]
    pub sampling: Sampling,
    /// Pin the run to this CPU (default: the last CPU this process may use).
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Where the programs run: the kernel, bpfbench's userspace runtime (the
    /// same relocated instructions, same validation and timing), or both
    /// side by side with their ratio [default: kernel; user with --metric insns].
    #[arg(long, value_enum)]
    pub runtime: Option<RuntimeChoice>,
    /// What to measure: time per operation, or the BPF instructions,
    /// helper calls and map operations per packet, counted by the userspace
    /// runtime (deterministic: a noise-free figure for CI).
    #[arg(long, value_enum, default_value_t = Metric::Time)]
    pub metric: Metric,
    /// Show where each packet's instructions go: per source line (where the
    /// object has line records), per helper and per map operation, counted
    /// by the userspace runtime. Implies --metric insns.
    #[arg(long)]
    pub profile: bool,
    /// Show validation, calibration, proportionality and a histogram per scenario.
    #[arg(short, long)]
    pub verbose: bool,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the output to this file instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreOptions,
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
    pub tags: TagRuns,
}

/// `--runtime`'s values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RuntimeChoice {
    Kernel,
    User,
    Both,
}

impl RunArgs {
    /// What is measured: `--profile` counts instructions.
    pub fn metric(&self) -> Metric {
        if self.profile { Metric::Insns } else { self.metric }
    }

    /// The runtimes each scenario runs in, in order; refuses what
    /// `--metric` cannot be measured in.
    pub fn runtimes(&self) -> anyhow::Result<Vec<Runtime>> {
        if self.profile && matches!(self.runtime, Some(RuntimeChoice::Kernel | RuntimeChoice::Both)) {
            anyhow::bail!("--profile counts in the userspace runtime only; drop --runtime or use --runtime user");
        }
        match (self.metric(), self.runtime) {
            (Metric::Insns, Some(RuntimeChoice::Kernel | RuntimeChoice::Both)) => {
                anyhow::bail!(
                    "--metric insns counts in the userspace runtime only; drop --runtime or use --runtime user"
                )
            }
            (Metric::Insns, _) | (_, Some(RuntimeChoice::User)) => Ok(vec![Runtime::User]),
            (_, None | Some(RuntimeChoice::Kernel)) => Ok(vec![Runtime::Kernel]),
            (_, Some(RuntimeChoice::Both)) => Ok(vec![Runtime::Kernel, Runtime::User]),
        }
    }
}

#[derive(Debug, Args, Clone)]
pub struct GenArgs {
    /// The interface to send on (it must take XDP redirects: a veth whose
    /// peer has an XDP program, or a NIC driver with ndo_xdp_xmit).
    pub interface: String,
    /// The packets, in the packet language; ranges of addresses and ports
    /// are flows, varied per frame (repeatable: the packets take turns).
    #[arg(long = "packet", value_name = "SPEC")]
    pub packets: Vec<String>,
    /// Send the packets of this capture (pcap or pcapng), as they are.
    #[arg(long, value_name = "FILE", conflicts_with = "packets")]
    pub pcap: Option<PathBuf>,
    /// TCP mode: connect to this listening socket (ADDR:PORT, [ADDR]:PORT
    /// for IPv6) over the interface and send it a stream from XDP; the
    /// interface's XDP hook takes the return path. --count counts segments.
    #[arg(long, value_name = "ADDR:PORT", conflicts_with_all = ["packets", "pcap", "flow_order"])]
    pub tcp: Option<std::net::SocketAddr>,
    #[command(flatten)]
    pub send: SendOptions,
    /// Stop after this many seconds.
    #[arg(long, value_name = "S", value_parser = bpfbench::record::positive)]
    pub duration: Option<f64>,
    /// Stop after this many frames (over all threads); TCP mode: after this
    /// many segments of the stream, the last with FIN.
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
    /// sequential: frame n carries flow n mod flows; random: each frame's flow drawn at random.
    #[arg(long = "flow-order", value_enum)]
    pub flow_order: Option<FlowOrder>,
    /// table (a line per second, then a summary), json (every second) or csv (the summary).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the summary to this file instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args, Clone)]
pub struct LiveArgs {
    /// The program under test: xdp-lb (the built-in load balancer, default),
    /// an object file (FILE.bpf.o) or a spec file (FILE.toml) as for 'run'.
    pub target: Option<String>,
    /// The packet to send, in the packet language (default: the target's:
    /// for xdp-lb, UDP to its VIP; for an object, its spec file's first packet).
    #[arg(long, value_name = "SPEC")]
    pub packet: Option<String>,
    #[command(flatten)]
    pub send: SendOptions,
    /// Vary one quantity step by step: src-ports=0,1000,2000 | size=64,512,1500 | flows=1,1000 | threads=1,2.
    #[arg(long, value_name = "VAR=V1,V2,...")]
    pub sweep: Option<String>,
    /// Seconds each step is measured for.
    #[arg(long, value_name = "S", default_value_t = 2.0, value_parser = bpfbench::record::positive)]
    pub duration: f64,
    /// Seconds each step sends before it is measured (tables warm up).
    #[arg(long, value_name = "S", default_value_t = 0.5)]
    pub warmup: f64,
    /// sequential: flows in turn; random (default): each frame's flow drawn at random, so an LRU of C entries over N flows hits C/N of the time.
    #[arg(long = "flow-order", value_enum, default_value_t = FlowOrder::Random)]
    pub flow_order: FlowOrder,
    /// xdp-lb: entries of each CPU's connection table (LRU).
    #[arg(long, value_name = "N")]
    pub lru_size: Option<u32>,
    /// xdp-lb: skip timing the matching in-BPF scenarios for the cross-check.
    #[arg(long)]
    pub no_cross_check: bool,
    /// Your object: the program, and its maps, as for 'run'.
    #[command(flatten)]
    pub load: bpfbench::workloads::object::LoadArgs,
    /// table (a row per step), json (every step and window) or csv (a row per step).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the output to this file instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Draw the sweep to FILE.svg or FILE.png.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreOptions,
    /// Remove what killed bpfbench runs left (namespaces, veths) and exit.
    #[arg(long)]
    pub cleanup: bool,
}

/// `250k`, `1M` or a plain number of frames per second.

#[derive(Debug, Args, Clone)]
pub struct PairedArgs {
    /// The reference build (A): a BPF object (FILE.bpf.o) or a bpfbench
    /// executable; with --workload, also a runtime (kernel, user) to compare
    /// that workload's own object in two runtimes.
    pub a: PathBuf,
    /// The candidate build (B), of the same kind as A.
    pub b: PathBuf,
    /// A and B are builds of this workload's own BPF object (xdp-lb, maps,
    /// lpm-trie), run with its setup, scenarios and validation.
    #[arg(long)]
    pub workload: Option<String>,
    #[command(flatten)]
    pub select: Selection,
    #[command(flatten)]
    pub paired: PairedSettings,
    #[command(flatten)]
    pub gate: Gate,
    /// Time A and B even where their verdicts or output packets differ.
    #[arg(long)]
    pub allow_different_output: bool,
    /// insns: compare BPF instructions per packet, counted by the userspace
    /// runtime, with exact deltas (no pairing or statistics needed).
    #[arg(long, value_enum, default_value_t = Metric::Time)]
    pub metric: Metric,
    /// Run on this CPU (default: the last CPU this process may use).
    #[arg(long)]
    pub cpu: Option<usize>,
    /// table, json, csv, or bmf (B's latency and the B/A ratio with its
    /// interval); with --metric insns or --whole-runs, table or json.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the output to this file instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreOptions,
    /// Two executables only: compare medians of whole interleaved runs
    /// (builds from before paired A/B, which have no 'ab-worker').
    #[arg(long)]
    pub whole_runs: bool,
    /// With --whole-runs: runs of each build.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(3..=100), requires = "whole_runs")]
    pub rounds: u64,
    /// Two executables: the arguments of 'bpfbench run' both get (after --),
    /// e.g. -- maps --map hash -s hash/lookup/1000
    #[arg(last = true)]
    pub run_args: Vec<String>,
}

/// The parsed command line, and the matches the workloads read their options from.
pub struct Parsed {
    pub cli: Cli,
    /// `run`'s or `ab`'s matches (the default suite's when no command was given).
    pub workload_matches: Option<clap::ArgMatches>,
}

/// The paired comparison's default noise threshold, in percent: pairs
/// resolve about ±1% in a second (the whole-run default is 2%).
const AB_THRESHOLD_PCT: &str = "1";

/// The workload whose options `ab` takes: --workload, else A when it is one
/// of your own programs (executables take theirs after --).
fn ab_target(ab: &clap::ArgMatches) -> Option<String> {
    if let Some(w) = ab.get_one::<String>("workload") {
        return Some(w.clone());
    }
    let a = ab.get_one::<PathBuf>("a")?;
    bpfbench::session::paired_request::is_own_program(a).then(|| a.display().to_string())
}

/// Parses the process's arguments; `bpfbench` alone means `bpfbench run`.
pub fn parse() -> Parsed {
    let mut argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv.len() == 1 {
        argv.push("run".into());
    }
    parse_from(argv)
}

/// Parses `argv` (program name first).
///
/// Each workload has options of its own (two may even share a flag with
/// different meanings), so `run` and `ab` are parsed twice: once with every
/// workload's options, loosely, to find the workload named; then with that
/// workload's options only.
pub fn parse_from(argv: Vec<std::ffi::OsString>) -> Parsed {
    // Help would end the probe before it found the workload: leave it out.
    let without_help: Vec<&std::ffi::OsString> = argv.iter().filter(|a| *a != "--help" && *a != "-h").collect();
    let probe = Cli::command()
        .mut_subcommand("run", workloads::with_all_options)
        .mut_subcommand("ab", workloads::with_all_options)
        .try_get_matches_from(without_help)
        .ok();
    let (command, probed) = match probe.as_ref().and_then(|m| m.subcommand()) {
        Some(("ab", m)) => ("ab", Some(m)),
        Some(("run", m)) => ("run", Some(m)),
        _ => ("run", None),
    };
    let target = match command {
        "ab" => probed.and_then(ab_target),
        _ => Some(
            probed
                .and_then(|m| m.get_one::<String>("workload").cloned())
                .unwrap_or_else(|| workloads::DEFAULT.to_string()),
        ),
    };
    if let (Some(m), Some(t)) = (probed, &target) {
        let checked = workloads::check_options(t, m);
        if let Err(e) = checked {
            eprintln!("bpfbench: error: {e}");
            std::process::exit(1);
        }
    }
    let with_target = |c: clap::Command| match &target {
        Some(t) => workloads::with_options_of(t, c),
        None => c,
    };
    let cmd = Cli::command()
        .mut_subcommand("run", |c| {
            with_target(c).after_help(
                "Workloads have options of their own: 'bpfbench run WORKLOAD --help' shows them (lpm-trie and maps: the map options; FILE.bpf.o or FILE.toml: your own program's).",
            )
        })
        .mut_subcommand("ab", |c| {
            with_target(c).mut_arg("threshold_pct", |a| a.default_value(AB_THRESHOLD_PCT)).after_help(
                "With BPF objects, the options of 'bpfbench run FILE.bpf.o' apply (see its --help); with --workload, that workload's.",
            )
        });
    let matches = cmd.get_matches_from(&argv);
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let workload_matches = matches.subcommand_matches(command).cloned();
    Parsed { cli, workload_matches }
}
