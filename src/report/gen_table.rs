//! The traffic generator's output: a line per second, and the summary as
//! a table, JSON or CSV.

use std::fmt::Write;

use anyhow::Result;

use crate::record::traffic::{GenInterval, GenRecord};

/// `1234567` as `1,234,567`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn errors(e: Option<u64>) -> String {
    e.map_or_else(|| "n/a".into(), grouped)
}

/// The column heads over the per-second lines (TCP mode adds goodput).
pub fn interval_head(tcp: bool) -> &'static str {
    if tcp {
        "    time          pps   Gbit/s   errors  goodput Gbit/s"
    } else {
        "    time          pps   Gbit/s   errors"
    }
}

/// One per-second line.
pub fn interval_line(i: &GenInterval) -> String {
    let mut line = format!(
        "{:>7.1} s {:>12} {:>8.3} {:>8}",
        i.t_s,
        grouped(i.rate.pps.round() as u64),
        i.rate.gbps,
        errors(i.rate.errors)
    );
    if let Some(g) = i.goodput_gbps {
        let _ = write!(line, " {g:>15.3}");
    }
    line
}

/// What is about to be sent, in one line.
pub fn start_line(interface: &str, threads: usize, flows: u64, frame_bytes: &[usize], rate: Option<f64>) -> String {
    let mut sizes: Vec<usize> = frame_bytes.to_vec();
    sizes.sort_unstable();
    sizes.dedup();
    let sizes = sizes.iter().map(|s| s.to_string()).collect::<Vec<_>>().join("/");
    let rate = rate
        .map_or_else(|| "as fast as it goes".to_string(), |r| format!("paced at {} pps", grouped(r.round() as u64)));
    format!(
        "sending on {interface}: {threads} thread{}, {} flow{}, {sizes}-byte frames, {rate}",
        if threads == 1 { "" } else { "s" },
        grouped(flows),
        if flows == 1 { "" } else { "s" }
    )
}

/// How close the rate came to the one asked for: "reached 99.94% of it".
fn rate_line(asked: f64, pps: f64) -> String {
    format!("asked {} pps: reached {:.2}% of it", grouped(asked.round() as u64), pps / asked * 100.0)
}

/// The summary after the run.
/// Why a TCP stream ended early: the receiver stopped acknowledging.
pub fn stalled_line(seconds: u64) -> String {
    format!(
        "the receiver acknowledged nothing new for {seconds} s, so the stream was given up; is it still reading, and is its side's XDP program passing the segments?"
    )
}

pub fn summary(r: &GenRecord) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "sent {} frames in {:.2} s: {} pps, {:.3} Gbit/s (frame bytes, without FCS), stopped by {}",
        grouped(r.rate.sent),
        r.elapsed_s,
        grouped(r.rate.pps.round() as u64),
        r.rate.gbps,
        r.stopped_by.as_str()
    );
    if let Some(asked) = r.rate_asked_pps {
        let _ = writeln!(out, "{}", rate_line(asked, r.rate.pps));
    }
    let cpus = r.cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", ");
    let _ = writeln!(
        out,
        "{} (ifindex {}): device tx {}, errors {}; threads on CPU {cpus}; {} flows; batch {}",
        r.interface,
        r.ifindex,
        r.device_tx.map_or_else(|| "n/a".into(), grouped),
        errors(r.rate.errors),
        grouped(r.flows),
        r.batch_size
    );
    if let Some(t) = &r.tcp {
        let _ = writeln!(
            out,
            "tcp {} -> {}: {} bytes acknowledged, goodput {:.3} Gbit/s; {} segments of {} bytes (MSS {}), {} retransmitted",
            t.local,
            t.peer,
            grouped(t.bytes_acked),
            t.goodput_gbps,
            grouped(t.segments),
            t.payload_bytes,
            t.mss,
            grouped(t.retransmitted)
        );
        let _ = writeln!(
            out,
            "    rewinds: {} at a third duplicate ACK, {} after no progress; {} ACKs read, {} duplicate; FIN {}{}",
            t.rewinds_dupack,
            t.rewinds_timer,
            grouped(t.acks),
            grouped(t.dupacks),
            if t.fin_acked { "acknowledged" } else { "not acknowledged" },
            if t.reset_by_peer { "; the receiver reset the connection" } else { "" }
        );
    }
    out.push_str(&dropped_warning(r));
    out
}

/// Share of the frames sent that the interface dropped, above which a run
/// says so: its rates count frames that did not arrive.
const DROPPED_SHARE: f64 = 0.01;

/// A line when frames did not go out, saying why. A veth whose peer has
/// no XDP program (nor GRO) takes no XDP frame and counts none; one whose
/// peer has a program counts as dropped what found the peer's ring full,
/// because the peer took frames more slowly than they came.
fn dropped_warning(r: &GenRecord) -> String {
    if r.rate.sent > 0 && r.device_tx == Some(0) && r.rate.errors.unwrap_or(0) == 0 {
        return format!(
            "warning: {} took none of the frames; a veth takes XDP frames only when its peer has an XDP program (or GRO) on\n",
            r.interface
        );
    }
    match r.rate.errors.filter(|&e| r.rate.sent > 0 && e as f64 >= DROPPED_SHARE * r.rate.sent as f64) {
        Some(errors) => format!(
            "warning: {} dropped {:.1}% of the frames: its peer took them more slowly than they came and its ring was full; lower --rate, or give the peer's program less to do\n",
            r.interface,
            100.0 * errors as f64 / r.rate.sent as f64
        ),
        None => String::new(),
    }
}

/// One CSV row: the summary.
pub fn csv(r: &GenRecord) -> Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "interface",
        "threads",
        "flows",
        "frame_bytes",
        "rate_asked_pps",
        "elapsed_s",
        "sent",
        "pps",
        "gbps",
        "device_tx",
        "errors",
        "stopped_by",
        "tcp_bytes_acked",
        "tcp_goodput_gbps",
        "tcp_retransmitted",
    ])?;
    let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    let tcp = r.tcp.as_ref();
    w.write_record([
        r.interface.clone(),
        r.threads.to_string(),
        r.flows.to_string(),
        r.frame_bytes.iter().map(|b| b.to_string()).collect::<Vec<_>>().join("/"),
        r.rate_asked_pps.map(|v| format!("{v}")).unwrap_or_default(),
        format!("{:.4}", r.elapsed_s),
        r.rate.sent.to_string(),
        format!("{:.1}", r.rate.pps),
        format!("{:.4}", r.rate.gbps),
        opt(r.device_tx),
        opt(r.rate.errors),
        r.stopped_by.as_str().to_string(),
        opt(tcp.map(|t| t.bytes_acked)),
        tcp.map(|t| format!("{:.4}", t.goodput_gbps)).unwrap_or_default(),
        opt(tcp.map(|t| t.retransmitted)),
    ])?;
    Ok(String::from_utf8(w.into_inner()?)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(6_012_345), "6,012,345");
    }

    #[test]
    fn a_rate_reached_is_a_share_of_the_one_asked() {
        assert_eq!(rate_line(1_000_000.0, 999_400.0), "asked 1,000,000 pps: reached 99.94% of it");
        assert_eq!(rate_line(1_000.0, 1_000.0), "asked 1,000 pps: reached 100.00% of it");
    }
}
