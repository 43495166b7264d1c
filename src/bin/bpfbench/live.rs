//! `bpfbench live`: a program on a veth under generated traffic (its stored
//! runs are listed and shown by stored.rs).

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;

use bpfbench::history::History;
use bpfbench::live::LiveObserver;
use bpfbench::record::live::LiveRecord;
use bpfbench::record::live::LiveStep;
use bpfbench::report::{check_format, live_plot, render_as};
use bpfbench::system::{self, interrupt};
use bpfbench::workloads::live::LiveArgs;

/// Shows the run's progress on stderr, on a terminal.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    label: String,
    what: Vec<String>,
    seconds: (f64, f64),
}

impl LiveObserver for Progress {
    fn measuring_overhead(&mut self, interface: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{} on {interface}: measuring what bpf_stats cost", self.label));
        }
    }

    fn step_started(&mut self, index: usize, _value: Option<u64>) {
        if let Some(bar) = &self.bar {
            let (warmup, step) = self.seconds;
            bar.set_message(format!(
                "{} {}: {warmup:.1} s warm-up + {step:.1} s (Ctrl-C stops)",
                self.label, self.what[index]
            ));
        }
    }

    fn step_done(&mut self, _step: &LiveStep) {
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }

    fn cross_checking(&mut self, cpu: usize) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        eprintln!("bpfbench: timing the in-BPF hit and miss scenarios on CPU {cpu} for the cross-check");
    }
}

pub fn cleanup() -> Result<ExitCode> {
    bpfbench::session::cleanup::remove_leftovers()?.iter().for_each(|l| println!("{l}"));
    Ok(ExitCode::SUCCESS)
}

pub fn live(args: &LiveArgs) -> Result<ExitCode> {
    check_format::<LiveRecord>(args.out.format)?;
    if args.cleanup {
        return cleanup();
    }
    system::check_privileges()?;
    bpfbench::kernel::libbpf_log::capture();
    interrupt::install_handler();
    let (mut program, plan) = args.load_and_plan()?;
    let what = plan.step_labels();
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(plan.steps.len() as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} step {pos}/{len} {msg}").expect("a valid template"),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    });
    let mut progress = Progress { bar, label: program.label(), what, seconds: (args.warmup, args.duration) };
    let record = bpfbench::live::run(program.as_mut(), plan, &mut progress)?;
    if let Some(bar) = progress.bar {
        bar.finish_and_clear();
    }
    if !args.store.no_store && !record.interrupted && !record.steps.is_empty() {
        let db = args.store.db.location();
        let id = History::open(&db)?.store_live(&record)?;
        eprintln!("bpfbench: stored as live run {id} in {} ('bpfbench show --live {id}')", db);
    }
    args.out.emit(&render_as(&record, args.out.format)?)?;
    if let Some(path) = &args.plot {
        live_plot::plot(&record, path)?;
        eprintln!("bpfbench: drew {}", path.display());
    }
    Ok(if record.interrupted { ExitCode::from(130) } else { ExitCode::SUCCESS })
}
