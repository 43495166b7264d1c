//! A live run's output: the steps as a table (with the statistics' cost
//! and the load balancer's cross-check) or as CSV rows.

use std::fmt::Write;

use anyhow::Result;

use super::gen_table::grouped;
use crate::record::live::XdpVerdicts;
use crate::record::live::{LiveRecord, LiveStep};

/// The verdicts as shares of the frames, largest first ("TX 100%").
fn verdict_shares(v: &XdpVerdicts) -> String {
    if v.packets == 0 {
        return "-".into();
    }
    let mut parts =
        [("PASS", v.pass), ("DROP", v.drop), ("TX", v.tx), ("TX failed", v.tx_errors), ("REDIRECT", v.redirect)];
    parts.sort_by_key(|p| std::cmp::Reverse(p.1));
    parts
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(name, n)| format!("{name} {:.0}%", *n as f64 * 100.0 / v.packets as f64))
        .collect::<Vec<_>>()
        .join(" ")
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.digits$}"))
}

fn percent(cv: Option<f64>) -> String {
    cv.map_or_else(|| "-".into(), |c| format!("{:.1}%", c * 100.0))
}

fn step_value(rec: &LiveRecord, s: &LiveStep) -> String {
    match (rec.sweep, s.value) {
        (Some(_), Some(v)) => grouped(v),
        _ => "-".into(),
    }
}

/// The names of the program's ratios over all steps, in the order given.
fn ratio_names(rec: &LiveRecord) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for r in rec.steps.iter().flat_map(|s| &s.ratios) {
        if !names.contains(&r.name) {
            names.push(r.name.clone());
        }
    }
    names
}

/// A ratio's name as a CSV column ("LRU hit rate": lru_hit_rate).
fn column(name: &str) -> String {
    name.to_lowercase().split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect::<Vec<_>>().join("_")
}

/// The run as a table.
pub fn render(rec: &LiveRecord) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} on a veth ({} XDP); {} flow order; {:.1} s warm-up, then {:.1} s per step",
        rec.program,
        rec.xdp_mode,
        rec.flow_order.as_str(),
        rec.warmup_s,
        rec.step_s
    );
    let _ = writeln!(out, "packet: {}", rec.packet);
    for n in &rec.notes {
        let _ = writeln!(out, "note: {n}");
    }
    let var = rec.sweep.map_or("step", |v| v.name());
    let ratios = ratio_names(rec);
    let _ = write!(
        out,
        "\n{var:>10} {:>9} {:>6} {:>4} {:>9} {:>9} {:>7} {:>8} {:>6} {:>6} {:>4} {:>7}",
        "flows", "bytes", "thr", "offered", "received", "Gbit/s", "ns/pkt", "±ns", "±pps", "n", "errors"
    );
    for name in &ratios {
        let _ = write!(out, " {:>w$} {:>9}", name, "predicted", w = name.len().max(8));
    }
    let _ = writeln!(out, "  verdicts");
    let _ = write!(
        out,
        "{:>10} {:>9} {:>6} {:>4} {:>9} {:>9} {:>7} {:>8} {:>6} {:>6} {:>4} {:>7}",
        "", "", "", "", "Mpps", "Mpps", "", "", "CV", "CV", "", ""
    );
    let _ = writeln!(out);
    for s in &rec.steps {
        let _ = write!(
            out,
            "{:>10} {:>9} {:>6} {:>4} {:>9.3} {:>9.3} {:>7.3} {:>8} {:>6} {:>6} {:>4} {:>7}",
            step_value(rec, s),
            grouped(s.flows),
            s.frame_bytes,
            s.threads,
            s.rates.offered_pps / 1e6,
            s.rates.received_pps / 1e6,
            s.rates.received_gbps,
            opt(s.ns_per_packet, 1),
            percent(s.spread.ns_per_packet_cv),
            percent(s.spread.offered_pps_cv),
            s.spread.windows.len(),
            s.rates.send_errors.map_or_else(|| "-".into(), grouped)
        );
        for name in &ratios {
            let w = name.len().max(8);
            let (value, predicted) = match s.ratio(name) {
                Some(r) => (
                    format!("{:.1}%", r.value * 100.0),
                    r.predicted.map_or("-".into(), |p| format!("{:.1}%", p * 100.0)),
                ),
                None => ("-".into(), "-".into()),
            };
            let _ = write!(out, " {value:>w$} {predicted:>9}");
        }
        let _ = writeln!(out, "  {}", verdict_shares(&s.verdicts));
    }
    if rec.steps.iter().any(|s| s.rates.received_pps < s.rates.offered_pps / 2.0) {
        let _ = writeln!(
            out,
            "warning: the program ran on fewer than half the frames sent in some step; see errors and TX failed"
        );
    }
    let o = &rec.stats_overhead;
    match o.ns_per_packet {
        Some(ns) => {
            let pairs = o.pairs_ns.iter().map(|p| format!("{p:.1}")).collect::<Vec<_>>().join(", ");
            let per_run = o.ns_per_program_run.map_or_else(String::new, |r| format!(", {r:.1} ns per program run"));
            let _ = writeln!(out, "\nbpf_stats cost: {ns:.1} ns/packet{per_run} ({}; pairs: {pairs} ns)", o.note);
        }
        None => {
            let _ = writeln!(out, "\nbpf_stats cost: {}", o.note);
        }
    }
    let window_ms = rec.steps.first().map_or(0.0, |s| s.spread.window_s * 1e3);
    let _ = writeln!(
        out,
        "ns/pkt is bpf_stats' run_time_ns / run_cnt over the step (the statistics were on only for this run); \
         ±ns and ±pps: coefficients of variation over the step's n windows of {window_ms:.0} ms."
    );
    if let Some(cc) = &rec.cross_check {
        let _ = writeln!(
            out,
            "\nCross-check against the in-BPF suite (same run, same CPU; medians less the loop's cost, [95% CI], samples): \
             {} {:.1} ns [{:.1}, {:.1}] n={}, {} {:.1} ns [{:.1}, {:.1}] n={}",
            cc.hit_scenario,
            cc.hit_ns,
            cc.hit_ci95.0,
            cc.hit_ci95.1,
            cc.hit_samples,
            cc.miss_scenario,
            cc.miss_ns,
            cc.miss_ci95.0,
            cc.miss_ci95.1,
            cc.miss_samples
        );
        let _ = writeln!(out, "{var:>10} {:>9} {:>9} {:>10} {:>8}", "hit rate", "live ns", "predicted", "excess");
        for r in &cc.steps {
            let value = r.value.map_or_else(|| "-".into(), grouped);
            let _ = writeln!(
                out,
                "{value:>10} {:>8.1}% {:>9.1} {:>10.1} {:>+8.1}",
                r.hit_rate * 100.0,
                r.live_ns,
                r.predicted_ns,
                r.excess_ns
            );
        }
        let slope = cc
            .live_slope_ns
            .map_or_else(|| "not measurable (the hit rate did not vary)".into(), |s| format!("{s:.1} ns"));
        let _ = writeln!(
            out,
            "from all hits to all misses: live {slope}, in-BPF (miss - hit) {:.1} ns\n{}",
            cc.in_bpf_slope_ns, cc.explanation
        );
    }
    if rec.interrupted {
        let _ = writeln!(out, "\ninterrupted: the steps above were measured before Ctrl-C or SIGTERM");
    }
    out
}

/// One CSV row per step.
pub fn csv(rec: &LiveRecord) -> Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let ratios = ratio_names(rec);
    let mut header: Vec<String> = [
        "program",
        "sweep",
        "value",
        "flows",
        "frame_bytes",
        "threads",
        "elapsed_s",
        "offered_pps",
        "received_pps",
        "received_gbps",
        "send_errors",
        "run_cnt",
        "run_time_ns",
        "ns_per_packet",
        "xdp_pass",
        "xdp_drop",
        "xdp_tx",
        "xdp_tx_failed",
        "xdp_redirect",
    ]
    .map(String::from)
    .to_vec();
    // Each of the program's ratios and its prediction (the load balancer:
    // lru_hit_rate, lru_hit_rate_predicted).
    for name in &ratios {
        header.extend([column(name), format!("{}_predicted", column(name))]);
    }
    w.write_record(&header)?;
    let f = |v: Option<f64>| v.map(|x| format!("{x:.4}")).unwrap_or_default();
    for s in &rec.steps {
        let mut row = vec![
            rec.program.clone(),
            rec.sweep.map(|v| v.name().to_string()).unwrap_or_default(),
            s.value.map(|v| v.to_string()).unwrap_or_default(),
            s.flows.to_string(),
            s.frame_bytes.to_string(),
            s.threads.to_string(),
            format!("{:.4}", s.rates.elapsed_s),
            format!("{:.1}", s.rates.offered_pps),
            format!("{:.1}", s.rates.received_pps),
            format!("{:.4}", s.rates.received_gbps),
            s.rates.send_errors.map(|v| v.to_string()).unwrap_or_default(),
            s.run_cnt.to_string(),
            s.run_time_ns.to_string(),
            f(s.ns_per_packet),
            s.verdicts.pass.to_string(),
            s.verdicts.drop.to_string(),
            s.verdicts.tx.to_string(),
            s.verdicts.tx_errors.to_string(),
            s.verdicts.redirect.to_string(),
        ];
        for name in &ratios {
            let r = s.ratio(name);
            row.extend([f(r.map(|r| r.value)), f(r.and_then(|r| r.predicted))]);
        }
        w.write_record(&row)?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}
