// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * driver_tc with the packet's length put back at the MAC header
 * (bpf_skb_adjust_room) instead of at the tail: for tc programs that grow
 * or shrink the packet at its front (a decapsulation, an encapsulation,
 * bpf_skb_change_head), whose data the tail restore walks forward each
 * iteration. A driver of its own: the userspace runtime has no
 * bpf_skb_adjust_room, and runs driver_tc.
 */
#define BENCH_TC_RESET_AT_MAC 1
#include "driver_tc.bpf.c"
