//! Registry of workloads. Each lives in its own directory with its BPF C
//! beside the Rust that drives it.

pub mod xdp_lb;

use crate::harness::Workload;

/// Every workload, unloaded (listing scenarios needs no privileges).
pub fn all() -> Vec<Box<dyn Workload>> {
    vec![Box::new(xdp_lb::XdpLb::default())]
}

pub fn names() -> Vec<&'static str> {
    all().iter().map(|w| w.name()).collect()
}
