// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object the verifier refuses: it reads the packet without checking
 * its length first. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_reject(struct xdp_md *ctx)
{
	unsigned char *data = (void *)(long)ctx->data;

	return data[20] ? XDP_PASS : XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
