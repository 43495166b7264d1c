// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object: passes every packet; the empty program of cross-checks. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
