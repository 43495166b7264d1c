/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The XDP drivers' packet handling (driver_xdp.bpf.c, driver_chain.bpf.c):
 * a batch's start records the packet's shape, and after each iteration the
 * packet is put back to it.
 */
#ifndef BENCH_DRIVER_XDP_H
#define BENCH_DRIVER_XDP_H

#include "driver.h"

/* Puts the packet back for the next iteration: its head and tail where the
 * batch started them, then the next variant's bytes. 0 on success. */
static __always_inline int bench_xdp_reset(struct xdp_md *ctx, struct bench_driver_state *st,
					   const struct bench_variant *only)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	long head;
	int tail;

	if (cfg_xdp_meta) {
		/* Through the map as plain numbers, as below: the verifier
		 * subtracts no packet pointer from a metadata one. */
		st->data1 = (__u64)(long)data;
		st->meta1 = (__u64)(long)ctx->data_meta;
		head = (long)(st->data1 - st->meta1);
		if (head > 0 && bpf_xdp_adjust_meta(ctx, (int)head))
			return -1;
		data = (void *)(long)ctx->data;
		end = (void *)(long)ctx->data_end;
	}
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
	return bench_next_variant(data, end, st, only);
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
	if (bench_next_variant(data, end, st, bench_only_variant()))
		return 0;
	return st;
}

#endif /* BENCH_DRIVER_XDP_H */
