//! `gen`'s command-line options (clap), beside the generator they configure.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::Args;

use super::{FlowPlan, GenSettings, Generator, SendOptions, TcpConnection};
use crate::record::traffic::FlowOrder;

#[derive(Debug, Args, Clone)]
pub struct GenOptions {
    /// The interface to send on (it must take XDP redirects: a veth whose
    /// peer has an XDP program, or a NIC driver with ndo_xdp_xmit).
    pub interface: String,
    /// The packets, in the packet language; ranges of addresses and ports
    /// are flows, varied per frame (repeatable: the packets take turns).
    #[arg(long = "packet", value_name = "SPEC")]
    pub packets: Vec<String>,
    /// Send the packets of this capture (pcap or pcapng), as they are.
    #[arg(long, value_name = "FILE", conflicts_with = "packets")]
    pub pcap: Option<PathBuf>,
    /// TCP mode: connect to this listening socket (ADDR:PORT, [ADDR]:PORT
    /// for IPv6) over the interface and send it a stream from XDP; the
    /// interface's XDP hook takes the return path. --count counts segments.
    #[arg(long, value_name = "ADDR:PORT", conflicts_with_all = ["packets", "pcap", "flow_order"])]
    pub tcp: Option<std::net::SocketAddr>,
    #[command(flatten)]
    pub send: SendOptions,
    /// Stop after this many seconds.
    #[arg(long, value_name = "S", value_parser = crate::record::positive)]
    pub duration: Option<f64>,
    /// Stop after this many frames (over all threads); TCP mode: after this
    /// many segments of the stream, the last with FIN.
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
    /// sequential: frame n carries flow n mod flows; random: each frame's flow drawn at random.
    #[arg(long = "flow-order", value_enum)]
    pub flow_order: Option<FlowOrder>,
}

impl GenOptions {
    /// The generator these options describe: a TCP stream to `--tcp`, else
    /// the flows of `--packet` or `--pcap`.
    pub fn generator(&self) -> Result<Generator> {
        if let Some(caps) = crate::kernel::features::probe() {
            caps.require_live_frames()?;
        }
        match self.tcp {
            Some(peer) => {
                // Before connecting: a refused run leaves no connection behind.
                super::tcp::check_threads(self.send.threads)?;
                let conn = TcpConnection::open(&self.interface, peer, self.send.size, self.count)?;
                Generator::tcp(&self.interface, conn)
            }
            None => {
                let plans = FlowPlan::all(self.pcap.as_deref(), &self.packets, self.send.size)?;
                Generator::new(&self.interface, &plans, self.flow_order.unwrap_or_default())
            }
        }
    }

    /// How the generator sends: threads, pace and when to stop; an interval a second.
    pub fn settings(&self) -> GenSettings {
        GenSettings {
            threads: self.send.threads,
            cpus: self.send.cpus(),
            rate_pps: self.send.rate,
            duration: self.duration.map(Duration::from_secs_f64),
            count: self.count,
            batch_size: self.send.batch_size,
            interval: Duration::from_secs(1),
        }
    }
}

/// `--flow-order` as the command line spells it (the record's enum knows no clap).
impl clap::ValueEnum for FlowOrder {
    fn value_variants<'a>() -> &'a [Self] {
        &[FlowOrder::Sequential, FlowOrder::Random]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.as_str()))
    }
}
