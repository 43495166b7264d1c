// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The receiving end of the traffic generator's tests (xdp_flow_count,
 * xdp_flow_scribble): counts each frame under its flow (addresses,
 * protocol, ports), checks its IPv4 header and TCP/UDP checksums.
 */
#ifndef FLOW_COUNT_H
#define FLOW_COUNT_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

/* Frames longer than this in L4 are counted but not checksummed. */
#define MAX_L4_BYTES 512

struct flow_key {
	__u8 family; /* 4 or 6 */
	__u8 proto;
	__u16 sport; /* network order */
	__u16 dport;
	__u16 pad;
	__u32 src[4];
	__u32 dst[4];
};

struct totals {
	__u64 frames;
	__u64 bad_ip_csum;
	__u64 bad_l4_csum;
	__u64 unchecked;
	__u64 other;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 18);
	__type(key, struct flow_key);
	__type(value, __u64);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct totals);
} totals SEC(".maps");

static __always_inline __u32 fold(__u32 s)
{
	s = (s & 0xffff) + (s >> 16);
	return (s & 0xffff) + (s >> 16);
}

/* The sum of the 16-bit words of [p, p + len), len <= MAX_L4_BYTES. */
static __always_inline int sum_words(void *p, __u32 len, void *data_end, __u32 *sum)
{
	for (__u32 i = 0; i < MAX_L4_BYTES; i += 2) {
		if (i >= len)
			break;
		__u8 *b = p + i;

		if ((void *)(b + 1) > data_end)
			return -1;
		if (i + 1 == len) {
			*sum += (__u32)b[0] << 8;
			break;
		}
		if ((void *)(b + 2) > data_end)
			return -1;
		*sum += ((__u32)b[0] << 8) | b[1];
	}
	return 0;
}

static __always_inline int count(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct flow_key key = {};
	__u32 zero = 0, sum = 0, l4_len;
	void *l4;

	struct totals *t = bpf_map_lookup_elem(&totals, &zero);
	if (!t)
		return XDP_ABORTED;
	__sync_fetch_and_add(&t->frames, 1);
	if ((void *)(eth + 1) > data_end)
		goto other;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		__u32 ip_sum = 0;

		if ((void *)(ip + 1) > data_end || ip->ihl != 5)
			goto other;
		if (sum_words(ip, 20, data_end, &ip_sum) || fold(ip_sum) != 0xffff)
			__sync_fetch_and_add(&t->bad_ip_csum, 1);
		key.family = 4;
		key.proto = ip->protocol;
		key.src[0] = ip->saddr;
		key.dst[0] = ip->daddr;
		l4 = ip + 1;
		l4_len = bpf_ntohs(ip->tot_len) - 20;
		sum += (bpf_ntohl(ip->saddr) >> 16) + (bpf_ntohl(ip->saddr) & 0xffff);
		sum += (bpf_ntohl(ip->daddr) >> 16) + (bpf_ntohl(ip->daddr) & 0xffff);
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > data_end)
			goto other;
		key.family = 6;
		key.proto = ip6->nexthdr;
		__builtin_memcpy(key.src, &ip6->saddr, 16);
		__builtin_memcpy(key.dst, &ip6->daddr, 16);
		l4 = ip6 + 1;
		l4_len = bpf_ntohs(ip6->payload_len);
		if (sum_words(&ip6->saddr, 32, data_end, &sum))
			goto other;
	} else {
		goto other;
	}
	if (key.proto != IPPROTO_UDP && key.proto != IPPROTO_TCP)
		goto other;
	{
		struct udphdr *ports = l4;

		if ((void *)(ports + 1) > data_end)
			goto other;
		key.sport = ports->source;
		key.dport = ports->dest;
	}
	sum += key.proto + l4_len;
	if (l4_len > MAX_L4_BYTES)
		__sync_fetch_and_add(&t->unchecked, 1);
	else if (sum_words(l4, l4_len, data_end, &sum) || fold(sum) != 0xffff)
		__sync_fetch_and_add(&t->bad_l4_csum, 1);

	__u64 one = 1, *n = bpf_map_lookup_elem(&flows, &key);
	if (n)
		__sync_fetch_and_add(n, 1);
	else if (bpf_map_update_elem(&flows, &key, &one, BPF_NOEXIST))
		/* Another CPU added it first. */
		if ((n = bpf_map_lookup_elem(&flows, &key)))
			__sync_fetch_and_add(n, 1);
	return XDP_DROP;
other:
	__sync_fetch_and_add(&t->other, 1);
	return XDP_DROP;
}

#endif /* FLOW_COUNT_H */
