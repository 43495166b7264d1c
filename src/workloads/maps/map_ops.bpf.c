// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Map-operation microbenchmarks: one operation (lookup, insert, update,
 * delete) on `bench_map`, repeated inside BENCH_TIMED_BATCH.
 *
 * The host loads one instance per (map type, sizes, operation): it sets the
 * map's type, key/value size, entries and flags before load and fixes the
 * operation through the read-only config below, so the verifier removes
 * every other operation's code and the loop contains exactly one map call.
 *
 * Keys are dense indices in [0, cfg_entries): the kernel LPM bench's "no
 * gaps" rule, which gives a trie maximal branching.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "bench_timing.bpf.h"
#include "map_ops.h"

const volatile enum map_op cfg_op = MAP_OP_NOOP;
const volatile enum key_kind cfg_key_kind = KEY_INDEX;
/* Never read: brings the limits into BTF for the host. */
const volatile enum map_ops_limit cfg_limits = MAX_VALUE_SIZE;
const volatile __u32 cfg_entries = 1;
const volatile __u32 cfg_random = 0;
const volatile __u32 cfg_prefix_len = 32;
/* Added to every key: a test hook that makes lookups miss on purpose. */
const volatile __u32 cfg_key_offset = 0;

/* Type, sizes, entries and flags are set by the host before load. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__uint(key_size, 4);
	__uint(value_size, 8);
} bench_map SEC(".maps");

/* Per CPU (one producer per CPU): where the key sequence continues, and what
 * the operations reported. The host reads and rewrites it between batches. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct map_op_state);
} op_state SEC(".maps");

/* Source of written values; read-only during a run, so producers share it. */
__u8 update_value[MAX_VALUE_SIZE];

union bench_key {
	__u8 bytes[MAX_KEY_SIZE];
	__u32 index;
	struct {
		__u32 prefixlen;
		__u32 data;	/* network byte order */
	} lpm;
};

/* One operation on key `idx`: 0 when it did what it should (the lookup
 * found the key, the insert created it, ...), 1 otherwise. A global function
 * so the verifier checks it once, not once per loop state. */
__noinline int map_op(__u32 idx)
{
	union bench_key key = {};

	if (cfg_op == MAP_OP_NOOP)
		return 0;
	idx += cfg_key_offset;
	if (cfg_key_kind == KEY_LPM) {
		key.lpm.prefixlen = cfg_prefix_len;
		key.lpm.data = bpf_htonl(cfg_prefix_len >= 32 ? idx : idx << (32 - cfg_prefix_len));
	} else {
		key.index = idx;
	}
	switch (cfg_op) {
	case MAP_OP_NOOP:	/* returned above */
		break;
	case MAP_OP_BASELINE:
		/* Make the compiler build the key as the other operations do. */
		asm volatile("" : : "r"(&key) : "memory");
		return 0;
	case MAP_OP_LOOKUP:
		return bpf_map_lookup_elem(&bench_map, &key) ? 0 : 1;
	case MAP_OP_INSERT:
		return bpf_map_update_elem(&bench_map, &key, update_value, BPF_NOEXIST) ? 1 : 0;
	case MAP_OP_UPDATE:
		return bpf_map_update_elem(&bench_map, &key, update_value, BPF_EXIST) ? 1 : 0;
	case MAP_OP_DELETE:
		return bpf_map_delete_elem(&bench_map, &key) ? 1 : 0;
	}
	return 1;
}

/* The harness's own cost: the same loop around an empty call. */
__noinline int empty_op(__u32 idx)
{
	/* Without a visible side effect clang deletes the call itself. */
	asm volatile("" : : "r"(idx) : "memory");
	return 0;
}

static __always_inline __u32 next_index(__u32 cursor)
{
	/* noop generates no key at all, random or not */
	if (cfg_random && cfg_op != MAP_OP_NOOP)
		return bpf_get_prandom_u32() % cfg_entries;
	return cursor;
}

/* Sequential keys wrap for operations that keep the map's size; insert and
 * delete stop where the host told them to (it caps the batch and refills). */
static __always_inline __u64 advance(__u64 cursor)
{
	cursor++;
	if (cfg_op != MAP_OP_INSERT && cfg_op != MAP_OP_DELETE && cursor >= cfg_entries)
		cursor = 0;
	return cursor;
}

/* Counts an operation's result and moves the cursor on; 0 (never a reset
 * failure). */
static __always_inline int count_op(struct map_op_state *st, int ret)
{
	st->failures += ret != 0;
	st->ops++;
	st->cursor = advance(st->cursor);
	return 0;
}

/*
 * The key cursor and the counts live in the op_state slot, not in locals:
 * the verifier then sees an unknown value on every load and prunes the loop
 * after one iteration, where exact local counters would make it walk every
 * iteration (and give up). SLOT keeps the empty program's counters apart.
 * LOOP is BENCH_TIMED_BATCH (may_goto; the host passes no restore),
 * BOUNDED_LOOP or BPF_LOOP.
 */
#define RUN_BATCH(ctx, LOOP, CALL, SLOT)						\
	({										\
		__u32 slot = SLOT;							\
		struct map_op_state *st = bpf_map_lookup_elem(&op_state, &slot);	\
		int ret = 0;								\
										\
		if (!st)								\
			return XDP_ABORTED;						\
		LOOP(ctx, ret, CALL, count_op(st, ret));					\
		XDP_PASS;								\
	})

SEC("xdp")
int map_bench(struct xdp_md *ctx)
{
	return RUN_BATCH(ctx, BENCH_TIMED_BATCH, map_op(next_index(st->cursor)), OP_STATE_BODY);
}

SEC("xdp")
int map_bench_empty(struct xdp_md *ctx)
{
	return RUN_BATCH(ctx, BENCH_TIMED_BATCH, empty_op(st->cursor), OP_STATE_EMPTY);
}

/*
 * For kernels without may_goto (the host loads one pair and leaves the
 * others unloaded): a bounded loop of at most 256 iterations (5.3), the
 * same body and counting inline, and bpf_loop (5.17), whose callback gets
 * the slot through the loop's state.
 */
#define BOUNDED_LOOP(ctx, ret, BODY, RESET) BENCH_TIMED_ITERATIONS_BOUNDED_INLINE(ret, BODY, RESET)

SEC("xdp")
int map_bench_bounded(struct xdp_md *ctx)
{
	return RUN_BATCH(ctx, BOUNDED_LOOP, map_op(next_index(st->cursor)), OP_STATE_BODY);
}

SEC("xdp")
int map_bench_empty_bounded(struct xdp_md *ctx)
{
	return RUN_BATCH(ctx, BOUNDED_LOOP, empty_op(st->cursor), OP_STATE_EMPTY);
}

#define LOOP_STATE(lc) ((struct map_op_state *)(lc)->st)
BENCH_LOOP_CALLBACK_BARE(map_loop_body, struct xdp_md, map_op(next_index(LOOP_STATE(__lc)->cursor)),
			 count_op(LOOP_STATE(__lc), __lc->ret))
BENCH_LOOP_CALLBACK_BARE(map_loop_empty, struct xdp_md, empty_op(LOOP_STATE(__lc)->cursor),
			 count_op(LOOP_STATE(__lc), __lc->ret))

/* The loop's state carries the slot's (`st` of RUN_BATCH) to the callback,
 * which counts itself. */
#define BPF_LOOP(ctx, ret, CALLBACK, RESET)						\
	do {										\
		BENCH_TIMED_ITERATIONS_BPF_LOOP(ctx, st, ret, CALLBACK);		\
		asm volatile("" : : "r"(ret));						\
	} while (0)

SEC("xdp")
int map_bench_bpf_loop(struct xdp_md *ctx)
{
	return RUN_BATCH(ctx, BPF_LOOP, map_loop_body, OP_STATE_BODY);
}

SEC("xdp")
int map_bench_empty_bpf_loop(struct xdp_md *ctx)
{
	return RUN_BATCH(ctx, BPF_LOOP, map_loop_empty, OP_STATE_EMPTY);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
