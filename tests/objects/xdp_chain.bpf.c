// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Chains of tail calls through a prog array the object declares filled
 * (libbpf fills the slots when the programs named are loaded too):
 * - chain_entry -> chain_tx: only the chain swaps the MAC addresses and
 *   answers XDP_TX; chain_entry alone, its tail call failing, passes;
 * - chain_three -> chain_mid -> chain_tx: the middle one adds 1 to the
 *   first payload byte of an IPv4/UDP packet first;
 * - chain_deep calls itself, adding 1 to that byte each time, until the
 *   kernel's limit of tail calls per run refuses the next call: the byte
 *   then counts the programs that ran;
 * - chain_open tail calls slot 0 of open_slots, which the object leaves
 *   empty for the command line (--tail-call) to fill; empty, it passes. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include "mac_swap.h"
#include "payload_count.h"


int chain_tx(struct xdp_md *ctx);
int chain_mid(struct xdp_md *ctx);
int chain_deep(struct xdp_md *ctx);

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 4);
	__uint(key_size, sizeof(__u32));
	__array(values, int (void *));
} chain_slots SEC(".maps") = {
	.values = { [1] = (void *)&chain_tx, [2] = (void *)&chain_mid, [3] = (void *)&chain_deep },
};


SEC("xdp")
int chain_tx(struct xdp_md *ctx)
{
	if (!swap_macs(ctx))
		return XDP_DROP;
	return XDP_TX;
}

SEC("xdp")
int chain_mid(struct xdp_md *ctx)
{
	if (!count_in_payload((void *)(long)ctx->data, (void *)(long)ctx->data_end))
		return XDP_DROP;
	bpf_tail_call(ctx, &chain_slots, 1);
	return XDP_ABORTED;
}

SEC("xdp")
int chain_entry(struct xdp_md *ctx)
{
	bpf_tail_call(ctx, &chain_slots, 1);
	return XDP_PASS;
}

SEC("xdp")
int chain_three(struct xdp_md *ctx)
{
	bpf_tail_call(ctx, &chain_slots, 2);
	return XDP_PASS;
}

SEC("xdp")
int chain_deep(struct xdp_md *ctx)
{
	if (!count_in_payload((void *)(long)ctx->data, (void *)(long)ctx->data_end))
		return XDP_DROP;
	bpf_tail_call(ctx, &chain_slots, 3);
	return XDP_TX;	/* the tail call refused: the limit */
}

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 2);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} open_slots SEC(".maps");

SEC("xdp")
int chain_open(struct xdp_md *ctx)
{
	bpf_tail_call(ctx, &open_slots, 0);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
