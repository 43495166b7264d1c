//! `bpfbench live`: a program on a veth under generated traffic, and the
//! stored live runs (`history --live`, `show --live`).

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Result, bail};

use bpfbench::history::History;
use bpfbench::live::sweep::StepTraffic;
use bpfbench::live::{LiveProgram, LiveSession, LiveSettings, Sweep};
use bpfbench::packet::PacketSpec;
use bpfbench::record::live::{LIVE_SCHEMA, LiveRecord};
use bpfbench::report::{Format, live_plot, live_table};
use bpfbench::system::{self, environment, interrupt};
use bpfbench::traffic::topology::{XdpMode, remove_leftovers};
use bpfbench::workloads::object::ObjectArgs;
use bpfbench::workloads::object::ObjectSetup;
use bpfbench::workloads::object::live::LiveObject;
use bpfbench::workloads::xdp_lb::cross_check;
use bpfbench::workloads::xdp_lb::live::LiveLb;

use crate::cli::{LiveArgs, TrafficFormat};
use crate::output::emit;

/// The Katran-on-userspace study's connection table size.
const DEFAULT_LRU_SIZE: u32 = 2000;

/// The program the target names, loaded; set-up notes.
fn load_target(args: &LiveArgs) -> Result<(Box<dyn LiveProgram>, Vec<String>, bool)> {
    let target = args.target.as_deref().unwrap_or("xdp-lb");
    if target == "xdp-lb" {
        if args.load.program.is_some() || !args.load.maps.is_empty() || !args.load.pins.is_empty() {
            bail!("--program, --map and --map-pin apply to your own object, not to xdp-lb");
        }
        let lb = LiveLb::load(args.lru_size.unwrap_or(DEFAULT_LRU_SIZE))?;
        return Ok((Box::new(lb), Vec::new(), true));
    }
    if args.lru_size.is_some() {
        bail!("--lru-size sizes xdp-lb's connection tables; {target} has none bpfbench knows of");
    }
    let path = Path::new(target);
    if !path.exists() {
        bail!("no such target '{target}': give xdp-lb, an object file (FILE.bpf.o) or a spec file (FILE.toml)");
    }
    let object_args = ObjectArgs { load: args.load.clone(), ..Default::default() };
    let setup = if target.ends_with(".toml") {
        ObjectSetup::from_spec_file(path, &object_args)?
    } else {
        ObjectSetup::from_args(path, &object_args)?
    };
    let mut object = LiveObject::load(&setup)?;
    let notes = std::mem::take(&mut object.notes);
    Ok((Box::new(object), notes, false))
}

pub fn live(args: &LiveArgs) -> Result<ExitCode> {
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
    let (mut program, notes, is_lb) = load_target(args)?;
    let packet_text = args.packet.clone().unwrap_or_else(|| program.default_packet());
    let packet = PacketSpec::parse_flows(&packet_text)?;
    // Every step's traffic first, so bad input stops the run before anything is built.
    let steps: Vec<(Option<u64>, StepTraffic)> = match &sweep {
        Some(s) => s
            .values
            .iter()
            .map(|&v| Ok((Some(v), StepTraffic::at(s, v, &packet, args.send.size, args.send.threads)?)))
            .collect::<Result<_>>()?,
        None => vec![(None, StepTraffic::base(&packet, args.send.size, args.send.threads)?)],
    };
    let settings = LiveSettings {
        warmup: Duration::from_secs_f64(args.warmup),
        step: Duration::from_secs_f64(args.duration),
        cpus: (!args.send.cpus.is_empty()).then(|| args.send.cpus.clone()),
        rate_pps: args.send.rate,
        batch_size: args.send.batch_size,
        flow_order: args.flow_order,
        // Native only: a veth takes redirected frames into its peer only
        // when the peer runs native XDP (or has NAPI on through GRO).
        mode: XdpMode::Native,
    };
    let label = program.label();
    let lru_size = program.lru_capacity();
    let progress = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(steps.len() as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} step {pos}/{len} {msg}").expect("a valid template"),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    });
    let capture = environment::start(system::cpu::default_cpu()?);
    let mut measured = Vec::new();
    let overhead = {
        let mut session = LiveSession::start(program.as_mut(), settings.clone())?;
        if let Some(bar) = &progress {
            bar.set_message(format!("{label} on {}: measuring what bpf_stats cost", session.topology().inner));
        }
        let overhead = session.stats_overhead(&steps[0].1)?;
        for (value, traffic) in &steps {
            if interrupt::interrupted() {
                break;
            }
            if let Some(bar) = &progress {
                let what = sweep.as_ref().zip(*value).map(|(s, v)| format!("{}={v}", s.var.name())).unwrap_or_default();
                bar.set_message(format!(
                    "{label} {what}: {:.1} s warm-up + {:.1} s (Ctrl-C stops)",
                    args.warmup, args.duration
                ));
            }
            let step = session.measure(*value, traffic)?;
            if interrupt::interrupted() {
                break;
            }
            measured.push(step);
            if let Some(bar) = &progress {
                bar.inc(1);
            }
        }
        overhead
        // The session ends here: programs detached, namespace and veths removed.
    };
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    let interrupted = interrupt::interrupted();
    let cross_check = if is_lb && !args.no_cross_check && !interrupted && measured.iter().any(|s| s.lru.is_some()) {
        let cpu = measured[0].cpus[0];
        eprintln!("bpfbench: timing the in-BPF hit and miss scenarios on CPU {cpu} for the cross-check");
        Some(cross_check::cross_check(cross_check::measure_in_bpf(cpu)?, &measured))
    } else {
        None
    };
    let record = LiveRecord {
        schema: LIVE_SCHEMA.into(),
        tag: args.store.tag.clone(),
        environment: capture.finish(),
        program: label,
        xdp_mode: "native".into(),
        packet: packet.to_string(),
        flow_order: args.flow_order,
        lru_size,
        warmup_s: args.warmup,
        step_s: args.duration,
        sweep: sweep.map(|s| s.var),
        stats_overhead: overhead,
        steps: measured,
        cross_check,
        notes,
        interrupted,
    };
    if !args.store.no_store && !interrupted && !record.steps.is_empty() {
        let db = args.store.db.path();
        let id = History::open(&db)?.store_live(&record)?;
        eprintln!("bpfbench: stored as live run {id} in {} ('bpfbench show --live {id}')", db.display());
    }
    let text = match args.format {
        TrafficFormat::Table => live_table::render(&record),
        TrafficFormat::Json => serde_json::to_string_pretty(&record)? + "\n",
        TrafficFormat::Csv => live_table::csv(&record)?,
    };
    emit(&text, args.output.as_deref())?;
    if let Some(path) = &args.plot {
        live_plot::plot(&record, path)?;
        eprintln!("bpfbench: drew {}", path.display());
    }
    Ok(if interrupted { ExitCode::from(130) } else { ExitCode::SUCCESS })
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
    let text = match format {
        Format::Table => live_table::render(&record),
        Format::Json => serde_json::to_string_pretty(&record)? + "\n",
        Format::Csv => live_table::csv(&record)?,
        Format::Bmf | Format::Gobench => bail!("a live run has table, json and csv forms"),
    };
    emit(&text, output)?;
    Ok(ExitCode::SUCCESS)
}
