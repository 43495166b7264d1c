// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Drops every frame: the cheapest receiver, for generator throughput. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_drop(struct xdp_md *ctx)
{
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
