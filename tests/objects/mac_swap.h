// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The MAC swap of the test objects that answer XDP_TX (xdp_swap,
 * xdp_chain's last program): exchanges the Ethernet addresses in place. */
#ifndef MAC_SWAP_H
#define MAC_SWAP_H

#include <linux/bpf.h>
#include <linux/if_ether.h>

/* 0 if the frame is too short to hold an Ethernet header. */
static __always_inline int swap_macs(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	unsigned char tmp[ETH_ALEN];

	if ((void *)(eth + 1) > data_end)
		return 0;
	__builtin_memcpy(tmp, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, tmp, ETH_ALEN);
	return 1;
}

#endif
