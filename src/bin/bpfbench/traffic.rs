//! `bpfbench gen`: the traffic generator on the command line.

use bpfbench::record::traffic::StopReason;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;

use bpfbench::record::traffic::GenRecord;
use bpfbench::report::{check_format, gen_table, render_as};
use bpfbench::session::output::OutputArgs;
use bpfbench::system;
use bpfbench::traffic::GenOptions;

pub fn generate(options: &GenOptions, out: &OutputArgs) -> Result<ExitCode> {
    check_format::<GenRecord>(out.format)?;
    system::check_privileges()?;
    bpfbench::kernel::libbpf_log::capture();
    system::interrupt::install_handler();
    let generator = options.generator()?;
    let settings = options.settings();
    let sizes = generator.frame_sizes();
    let flows = generator.flows();
    let table = out.table_on_stdout();
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
    out.emit(&render_as(&record, out.format)?)?;
    if record.stopped_by == StopReason::Stalled {
        eprintln!("bpfbench: {}", gen_table::stalled_line(bpfbench::traffic::generator::TCP_STALL.as_secs()));
        return Ok(ExitCode::FAILURE);
    }
    Ok(if record.stopped_by == StopReason::Interrupted { ExitCode::from(130) } else { ExitCode::SUCCESS })
}
