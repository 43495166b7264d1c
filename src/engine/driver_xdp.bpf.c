// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The timing driver for a user's XDP program (see driver.h). bench_target()
 * is a stand-in the host replaces with the user's program; it must stay
 * the last function each driver calls, so that it is the last one libbpf
 * appends. bench_driver_overhead is the same loop around an empty call;
 * the _bounded programs are the pair for kernels without may_goto.
 */
#include "driver.h"
#include "driver_xdp.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

__noinline int bench_target(struct xdp_md *ctx)
{
	asm volatile("" ::: "memory");
	return ctx ? XDP_PASS : XDP_ABORTED;
}

__noinline int bench_empty(struct xdp_md *ctx)
{
	asm volatile("" ::: "memory");
	return ctx ? XDP_PASS : XDP_ABORTED;
}

/* bench_xdp_reset for a global function: the state looked up each time. */
static __always_inline int bench_xdp_step(struct xdp_md *ctx)
{
	struct bench_driver_state *st = bench_driver_state_get();

	return !st || bench_xdp_reset(ctx, st, bench_only_variant());
}

SEC("xdp")
int bench_driver(struct xdp_md *ctx)
{
	struct bench_driver_state *st = bench_xdp_start(ctx);
	const struct bench_variant *only = bench_only_variant();
	int ret = XDP_ABORTED;

	if (!st)
		return XDP_ABORTED;
	BENCH_TIMED_ITERATIONS(ret, bench_target(ctx), bench_xdp_reset(ctx, st, only));
	/* The timed verdicts are not used; the untimed iteration's are. */
	asm volatile("" : : "r"(ret));
	/* The untimed iteration whose verdict and packet the host checks. */
	return bench_target(ctx);
}

SEC("xdp")
int bench_driver_overhead(struct xdp_md *ctx)
{
	struct bench_driver_state *st = bench_xdp_start(ctx);
	const struct bench_variant *only = bench_only_variant();
	int ret = XDP_ABORTED;

	if (!st)
		return XDP_ABORTED;
	BENCH_TIMED_ITERATIONS(ret, bench_empty(ctx), bench_xdp_reset(ctx, st, only));
	return ret;
}

/*
 * The driver for kernels without may_goto (driver.h's BENCH_DRIVER_BOUNDED):
 * bench_step puts the packet back and writes the next variant, before
 * each run of the program, so the batch's start only records the shape.
 */
BENCH_BOUNDED_STEP_BARE(bench_step, struct xdp_md, bench_xdp_step(ctx))

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

SEC("xdp")
int bench_driver_bounded(struct xdp_md *ctx)
{
	int ret = XDP_ABORTED;

	if (bench_xdp_shape(ctx))
		return XDP_ABORTED;
	BENCH_DRIVER_BOUNDED(ctx, ret, bench_step, bench_target(ctx));
	asm volatile("" : : "r"(ret));
	/* The untimed iteration whose verdict and packet the host checks. */
	if (bench_step(ctx))
		return XDP_ABORTED;
	return bench_target(ctx);
}

SEC("xdp")
int bench_driver_overhead_bounded(struct xdp_md *ctx)
{
	int ret = XDP_ABORTED;

	if (bench_xdp_shape(ctx))
		return XDP_ABORTED;
	BENCH_DRIVER_BOUNDED(ctx, ret, bench_step, bench_empty(ctx));
	return ret;
}
