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
use crate::record::{RunRecord, parse_run};
use crate::system::guest::{self, GuestSpec, OutputFolder};
use crate::system::interrupt;

/// The `run` options `vm` sets itself.
const RESERVED: [&str; 4] = ["--format", "--output", "--compare-to", "--repeat"];

#[derive(Debug, Args, Clone)]
pub struct VmArgs {
    /// A kernel to run on (repeatable; several make a matrix): a vmlinuz
    /// path, a kernel scripts/kernels.sh fetched (bullseye, bookworm,
    /// trixie), or `host` for this machine's kernel without a guest.
    #[arg(long = "kernel", value_name = "KERNEL", required = true)]
    pub kernels: Vec<String>,
    /// More kernel command line for every guest (e.g. spec_rstack_overflow=off).
    #[arg(long, value_name = "CMDLINE")]
    pub append: Option<String>,
    /// A guest that has not finished within this many seconds is killed.
    #[arg(long, value_name = "S", default_value_t = 900, value_parser = clap::value_parser!(u64).range(10..))]
    pub timeout: u64,
    /// table; json: every kernel's run record; csv: a row per scenario and kernel.
    #[command(flatten)]
    pub out: super::output::OutputArgs,
    #[command(flatten)]
    pub store: StoreOptions,
    /// The arguments of 'bpfbench run' every kernel gets (after --), e.g.
    /// -- xdp-lb -s tcp-v4-lru-hit --samples 5
    #[arg(last = true)]
    pub run_args: Vec<String>,
}

impl VmArgs {
    /// Runs every kernel in turn; `progress` hears a line as each starts and ends.
    pub fn run(&self, progress: &mut dyn FnMut(&str)) -> Result<MatrixRecord> {
        for reserved in RESERVED {
            if self.run_args.iter().any(|a| a == reserved) {
                bail!("{reserved} is set by 'bpfbench vm' itself; leave it out of the run arguments");
            }
        }
        // Every kernel is checked before the first boots.
        let images: Vec<Option<PathBuf>> = self
            .kernels
            .iter()
            .map(|k| if k == "host" { Ok(None) } else { guest::resolve_image(k).map(Some) })
            .collect::<Result<_>>()?;
        if images.iter().any(Option::is_some) {
            guest::check_tools()?;
        }
        crate::system::check_privileges()?;
        interrupt::install_handler();
        for what in guest::remove_leftovers() {
            eprintln!("bpfbench: removed {what}");
        }
        let mut history = if self.store.no_store { None } else { Some(History::open(self.store.db.location())?) };
        let mut matrix = MatrixRecord { schema: MATRIX_SCHEMA.into(), columns: Vec::new(), interrupted: false };
        for (kernel, image) in self.kernels.iter().zip(&images) {
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
                    let accel = guest::accelerator(image);
                    progress(&format!("{kernel}: booting {} ({})", image.display(), accel.as_str()));
                    self.in_guest(kernel, image, accel)
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

    fn in_guest(&self, kernel: &str, image: &Path, accel: guest::Accelerator) -> Result<RunRecord> {
        let folder = OutputFolder::new(kernel)?;
        let script = format!("{} > $OUT/run.json 2> $OUT/run.err\n", guest::shell_command(&self.run_command()?));
        let spec = GuestSpec {
            image: image.to_path_buf(),
            append: self.append.clone(),
            bound: Duration::from_secs(self.timeout),
            // One guest at a time: two CPUs boot it faster.
            cpus: 2,
        };
        if let Err(e) = guest::boot(&spec, accel, &folder, &script, interrupt::flag()) {
            bail!("{e}; the console's last lines: {}", guest::console_tail(&folder, 3));
        }
        let Some(text) = folder.read("run.json").filter(|t| !t.trim().is_empty()) else {
            match folder.read("release") {
                None => bail!(
                    "the guest did not run bpfbench; the console's last lines: {}",
                    guest::console_tail(&folder, 3)
                ),
                Some(release) => bail!(
                    "bpfbench run in the guest ({}) wrote no record: {}",
                    release.trim(),
                    folder.last_line("run.err").unwrap_or_else(|| "no message".into())
                ),
            }
        };
        let mut run = parse_run(&text).context("the guest's run record")?;
        run.environment.guest = Some(folder.guest(image, accel));
        // The guest ran on this machine: its testbed, not the guest's host name.
        run.environment.testbed = Some(crate::system::environment::testbed());
        Ok(run)
    }
}
