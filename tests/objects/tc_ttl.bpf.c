// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object (tc): IPv4 packets get their TTL decremented (checksum fixed
 * with bpf_l3_csum_replace) and a mark; others pass as they are. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define TTL_OFF (ETH_HLEN + offsetof(struct iphdr, ttl))
#define CSUM_OFF (ETH_HLEN + offsetof(struct iphdr, check))

SEC("tc")
int tc_ttl(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);
	__u16 old, new;

	if ((void *)(ip + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return TC_ACT_OK;
	if (ip->ttl <= 1)
		return TC_ACT_SHOT;
	old = *(__u16 *)&ip->ttl;
	ip->ttl -= 1;
	new = *(__u16 *)&ip->ttl;
	bpf_l3_csum_replace(skb, CSUM_OFF, old, new, 2);
	skb->mark = 0x42;
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
