// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Test object: a lossy link. Passes every frame but one in `every` of the
 * full-size ones (data segments; handshakes and ACKs are small), which it
 * drops, so a TCP sender has to recover.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define LOSSY_MIN_LEN 200
/* xdp_blackhole.bpf.c drops every data segment. */
#ifndef LOSSY_EVERY
#define LOSSY_EVERY 500
#endif

const volatile __u32 every = LOSSY_EVERY;

__u64 seen = 0;
__u64 dropped = 0;

SEC("xdp")
int xdp_lossy(struct xdp_md *ctx)
{
	if (ctx->data_end - ctx->data < LOSSY_MIN_LEN)
		return XDP_PASS;
	/* One receive CPU at a time per queue: a plain count is exact enough. */
	if (++seen % every == 0) {
		dropped++;
		return XDP_DROP;
	}
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
