//! What a traffic generator run did: the summary every output format
//! renders, and one line per second.

use serde::{Deserialize, Serialize};

use super::Environment;

pub const GEN_SCHEMA: &str = "bpfbench.gen/1";

/// One `bpfbench gen` run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GenRecord {
    /// "bpfbench.gen/N".
    pub schema: String,
    pub environment: Environment,
    pub interface: String,
    pub ifindex: u32,
    /// The packet specs (or capture packets) sent, in turn.
    pub packets: Vec<String>,
    /// Each packet's frame length in bytes (Ethernet, without FCS).
    pub frame_bytes: Vec<usize>,
    /// Distinct flows over all packets.
    pub flows: u64,
    pub flow_order: FlowOrder,
    pub threads: usize,
    /// The CPU each thread was pinned to.
    pub cpus: Vec<usize>,
    /// --rate, frames per second over all threads; None: as fast as it goes.
    pub rate_asked_pps: Option<f64>,
    /// Frames per kernel page-pool batch (and redirect flush).
    pub batch_size: u32,
    /// From the first frame to the last thread's end.
    pub elapsed_s: f64,
    /// Over the whole run.
    #[serde(flatten)]
    pub rate: GenRate,
    /// The interface's own transmit count over the run (None: it has no statistics).
    pub device_tx: Option<u64>,
    pub stopped_by: StopReason,
    pub seconds: Vec<GenInterval>,
    /// TCP mode's connection (None: frames without a connection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TcpRecord>,
}

/// The order in which a spec's flows are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlowOrder {
    /// Frame n carries flow n mod flows: each flow equally often.
    #[default]
    Sequential,
    /// Each frame's flow drawn uniformly at random (bpf_get_prandom_u32).
    Random,
}

impl FlowOrder {
    /// As records and tables write it.
    pub fn as_str(self) -> &'static str {
        match self {
            FlowOrder::Sequential => "sequential",
            FlowOrder::Random => "random",
        }
    }
}

/// Why a generator run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StopReason {
    /// --duration ran out.
    Duration,
    /// --count frames were sent.
    Count,
    /// Ctrl-C or SIGTERM.
    Interrupted,
    /// TCP mode: the receiver acknowledged nothing new for a while.
    Stalled,
    /// TCP mode: the receiver reset the connection.
    #[serde(rename = "reset by peer")]
    ResetByPeer,
}

impl StopReason {
    /// As records and tables write it.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Duration => "duration",
            StopReason::Count => "count",
            StopReason::Interrupted => "interrupted",
            StopReason::Stalled => "stalled",
            StopReason::ResetByPeer => "reset by peer",
        }
    }
}

/// What TCP mode's connection carried.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TcpRecord {
    pub local: String,
    pub peer: String,
    /// The connection's MSS (TCP_INFO's tcpi_snd_mss).
    pub mss: u32,
    /// Stream bytes per segment.
    pub payload_bytes: usize,
    /// The receiver's window shift, if negotiated.
    pub window_scale: Option<u8>,
    pub timestamps: bool,
    /// Stream bytes the receiver acknowledged: what its socket took in.
    pub bytes_acked: u64,
    /// bytes_acked over the run's time, in Gbit/s.
    pub goodput_gbps: f64,
    /// Segments sent, first sends and retransmissions.
    pub segments: u64,
    pub retransmitted: u64,
    /// Times the sender went back to the first unacknowledged byte: at a
    /// third duplicate ACK, and after a time without progress.
    pub rewinds_dupack: u64,
    pub rewinds_timer: u64,
    /// ACKs the return path read (and kept from the kernel's socket).
    pub acks: u64,
    pub dupacks: u64,
    /// The receiver acknowledged the closing FIN.
    pub fin_acked: bool,
    pub reset_by_peer: bool,
}

/// What the generator sent over a span (the run, or one interval of it);
/// stored flat in the record and the interval.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GenRate {
    /// Frames the generator program ran on and redirected.
    pub sent: u64,
    pub pps: f64,
    /// Frame bits per second (without FCS, preamble or inter-frame gap).
    pub gbps: f64,
    /// Frames the interface dropped or failed to send (tx_dropped + tx_errors).
    pub errors: Option<u64>,
}

impl GenRate {
    /// `frames` of `bytes` in all over `seconds`.
    pub fn over(frames: u64, bytes: u64, seconds: f64, errors: Option<u64>) -> GenRate {
        let seconds = seconds.max(1e-9);
        GenRate { sent: frames, pps: frames as f64 / seconds, gbps: bytes as f64 * 8.0 / seconds / 1e9, errors }
    }
}

/// One reporting interval (a second, the last one shorter).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GenInterval {
    /// Seconds since the start, at the interval's end.
    pub t_s: f64,
    #[serde(flatten)]
    pub rate: GenRate,
    /// TCP mode: acknowledged stream bits per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_gbps: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tables write what JSON writes: `as_str` and serde name each alike.
    #[test]
    fn tables_and_json_name_stop_reasons_and_flow_orders_alike() {
        let json = |v: serde_json::Value| v.as_str().unwrap().to_string();
        for r in [
            StopReason::Duration,
            StopReason::Count,
            StopReason::Interrupted,
            StopReason::Stalled,
            StopReason::ResetByPeer,
        ] {
            assert_eq!(json(serde_json::to_value(r).unwrap()), r.as_str());
        }
        for o in [FlowOrder::Sequential, FlowOrder::Random] {
            assert_eq!(json(serde_json::to_value(o).unwrap()), o.as_str());
        }
    }
}
