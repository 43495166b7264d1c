//! `bpfbench gen`: the traffic generator on the command line.

use bpfbench::record::traffic::StopReason;
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;

use bpfbench::record::traffic::GenRecord;
use bpfbench::report::{Format, check_format, gen_table, render_as};
use bpfbench::system;
use bpfbench::traffic::GenOptions;

use crate::output::emit;

pub fn generate(options: &GenOptions, format: Format, output: Option<&Path>) -> Result<ExitCode> {
    check_format::<GenRecord>(format)?;
    system::check_privileges()?;
    bpfbench::kernel::libbpf_log::capture();
    system::interrupt::install_handler();
    let generator = options.generator()?;
    let settings = options.settings();
    let sizes = generator.frame_sizes();
    let flows = generator.flows();
    let table = format == Format::Table && output.is_none();
    // Per-second lines go with the table on stdout, else to stderr.
    let say = |line: &str| if table { println!("{line}") } else { eprintln!("{line}") };
    say(&gen_table::start_line(&options.interface, options.send.threads, flows, &sizes, options.send.rate));
    say(gen_table::interval_head(options.tcp.is_some()));
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_message("sending (Ctrl-C stops)");
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    });
    let record = generator.run(&settings, |interval| {
        let line = gen_table::interval_line(interval);
        match &bar {
            Some(bar) => {
                bar.suspend(|| say(&line));
                bar.set_message(format!("sending for {:.0} s (Ctrl-C stops)", interval.t_s));
            }
            None => say(&line),
        }
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let record = record?;
    let text = render_as(&record, format)?;
    emit(&text, output)?;
    if record.stopped_by == StopReason::Stalled {
        eprintln!(
            "bpfbench: the receiver acknowledged nothing new for {} s, so the stream was given up; is it still reading, and is its side's XDP program passing the segments?",
            bpfbench::traffic::generator::TCP_STALL.as_secs()
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(if record.stopped_by == StopReason::Interrupted { ExitCode::from(130) } else { ExitCode::SUCCESS })
}
