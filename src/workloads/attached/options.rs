//! What a user says about an object of attached programs: the object
//! workload's loading options (maps, globals, pinned maps), where to
//! attach (`--attach`), what fires it (`--trigger`) and how often a
//! program must run per event (`--expect-runs`).

use std::path::Path;

use anyhow::{Result, bail};
use clap::Args;

use crate::kernel::object::ObjectFile;
use crate::trigger::TriggerKind;
use crate::workloads::object::{LoadArgs, UserObject};

// Options for attached programs. A plain comment: a doc comment here
// would become the help text of the `run` command it joins.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Attached programs (bpfbench run FILE.bpf.o of tracing, probe or cgroup programs)")]
pub struct AttachedArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    /// Attach the programs on their hooks, where their sections say, or at POINT, written as a section is (tp/syscalls/sys_enter_openat, raw_tp/sys_enter, uprobe//usr/bin/bash:readline, kprobe/do_sys_openat2, cgroup/connect4): for programs the kernel can also test-run, such as raw tracepoints.
    #[arg(long, value_name = "POINT", num_args = 0..=1, default_missing_value = "")]
    pub attach: Option<String>,
    /// What fires the programs: getpid, getppid, gettid, getuid, sched_yield, uname, openat, pipe, fork-exec, ping-pong, tcp-connect, udp-send, socket, sockopt, sysctl, stat, kill, page-fault, call (bpfbench's trigger function and USDT probe), or, with no NAME, the command after --.
    #[arg(long, value_name = "NAME", num_args = 0..=1, default_missing_value = "")]
    pub trigger: Option<String>,
    /// How many times each program must run per event (validation fails on fewer; by default what the trigger calls for, or at least one).
    #[arg(long, value_name = "N")]
    pub expect_runs: Option<u32>,
    /// Leave out the trigger's slowdown (its alternating phases take seconds a trigger): ns per run and runs per event only, as `ab` compares them.
    #[arg(long)]
    pub no_slowdown: bool,
    /// The command an event runs (after --, with --trigger): `--trigger -- ls /tmp`.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// Everything bpfbench needs to know about an object of attached programs.
#[derive(Debug, Clone)]
pub struct AttachedSetup {
    /// Its `program` is the one to measure (all are loaded and attached).
    pub user: UserObject,
    /// `--attach`: Some("") attaches where the sections say.
    pub attach: Option<String>,
    pub trigger: Option<TriggerKind>,
    pub expect_runs: Option<u32>,
    /// Whether to measure each trigger's slowdown.
    pub slowdown: bool,
}

impl AttachedSetup {
    pub fn from_args(object: &Path, args: &AttachedArgs) -> Result<AttachedSetup> {
        if !args.load.tail_calls.is_empty() {
            bail!(
                "--tail-call fills prog arrays of test-run programs; attached programs' tail calls use the object's own prog arrays as its loader fills them"
            );
        }
        let trigger = match (args.trigger.as_deref(), args.command.is_empty()) {
            (Some(""), false) => Some(TriggerKind::Command(args.command.clone())),
            (Some(""), true) => bail!("--trigger needs a NAME, or a command after --: --trigger -- CMD ARGS"),
            (Some(name), true) => Some(TriggerKind::parse(name)?),
            (Some(name), false) => bail!("--trigger {name} and a command after --: give one of them"),
            (None, false) => bail!("a command after -- is a trigger: write --trigger -- {}", args.command.join(" ")),
            (None, true) => None,
        };
        Ok(AttachedSetup {
            user: UserObject::from_args(object, &args.load)?,
            attach: args.attach.clone(),
            trigger,
            expect_runs: args.expect_runs,
            slowdown: !args.no_slowdown,
        })
    }

    /// Opens the object, its programs of unknown sections typed as
    /// --program-type says, its globals set.
    pub fn open(&self) -> Result<ObjectFile> {
        self.user.open(&self.user.object)
    }
}
