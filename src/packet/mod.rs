//! Packets as workloads and validation see them: a byte-exact comparison
//! that names the header field that differs.

mod diff;
mod layers;
mod layout;
pub mod mask;
pub mod pcap;
mod readers;
pub mod spec;
mod tuple;

pub use diff::diff_packets;
pub use spec::PacketSpec;
pub use tuple::FiveTuple;
