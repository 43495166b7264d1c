// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Test object: asks the kernel's routing table (bpf_fib_lookup), which no
 * userspace runtime has; --runtime user must refuse it when it loads.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_fib(struct xdp_md *ctx)
{
	struct bpf_fib_lookup params = {};

	params.family = 2; /* AF_INET */
	params.ifindex = ctx->ingress_ifindex;
	if (bpf_fib_lookup(ctx, &params, sizeof(params), 0) == BPF_FIB_LKUP_RET_SUCCESS)
		return XDP_TX;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
