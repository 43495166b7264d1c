//! Registry of workloads. Each lives in its own directory with its BPF C
//! beside the Rust that drives it.

pub mod maps;
pub mod xdp_lb;

use crate::harness::Workload;

/// Every workload, unloaded (listing scenarios needs no privileges).
pub fn all() -> Vec<Box<dyn Workload>> {
    let map_suite = |suite| -> Box<dyn Workload> {
        Box::new(maps::MapBench::new(suite, maps::MapParams::defaults(suite)).expect("default map parameters are valid"))
    };
    vec![Box::new(xdp_lb::XdpLb::default()), map_suite(maps::Suite::LpmTrie), map_suite(maps::Suite::Maps)]
}

pub fn names() -> Vec<&'static str> {
    all().iter().map(|w| w.name()).collect()
}
