/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The XDP drivers' packet handling (driver_xdp.bpf.c, driver_chain.bpf.c):
 * a batch's start records the packet's shape, and after each iteration the
 * packet is put back to it.
 */
#ifndef BENCH_DRIVER_XDP_H
#define BENCH_DRIVER_XDP_H

#include "driver.h"

/* Drops the metadata the program left in front of the packet. 0 on success.
 * Metadata comes in 4-byte steps up to 32 bytes: its length is found by
 * comparing pointers (the verifier subtracts no packet pointer from a
 * metadata one), which keeps the driver's state as it was (a larger state
 * cost tc_ttl's loop 0.9 %). */
static __always_inline int bench_xdp_drop_meta(struct xdp_md *ctx)
{
	void *meta = (void *)(long)ctx->data_meta;
	void *data = (void *)(long)ctx->data;
	int len = meta + 32 <= data ? 32
		: meta + 28 <= data ? 28
		: meta + 24 <= data ? 24
		: meta + 20 <= data ? 20
		: meta + 16 <= data ? 16
		: meta + 12 <= data ? 12
		: meta + 8 <= data ? 8
		: meta + 4 <= data ? 4 : 0;

	return len && bpf_xdp_adjust_meta(ctx, len);
}

/* Puts the packet back for the next iteration: its metadata dropped (where
 * the program leaves some), its head and tail where the batch started
 * them, then the next variant's bytes. 0 on success. The metadata goes
 * first, before the packet's pointers are read: read once, they keep the
 * code clang gives the loop without it. */
static __always_inline int bench_xdp_reset(struct xdp_md *ctx, struct bench_driver_state *st,
					   const struct bench_variant *only)
{
	/* Read once: every read of a volatile is a load the verifier keeps,
	 * though it knows the value and drops the branches on it. */
	__u32 restore = cfg_restore_bytes;
	void *data;
	void *end;
	long head;
	int tail;

	if ((restore & BENCH_RESTORE_DROP_META) && bench_xdp_drop_meta(ctx))
		return -1;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	if ((__u32)(end - data) != st->len0) {
		/* Which end moved is only known from where data now points:
		 * both pointers go through the map as plain numbers. */
		st->data1 = (__u64)(long)data;
		head = (long)(st->data0 - st->data1);
		if (head && bpf_xdp_adjust_head(ctx, (int)head))
			return -1;
		data = (void *)(long)ctx->data;
		end = (void *)(long)ctx->data_end;
		tail = (int)st->len0 - (int)(end - data);
		if (tail && bpf_xdp_adjust_tail(ctx, tail))
			return -1;
		data = (void *)(long)ctx->data;
		end = (void *)(long)ctx->data_end;
		st->resized++;
	}
	return bench_next_variant(data, end, st, only, restore);
}

/* Starts a batch: records the packet's shape and writes the next variant. */
static __always_inline struct bench_driver_state *bench_xdp_start(struct xdp_md *ctx)
{
	struct bench_driver_state *st = bench_driver_state_get();
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;

	if (!st)
		return 0;
	st->data0 = (__u64)(long)data;
	st->len0 = end - data;
	if (bench_next_variant(data, end, st, bench_only_variant(), cfg_restore_bytes))
		return 0;
	return st;
}

#endif /* BENCH_DRIVER_XDP_H */
