// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object: a cgroup skb filter that allows IPv4 TCP to port 80 and
 * denies everything else. Its packet starts at the network header. */
#include <stddef.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

SEC("cgroup_skb/ingress")
int cgroup_allow_http(struct __sk_buff *skb)
{
	struct iphdr ip;
	__u16 dport;

	if (skb->protocol != bpf_htons(ETH_P_IP))
		return 0;
	if (bpf_skb_load_bytes(skb, 0, &ip, sizeof(ip)) || ip.protocol != IPPROTO_TCP)
		return 0;
	if (bpf_skb_load_bytes(skb, ip.ihl * 4 + offsetof(struct tcphdr, dest), &dport, sizeof(dport)))
		return 0;
	return dport == bpf_htons(80);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
