/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Shared by the timing drivers for users' programs (driver_xdp.bpf.c,
 * driver_tc.bpf.c). The host reads these definitions from the objects' BTF.
 *
 * A user's program, as libbpf prepared it, replaces bench_target(): the
 * driver's batch loop calls it once per iteration, then puts the packet
 * back the way the next iteration must see it: the length the program
 * changed, the bytes it wrote, and the next of the case's packets (the
 * "variants": the packets a spec with ranges stands for, all of one length,
 * differing only in their first cfg_restore_bytes bytes).
 */
#ifndef BENCH_DRIVER_H
#define BENCH_DRIVER_H

#include "bench_timing.bpf.h"

enum bench_driver_limit {
	BENCH_MAX_RESTORE = 512,	/* bytes written back per iteration at most */
};

/* Words, not bytes: copied word by word (clang copies a byte array byte by byte). */
struct bench_variant {
	__u64 words[BENCH_MAX_RESTORE / 8];
};

/* Per CPU; the host reads idx to know which variant the last iteration saw. */
struct bench_driver_state {
	__u64 data0;	/* ctx->data when the batch started, as a number */
	__u64 data1;	/* ctx->data after an iteration that changed the length */
	__u64 resized;	/* iterations after which the length had to be restored */
	__u64 rehelped;	/* iterations after which a helper put the protocol, type or hash back */
	__u32 idx;	/* the variant in the packet now; persists across batches */
	__u32 len0;	/* packet length when the batch started */
	__u32 mark0;	/* tc: skb fields the program may write, as they started */
	__u32 priority0;
	__u32 tc_index0;
	__u32 tc_classid0;
	__u32 cb0[5];	/* tc: cb[], scratch a chain passes between its programs */
	__u32 queue_mapping0;
	__u32 protocol0;	/* tc: skb->protocol, network order, as the test run set it */
	__u32 pkt_type0;
	__u32 hash0;
	__u64 tstamp0;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);		/* the host sets it to the number of variants */
	__type(key, __u32);
	__type(value, struct bench_variant);
} bench_variants SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bench_driver_state);
} bench_driver_state SEC(".maps");

/* Set by the host before load; frozen, so the verifier sees constants and
 * keeps only the copy of the right size. */
const volatile __u32 cfg_variants = 1;
/*
 * The bytes written back per iteration (at least 8, at most
 * BENCH_MAX_RESTORE; not a multiple of 8 only where it is the packet's
 * length, a frame of 54 or 61 bytes written back whole), with BENCH_RESTORE_DROP_META where an XDP program
 * moves data_meta (bpf_xdp_adjust_meta): the metadata it left is dropped
 * after each iteration (the kernel's test run outputs it in front of the
 * packet, and the next iteration would add to it). One word, read once per
 * iteration: each read of a volatile is a load the verifier keeps, and a
 * second word cost xdp_swap's loop 1.6 % (`ab`, paired).
 */
const volatile __u32 cfg_restore_bytes = 0;
#define BENCH_RESTORE_DROP_META (1u << 31)

/*
 * tc: the skb's state put back after each iteration, as bits. The host sets
 * those the user's program may change: a field it stores to (mark, ...,
 * tstamp), or state a helper it calls changes (the L3 protocol: an
 * encapsulation or decapsulation across IPv4 and IPv6; the packet type;
 * the cached flow hash, which a second bpf_get_hash_recalc() would
 * otherwise find computed). Each field put back cost the loop ~0.15 ns; a
 * chain, whose later programs the host does not read, gets them all.
 */
enum bench_skb_field {
	BENCH_SKB_MARK = 1,
	BENCH_SKB_PRIORITY = 2,
	BENCH_SKB_TC_INDEX = 4,
	BENCH_SKB_TC_CLASSID = 8,
	BENCH_SKB_CB = 16,	/* all five words of cb[] */
	BENCH_SKB_QUEUE_MAPPING = 32,
	BENCH_SKB_TSTAMP = 64,
	BENCH_SKB_PROTOCOL = 128,
	BENCH_SKB_PKT_TYPE = 256,
	BENCH_SKB_HASH = 512,
	BENCH_SKB_ALL = 1023,
};
const volatile __u32 cfg_skb_fields = BENCH_SKB_ALL;

static __always_inline struct bench_driver_state *bench_driver_state_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&bench_driver_state, &zero);
}

/* Copies n words; n is a constant in every use, so the loop unrolls. */
static __always_inline void bench_copy_words(void *dst, const __u64 *src, const int n)
{
#pragma unroll
	for (int i = 0; i < n; i++)
		((__u64 *)dst)[i] = src[i];
}

/*
 * One case of the copy: N bytes from the variant to the packet, bounds
 * checked. N is an expression (k * 64 + 8): parenthesized, or N / 8 is
 * k * 64 + 1 words, and every restore above 64 bytes copied past its
 * check (the verifier refused the loop).
 */
#define BENCH_COPY_CASE(N)								\
	case (N):									\
		if (data + (N) > end)							\
			return -1;							\
		bench_copy_words(data, v->words, (N) / 8);				\
		break;
#define BENCH_COPY_8(k)									\
	BENCH_COPY_CASE(k * 64 + 8) BENCH_COPY_CASE(k * 64 + 16) BENCH_COPY_CASE(k * 64 + 24)	\
	BENCH_COPY_CASE(k * 64 + 32) BENCH_COPY_CASE(k * 64 + 40) BENCH_COPY_CASE(k * 64 + 48)	\
	BENCH_COPY_CASE(k * 64 + 56) BENCH_COPY_CASE(k * 64 + 64)

/*
 * Writes the first `bytes` (cfg_restore_bytes) of variant `v` into the
 * packet [data, end). 0 on success. The whole words first; a tail of 1 to
 * 7 bytes then goes as one more word, the 8 bytes that end at `bytes`:
 * it overlaps the last whole word with the same bytes, so a frame of any
 * length is written back without a byte beyond it. `bytes` is a constant
 * (frozen), so the verifier keeps one case and, without a tail, no tail.
 */
static __always_inline int bench_write_variant(void *data, void *end, const struct bench_variant *v,
					       __u32 bytes)
{
	switch (bytes & ~7u) {
	BENCH_COPY_8(0) BENCH_COPY_8(1) BENCH_COPY_8(2) BENCH_COPY_8(3)
	BENCH_COPY_8(4) BENCH_COPY_8(5) BENCH_COPY_8(6) BENCH_COPY_8(7)
	default:
		return -1;
	}
	if (bytes & 7) {
		if (data + bytes > end)
			return -1;
		*(__u64 *)(data + bytes - 8) = *(const __u64 *)((const __u8 *)v->words + bytes - 8);
	}
	return 0;
}

/*
 * Moves on to the next variant and writes it into the packet [data, end).
 * 0 on success. With one variant, `only` (looked up once per batch) is it;
 * otherwise the index wraps by comparison, not by a division, which would
 * cost more than the rest of the loop.
 */
static __always_inline int bench_next_variant(void *data, void *end, struct bench_driver_state *st,
					      const struct bench_variant *only, __u32 restore)
{
	const struct bench_variant *v = only;
	__u32 bytes = restore & ~BENCH_RESTORE_DROP_META;
	__u32 idx;

	if (!bytes)
		return 0;
	if (cfg_variants > 1) {
		idx = st->idx + 1;
		if (idx >= cfg_variants)
			idx = 0;
		st->idx = idx;
		v = bpf_map_lookup_elem(&bench_variants, &idx);
	}
	if (!v)
		return -1;
	return bench_write_variant(data, end, v, bytes);
}

/* The one variant there is, for bench_next_variant (NULL with several). */
static __always_inline const struct bench_variant *bench_only_variant(void)
{
	__u32 zero = 0;

	return cfg_variants == 1 ? bpf_map_lookup_elem(&bench_variants, &zero) : 0;
}

/*
 * The batch for kernels without may_goto: a bounded loop (5.3) of at most
 * BENCH_BOUNDED_ITERS iterations, each calling STEP (a global function:
 * put the packet back, write the next variant) and then BODY. The
 * verifier walks every iteration, at a few instructions each because both
 * calls reach global functions. STEP comes first so that the spliced
 * program, called last, is the function libbpf appends last; the batch's
 * start therefore only records the packet's shape, and the untimed
 * iteration after the batch is STEP then BODY too: the same packets in
 * the same order as the may_goto driver's.
 */
#define BENCH_DRIVER_BOUNDED(ctx, ret, STEP, BODY)					\
	do {										\
		int __step = BENCH_OK;							\
											\
		BENCH_TIMED_ITERATIONS_BOUNDED_INLINE(ret,				\
			(__step = STEP(ctx)) != BENCH_OK ? ret : BODY,			\
			__step != BENCH_OK);						\
	} while (0)

#endif /* BENCH_DRIVER_H */
