// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The timing driver for a user's tc (sched_cls) program (see driver.h).
 * bench_target() is a stand-in the host replaces with the user's program;
 * it must stay the last function each driver calls. Between iterations
 * the skb gets back its length (the host then writes back every byte of
 * the packet) and the fields a tc program may write.
 */
#include "driver.h"
#include "driver_tc.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

__noinline int bench_target(struct __sk_buff *skb)
{
	asm volatile("" ::: "memory");
	return skb ? TC_ACT_OK : TC_ACT_SHOT;
}

__noinline int bench_empty(struct __sk_buff *skb)
{
	asm volatile("" ::: "memory");
	return skb ? TC_ACT_OK : TC_ACT_SHOT;
}

SEC("tc")
int bench_driver(struct __sk_buff *skb)
{
	struct bench_driver_state *st = bench_tc_start(skb);
	const struct bench_variant *only = bench_only_variant();
	int ret = TC_ACT_SHOT;

	if (!st)
		return TC_ACT_SHOT;
	BENCH_TIMED_ITERATIONS(ret, bench_target(skb), bench_tc_reset(skb, st, only));
	/* The timed verdicts are not used; the untimed iteration's are. */
	asm volatile("" : : "r"(ret));
	return bench_target(skb);
}

SEC("tc")
int bench_driver_overhead(struct __sk_buff *skb)
{
	struct bench_driver_state *st = bench_tc_start(skb);
	const struct bench_variant *only = bench_only_variant();
	int ret = TC_ACT_SHOT;

	if (!st)
		return TC_ACT_SHOT;
	BENCH_TIMED_ITERATIONS(ret, bench_empty(skb), bench_tc_reset(skb, st, only));
	return ret;
}

/* bench_tc_reset for a global function: the state looked up each time. */
static __always_inline int bench_tc_step(struct __sk_buff *skb)
{
	struct bench_driver_state *st = bench_driver_state_get();

	return !st || bench_tc_reset(skb, st, bench_only_variant());
}

/* The pair for kernels without may_goto (driver.h's BENCH_DRIVER_BOUNDED). */
BENCH_BOUNDED_STEP_BARE(bench_step, struct __sk_buff, bench_tc_step(ctx))

/* Records the skb's length and fields at the batch's start. 0 on success. */
static __always_inline int bench_tc_shape(struct __sk_buff *skb)
{
	struct bench_driver_state *st = bench_driver_state_get();

	if (!st)
		return -1;
	st->len0 = skb->len;
	st->mark0 = skb->mark;
	st->priority0 = skb->priority;
	st->tc_index0 = skb->tc_index;
	st->tc_classid0 = skb->tc_classid;
	return 0;
}

SEC("tc")
int bench_driver_bounded(struct __sk_buff *skb)
{
	int ret = TC_ACT_SHOT;

	if (bench_tc_shape(skb))
		return TC_ACT_SHOT;
	BENCH_DRIVER_BOUNDED(skb, ret, bench_step, bench_target(skb));
	asm volatile("" : : "r"(ret));
	if (bench_step(skb))
		return TC_ACT_SHOT;
	return bench_target(skb);
}

SEC("tc")
int bench_driver_overhead_bounded(struct __sk_buff *skb)
{
	int ret = TC_ACT_SHOT;

	if (bench_tc_shape(skb))
		return TC_ACT_SHOT;
	BENCH_DRIVER_BOUNDED(skb, ret, bench_step, bench_empty(skb));
	return ret;
}
