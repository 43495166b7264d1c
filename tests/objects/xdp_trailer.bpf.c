// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Test object: flips the last byte of the frame, as a program that writes
 * a trailer (a timestamp, a telemetry byte) at the frame's end does, and
 * sends it back. Its changes reach the frame's end whatever its length, so
 * the loop must write back the whole frame, 54 or 61 bytes as well as 64.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_trailer(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u64 len = data_end - data;
	__u64 off;
	__u8 *last;

	/* Registers of their own: clang would fold the length into pointer
	 * arithmetic the verifier refuses (end + ~data), and the bounds check
	 * into a store at offset -1 of the checked pointer. */
	asm volatile("" : "+r"(len));
	off = len - 1;

	if (off > 4095)
		return XDP_ABORTED;
	asm volatile("" : "+r"(off));
	last = data + off;
	if ((void *)(last + 1) > data_end)
		return XDP_ABORTED;
	*last ^= 0xff;
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
