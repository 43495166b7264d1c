// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object (tc): a destination NAT through the skb helpers rather than
 * direct packet access. tc_nat reads the IPv4 header with
 * bpf_skb_load_bytes, writes the new destination (10.0.0.99) with
 * bpf_skb_store_bytes, mends the IP checksum with bpf_l3_csum_replace and
 * the UDP or TCP one with bpf_l4_csum_replace (pseudo-header; UDP's zero
 * checksum kept), trims frames longer than 80 bytes with
 * bpf_skb_change_tail, and redirects (TC_ACT_REDIRECT). tc_nat_diff makes
 * the same change to the IP checksum from bpf_csum_diff's difference;
 * tc_vlan pushes a VLAN tag. */
#include <stddef.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define IP_OFF ETH_HLEN
#define DADDR_OFF (IP_OFF + offsetof(struct iphdr, daddr))
#define IP_CSUM_OFF (IP_OFF + offsetof(struct iphdr, check))
#define L4_OFF (IP_OFF + sizeof(struct iphdr))
#define NEW_DADDR 0x0a000063 /* 10.0.0.99 */
#define MAX_LEN 80

static __always_inline int load_ipv4(struct __sk_buff *skb, struct iphdr *ip)
{
	if (skb->protocol != bpf_htons(ETH_P_IP))
		return -1;
	if (bpf_skb_load_bytes(skb, IP_OFF, ip, sizeof(*ip)) < 0)
		return -1;
	return ip->ihl == 5 ? 0 : -1;
}

SEC("tc")
int tc_nat(struct __sk_buff *skb)
{
	__be32 new = bpf_htonl(NEW_DADDR);
	struct iphdr ip;
	__u64 l4_flags;
	__u32 l4_csum;

	if (load_ipv4(skb, &ip))
		return TC_ACT_OK;
	switch (ip.protocol) {
	case IPPROTO_TCP:
		l4_csum = L4_OFF + offsetof(struct tcphdr, check);
		l4_flags = 0;
		break;
	case IPPROTO_UDP:
		l4_csum = L4_OFF + offsetof(struct udphdr, check);
		l4_flags = BPF_F_MARK_MANGLED_0;
		break;
	default:
		return TC_ACT_OK;
	}
	if (bpf_l4_csum_replace(skb, l4_csum, ip.daddr, new, BPF_F_PSEUDO_HDR | l4_flags | sizeof(new)))
		return TC_ACT_SHOT;
	if (bpf_l3_csum_replace(skb, IP_CSUM_OFF, ip.daddr, new, sizeof(new)))
		return TC_ACT_SHOT;
	if (bpf_skb_store_bytes(skb, DADDR_OFF, &new, sizeof(new), 0))
		return TC_ACT_SHOT;
	if (skb->len > MAX_LEN && bpf_skb_change_tail(skb, MAX_LEN, 0))
		return TC_ACT_SHOT;
	return bpf_redirect(1, 0);
}

SEC("tc")
int tc_nat_diff(struct __sk_buff *skb)
{
	__be32 new = bpf_htonl(NEW_DADDR);
	struct iphdr ip;
	__s64 diff;

	if (load_ipv4(skb, &ip))
		return TC_ACT_OK;
	diff = bpf_csum_diff(&ip.daddr, sizeof(ip.daddr), &new, sizeof(new), 0);
	if (diff < 0 || bpf_l3_csum_replace(skb, IP_CSUM_OFF, 0, diff, 0))
		return TC_ACT_SHOT;
	if (bpf_skb_store_bytes(skb, DADDR_OFF, &new, sizeof(new), BPF_F_INVALIDATE_HASH))
		return TC_ACT_SHOT;
	return TC_ACT_OK;
}

/* A helper the userspace runtime does not have, on IPv4's path only: there,
 * an IPv4 packet's case fails naming it, and an IPv6 one's runs. */
SEC("tc")
int tc_vlan(struct __sk_buff *skb)
{
	if (skb->protocol != bpf_htons(ETH_P_IP))
		return TC_ACT_OK;
	return bpf_skb_vlan_push(skb, bpf_htons(ETH_P_8021Q), 7) ? TC_ACT_SHOT : TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
