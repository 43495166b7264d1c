//! `bpfbench live`: a program on a veth under generated traffic, and the
//! stored live runs (`history --live`, `show --live`).

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Result, bail};

use bpfbench::history::History;
use bpfbench::live::sweep::StepTraffic;
use bpfbench::live::{LiveObserver, LivePlan, LiveSettings, Sweep};
use bpfbench::packet::PacketSpec;
use bpfbench::record::live::LiveRecord;
use bpfbench::record::live::LiveStep;
use bpfbench::report::{Format, check_format, live_plot, render_as};
use bpfbench::system::{self, interrupt};
use bpfbench::traffic::topology::{XdpMode, remove_leftovers};
use bpfbench::workloads::live::live_program;

use crate::cli::LiveArgs;
use crate::output::emit;

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

pub fn live(args: &LiveArgs) -> Result<ExitCode> {
    check_format::<LiveRecord>(args.format)?;
    system::check_privileges()?;
    if args.cleanup {
        let removed = remove_leftovers()?;
        if removed.is_empty() {
            println!("nothing to remove: no bpfbench namespace or veth of a dead run");
        }
        for r in removed {
            println!("removed {r}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let sweep: Option<Sweep> = args.sweep.as_deref().map(str::parse).transpose()?;
    if args.plot.is_some() && sweep.is_none() {
        bail!("--plot draws a sweep; give --sweep VAR=V1,V2,...");
    }
    if !(0.0..=60.0).contains(&args.warmup) {
        bail!("--warmup must be 0 to 60 seconds");
    }
    bpfbench::kernel::libbpf_log::capture();
    interrupt::install_handler();
    let (mut program, notes) = live_program(args.target.as_deref(), &args.load, args.lru_size)?;
    let packet_text = args.packet.clone().unwrap_or_else(|| program.default_packet());
    let packet = PacketSpec::parse_flows(&packet_text)?;
    let steps = StepTraffic::steps(sweep.as_ref(), &packet, args.send.size, args.send.threads)?;
    let settings = LiveSettings {
        warmup: Duration::from_secs_f64(args.warmup),
        step: Duration::from_secs_f64(args.duration),
        cpus: args.send.cpus(),
        rate_pps: args.send.rate,
        batch_size: args.send.batch_size,
        flow_order: args.flow_order,
        // Native only: a veth takes redirected frames into its peer only
        // when the peer runs native XDP (or has NAPI on through GRO).
        mode: XdpMode::Native,
    };
    let what = steps
        .iter()
        .map(|(v, _)| sweep.as_ref().zip(*v).map(|(s, v)| format!("{}={v}", s.var.name())).unwrap_or_default())
        .collect();
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(steps.len() as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} step {pos}/{len} {msg}").expect("a valid template"),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    });
    let mut progress = Progress { bar, label: program.label(), what, seconds: (args.warmup, args.duration) };
    let plan = LivePlan {
        packet: packet.to_string(),
        sweep,
        steps,
        settings,
        cross_check: !args.no_cross_check,
        tag: args.store.tag.clone(),
        notes,
    };
    let record = bpfbench::live::run(program.as_mut(), plan, &mut progress)?;
    if let Some(bar) = progress.bar {
        bar.finish_and_clear();
    }
    if !args.store.no_store && !record.interrupted && !record.steps.is_empty() {
        let db = args.store.db.path();
        let id = History::open(&db)?.store_live(&record)?;
        eprintln!("bpfbench: stored as live run {id} in {} ('bpfbench show --live {id}')", db.display());
    }
    let text = render_as(&record, args.format)?;
    emit(&text, args.output.as_deref())?;
    if let Some(path) = &args.plot {
        live_plot::plot(&record, path)?;
        eprintln!("bpfbench: drew {}", path.display());
    }
    Ok(if record.interrupted { ExitCode::from(130) } else { ExitCode::SUCCESS })
}

pub fn history(limit: usize, db: &Path) -> Result<ExitCode> {
    if !db.exists() {
        bail!("no history yet at {}; 'bpfbench live' stores its runs there unless --no-store is given", db.display());
    }
    println!(
        "{:>5}  {:<20}  {:<16}  {:<32}  {:<10}  {:>5}  Mpps (first step)",
        "live", "started (UTC)", "tag", "program", "sweep", "steps"
    );
    for (id, r) in History::open(db)?.list_live(limit)? {
        println!(
            "{id:>5}  {:<20}  {:<16}  {:<32}  {:<10}  {:>5}  {}",
            crate::stored::utc(r.environment.started_at),
            r.tag.as_deref().unwrap_or("-"),
            r.program,
            r.sweep.map_or("-", |v| v.name()),
            r.steps.len(),
            r.steps.first().map_or("-".into(), |s| format!("{:.3}", s.received_pps / 1e6))
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn show(id: &str, format: Format, output: Option<&Path>, db: &Path) -> Result<ExitCode> {
    let Ok(id) = id.parse::<i64>() else {
        bail!("'{id}' is not a live run's id; 'bpfbench history --live' lists them")
    };
    if !db.exists() {
        bail!("there is no history database at {}", db.display());
    }
    let record = History::open(db)?.load_live(id)?;
    let text = render_as(&record, format)?;
    emit(&text, output)?;
    Ok(ExitCode::SUCCESS)
}
