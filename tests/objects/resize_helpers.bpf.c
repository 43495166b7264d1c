// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Test object: one program per helper that changes a packet's size, each
 * growing or shrinking a frame by a fixed amount and returning a verdict
 * that says it did (tc_resize.bpf.c has adjust_room and the VLAN helpers;
 * xdp_meta.bpf.c has bpf_xdp_adjust_meta). A grown head gets an Ethernet
 * header written into it, a grown tail stays as the helper leaves it.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define GROW 16

/* Writes an Ethernet header of its own at the (new) front of the frame. */
static __always_inline int new_eth(void *data, void *data_end)
{
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return -1;
	__builtin_memset(eth->h_dest, 0xaa, ETH_ALEN);
	__builtin_memset(eth->h_source, 0xbb, ETH_ALEN);
	eth->h_proto = bpf_htons(0x88b5);
	return 0;
}

SEC("xdp")
int xdp_grow_head(struct xdp_md *ctx)
{
	if (bpf_xdp_adjust_head(ctx, -GROW))
		return XDP_ABORTED;
	if (new_eth((void *)(long)ctx->data, (void *)(long)ctx->data_end))
		return XDP_ABORTED;
	return XDP_TX;
}

SEC("xdp")
int xdp_shrink_head(struct xdp_md *ctx)
{
	/* Strips the Ethernet header, as a decapsulation strips an outer one. */
	if (bpf_xdp_adjust_head(ctx, ETH_HLEN))
		return XDP_ABORTED;
	return XDP_PASS;
}

SEC("xdp")
int xdp_grow_tail(struct xdp_md *ctx)
{
	if (bpf_xdp_adjust_tail(ctx, GROW))
		return XDP_ABORTED;
	return XDP_TX;
}

SEC("xdp")
int xdp_shrink_tail(struct xdp_md *ctx)
{
	if (bpf_xdp_adjust_tail(ctx, -GROW))
		return XDP_ABORTED;
	return XDP_TX;
}

SEC("tc")
int tc_change_head(struct __sk_buff *skb)
{
	if (bpf_skb_change_head(skb, GROW, 0))
		return TC_ACT_SHOT;
	if (new_eth((void *)(long)skb->data, (void *)(long)skb->data_end))
		return TC_ACT_SHOT;
	return TC_ACT_REDIRECT;
}

SEC("tc")
int tc_grow_tail(struct __sk_buff *skb)
{
	if (bpf_skb_change_tail(skb, skb->len + GROW, 0))
		return TC_ACT_SHOT;
	return TC_ACT_REDIRECT;
}

SEC("tc")
int tc_shrink_tail(struct __sk_buff *skb)
{
	if (skb->len < ETH_HLEN + GROW || bpf_skb_change_tail(skb, skb->len - GROW, 0))
		return TC_ACT_SHOT;
	return TC_ACT_REDIRECT;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
