// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* CONTRIBUTING.md's example workload: XDP_PASS in the timing loop. */
#include "bench_timing.bpf.h"

/* The empty asm clobbers memory: a body clang could prove pure would be
 * called once per batch instead of once per iteration. */
__noinline int pass_body(struct xdp_md *ctx)
{
	asm volatile("" ::: "memory");
	return ctx ? XDP_PASS : XDP_ABORTED;
}

__noinline int empty_body(struct xdp_md *ctx)
{
	asm volatile("" ::: "memory");
	return ctx ? XDP_PASS : XDP_ABORTED;
}

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	int ret = XDP_ABORTED;

	BENCH_TIMED_LOOP(ctx, ret, pass_body(ctx), 0);
	return ret;
}

SEC("xdp")
int xdp_pass_overhead(struct xdp_md *ctx)
{
	int ret = XDP_ABORTED;

	BENCH_TIMED_LOOP(ctx, ret, empty_body(ctx), 0);
	return ret;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
