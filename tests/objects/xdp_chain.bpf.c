// SPDX-License-Identifier: GPL-2.0
/* A two-program chain whose prog array the object declares filled
 * (libbpf puts chain_tx in slot 1 when both are loaded): chain_entry tail
 * calls it, and only the chain swaps the MAC addresses and answers XDP_TX;
 * chain_entry alone, its tail call failing, passes the packet untouched. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int chain_tx(struct xdp_md *ctx)
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
	return XDP_TX;
}

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 2);
	__uint(key_size, sizeof(__u32));
	__array(values, int (void *));
} chain_slots SEC(".maps") = {
	.values = { [1] = (void *)&chain_tx },
};

SEC("xdp")
int chain_entry(struct xdp_md *ctx)
{
	bpf_tail_call(ctx, &chain_slots, 1);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
