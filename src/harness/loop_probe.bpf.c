// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Candidate loop constructs for BENCH_TIMED_LOOP, each timing an empty body.
 * `bpfbench loops` runs them so the choice in bench_timing.bpf.h stays a
 * measured one on every kernel the tool meets.
 */
#include "bench_timing.bpf.h"

/* uapi since Linux 6.4; older distro headers lack it. */
struct bpf_iter_num {
	__u64 __opaque[1];
} __attribute__((aligned(8)));

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* An empty body the compiler cannot drop: the loop construct's own cost shows. */
static __always_inline int probe_empty_body(struct xdp_md *ctx)
{
	asm volatile("" ::: "memory");
	return XDP_PASS;
}

/* The same body behind a BPF-to-BPF call, to show what a call costs here. */
__noinline int probe_called_body(struct xdp_md *ctx)
{
	asm volatile("" ::: "memory");
	return ctx ? XDP_PASS : XDP_ABORTED;
}

static __always_inline __u32 probe_iters(void)
{
	struct bench_ctl *ctl = bench_ctl_get();

	return ctl ? ctl->batch_iters : 0;
}

/* A may_goto loop around BODY, as BENCH_TIMED_ITERATIONS times it. */
#define PROBE_MAY_GOTO(NAME, BODY)							\
	SEC("xdp")									\
	int NAME(struct xdp_md *ctx)							\
	{										\
		__u32 n = probe_iters();						\
		__u64 i, t0 = bpf_ktime_get_ns();					\
		int ret = 0;								\
											\
		for (i = 0; i < n && can_loop; i++)					\
			ret = BODY(ctx);						\
		bench_record(t0, bpf_ktime_get_ns() - t0, i, BENCH_OK);			\
		return ret ? ret : XDP_PASS;						\
	}

PROBE_MAY_GOTO(loop_may_goto, probe_empty_body)

SEC("xdp")
int loop_bpf_for(struct xdp_md *ctx)
{
	int n = probe_iters(), i, done = 0, ret = 0;
	__u64 t0 = bpf_ktime_get_ns();

	bpf_for(i, 0, n) {
		ret = probe_empty_body(ctx);
		done++;
	}
	bench_record(t0, bpf_ktime_get_ns() - t0, done, BENCH_OK);
	return ret ? ret : XDP_PASS;
}

struct probe_loop_ctx {
	struct xdp_md *xdp;
	int ret;
};

PROBE_MAY_GOTO(loop_may_goto_call, probe_called_body)

static long probe_loop_cb(__u64 i, void *data)
{
	struct probe_loop_ctx *c = data;

	c->ret = probe_empty_body(c->xdp);
	return 0;
}

SEC("xdp")
int loop_bpf_loop(struct xdp_md *ctx)
{
	struct probe_loop_ctx c = { .xdp = ctx };
	__u32 n = probe_iters();
	__u64 t0 = bpf_ktime_get_ns();
	long done = bpf_loop(n, probe_loop_cb, &c, 0);

	bench_record(t0, bpf_ktime_get_ns() - t0, done > 0 ? done : 0, done < 0 ? BENCH_ERR_RESET : BENCH_OK);
	return c.ret ? c.ret : XDP_PASS;
}

/* may_goto checked once per four bodies. */
SEC("xdp")
int loop_unroll4(struct xdp_md *ctx)
{
	__u32 n = probe_iters() & ~3u;
	__u64 i, t0 = bpf_ktime_get_ns();
	int ret = 0;

	for (i = 0; i < n && can_loop; i += 4) {
		ret = probe_empty_body(ctx);
		ret = probe_empty_body(ctx);
		ret = probe_empty_body(ctx);
		ret = probe_empty_body(ctx);
	}
	bench_record(t0, bpf_ktime_get_ns() - t0, i, BENCH_OK);
	return ret ? ret : XDP_PASS;
}
