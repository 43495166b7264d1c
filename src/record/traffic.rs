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
    /// "sequential" or "random".
    pub flow_order: String,
    pub threads: usize,
    /// The CPU each thread was pinned to.
    pub cpus: Vec<usize>,
    /// --rate, frames per second over all threads; None: as fast as it goes.
    pub rate_asked_pps: Option<f64>,
    /// Frames per kernel page-pool batch (and redirect flush).
    pub batch_size: u32,
    /// From the first frame to the last thread's end.
    pub elapsed_s: f64,
    /// Frames the generator program ran on and redirected.
    pub sent: u64,
    pub pps: f64,
    /// Frame bits per second (without FCS, preamble or inter-frame gap).
    pub gbps: f64,
    /// The interface's own transmit count over the run (None: it has no statistics).
    pub device_tx: Option<u64>,
    /// Frames the interface dropped or failed to send (tx_dropped + tx_errors).
    pub errors: Option<u64>,
    /// "duration", "count", or "interrupted".
    pub stopped_by: String,
    pub seconds: Vec<GenInterval>,
}

/// One reporting interval (a second, the last one shorter).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GenInterval {
    /// Seconds since the start, at the interval's end.
    pub t_s: f64,
    pub sent: u64,
    pub pps: f64,
    pub gbps: f64,
    pub errors: Option<u64>,
}
