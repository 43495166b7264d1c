//! Live traffic: a packet generator built on XDP live frames, which sends
//! frames out of a real interface at millions per second with the flows of
//! a packet spec varied inside BPF.

pub mod flows;
pub mod generator;
pub mod options;
pub mod tcp;
pub mod topology;

pub use flows::FlowPlan;
pub use generator::{GenSettings, Generator, SendOptions};
pub use options::GenOptions;
pub use tcp::TcpConnection;
