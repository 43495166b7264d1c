//! `bpfbench vm`: `bpfbench run` on other kernels, each booted as a guest
//! (system::guest), or on this machine's own (`--kernel host`); the run
//! records come home, marked with the guest they ran in, are stored, and
//! make a matrix: scenario × kernel.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;

use crate::history::{History, StoreOptions};
use crate::record::matrix::{MATRIX_SCHEMA, MatrixColumn, MatrixRecord};
use crate::record::{Metric, RunRecord, parse_run};
use crate::system::guest::{self, GuestSpec, OutputFolder};
use crate::system::interrupt;

/// How long a guest may take, in seconds, unless `--timeout` says.
pub const GUEST_TIMEOUT_S: u64 = 900;

/// The `run` options `vm` sets itself.
const RESERVED: [&str; 4] = ["--format", "--output", "--compare-to", "--repeat"];

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
        for reserved in RESERVED {
            if self.run_args.iter().any(|a| a == reserved) {
                bail!("{reserved} is set by 'bpfbench vm' itself; leave it out of the run arguments");
            }
        }
        let counting = self.metric == Metric::KernelInsns;
        if self.profile && !counting {
            bail!("--profile lists where the kernel's counted instructions go: give --metric kernel-insns too");
        }
        if counting && kernels.iter().any(|k| k == "host") {
            bail!(
                "--metric kernel-insns counts in guests under QEMU's TCG; --kernel host runs without one: give guest kernels only"
            );
        }
        if self.metric != Metric::Time && self.run_args.iter().any(|a| a == "--metric") {
            bail!("give --metric once: before the run arguments (vm --metric) or among them (-- --metric), not both");
        }
        let plugin = if counting { Some(counter_plugin()?) } else { None };
        // Every kernel is checked before the first boots.
        let images: Vec<Option<PathBuf>> = kernels
            .iter()
            .map(|k| if k == "host" { Ok(None) } else { guest::resolve_image(k).map(Some) })
            .collect::<Result<_>>()?;
        if images.iter().any(Option::is_some) {
            guest::check_tools()?;
        }
        if let Some(plugin) = &plugin {
            guest::check_plugin(plugin)?;
        }
        crate::system::check_privileges()?;
        interrupt::install_handler();
        for what in guest::remove_leftovers() {
            eprintln!("bpfbench: removed {what}");
        }
        let mut history = if self.store.no_store { None } else { Some(History::open(self.store.db.location())?) };
        let mut matrix = MatrixRecord { schema: MATRIX_SCHEMA.into(), columns: Vec::new(), interrupted: false };
        for (kernel, image) in kernels.iter().zip(&images) {
            if interrupt::interrupted() {
                matrix.interrupted = true;
                break;
            }
            let mut column = MatrixColumn { kernel: kernel.clone(), run: None, error: None, stored_as: None };
            let started = std::time::Instant::now();
            let outcome = match image {
                None => {
                    progress(&format!("{kernel}: running on this machine's kernel"));
                    self.on_host()
                }
                Some(image) => {
                    // The plugin counts what TCG translates: never KVM.
                    let accel = if counting { guest::Accelerator::Tcg } else { guest::accelerator(image) };
                    progress(&format!("{kernel}: booting {} ({})", image.display(), accel.as_str()));
                    self.in_guest(kernel, image, accel, plugin.as_deref(), progress)
                }
            };
            match outcome {
                Ok(mut run) => {
                    run.tag = self.store.tag.clone().or(run.tag);
                    if let Some(h) = history.as_mut() {
                        column.stored_as = Some(h.store(&run)?);
                    }
                    progress(&format!(
                        "{kernel}: {} scenario(s) from {} in {:.0} s",
                        run.results.len(),
                        run.environment.kernel,
                        started.elapsed().as_secs_f64()
                    ));
                    column.run = Some(run);
                }
                Err(e) => {
                    let line = format!("{e:#}");
                    eprintln!("bpfbench: error: {kernel}: {line}");
                    column.error = Some(line);
                }
            }
            matrix.columns.push(column);
        }
        matrix.interrupted |= interrupt::interrupted();
        Ok(matrix)
    }

    /// `bpfbench run RUN_ARGS`, its JSON record on stdout, as a command line.
    fn run_command(&self) -> Result<Vec<String>> {
        let mut words = vec![std::env::current_exe()?.display().to_string(), "run".into()];
        words.extend(self.run_args.iter().cloned());
        words.extend(["--format", "json", "--no-store"].map(String::from));
        match self.metric {
            Metric::Time => {}
            Metric::Insns => words.extend(["--metric", "insns"].map(String::from)),
            Metric::KernelInsns => words.extend(["--metric", "kernel-insns"].map(String::from)),
        }
        Ok(words)
    }

    fn on_host(&self) -> Result<RunRecord> {
        let words = self.run_command()?;
        let out = Command::new(&words[0])
            .args(&words[1..])
            .stderr(std::process::Stdio::inherit())
            .output()
            .context("running bpfbench run")?;
        let text = String::from_utf8(out.stdout).context("the run's record is not UTF-8")?;
        parse_run(&text).with_context(|| format!("bpfbench run on this machine gave no record ({})", out.status))
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

    fn in_guest(
        &self,
        kernel: &str,
        image: &Path,
        accel: guest::Accelerator,
        plugin: Option<&Path>,
        progress: &mut dyn FnMut(&str),
    ) -> Result<RunRecord> {
        use crate::system::tcg_counter;
        let folder = OutputFolder::new(kernel)?;
        let mut script = format!("{} > $OUT/run.json 2> $OUT/run.err\n", guest::shell_command(&self.run_command()?));
        if plugin.is_some() {
            // The run knows the plugin counts its regions; the JIT images
            // are named in kallsyms; the kernel's symbols are kept for the host.
            script = format!(
                "export {}=1\nsysctl -qw net.core.bpf_jit_kallsyms=1 kernel.kptr_restrict=0\n{script}cat /proc/kallsyms > $OUT/{}\n",
                tcg_counter::ENV,
                tcg_counter::KALLSYMS_FILE
            );
        }
        // Counting: the run's CPU (the guest's last) without the periodic
        // tick where the kernel can stop it (NO_HZ_FULL: Debian's 6.1 and
        // 6.12), so that fewer timer interrupts land in the counted regions.
        let append = match (plugin.is_some(), &self.append) {
            (true, Some(a)) => Some(format!("nohz_full=1 rcu_nocbs=1 {a}")),
            (true, None) => Some("nohz_full=1 rcu_nocbs=1".to_string()),
            (false, a) => a.clone(),
        };
        let spec = GuestSpec {
            image: image.to_path_buf(),
            append,
            bound: Duration::from_secs(self.timeout),
            // One guest at a time: two CPUs boot it faster.
            cpus: 2,
            plugin: plugin.map(|p| {
                format!(
                    "{},{}{}",
                    p.display(),
                    bpfbench_tcg_protocol::OUT_ARG,
                    folder.path.join(tcg_counter::REGIONS_FILE).display()
                )
            }),
        };
        let (folder, text) = boot_until_recorded(kernel, &spec, accel, &script, folder, progress)?;
        let mut run = parse_run(&text).context("the guest's run record")?;
        if plugin.is_some() {
            attribute_counts(&mut run, &folder)?;
        }
        run.environment.guest = Some(folder.guest(image, accel));
        // The guest ran on this machine: its testbed, not the guest's host name.
        run.environment.testbed = Some(crate::system::environment::testbed());
        Ok(run)
    }
}

/// Boots `spec` (its files in `folder`) until its run has written a record,
/// which it returns with the folder. A guest that died with no record and
/// no message (QEMU crashed; the kernel panicked, oopsed or its CPU
/// triple-faulted: seen here twice in about 70 boots counting data
/// accesses, once an "Oops: int3" while booting, as TCG ran code the
/// kernel had patched) measured nothing and is booted once more, saying
/// so. A guest that hung or was stopped, or a run that failed saying
/// why, is not.
fn boot_until_recorded(
    kernel: &str,
    spec: &GuestSpec,
    accel: guest::Accelerator,
    script: &str,
    mut folder: OutputFolder,
    progress: &mut dyn FnMut(&str),
) -> Result<(OutputFolder, String)> {
    for attempt in 1.. {
        let booted = guest::boot(spec, accel, &folder, script, interrupt::flag());
        let record = folder.read("run.json").filter(|t| !t.trim().is_empty());
        let said = folder.last_line("run.err");
        // Powered off or crashed (not killed at the bound or stopped).
        let died = booted.is_ok() && record.is_none() && said.is_none();
        let started = folder.read("release");
        if died && attempt == 1 && !interrupt::interrupted() {
            let why = guest::what_happened(&folder);
            let when = if started.is_some() { "while bpfbench ran" } else { "before running bpfbench" };
            progress(&format!("{kernel}: the guest died {when} ({why}); booting it again"));
            // The same (emptied) folder: the plugin's file is named in `spec`.
            drop(folder);
            folder = OutputFolder::new(kernel)?;
            continue;
        }
        if let Err(e) = booted {
            bail!("{e}; {}", guest::what_happened(&folder));
        }
        return match (record, started) {
            (Some(text), _) => Ok((folder, text)),
            (None, None) => bail!("the guest did not run bpfbench; {}", guest::what_happened(&folder)),
            (None, Some(release)) => bail!(
                "bpfbench run in the guest ({}) wrote no record: {}",
                release.trim(),
                said.unwrap_or_else(|| format!("no message; {}", guest::what_happened(&folder)))
            ),
        };
    }
    unreachable!("the loop returns")
}

/// A kernel release's numbers (5.10.0-32 before 6.1.0-57 before 6.12.118),
/// for ordering a matrix's columns.
fn release_order(release: &str) -> Vec<u64> {
    release.split(|c: char| !c.is_ascii_digit()).take(4).map(|n| n.parse().unwrap_or(0)).collect()
}

/// Names another build of the counting plugin to load (one built with
/// another QEMU's API version, say).
pub const PLUGIN_ENV: &str = "BPFBENCH_TCG_PLUGIN";

/// The counting plugin, built beside this executable (the workspace's
/// tcg-counter crate: `cargo build --release` builds both), or the one
/// [`PLUGIN_ENV`] names.
fn counter_plugin() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os(PLUGIN_ENV) {
        let path = PathBuf::from(path);
        if !path.is_file() {
            bail!("{PLUGIN_ENV} names {}, which is not a file: give the plugin's .so, or unset it", path.display());
        }
        return Ok(path);
    }
    let exe = std::env::current_exe()?;
    let dir = exe.parent().context("bpfbench's folder")?;
    let plugin = dir.join("libbpfbench_tcg_counter.so");
    if !plugin.exists() {
        bail!(
            "--metric kernel-insns needs bpfbench's TCG plugin, {}, which is not built: cargo build --release (it builds tcg-counter/ too)",
            plugin.display()
        );
    }
    Ok(plugin)
}

/// Fills each counted scenario's per-packet counts from the plugin's
/// regions and the guest's kallsyms.
fn attribute_counts(run: &mut RunRecord, folder: &OutputFolder) -> Result<()> {
    use crate::analysis::kernel_counts::{Symbols, attribute};
    use crate::system::tcg_counter::{KALLSYMS_FILE, REGIONS_FILE};
    use bpfbench_tcg_protocol::RegionsFile;
    let regions = RegionsFile::parse(&folder.read(REGIONS_FILE).context("the plugin wrote no file of counts")?)?;
    let symbols = Symbols::of_kernel(&folder.read(KALLSYMS_FILE).context("the guest wrote no kallsyms")?)?;
    for r in &mut run.results {
        if let Some(k) = r.kernel_insns.as_mut() {
            match attribute(k, &regions, &symbols) {
                Ok(c) => k.counts = Some(c),
                Err(e) => r.error = Some(format!("counting kernel instructions failed: {e:#}")),
            }
        }
    }
    Ok(())
}
