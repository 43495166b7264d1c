//! The command line. Workload options are not listed here: each workload
//! adds its own to `run` through the registry (see `parse`).

use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use bpfbench::compare::Gate;
use bpfbench::history::{DbOption, RunFilter, TagRuns};
use bpfbench::session::output::OutputArgs;
use bpfbench::session::{PairedArgs, RunArgs, paired_request};
use bpfbench::traffic::GenOptions;
use bpfbench::workloads;
use bpfbench::workloads::live::LiveArgs;

#[derive(Debug, Parser)]
#[command(
    name = "bpfbench",
    version,
    // The command is required as parsed, but `bpfbench` alone runs the default suite.
    override_usage = "bpfbench [COMMAND]   (none: 'bpfbench run', the default suite)",
    about = "Benchmarks eBPF programs inside the kernel with BPF_PROG_TEST_RUN and in-BPF batch timing"
)]
pub struct Cli {
    /// Always one: `bpfbench` alone is parsed as `bpfbench run` (see [`parse`]).
    #[command(subcommand)]
    pub command: Command,
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
        select: RunFilter,
        #[command(flatten)]
        db: DbOption,
    },
    /// Change points in the stored history: where each benchmark shifted, per testbed.
    ///
    /// Each benchmark's per-run medians on each testbed, oldest first, split
    /// where they shifted (E-divisive means with a permutation test), with the
    /// medians before and after, the runs and commits at that point, what else
    /// changed there, and the paired comparisons ('bpfbench ab') that measured
    /// the step.
    Changes {
        /// Only this benchmark ("xdp-lb/tcp-v4-lru-hit" or just the scenario name).
        #[arg(long, short = 's')]
        scenario: Option<String>,
        #[command(flatten)]
        select: RunFilter,
        /// Significance of each change: in a series of identical code, the chance a change is reported.
        #[arg(long, default_value_t = 0.01, value_name = "P")]
        alpha: f64,
        /// The fewest runs on each side of a change.
        #[arg(long, default_value_t = 4, value_name = "N")]
        min_runs: usize,
        #[command(flatten)]
        out: OutputArgs,
        #[command(flatten)]
        db: DbOption,
    },
    /// The stored history as one self-contained HTML page.
    ///
    /// The latest run with its intervals, kernel against userspace, a kernel
    /// matrix, paired comparisons, live sweeps, and each benchmark's trend with
    /// its change points (inline SVG; nothing loaded from anywhere; readable on
    /// a phone and in print).
    Report {
        /// The HTML file to write (written whole or not at all).
        #[arg(long, short, value_name = "FILE.html")]
        output: PathBuf,
        /// Trends of this benchmark only ("xdp-lb/tcp-v4-lru-hit" or just the scenario name).
        #[arg(long, short = 's')]
        scenario: Option<String>,
        #[command(flatten)]
        select: RunFilter,
        #[command(flatten)]
        db: DbOption,
    },
    /// Copy another history's runs, paired comparisons and live runs into this one.
    ///
    /// E.g. a machine's own SQLite history into the PostgreSQL history a team
    /// shares. Records keep their times and testbeds; those the target holds
    /// already are skipped, so importing twice copies nothing twice.
    Import {
        /// The history to copy from: an SQLite file or a postgres:// URL.
        #[arg(value_name = "PATH|URL")]
        source: String,
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
        #[command(flatten)]
        out: OutputArgs,
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
        /// Tags stand for runs of this testbed, kernel and CPU only.
        #[command(flatten)]
        select: RunFilter,
        #[command(flatten)]
        out: OutputArgs,
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
    /// (BPF_PROG_RUN), the flows of a packet spec varied inside BPF (table:
    /// a line per second, then a summary; json: every second; csv: the summary).
    Gen {
        #[command(flatten)]
        options: GenOptions,
        #[command(flatten)]
        out: OutputArgs,
    },
    /// 'bpfbench run' on other kernels, each booted as a guest (virtme-ng,
    /// QEMU), or on this one (--kernel host): a matrix of scenario x kernel.
    Vm(bpfbench::session::vm::VmArgs),
    /// Attach a program to a veth in a namespace of bpfbench's own and
    /// measure it under generated traffic: packet rates, verdicts, ns/packet
    /// (bpf_stats), optionally swept over ports, sizes, flows or threads.
    Live(LiveArgs),
    /// Remove what killed bpfbench runs left (namespaces, veths, cgroups, trigger files, guests).
    Cleanup,
    /// What the kernel's verifier makes of each program of an object (two
    /// objects: side by side, with deltas).
    Verifier {
        /// A BPF object file.
        a: PathBuf,
        /// A second object to compare with the first.
        b: Option<PathBuf>,
        #[command(flatten)]
        open: bpfbench::workloads::object::VerifierArgs,
        #[command(flatten)]
        out: OutputArgs,
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
    /// What the running kernel accepts of what bpfbench uses (each feature
    /// probed by loading the smallest program that needs it), and the
    /// timing mode runs take here.
    Features,
    /// Measure the candidate loop constructs for the in-BPF timing loop.
    Loops {
        /// The CPU to measure on [default: the last allowed one].
        #[arg(long)]
        cpu: Option<usize>,
        /// Iterations per batch.
        #[arg(long, default_value_t = 1_000_000)]
        iters: u32,
        /// Timed batches per loop construct.
        #[arg(long, default_value_t = 50)]
        samples: usize,
    },
}

/// The parsed command line, and the matches the workloads read their options from.
pub struct Parsed {
    pub cli: Cli,
    /// `run`'s or `ab`'s matches (the default suite's when no command was given).
    pub workload_matches: Option<clap::ArgMatches>,
}

/// Parses the process's arguments; `bpfbench` alone means `bpfbench run`.
pub fn parse() -> Parsed {
    let mut argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv.len() == 1 {
        argv.push("run".into());
    }
    // `bpfbench overhead ...` is `bpfbench run tool ...`: a running tool's programs.
    if argv.get(1).is_some_and(|a| a == "overhead") {
        argv.splice(1..2, ["run".into(), "tool".into()]);
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
        // A and B of a workload an option names (`--tests cilium A B`) take its options too.
        "ab" => probed.and_then(|m| {
            paired_request::options_target(m).or_else(|| {
                let a = m.get_one::<std::path::PathBuf>("a").filter(|_| workloads::chosen_by_option(m))?;
                Some(a.display().to_string())
            })
        }),
        _ => Some(
            probed
                .and_then(|m| m.get_one::<String>("workload").cloned())
                .unwrap_or_else(|| workloads::DEFAULT.to_string()),
        ),
    };
    if let (Some(m), Some(t)) = (probed, &target) {
        let checked = workloads::check_options(t, m);
        if let Err(e) = checked {
            eprintln!("bpfbench: error: {}", bpfbench::record::error_line(&e));
            std::process::exit(1);
        }
    }
    let with_target = |c: clap::Command| match &target {
        Some(t) => workloads::with_options_of(t, probed, c),
        None => c,
    };
    let cmd = Cli::command()
        .mut_subcommand("run", |c| {
            with_target(c).after_help(
                "Workloads have options of their own: 'bpfbench run WORKLOAD --help' shows them (lpm-trie and maps: the map options; FILE.bpf.o or FILE.toml: your own program's).",
            )
        })
        .mut_subcommand("ab", |c| {
            with_target(c).mut_arg("threshold_pct", |a| a.default_value(paired_request::THRESHOLD_PCT)).after_help(
                "With BPF objects, the options of 'bpfbench run FILE.bpf.o' apply (see its --help); with --workload, that workload's.",
            )
        });
    let matches = cmd.get_matches_from(&argv);
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let workload_matches = matches.subcommand_matches(command).cloned();
    Parsed { cli, workload_matches }
}
