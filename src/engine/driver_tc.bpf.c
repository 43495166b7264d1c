// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The timing driver for a user's tc (sched_cls) program (driver.h's
 * BENCH_DRIVER writes its programs). Between iterations the skb gets back
 * its length (the host then writes back every byte of the packet) and the
 * fields a tc program may write.
 */
#include "driver.h"
#include "driver_tc.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* bench_tc_reset for a global function: the state looked up each time. */
static __always_inline int bench_tc_step(struct __sk_buff *skb)
{
	struct bench_driver_state *st = bench_driver_state_get();

	return !st || bench_tc_reset(skb, st, bench_only_variant());
}

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

BENCH_DRIVER("tc", struct __sk_buff, TC_ACT_OK, TC_ACT_SHOT, bench_tc_start, bench_tc_reset, bench_tc_step,
	     bench_tc_shape)
