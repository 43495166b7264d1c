// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The timing driver for a user's XDP or tc program that makes tail calls
 * (a chain). A tail call does not return to its caller, so the chain cannot
 * be spliced into a loop; but a tail call made from a subprogram ends in
 * that subprogram's caller when the chain's last program exits. Each
 * iteration of the loop below therefore enters the chain through slot
 * BENCH_CHAIN_ENTRY of the driver's prog array, runs it whole with real
 * tail calls, and comes back. The kernel counts tail calls per run of the
 * driver (33), so a run holds cfg_chain_iters iterations, which the host
 * sets from the number of tail calls one pass through the chain makes
 * (counted by the probe); a batch is many runs, each timed inside BPF and
 * summed into bench_chain_totals.
 *
 * The same programs exist for XDP (suffix _xdp), tc (_tc) and raw
 * tracepoints (_raw_tp), each kind with its own prog array (an array takes
 * programs of one type); the host loads one kind.
 */
#include "driver.h"
#include "driver_xdp.h"
#include "driver_tc.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Passes per run at most: MAX_TAIL_CALL_CNT, the kernel's limit of tail
 * calls per run (33 since 5.17; the host measures it with the probes). */
#define BENCH_MAX_PASSES 33

/* The slots of each prog array the host fills. */
enum bench_chain_slot {
	BENCH_CHAIN_ENTRY = 0,	/* the user's program */
	BENCH_CHAIN_EMPTY = 1,	/* bench_chain_empty_*: the overhead's chain, and the probes' */
	BENCH_CHAIN_SLOTS = 2,
};

struct bench_chain_array {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, BENCH_CHAIN_SLOTS);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
};
struct bench_chain_array bench_chain_xdp SEC(".maps");
struct bench_chain_array bench_chain_tc SEC(".maps");
struct bench_chain_array bench_chain_raw_tp SEC(".maps");

/* Summed over the runs of a batch; the host reads them before and after. */
struct bench_chain_totals {
	__u64 elapsed_ns;
	__u64 iters;
	__u64 runs;
	__u32 probe_calls;	/* tail calls that still succeeded after one pass (the probes) */
	__s32 status;		/* enum bench_status of the last failed run */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bench_chain_totals);
} bench_chain_totals SEC(".maps");

/* Timed iterations per run; the untimed one after them makes one more pass. */
const volatile __u32 cfg_chain_iters = 1;

/*
 * What bench_chain_enter_*() returns when its tail call fails. Not a
 * constant the verifier knows: 5.10's and 6.1's take a subprogram's
 * constant return value for the value every call returns, tail call or
 * not, and drop the probes' loops as dead code.
 */
int bench_chain_failed = -1;

static __always_inline struct bench_chain_totals *bench_chain_totals_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&bench_chain_totals, &zero);
}

/*
 * The programs of one kind:
 * - bench_chain_enter_K() enters the chain in `slot`. When the tail call
 *   succeeds, the chain's verdict is what this call returns; when it fails
 *   (an empty slot, the limit), bench_chain_failed (-1).
 * - bench_chain_run_K(): one run, cfg_chain_iters timed passes through the
 *   chain, the packet put back after each, then one untimed pass whose
 *   verdict and packet the host checks.
 * - bench_chain_count_K(): the tail calls one pass through the chain in
 *   `slot` leaves: one pass, then tail calls into the empty program until
 *   the kernel refuses one.
 */
#define BENCH_CHAIN_PROGRAMS(K, SECTION, CTX, ARRAY, START, RESET, ABORTED, PASS)			\
static __noinline int bench_chain_enter_##K(CTX *ctx, enum bench_chain_slot slot)			\
{													\
	int failed = bench_chain_failed;								\
													\
	bpf_tail_call(ctx, &ARRAY, slot);								\
	return failed;											\
}													\
													\
static __always_inline int bench_chain_run_##K(CTX *ctx, enum bench_chain_slot slot)			\
{													\
	struct bench_driver_state *st = START(ctx);							\
	const struct bench_variant *only = bench_only_variant();					\
	struct bench_chain_totals *t = bench_chain_totals_get();					\
	__u32 n = cfg_chain_iters;									\
	__u64 start;											\
	__u32 i;											\
													\
	if (!st || !t)											\
		return ABORTED;										\
	start = bpf_ktime_get_ns();									\
	for (i = 0; i < n && i < BENCH_MAX_PASSES; i++) {						\
		bench_chain_enter_##K(ctx, slot);							\
		if (RESET(ctx, st, only)) {								\
			t->status = BENCH_ERR_RESET;							\
			return ABORTED;									\
		}											\
	}												\
	t->elapsed_ns += bpf_ktime_get_ns() - start;							\
	t->iters += i;											\
	t->runs++;											\
	return bench_chain_enter_##K(ctx, slot);							\
}													\
													\
static __always_inline int bench_chain_count_##K(CTX *ctx, enum bench_chain_slot slot)		\
{													\
	struct bench_chain_totals *t = bench_chain_totals_get();					\
	__u32 i;											\
													\
	if (!t)												\
		return ABORTED;										\
	bench_chain_enter_##K(ctx, slot);								\
	t->probe_calls = 0;										\
	for (i = 0; i < BENCH_MAX_PASSES; i++) {							\
		if (bench_chain_enter_##K(ctx, BENCH_CHAIN_EMPTY) < 0)					\
			break;										\
		t->probe_calls++;									\
	}												\
	return PASS;											\
}													\
													\
SEC(SECTION) int bench_chain_driver_##K(CTX *ctx) { return bench_chain_run_##K(ctx, BENCH_CHAIN_ENTRY); } \
/* The same loop around a chain of one empty program. */						\
SEC(SECTION) int bench_chain_overhead_##K(CTX *ctx) { return bench_chain_run_##K(ctx, BENCH_CHAIN_EMPTY); } \
/* The user's chain: its tail calls are the limit less what it leaves. */				\
SEC(SECTION) int bench_chain_probe_##K(CTX *ctx) { return bench_chain_count_##K(ctx, BENCH_CHAIN_ENTRY); } \
/* A chain of one tail call: the kernel's limit is one more than it leaves. */			\
SEC(SECTION) int bench_chain_probe_limit_##K(CTX *ctx) { return bench_chain_count_##K(ctx, BENCH_CHAIN_EMPTY); } \
SEC(SECTION) int bench_chain_empty_##K(CTX *ctx) { return PASS; }

BENCH_CHAIN_PROGRAMS(xdp, "xdp", struct xdp_md, bench_chain_xdp, bench_xdp_start, bench_xdp_reset, XDP_ABORTED,
		     XDP_PASS)
BENCH_CHAIN_PROGRAMS(tc, "tc", struct __sk_buff, bench_chain_tc, bench_tc_start, bench_tc_reset, TC_ACT_SHOT,
		     TC_ACT_OK)

/* Raw tracepoints: their test run takes the arguments and no packet, so
 * there is nothing to put back between passes. (Their test runs report no
 * time: this loop is what times them.) */
static __always_inline struct bench_driver_state *bench_args_start(struct bpf_raw_tracepoint_args *ctx)
{
	return ctx ? bench_driver_state_get() : 0;
}

static __always_inline int bench_args_reset(struct bpf_raw_tracepoint_args *ctx, struct bench_driver_state *st,
					    const struct bench_variant *only)
{
	return 0;
}

BENCH_CHAIN_PROGRAMS(raw_tp, "raw_tp", struct bpf_raw_tracepoint_args, bench_chain_raw_tp, bench_args_start,
		     bench_args_reset, 0, 0)
