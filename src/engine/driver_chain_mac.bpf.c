// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * driver_chain with a tc chain's length put back at the MAC header
 * (bpf_skb_adjust_room) instead of at the tail, as driver_tc_mac is to
 * driver_tc: for chains that grow or shrink the packet at its front.
 * Cilium's ICMP replies (no backend for a service) and its IPv6 DSR
 * option insert headers after the MAC header. Put back at the tail, the
 * fifth pass of a test run went another way: each pass takes head room,
 * and once the kernel gives the skb a larger head (pskb_expand_head) it
 * moves every header offset by the growth, the transport header's too,
 * though a test run never set it; bpf_skb_change_tail then refuses a
 * length below that made-up transport header (-EINVAL).
 */
#define BENCH_TC_RESET_AT_MAC 1
#include "driver_chain.bpf.c"
