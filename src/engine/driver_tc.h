/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The tc drivers' skb handling (driver_tc.bpf.c, driver_chain.bpf.c): a
 * batch's start records the skb's length, the fields a tc program may
 * write and the state its helpers change, and after each iteration the
 * skb is put back to them.
 */
#ifndef BENCH_DRIVER_TC_H
#define BENCH_DRIVER_TC_H

#include "driver.h"

#define TC_ACT_OK	0
#define TC_ACT_SHOT	2

static __always_inline int bench_tc_reset(struct __sk_buff *skb, struct bench_driver_state *st,
					  const struct bench_variant *only)
{
	/* Read once: each read of a volatile is a load the verifier keeps (the
	 * branches on the value it knows go, with the stores they skip). */
	__u32 fields = cfg_skb_fields;

	/* First: going back across IPv4 and IPv6 moves the headers and the
	 * length, which the length's reset and the bytes written back then
	 * finish. A program's next pass would otherwise parse the packet put
	 * back as the protocol the last pass left (Cilium's SRv6 paths). */
	if ((fields & BENCH_SKB_PROTOCOL) && skb->protocol != st->protocol0) {
		if (bpf_skb_change_proto(skb, st->protocol0, 0))
			return -1;
		st->rehelped++;
	}
	if (skb->len != st->len0) {
#ifdef BENCH_TC_RESET_AT_MAC
		/* The room goes back where a decapsulation or a grown head took or
		 * made it, after the MAC header; the host writes every byte back. */
		if (bpf_skb_adjust_room(skb, (__s32)st->len0 - (__s32)skb->len, BPF_ADJ_ROOM_MAC, 0))
			return -1;
#else
		if (bpf_skb_change_tail(skb, st->len0, 0))
			return -1;
#endif
		st->resized++;
	}
	if (fields & BENCH_SKB_MARK)
		skb->mark = st->mark0;
	if (fields & BENCH_SKB_PRIORITY)
		skb->priority = st->priority0;
	if (fields & BENCH_SKB_TC_INDEX)
		skb->tc_index = st->tc_index0;
	if (fields & BENCH_SKB_TC_CLASSID)
		skb->tc_classid = st->tc_classid0;
	if (fields & BENCH_SKB_CB) {
		skb->cb[0] = st->cb0[0];
		skb->cb[1] = st->cb0[1];
		skb->cb[2] = st->cb0[2];
		skb->cb[3] = st->cb0[3];
		skb->cb[4] = st->cb0[4];
	}
	if (fields & BENCH_SKB_QUEUE_MAPPING)
		skb->queue_mapping = st->queue_mapping0;
	if (fields & BENCH_SKB_TSTAMP)
		skb->tstamp = st->tstamp0;
	if ((fields & BENCH_SKB_PKT_TYPE) && skb->pkt_type != st->pkt_type0) {
		bpf_skb_change_type(skb, st->pkt_type0);
		st->rehelped++;
	}
	/* A test run's skb starts without a hash; one computed stays cached,
	 * and the next pass would not compute it. */
	if ((fields & BENCH_SKB_HASH) && skb->hash != st->hash0) {
		if (st->hash0)
			bpf_set_hash(skb, st->hash0);
		else
			bpf_set_hash_invalid(skb);
		st->rehelped++;
	}
	return bench_next_variant((void *)(long)skb->data, (void *)(long)skb->data_end, st, only, cfg_restore_bytes);
}

static __always_inline struct bench_driver_state *bench_tc_start(struct __sk_buff *skb)
{
	struct bench_driver_state *st = bench_driver_state_get();

	if (!st)
		return 0;
	st->len0 = skb->len;
	st->mark0 = skb->mark;
	st->priority0 = skb->priority;
	st->tc_index0 = skb->tc_index;
	st->tc_classid0 = skb->tc_classid;
	st->cb0[0] = skb->cb[0];
	st->cb0[1] = skb->cb[1];
	st->cb0[2] = skb->cb[2];
	st->cb0[3] = skb->cb[3];
	st->cb0[4] = skb->cb[4];
	st->queue_mapping0 = skb->queue_mapping;
	st->tstamp0 = skb->tstamp;
	st->protocol0 = skb->protocol;
	st->pkt_type0 = skb->pkt_type;
	st->hash0 = skb->hash;
	if (bench_next_variant((void *)(long)skb->data, (void *)(long)skb->data_end, st, bench_only_variant(),
			       cfg_restore_bytes))
		return 0;
	return st;
}

#endif /* BENCH_DRIVER_TC_H */
