// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The timing driver for a user's XDP program (driver.h's BENCH_DRIVER
 * writes its programs). Between iterations the packet gets back its head
 * and length and the next variant's bytes. For kernels without may_goto,
 * bench_step puts the packet back and writes the next variant before each
 * run of the program, so the bounded batch's start only records the shape.
 */
#include "driver.h"
#include "driver_xdp.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* bench_xdp_reset for a global function: the state looked up each time. */
static __always_inline int bench_xdp_step(struct xdp_md *ctx)
{
	struct bench_driver_state *st = bench_driver_state_get();

	return !st || bench_xdp_reset(ctx, st, bench_only_variant());
}

/* Records the packet's shape at the batch's start. 0 on success. */
static __always_inline int bench_xdp_shape(struct xdp_md *ctx)
{
	struct bench_driver_state *st = bench_driver_state_get();

	if (!st)
		return -1;
	st->data0 = (__u64)(long)ctx->data;
	st->len0 = ctx->data_end - ctx->data;
	return 0;
}

BENCH_DRIVER("xdp", struct xdp_md, XDP_PASS, XDP_ABORTED, bench_xdp_start, bench_xdp_reset, bench_xdp_step,
	     bench_xdp_shape)
