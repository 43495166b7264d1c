//! The load balancer on an interface (`bpfbench live xdp-lb`): its
//! datapath program alone, configured as in the in-BPF suite, with
//! connection tables of the size asked.

use std::collections::BTreeMap;
use std::os::fd::{AsFd, BorrowedFd};

use anyhow::{Context, Result, ensure};

use super::addressing::{CLIENT_V4, LB_MAC, ROUTER_MAC, VIP_UDP_V4};
use super::cross_check;
use super::datapath::{Counter, LoadedLb};
use crate::live::LiveProgram;
use crate::record::live::{CrossCheck, LRU_HIT_RATE, LiveStep, StepRatio};

/// The names of the load balancer's LRU counters in a live step.
pub const LRU_HITS: &str = "lru_hits";
pub const LRU_MISSES: &str = "lru_misses";

pub struct LiveLb {
    lb: LoadedLb,
    lru_entries: u32,
}

impl LiveLb {
    /// Loads bpfbench's build of the load balancer with per-CPU connection
    /// tables of `lru_entries` each.
    pub fn load(lru_entries: u32) -> Result<LiveLb> {
        ensure!(lru_entries >= 1, "--lru-size must be at least 1");
        let lb = LoadedLb::load(&LoadedLb::builtin(), crate::harness::timing::TimingChoice::Auto.loop_construct()?)?;
        ensure!(lb.live.is_some(), "this build of xdp_lb.bpf.c has no xdp_lb_live program");
        let mut live = LiveLb { lb, lru_entries };
        live.reset()?;
        Ok(live)
    }
}

impl LiveProgram for LiveLb {
    fn label(&self) -> String {
        "xdp-lb".into()
    }

    fn prog(&self) -> BorrowedFd<'_> {
        self.lb.live.as_ref().expect("checked at load").as_fd()
    }

    /// IPv4 UDP from the suite's client to its UDP VIP, as a router would
    /// hand it to the balancer.
    fn default_packet(&self) -> String {
        let mac = |m: [u8; 6]| m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":");
        format!(
            "eth(src={},dst={})/ipv4(src={CLIENT_V4},dst={})/udp(sport=31337,dport={})/payload(18)",
            mac(ROUTER_MAC),
            mac(LB_MAC),
            VIP_UDP_V4.addr,
            VIP_UDP_V4.port
        )
    }

    fn reset(&mut self) -> Result<()> {
        self.lb
            .reset_lru_sized(self.lru_entries)
            .with_context(|| format!("creating connection tables of {} entries", self.lru_entries))
    }

    fn counters(&self) -> Result<BTreeMap<String, u64>> {
        let misses =
            [Counter::LB_CNT_LRU_MISS_TCP_SYN, Counter::LB_CNT_LRU_MISS_TCP_NONSYN, Counter::LB_CNT_LRU_MISS_UDP]
                .into_iter()
                .map(|c| self.lb.counter(c))
                .sum::<Result<u64>>()?;
        let hits = self.lb.counter(Counter::LB_CNT_LRU_HIT)?;
        Ok([(LRU_HITS.to_string(), hits), (LRU_MISSES.to_string(), misses)].into())
    }

    /// The LRU hit rate, against what a table of this size predicts for
    /// uniformly random flows: min(1, entries / flows).
    fn ratios(&self, counters: &BTreeMap<String, u64>, flows: u64) -> Vec<StepRatio> {
        let (hits, misses) =
            (counters.get(LRU_HITS).copied().unwrap_or(0), counters.get(LRU_MISSES).copied().unwrap_or(0));
        vec![StepRatio {
            name: LRU_HIT_RATE.into(),
            value: hits as f64 / (hits + misses).max(1) as f64,
            predicted: Some((f64::from(self.lru_entries) / flows.max(1) as f64).min(1.0)),
            prediction: Some("entries / flows".into()),
        }]
    }

    fn cross_checks(&self, steps: &[LiveStep]) -> bool {
        steps.iter().any(|s| s.ratio(LRU_HIT_RATE).is_some())
    }

    /// A live ns/packet beside the in-BPF hit and miss scenarios' figures
    /// weighted by the step's measured hit rate (steps that saw the LRU).
    fn cross_check(&mut self, steps: &[LiveStep], cpu: usize) -> Result<CrossCheck> {
        Ok(cross_check::cross_check(cross_check::measure_in_bpf(cpu)?, steps))
    }
}
