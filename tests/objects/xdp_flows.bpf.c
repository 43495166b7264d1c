// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object: counts the packets of every IPv4 TCP/UDP flow it sees in
 * `flows` (keyed by the 5-tuple) and passes them on untouched. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct flow {
	__be32 src;
	__be32 dst;
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 pad[3];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 17);
	__type(key, struct flow);
	__type(value, __u64);
} flows SEC(".maps");

SEC("xdp")
int xdp_flows(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);
	struct flow f = {};
	__be16 *ports = (void *)(ip + 1);
	__u64 one = 1, *n;

	if ((void *)(ports + 2) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	f.src = ip->saddr;
	f.dst = ip->daddr;
	f.sport = ports[0];
	f.dport = ports[1];
	f.proto = ip->protocol;
	n = bpf_map_lookup_elem(&flows, &f);
	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(&flows, &f, &one, BPF_NOEXIST);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
