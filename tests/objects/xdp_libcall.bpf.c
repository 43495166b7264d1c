// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object: a call to libgcc's __bswapsi2, as GCC 12's BPF backend
 * emits for a byte swap it has no instruction for. No BPF program can call
 * it: bpfbench must refuse the object naming the call. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

extern __u32 __bswapsi2(__u32 x);

SEC("xdp")
int xdp_libcall(struct xdp_md *ctx)
{
	return __bswapsi2(ctx->ingress_ifindex) == 1 ? XDP_DROP : XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
