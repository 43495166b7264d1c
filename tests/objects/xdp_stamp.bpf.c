// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Test object: answers a TCP packet with its sequence number taken from
 * the clock, as a SYN-cookie proxy's does (its cookie changes every
 * minute, its timestamps every millisecond): two runs never give the same
 * packet, and only --ignore tcp.seq lets a comparison pass.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

SEC("xdp")
int xdp_stamp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct tcphdr *tcp = (void *)(ip + 1);

	if ((void *)(tcp + 1) > data_end || ip->protocol != IPPROTO_TCP)
		return XDP_PASS;
	tcp->seq = bpf_htonl((__u32)bpf_ktime_get_ns());
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
