//! Shared set-up for tests that run against the real kernel.

#![allow(dead_code)]

use bpfbench::harness::system;
use bpfbench::harness::Workload;
use bpfbench::workloads::xdp_lb::XdpLb;

/// Pins this thread as a run would and returns its CPU.
pub fn prepared_cpu() -> usize {
    system::check_privileges().expect("kernel tests run as root (CI does)");
    let cpu = system::default_cpu().unwrap();
    system::pin_to_cpu(cpu).unwrap();
    system::capture_libbpf_log();
    cpu
}

/// A loaded load balancer pinned to this thread's CPU.
pub fn loaded_lb() -> XdpLb {
    let cpu = prepared_cpu();
    let mut lb = XdpLb::default();
    lb.setup(cpu).expect("loading xdp-lb");
    lb
}

/// Names of BPF programs currently loaded in the kernel.
pub fn loaded_prog_names() -> Vec<String> {
    libbpf_rs::query::ProgInfoIter::default()
        .map(|p| p.name.to_string_lossy().into_owned())
        .collect()
}
