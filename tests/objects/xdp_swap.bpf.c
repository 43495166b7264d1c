// SPDX-License-Identifier: GPL-2.0
/* Test object: swaps the Ethernet addresses and sends the frame back.
 * SWAP_EXTRA_ALU=N adds N multiplications of work (xdp_swap_slow.bpf.c). */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include "extra_alu.h"

#ifndef SWAP_EXTRA_ALU
#define SWAP_EXTRA_ALU 0
#endif

SEC("xdp")
int xdp_swap(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	unsigned char tmp[ETH_ALEN];

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	__builtin_memcpy(tmp, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, tmp, ETH_ALEN);
	if (SWAP_EXTRA_ALU)
		EXTRA_ALU(SWAP_EXTRA_ALU, ctx->ingress_ifindex);
	return XDP_TX;
}

char LICENSE[] SEC("license") = "GPL";
