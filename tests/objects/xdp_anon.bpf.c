// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object: a map keyed, as real balancers do, by a struct holding an
 * anonymous union (IPv4 or IPv6 address); packets to a listed IPv4
 * destination are sent back, others pass. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct dest {
	union {
		__be32 v4;
		__be32 v6[4];
	};
	__u8 family;
	__u8 pad[3];
};

struct action {
	struct {
		__u16 verdict;
		__u16 reason;
	};
	__u32 hits;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, struct dest);
	__type(value, struct action);
} dests SEC(".maps");

SEC("xdp")
int xdp_anon(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);
	struct dest d = {};
	struct action *a;

	if ((void *)(ip + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	d.v4 = ip->daddr;
	d.family = 4;
	a = bpf_map_lookup_elem(&dests, &d);
	return a ? a->verdict : XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
