//! One plain API for running `bpfbench run` on a kernel: in a guest booted
//! from a kernel image (system::guest), counted by bpfbench's TCG plugin
//! with `--metric kernel-insns`, or on this machine's own kernel. `vm`'s
//! matrix and `ab --kernel`'s two sides both call it; the run record comes
//! home marked with the guest it ran in.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::record::{Figure, Metric, RunRecord, parse_run};
use crate::system::guest::{self, GuestSpec, OutputFolder};
use crate::system::interrupt;

/// The `run` options a kernel run sets itself.
const RESERVED: [&str; 4] = ["--format", "--output", "--compare-to", "--repeat"];

/// `bpfbench run` with these arguments and metric, on kernels checked
/// before the first boots.
pub struct KernelRuns {
    metric: Metric,
    /// A guest that has not finished by then is killed.
    timeout: Duration,
    run_args: Vec<String>,
    /// The counting plugin, with `--metric kernel-insns`.
    plugin: Option<PathBuf>,
}

/// A kernel to run on, as given (`bookworm`, a vmlinuz path, `host`), with
/// its image found (None: this machine's kernel, no guest).
pub struct Target {
    pub kernel: String,
    image: Option<PathBuf>,
}

impl KernelRuns {
    /// Checks the run arguments, the metric, every kernel and the tools
    /// they need before anything boots, and removes what a killed run
    /// left; returns the runs and the kernels found.
    pub fn prepare(
        metric: Metric,
        timeout: Duration,
        run_args: &[String],
        kernels: &[String],
    ) -> Result<(KernelRuns, Vec<Target>)> {
        for reserved in RESERVED {
            if run_args.iter().any(|a| a == reserved) {
                bail!("{reserved} is set by 'bpfbench vm' itself; leave it out of the run arguments");
            }
        }
        if metric != Metric::Time && run_args.iter().any(|a| a == "--metric") {
            bail!("give --metric once: before the run arguments (vm --metric) or among them (-- --metric), not both");
        }
        let counting = metric.def().measured_in == crate::record::MeasuredIn::CountingGuest;
        if counting && kernels.iter().any(|k| k == "host") {
            bail!(
                "--metric {} counts in guests under QEMU's TCG; --kernel host runs without one: give guest kernels only",
                metric.name()
            );
        }
        let plugin = if counting { Some(counter_plugin()?) } else { None };
        let targets: Vec<Target> = kernels
            .iter()
            .map(|k| {
                let image = if k == "host" { None } else { Some(guest::resolve_image(k)?) };
                Ok(Target { kernel: k.clone(), image })
            })
            .collect::<Result<_>>()?;
        if targets.iter().any(|t| t.image.is_some()) {
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
        Ok((KernelRuns { metric, timeout, run_args: run_args.to_vec(), plugin }, targets))
    }

    /// The run on `target`, a guest's kernel command line with `append`
    /// more; `progress` hears a line as a guest boots (and boots again)
    /// and as its run comes home.
    pub fn run(&self, target: &Target, append: Option<&str>, progress: &mut dyn FnMut(&str)) -> Result<RunRecord> {
        let started = std::time::Instant::now();
        let run = match &target.image {
            None => {
                progress(&format!("{}: running on this machine's kernel", target.kernel));
                self.on_host()
            }
            Some(image) => self.in_guest(&target.kernel, image, append, progress),
        }?;
        progress(&format!(
            "{}: {} scenario(s) from {} in {:.0} s",
            target.kernel,
            run.results.len(),
            run.environment.kernel,
            started.elapsed().as_secs_f64()
        ));
        Ok(run)
    }

    /// `bpfbench run RUN_ARGS`, its JSON record on stdout, as a command line.
    fn run_command(&self) -> Result<Vec<String>> {
        let mut own: Vec<String> = ["--format", "json", "--no-store"].map(String::from).to_vec();
        if self.metric != Metric::Time {
            own.extend(["--metric", self.metric.name()].map(String::from));
        }
        let mut words = vec![std::env::current_exe()?.display().to_string()];
        words.extend(super::builds::run_arguments(&self.run_args, &own));
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

    fn in_guest(
        &self,
        kernel: &str,
        image: &Path,
        append: Option<&str>,
        progress: &mut dyn FnMut(&str),
    ) -> Result<RunRecord> {
        let plugin = self.plugin.as_deref();
        // The plugin counts what TCG translates: never KVM.
        let accel = if plugin.is_some() { guest::Accelerator::Tcg } else { guest::accelerator(image) };
        progress(&format!("{kernel}: booting {} ({})", image.display(), accel.as_str()));
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
        let append = match (plugin.is_some(), append) {
            (true, Some(a)) => Some(format!("nohz_full=1 rcu_nocbs=1 {a}")),
            (true, None) => Some("nohz_full=1 rcu_nocbs=1".to_string()),
            (false, a) => a.map(str::to_string),
        };
        let spec = GuestSpec {
            image: image.to_path_buf(),
            append,
            bound: self.timeout,
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
        if let Some(Figure::KernelInsns(k)) = r.figure.as_mut() {
            match attribute(k, &regions, &symbols) {
                Ok(c) => k.counts = Some(c),
                Err(e) => {
                    r.error = Some(format!(
                        "counting kernel instructions failed: {reason}",
                        reason = crate::record::error_line(&e)
                    ))
                }
            }
        }
    }
    Ok(())
}
