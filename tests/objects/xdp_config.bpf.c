// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Test object: a program configured the way libbpf programs are, through
 * `volatile const` globals its loader sets before load (.rodata, frozen):
 * a service address and port, the MAC of the next hop, a policy flag and
 * a struct of limits, plus a counter in .bss and one in a named section.
 * A packet to the service goes back out to the next hop (XDP_TX); one too
 * long or too short-lived is dropped; others pass, or are dropped when
 * drop_others is set.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct limits {
	__u16 max_len;
	__u8 ttl_min;
};

const volatile __be32 service_ip = 0;
const volatile __be16 service_port = 0;
const volatile __u8 next_hop[ETH_ALEN] = {};
const volatile bool drop_others = false;
const volatile struct limits limits = { .max_len = 1500, .ttl_min = 1 };

__u64 forwarded = 0;
__u64 others SEC(".data.stats") = 0;

SEC("xdp")
int xdp_config(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct tcphdr *tcp = (void *)(ip + 1);

	if ((void *)(tcp + 1) > data_end)
		return XDP_PASS;
	if (data_end - data > limits.max_len || ip->ttl < limits.ttl_min)
		return XDP_DROP;
	if (eth->h_proto == bpf_htons(ETH_P_IP) && ip->protocol == IPPROTO_TCP && ip->daddr == service_ip &&
	    tcp->dest == service_port) {
		__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
		for (int i = 0; i < ETH_ALEN; i++)
			eth->h_dest[i] = next_hop[i];
		forwarded++;
		return XDP_TX;
	}
	others++;
	return drop_others ? XDP_DROP : XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
