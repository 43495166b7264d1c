// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Test object (tc): programs that change the packet's size, each as a
 * datapath does it. tc_decap removes an IPIP packet's outer IPv4 header
 * (bpf_skb_adjust_room shrinking at the MAC header), tc_encap adds one
 * (growing, with the encapsulation flags), tc_vlan_push tags a frame
 * (bpf_skb_vlan_push: the tag goes into the skb, not the bytes), and
 * tc_vlan_pop takes a tag off a frame that carries one in its bytes.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

SEC("tc")
int tc_decap(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *outer = (void *)(eth + 1);

	if ((void *)(outer + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP) || outer->protocol != IPPROTO_IPIP)
		return TC_ACT_OK;
	if (bpf_skb_adjust_room(skb, -(int)sizeof(struct iphdr), BPF_ADJ_ROOM_MAC, 0))
		return TC_ACT_SHOT;
	return TC_ACT_REDIRECT;
}

SEC("tc")
int tc_encap(struct __sk_buff *skb)
{
	struct iphdr outer = {
		.version = 4,
		.ihl = 5,
		.ttl = 64,
		.protocol = IPPROTO_IPIP,
		.saddr = bpf_htonl(0xac100001),	/* 172.16.0.1 */
		.daddr = bpf_htonl(0xac100002),	/* 172.16.0.2 */
	};
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *inner = (void *)(eth + 1);
	__u16 inner_len;

	if ((void *)(inner + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return TC_ACT_OK;
	inner_len = bpf_ntohs(inner->tot_len);
	outer.tot_len = bpf_htons(inner_len + sizeof(outer));
	if (bpf_skb_adjust_room(skb, sizeof(outer), BPF_ADJ_ROOM_MAC,
				BPF_F_ADJ_ROOM_FIXED_GSO | BPF_F_ADJ_ROOM_ENCAP_L3_IPV4))
		return TC_ACT_SHOT;
	if (bpf_skb_store_bytes(skb, ETH_HLEN, &outer, sizeof(outer), BPF_F_RECOMPUTE_CSUM))
		return TC_ACT_SHOT;
	if (bpf_l3_csum_replace(skb, ETH_HLEN + offsetof(struct iphdr, check), 0,
				bpf_csum_diff(0, 0, (__be32 *)&outer, sizeof(outer), 0), 0))
		return TC_ACT_SHOT;
	return TC_ACT_REDIRECT;
}

SEC("tc")
int tc_vlan_push(struct __sk_buff *skb)
{
	if (bpf_skb_vlan_push(skb, bpf_htons(ETH_P_8021Q), 42))
		return TC_ACT_SHOT;
	return TC_ACT_OK;
}

SEC("tc")
int tc_vlan_pop(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_8021Q))
		return TC_ACT_OK;
	if (bpf_skb_vlan_pop(skb))
		return TC_ACT_SHOT;
	return TC_ACT_REDIRECT;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
