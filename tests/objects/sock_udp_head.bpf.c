// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object: a socket filter that keeps the first 64 bytes of IPv4 UDP
 * datagrams and drops everything else. In a socket filter's test run the
 * packet starts at the network header. */
#include <stddef.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

SEC("socket")
int sock_udp_head(struct __sk_buff *skb)
{
	__u8 proto;

	if (skb->protocol != bpf_htons(ETH_P_IP))
		return 0;
	if (bpf_skb_load_bytes(skb, offsetof(struct iphdr, protocol), &proto, 1))
		return 0;
	return proto == IPPROTO_UDP ? 64 : 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
