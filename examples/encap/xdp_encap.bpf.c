// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Test object: IPv4 packets to a service in `services` are encapsulated
 * in IPIP towards the service's backend (bpf_xdp_adjust_head) and sent
 * back; everything else passes untouched. Hits are counted per CPU.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct service_key {
	__be32 addr;
	__be16 port;
	__u8 proto;
	__u8 pad;
};

struct backend {
	__be32 addr;
	__u8 mac[ETH_ALEN];
	__u16 flags;
	struct {
		__u32 weight;
		__u32 id;
	} meta;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct service_key);
	__type(value, struct backend);
} services SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} hits SEC(".maps");

static __always_inline __u16 csum_fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

SEC("xdp")
int xdp_encap(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data, *new_eth;
	struct iphdr *ip = data + sizeof(*eth), *outer;
	struct service_key key = {};
	unsigned char our_mac[ETH_ALEN];
	struct backend *be;
	__u16 *ports, *w;
	__u32 zero = 0, sum = 0;
	__u64 *n;
	int i;

	if ((void *)(ip + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5)
		return XDP_PASS;
	ports = (void *)(ip + 1);
	if ((void *)(ports + 2) > data_end)
		return XDP_PASS;
	key.addr = ip->daddr;
	key.port = ports[1];
	key.proto = ip->protocol;
	be = bpf_map_lookup_elem(&services, &key);
	if (!be)
		return XDP_PASS;
	n = bpf_map_lookup_elem(&hits, &zero);
	if (n)
		*n += 1;
	/* The new frame goes out from the address it came in on. */
	__builtin_memcpy(our_mac, eth->h_dest, ETH_ALEN);

	if (bpf_xdp_adjust_head(ctx, 0 - (int)sizeof(struct iphdr)))
		return XDP_DROP;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	new_eth = data;
	outer = data + sizeof(*new_eth);
	ip = (void *)(outer + 1);
	if ((void *)(ip + 1) > data_end)
		return XDP_DROP;
	__builtin_memcpy(new_eth->h_dest, be->mac, ETH_ALEN);
	__builtin_memcpy(new_eth->h_source, our_mac, ETH_ALEN);
	new_eth->h_proto = bpf_htons(ETH_P_IP);
	outer->version = 4;
	outer->ihl = 5;
	outer->tos = 0;
	outer->tot_len = bpf_htons(bpf_ntohs(ip->tot_len) + sizeof(*outer));
	outer->id = 0;
	outer->frag_off = 0;
	outer->ttl = 64;
	outer->protocol = IPPROTO_IPIP;
	outer->check = 0;
	outer->saddr = ip->daddr;
	outer->daddr = be->addr;
	w = (void *)outer;
#pragma unroll
	for (i = 0; i < 10; i++)
		sum += w[i];
	outer->check = csum_fold(sum);
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
