//! What each load-balancer scenario must do, checked before it is timed:
//! the verdict, the byte-exact output packet (built from header rules, not by
//! running the datapath's logic on the host) and the counters proving the
//! code path.

use std::net::IpAddr;

use anyhow::{Context, Result, bail, ensure};

use super::addressing::{self, Pool, Vip, real_at, reals};
use super::datapath::{Counter, FlowGen, FlowGenOffset, Limit, LoadedLb, RING_SIZE};
use super::jhash;
use super::packets::{ClientPacket, L4, build_client_packet, build_encapsulated};
use super::scenarios::{Flows, LbScenario, Path, flow_source};
use crate::harness::Validation;
use crate::harness::timing::{RestoreMode, batch_cap};
use crate::kernel::prog_type::ProgKind;
use crate::packet::diff_packets;

const XDP_DROP: u32 = 1;
const XDP_PASS: u32 = 2;
const XDP_TX: u32 = 3;

/// Timed iterations of the validation batch: 8191 + 1 untimed = 8192 packets,
/// two full passes over the 4096 diverse flows.
pub const VALIDATION_ITERS: u32 = 8191;

pub fn expected_verdict(s: &LbScenario) -> u32 {
    match s.path {
        Path::Pass => XDP_PASS,
        Path::Drop => XDP_DROP,
        _ => XDP_TX,
    }
}

/// Configures `s` in the datapath and validates it over one batch. Returns
/// what was checked and the packet the scenario is timed with.
pub fn validate(
    lb: &mut LoadedLb,
    s: &LbScenario,
    cpu: usize,
    corrupt_expected_byte: Option<usize>,
) -> Result<(Validation, Vec<u8>)> {
    let packet = build_client_packet(&s.packet)?;
    let verdict = expected_verdict(s);
    lb.reset_lru()?;
    lb.set_flowgen(flowgen_for(&s.packet, &packet, s.flows)?)?;
    if s.path == Path::LruHit {
        // Open the connection once so every timed packet finds it.
        let primed = lb.body.run_once(&packet)?;
        ensure!(primed.retval == XDP_TX, "priming the LRU returned {}", ProgKind::Xdp.verdict_name(primed.retval));
    }
    lb.reset_counters()?;

    // A bounded loop validates over the batch it can run.
    let iters = batch_cap(lb.construct).unwrap_or(VALIDATION_ITERS).min(VALIDATION_ITERS);
    let (timing, out) = lb.body.run_batch(&packet, iters, RestoreMode::BENCH_RESTORE_ON_RESIZE, cpu)?;
    ensure!(timing.iters == iters as u64, "the timing loop ran {} of {iters} iterations", timing.iters);
    let n = iters + 1;
    if out.retval != verdict {
        bail!(
            "verdict: expected {}, got {}",
            ProgKind::Xdp.verdict_name(verdict),
            ProgKind::Xdp.verdict_name(out.retval)
        );
    }
    let mut checks = vec![format!("verdict {} on all {n} packets", ProgKind::Xdp.verdict_name(verdict))];

    let index = flow_index(s.flows, n - 1);
    let final_client = s.packet.with_src(flow_source(s.packet.src, index));
    let mut expected = match (verdict, s.vip) {
        (XDP_TX, Some(vip)) => build_encapsulated(&final_client, expected_real(lb, &vip, &final_client)?)?,
        _ => build_client_packet(&final_client)?,
    };
    if let Some(i) = corrupt_expected_byte {
        let i = i.min(expected.len() - 1);
        expected[i] ^= 0xff;
    }
    if let Some(diff) = diff_packets(&expected, &out.packet) {
        bail!("output packet differs from the expected one:\n{diff}");
    }
    checks.push(format!("output packet: {} bytes, byte-exact", out.packet.len()));

    for (counter, want, what) in expected_counters(s, n) {
        let got = lb.counter(counter)?;
        ensure!(got == want, "{what}: expected {want}, got {got}");
        checks.push(format!("{what}: {got}"));
    }
    check_stats(lb, s, n, &final_client, &mut checks)?;
    Ok((
        Validation { verdict: ProgKind::Xdp.verdict_name(verdict), checks, notes: notes(s), ..Default::default() },
        packet,
    ))
}

fn notes(s: &LbScenario) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some((mask, repeat)) = s.flows.generator() {
        notes.push(format!("Flow diversity: {} unique src addrs (mask {mask:#x})", mask as u64 + 1));
        if s.flows != Flows::Diverse {
            notes.push(
                "Cold LRU: enabled (the flow counter persists across batches; a flow returns after 16M packets)".into(),
            );
        }
        if repeat > 1 {
            notes.push(format!("{repeat} packets per flow: the first misses and inserts, the rest hit"));
        }
    }
    if s.vip.is_some_and(|v| v.pool == Pool::V6) && s.packet.src.is_ipv4() {
        notes.push("Cross-family: IPv4 client to IPv6 reals".into());
    }
    notes
}

/// Byte offsets the flow generator needs in a client packet.
pub(super) fn flowgen_for(p: &ClientPacket, bytes: &[u8], flows: Flows) -> Result<FlowGen> {
    let Some((mask, repeat)) = flows.generator() else {
        return Ok(FlowGen::default());
    };
    let is_udp = p.l4 == L4::Udp;
    // Where the datapath writes (constants of lb_common.h).
    let o = |c: FlowGenOffset| c.0 as usize;
    let (addr_off, l3_csum_off, l4_csum_off, end) = match (p.src, is_udp) {
        (IpAddr::V4(_), udp) => (
            o(FlowGenOffset::LB_FLOWGEN_V4_ADDR),
            o(FlowGenOffset::LB_FLOWGEN_V4_L3_CSUM),
            o(if udp { FlowGenOffset::LB_FLOWGEN_V4_UDP_CSUM } else { FlowGenOffset::LB_FLOWGEN_V4_TCP_CSUM }),
            o(FlowGenOffset::LB_FLOWGEN_V4_END),
        ),
        (IpAddr::V6(_), udp) => (
            o(FlowGenOffset::LB_FLOWGEN_V6_ADDR),
            0,
            o(if udp { FlowGenOffset::LB_FLOWGEN_V6_UDP_CSUM } else { FlowGenOffset::LB_FLOWGEN_V6_TCP_CSUM }),
            o(FlowGenOffset::LB_FLOWGEN_V6_END),
        ),
    };
    ensure!(bytes.len() >= end, "packet too short for the flow generator ({} bytes, {end} needed)", bytes.len());
    ensure!(repeat.is_power_of_two(), "packets per flow ({repeat}) must be a power of two: the datapath shifts");
    // Raw memory words, exactly as in the packet.
    let word2 = |o: usize| u16::from_ne_bytes([bytes[o], bytes[o + 1]]);
    let base_addr = u32::from_ne_bytes(bytes[addr_off..addr_off + 4].try_into().expect("4 bytes"));
    // What the datapath's checksum update adds each packet's address to: the
    // checksum and the old address, one's-complemented, as 16-bit halves.
    let partial =
        |check: u16| u32::from(!check) + u32::from(!(base_addr as u16)) + u32::from(!((base_addr >> 16) as u16));
    Ok(FlowGen {
        enabled: 1,
        mask,
        repeat_shift: repeat.trailing_zeros(),
        addr_off: addr_off as u16,
        l3_csum_off: l3_csum_off as u16,
        l4_csum_off: l4_csum_off as u16,
        l4_is_udp: is_udp as u16,
        base_addr,
        l3_partial: if l3_csum_off != 0 { partial(word2(l3_csum_off)) } else { 0 },
        l4_partial: partial(word2(l4_csum_off)),
        ..Default::default()
    })
}

/// Flow index of the `k`-th packet (0-based) after the generator was reset.
fn flow_index(flows: Flows, k: u32) -> u32 {
    flows.generator().map_or(0, |(mask, repeat)| (k / repeat) & mask)
}

/// Distinct flows among the first `n` packets.
fn distinct_flows(flows: Flows, n: u32) -> u32 {
    match flows.generator() {
        None => 1,
        Some((mask, repeat)) => n.div_ceil(repeat).min(mask + 1),
    }
}

/// Katran's flow hash, as the BPF side computes it (see lb_flow_hash).
fn flow_hash(p: &ClientPacket) -> u32 {
    let ports = jhash::word([
        p.sport.to_be_bytes()[0],
        p.sport.to_be_bytes()[1],
        p.dport.to_be_bytes()[0],
        p.dport.to_be_bytes()[1],
    ]);
    match p.src {
        IpAddr::V4(a) => jhash::jhash_2words(jhash::word(a.octets()), ports, RING_SIZE),
        IpAddr::V6(a) => {
            let o = a.octets();
            let w = |i: usize| jhash::word([o[i], o[i + 1], o[i + 2], o[i + 3]]);
            // LB_HASH_SEED_V6 in xdp_lb.bpf.c: LB_MAX_VIPS, read from the object's BTF.
            let h = jhash::jhash_16bytes([w(0), w(4), w(8), w(12)], Limit::LB_MAX_VIPS.0);
            jhash::jhash_2words(h, ports, RING_SIZE)
        }
    }
}

/// The real a client packet must be sent to, from the host's copy of the ring.
fn expected_real(lb: &LoadedLb, vip: &Vip, p: &ClientPacket) -> Result<IpAddr> {
    let pos = lb.ring_slot(vip.num, flow_hash(p));
    Ok(real_at(pos).with_context(|| format!("ring slot holds unknown real {pos}"))?.addr)
}

fn l3_len(packet: &[u8]) -> u64 {
    (packet.len() - 14) as u64
}

/// Counter expectations for `n` packets along the scenario's path.
fn expected_counters(s: &LbScenario, n: u32) -> Vec<(Counter, u64, &'static str)> {
    let n = n as u64;
    let (miss, miss_what) = if s.packet.l4 == L4::Udp {
        (Counter::LB_CNT_LRU_MISS_UDP, "LRU misses, UDP")
    } else {
        (Counter::LB_CNT_LRU_MISS_TCP_NONSYN, "LRU misses, TCP non-SYN")
    };
    let distinct = distinct_flows(s.flows, n as u32) as u64;
    let lru = |hit: u64, syn: u64, miss_n: u64, ch: u64, ins: u64| {
        vec![
            (Counter::LB_CNT_LRU_HIT, hit, "LRU hits"),
            (Counter::LB_CNT_LRU_MISS_TCP_SYN, syn, "LRU misses, TCP SYN"),
            (miss, miss_n, miss_what),
            (Counter::LB_CNT_CH_LOOKUP, ch, "consistent-hash lookups"),
            (Counter::LB_CNT_LRU_INSERT, ins, "LRU inserts"),
        ]
    };
    let mut out = match s.path {
        Path::LruHit => lru(n, 0, 0, 0, 0),
        Path::ConsistentHash => lru(0, 0, 0, n, 0),
        Path::Syn => lru(0, n, 0, n, n),
        Path::RstMiss => lru(0, 0, n, n, 0),
        Path::LruMiss => lru(0, 0, n, n, n),
        Path::LruFirstMiss => lru(n - distinct, 0, distinct, distinct, distinct),
        Path::Pass => vec![
            (Counter::LB_CNT_XDP_PASS, n, "XDP_PASS verdicts"),
            (Counter::LB_CNT_CH_LOOKUP, 0, "consistent-hash lookups"),
        ],
        Path::Drop => vec![
            (Counter::LB_CNT_XDP_DROP, n, "XDP_DROP verdicts"),
            (Counter::LB_CNT_CH_LOOKUP, 0, "consistent-hash lookups"),
        ],
    };
    if !matches!(s.path, Path::Pass | Path::Drop) {
        out.push((Counter::LB_CNT_XDP_TX, n, "XDP_TX verdicts"));
    }
    out.push((Counter::LB_CNT_XDP_ABORTED, 0, "XDP_ABORTED verdicts"));
    if s.packet.l4 == L4::Udp {
        out.push((Counter::LB_CNT_LRU_UDP_EXPIRED, 0, "expired UDP entries"));
    }
    out
}

/// Per-VIP and per-real packet and byte counters after `n` packets.
fn check_stats(
    lb: &LoadedLb,
    s: &LbScenario,
    n: u32,
    final_packet: &ClientPacket,
    checks: &mut Vec<String>,
) -> Result<()> {
    let n = n as u64;
    let Some(vip) = s.vip.filter(|_| !matches!(s.path, Path::Pass | Path::Drop)) else {
        for vip in addressing::VIPS {
            let (packets, _) = lb.vip_stat(vip.num)?;
            ensure!(packets == 0, "VIP {} counted {packets} packets on an early-exit path", vip.num);
        }
        checks.push("per-VIP packets: 0 (no VIP touched)".into());
        return Ok(());
    };
    let bytes = l3_len(&build_client_packet(final_packet)?);
    let (packets, vip_bytes) = lb.vip_stat(vip.num)?;
    ensure!(packets == n, "per-VIP packets: expected {n} (iterations + 1), got {packets}");
    ensure!(vip_bytes == n * bytes, "per-VIP bytes: expected {}, got {vip_bytes}", n * bytes);
    checks.push(format!("per-VIP packets: {n} = iterations + 1; bytes: {vip_bytes}"));

    let pool = reals(vip.pool);
    let mut served = 0;
    let mut total = 0;
    for r in &pool {
        let (packets, _) = lb.real_stat(r.pos)?;
        total += packets;
        served += (packets > 0) as usize;
    }
    ensure!(total == n, "per-real packets sum to {total}, expected {n}");
    if s.flows == Flows::Single {
        let real = expected_real(lb, &vip, final_packet)?;
        let pos = pool.iter().find(|r| r.addr == real).map(|r| r.pos).context("real not in pool")?;
        let (packets, _) = lb.real_stat(pos)?;
        ensure!(packets == n, "real {real} got {packets} packets, expected all {n}");
        checks.push(format!("per-real packets: all {n} to {real}"));
    } else {
        // Each packet's real as the host's copy of the ring places its flow:
        // exact per real (a short batch, as a bounded loop runs, may leave a
        // real without traffic; thousands of flows reach all of them).
        let mut want: std::collections::HashMap<IpAddr, u64> = std::collections::HashMap::new();
        for k in 0..n as u32 {
            let client = s.packet.with_src(flow_source(s.packet.src, flow_index(s.flows, k)));
            *want.entry(expected_real(lb, &vip, &client)?).or_default() += 1;
        }
        for r in &pool {
            let (packets, _) = lb.real_stat(r.pos)?;
            let expected = want.get(&r.addr).copied().unwrap_or(0);
            ensure!(
                packets == expected,
                "real {} got {packets} packets, expected {expected} from its flows' hashes",
                r.addr
            );
        }
        checks.push(format!(
            "per-real packets: {n} over {served} of {} reals, each as its flows' hashes say",
            pool.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::datapath::flow_words_of;
    use super::*;

    /// The host's precomputed words, written into the scenario's packet at
    /// the datapath's offsets, give exactly the packet built for that flow
    /// (address and checksums): for IPv4 and IPv6, TCP and UDP.
    #[test]
    fn flow_words_make_the_packet_of_each_flow() {
        for name in ["tcp-v4-lru-diverse", "tcp-v6-lru-diverse", "udp-v4-lru-diverse", "tcp-v4-ch-diverse"] {
            let s = super::super::scenarios::find(name).unwrap();
            let packet = build_client_packet(&s.packet).unwrap();
            let g = flowgen_for(&s.packet, &packet, s.flows).unwrap();
            assert!(g.mask < 4096, "{name}: a tabled flow space");
            for idx in [0, 1, 2, 255, 256, 1000, g.mask] {
                let w = flow_words_of(&g, idx);
                let mut made = packet.clone();
                made[g.addr_off as usize..][..4].copy_from_slice(&w.addr.to_ne_bytes());
                if g.l3_csum_off != 0 {
                    made[g.l3_csum_off as usize..][..2].copy_from_slice(&w.l3_csum.to_ne_bytes());
                }
                made[g.l4_csum_off as usize..][..2].copy_from_slice(&w.l4_csum.to_ne_bytes());
                let want = build_client_packet(&s.packet.with_src(flow_source(s.packet.src, idx))).unwrap();
                assert_eq!(made, want, "{name}, flow {idx}");
            }
        }
    }
}
