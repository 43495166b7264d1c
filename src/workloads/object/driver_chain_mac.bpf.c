// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * driver_chain with a tc chain's length put back at the MAC header
 * (bpf_skb_adjust_room) instead of at the tail, as driver_tc_mac is to
 * driver_tc: for chains that grow or shrink the packet at its front.
 * Cilium's ICMP replies (no backend for a service) and its IPv6 DSR
 * option insert headers after the MAC header; put back at the tail, their
 * later passes went another way (TC_ACT_SHOT from the fifth pass on).
 */
#define BENCH_TC_RESET_AT_MAC 1
#include "driver_chain.bpf.c"
