// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object: leaves 4 bytes of metadata in front of the packet
 * (bpf_xdp_adjust_meta), as Cilium's XDP entry does; a run that starts
 * with metadata already there (one the loop did not drop) aborts. The
 * kernel's test run outputs the metadata with the packet. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_meta(struct xdp_md *ctx)
{
	__u32 *meta;

	if (ctx->data_meta != ctx->data)
		return XDP_ABORTED;
	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*meta)))
		return XDP_ABORTED;
	meta = (void *)(long)ctx->data_meta;
	if ((void *)(meta + 1) > (void *)(long)ctx->data)
		return XDP_ABORTED;
	*meta = 0x2a;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
