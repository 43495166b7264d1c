//! Packets as workloads and validation see them: a byte-exact comparison
//! that names the header field that differs.

mod diff;

pub use diff::diff_packets;
