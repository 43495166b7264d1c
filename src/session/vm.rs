//! `bpfbench vm`: `bpfbench run` on other kernels, each booted as a guest
//! (system::guest), or on this machine's own (`--kernel host`); the run
//! records come home, marked with the guest they ran in, are stored, and
//! make a matrix: scenario × kernel.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;

use super::kernel_run::KernelRuns;
use crate::history::{History, StoreOptions};
use crate::record::Metric;
use crate::record::matrix::{MATRIX_SCHEMA, MatrixColumn, MatrixRecord};
use crate::system::interrupt;

/// How long a guest may take, in seconds, unless `--timeout` says.
pub const GUEST_TIMEOUT_S: u64 = 900;

#[derive(Debug, Args, Clone)]
pub struct VmArgs {
    /// A kernel to run on (repeatable; several make a matrix): a vmlinuz
    /// path, a kernel scripts/kernels.sh fetched (bullseye, bookworm,
    /// trixie), or `host` for this machine's kernel without a guest.
    #[arg(long = "kernel", value_name = "KERNEL", required_unless_present = "from_history")]
    pub kernels: Vec<String>,
    /// Run only share I of N of the kernels (every Nth, from the Ith), so
    /// that N CI jobs run a matrix between them, each storing into one
    /// history (--db postgres://...) under one --tag
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    pub shard: Option<Shard>,
    /// Boot nothing: make the matrix from the runs stored with --tag (by
    /// the shards of a CI matrix, on any testbeds), one column per kernel
    #[arg(long, requires = "tag", conflicts_with_all = ["kernels", "shard", "no_store"])]
    pub from_history: bool,
    /// More kernel command line for every guest (e.g. spec_rstack_overflow=off).
    #[arg(long, value_name = "CMDLINE")]
    pub append: Option<String>,
    /// A guest that has not finished within this many seconds is killed.
    #[arg(long, value_name = "S", default_value_t = GUEST_TIMEOUT_S, value_parser = clap::value_parser!(u64).range(10..))]
    pub timeout: u64,
    /// table; json: every kernel's run record; csv: a row per scenario and kernel.
    #[command(flatten)]
    pub out: super::output::OutputArgs,
    #[command(flatten)]
    pub store: StoreOptions,
    /// What each kernel measures: time per operation, or kernel-insns: the
    /// native instructions the kernel executes per packet (JIT image and
    /// kernel functions), counted under QEMU's TCG by bpfbench's plugin
    /// (the same count on every boot)
    #[arg(long, value_enum, default_value_t = Metric::Time)]
    pub metric: Metric,
    /// With kernel counts: after the matrix, every function of every
    /// scenario on every kernel, per packet, like Cachegrind's function
    /// list (instructions, their share, reads, writes, D1 and LL misses)
    #[arg(long)]
    pub profile: bool,
    /// The arguments of 'bpfbench run' every kernel gets (after --), e.g.
    /// -- xdp-lb -s tcp-v4-lru-hit --samples 5
    #[arg(last = true)]
    pub run_args: Vec<String>,
}

/// One share of a sharded matrix: the `index`th (from 1) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// The kernels of this share: every `count`th, from the `index`th.
    pub fn kernels<'k>(&self, kernels: &'k [String]) -> Vec<&'k String> {
        kernels.iter().enumerate().filter(|(i, _)| i % self.count == self.index - 1).map(|(_, k)| k).collect()
    }
}

fn parse_shard(text: &str) -> Result<Shard, String> {
    let bad = || format!("'{text}' is not a shard: give I/N, 1 <= I <= N (e.g. 2/3)");
    let (i, n) = text.split_once('/').ok_or_else(bad)?;
    let (index, count) = (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
    if index == 0 || index > count {
        return Err(bad());
    }
    Ok(Shard { index, count })
}

impl VmArgs {
    /// Runs every kernel in turn (or this shard's), or assembles the
    /// matrix from the history; `progress` hears a line as each kernel
    /// starts and ends.
    pub fn run(&self, progress: &mut dyn FnMut(&str)) -> Result<MatrixRecord> {
        if self.from_history {
            return self.assemble_from_history();
        }
        let kernels: Vec<String> = match self.shard {
            None => self.kernels.clone(),
            Some(shard) => {
                let mine: Vec<String> = shard.kernels(&self.kernels).into_iter().cloned().collect();
                if mine.is_empty() {
                    bail!(
                        "shard {}/{} gets no kernel: {} kernel(s) make {} shard(s) at most",
                        shard.index,
                        shard.count,
                        self.kernels.len(),
                        self.kernels.len()
                    );
                }
                progress(&format!("shard {}/{}: {}", shard.index, shard.count, mine.join(", ")));
                mine
            }
        };
        if self.profile && self.metric != Metric::KernelInsns {
            bail!("--profile lists where the kernel's counted instructions go: give --metric kernel-insns too");
        }
        let (runs, targets) =
            KernelRuns::prepare(self.metric, Duration::from_secs(self.timeout), &self.run_args, &kernels)?;
        let mut history = if self.store.no_store { None } else { Some(History::open(self.store.db.location())?) };
        let mut matrix = MatrixRecord { schema: MATRIX_SCHEMA.into(), columns: Vec::new(), interrupted: false };
        for target in &targets {
            let kernel = &target.kernel;
            if interrupt::interrupted() {
                matrix.interrupted = true;
                break;
            }
            let mut column = MatrixColumn { kernel: kernel.clone(), run: None, error: None, stored_as: None };
            match runs.run(target, self.append.as_deref(), progress) {
                Ok(mut run) => {
                    run.tag = self.store.tag.clone().or(run.tag);
                    if let Some(h) = history.as_mut() {
                        column.stored_as = Some(h.store(&run)?);
                    }
                    column.run = Some(run);
                }
                Err(e) => {
                    let line = crate::record::error_line(&e);
                    eprintln!("bpfbench: error: {kernel}: {line}");
                    column.error = Some(line);
                }
            }
            matrix.columns.push(column);
        }
        matrix.interrupted |= interrupt::interrupted();
        Ok(matrix)
    }

    /// The matrix in the chosen format; with `--profile`, a table's
    /// every counted function after it.
    pub fn render(&self, matrix: &MatrixRecord) -> Result<String> {
        let mut text = crate::report::render_as(matrix, self.out.format)?;
        if self.profile && self.out.format == crate::report::Format::Table {
            text.push_str(&crate::report::matrix_table::kernel_profile(matrix));
        }
        Ok(text)
    }

    /// The matrix of the runs stored with `--tag`: a column per kernel
    /// (its release, emulated or not, guest or host), oldest release first;
    /// a kernel's runs from several shards (other workloads) make one
    /// column, the newest result of each benchmark kept.
    fn assemble_from_history(&self) -> Result<MatrixRecord> {
        let tag = self.store.tag.as_deref().context("--from-history reads the runs of one --tag")?;
        let location = self.store.db.location();
        let h = History::open_existing(&location, crate::history::Stored::Runs)?;
        let ids = h.runs_with_tag(tag, usize::MAX >> 1)?;
        if ids.is_empty() {
            bail!("no run in {location} has tag '{tag}': store the shards' runs with 'bpfbench vm --tag {tag}'");
        }
        let mut columns: Vec<MatrixColumn> = Vec::new();
        for id in ids {
            let run = h.load(id)?;
            let column = MatrixColumn {
                kernel: run.environment.kernel.clone(),
                run: Some(run),
                error: None,
                stored_as: Some(id),
            };
            match columns.iter_mut().find(|c| c.heading() == column.heading()) {
                Some(c) => {
                    let (Some(into), Some(from)) = (c.run.as_mut(), column.run) else { continue };
                    let have: std::collections::HashSet<String> =
                        into.results.iter().map(|r| r.benchmark_name()).collect();
                    into.results.extend(from.results.into_iter().filter(|r| !have.contains(&r.benchmark_name())));
                }
                None => columns.push(column),
            }
        }
        columns.sort_by_key(|c| release_order(&c.kernel));
        Ok(MatrixRecord { schema: MATRIX_SCHEMA.into(), columns, interrupted: false })
    }
}

/// A kernel release's numbers (5.10.0-32 before 6.1.0-57 before 6.12.118),
/// for ordering a matrix's columns.
fn release_order(release: &str) -> Vec<u64> {
    release.split(|c: char| !c.is_ascii_digit()).take(4).map(|n| n.parse().unwrap_or(0)).collect()
}
