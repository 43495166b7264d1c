// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object: swaps the Ethernet addresses and sends the frame back.
 * SWAP_EXTRA_ALU=N adds N multiplications of work (xdp_swap_slow.bpf.c). */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include "extra_alu.h"
#include "mac_swap.h"

#ifndef SWAP_EXTRA_ALU
#define SWAP_EXTRA_ALU 0
#endif

SEC("xdp")
int xdp_swap(struct xdp_md *ctx)
{
	if (!swap_macs(ctx))
		return XDP_DROP;
	if (SWAP_EXTRA_ALU)
		EXTRA_ALU(SWAP_EXTRA_ALU, ctx->ingress_ifindex);
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
