// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Test object: bpf_csum_diff on bytes of the packet, to compare the kernel
 * and userspace. Byte 14 is from_size, byte 15 to_size (each 0-63), bytes
 * 16-19 the seed; `from` starts at byte 24 and `to` at byte 88. The result
 * goes into `last`; the verdict is XDP_PASS.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

long last = 0;

SEC("xdp")
int xdp_csum(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u8 *p = data;
	__u32 from_size, to_size, seed;

	if ((void *)(p + 152) > data_end)
		return XDP_ABORTED;
	from_size = p[14] & 63;
	to_size = p[15] & 63;
	seed = *(__u32 *)(p + 16);
	last = bpf_csum_diff((__be32 *)(p + 24), from_size, (__be32 *)(p + 88), to_size, seed);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
