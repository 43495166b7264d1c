// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The timing driver for a user's XDP program that makes tail calls (a
 * chain). A tail call does not return to its caller, so the chain cannot
 * be spliced into a loop; but a tail call made from a subprogram ends in
 * that subprogram's caller when the chain's last program exits. Each
 * iteration of the loop below therefore enters the chain through slot
 * BENCH_CHAIN_ENTRY of bench_chain, runs it whole with real tail calls,
 * and comes back. The kernel counts tail calls per run of the driver
 * (33), so a run holds cfg_chain_iters iterations, which the host sets
 * from the number of tail calls one pass through the chain makes (counted
 * by bench_chain_probe); a batch is many runs, each timed inside BPF and
 * summed into bench_chain_totals.
 */
#include "driver.h"
#include "driver_xdp.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Passes per run at most: MAX_TAIL_CALL_CNT, the kernel's limit of tail
 * calls per run (33 since 5.17; the host measures it with the probes). */
#define BENCH_MAX_PASSES 33

/* The slots of bench_chain the host fills. */
enum bench_chain_slot {
	BENCH_CHAIN_ENTRY = 0,	/* the user's program */
	BENCH_CHAIN_EMPTY = 1,	/* bench_chain_empty: the overhead's chain, and the probe's */
	BENCH_CHAIN_SLOTS = 2,
};

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, BENCH_CHAIN_SLOTS);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} bench_chain SEC(".maps");

/* Summed over the runs of a batch; the host reads and clears it. */
struct bench_chain_totals {
	__u64 elapsed_ns;
	__u64 iters;
	__u64 runs;
	__u32 probe_calls;	/* tail calls that still succeeded after one pass (bench_chain_probe) */
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
 * Enters the chain in `slot`. When the tail call succeeds, the chain's
 * verdict is what this call returns; when it fails (an empty slot, the
 * limit), -1. The barrier keeps the compiler from taking -1 for the only
 * value this function can return.
 */
static __noinline int bench_chain_enter(struct xdp_md *ctx, enum bench_chain_slot slot)
{
	int failed = -1;

	bpf_tail_call(ctx, &bench_chain, slot);
	asm volatile("" : "+r"(failed));
	return failed;
}

static __always_inline struct bench_chain_totals *bench_chain_totals_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&bench_chain_totals, &zero);
}

/* One run: cfg_chain_iters timed passes through the chain in `slot`, the
 * packet put back after each, then one untimed pass whose verdict and
 * packet the host checks. */
static __always_inline int bench_chain_run(struct xdp_md *ctx, enum bench_chain_slot slot)
{
	struct bench_driver_state *st = bench_xdp_start(ctx);
	const struct bench_variant *only = bench_only_variant();
	struct bench_chain_totals *t = bench_chain_totals_get();
	__u32 n = cfg_chain_iters;
	__u64 start;
	__u32 i;

	if (!st || !t)
		return XDP_ABORTED;
	start = bpf_ktime_get_ns();
	for (i = 0; i < n && i < BENCH_MAX_PASSES; i++) {
		bench_chain_enter(ctx, slot);
		if (bench_xdp_reset(ctx, st, only)) {
			t->status = BENCH_ERR_RESET;
			return XDP_ABORTED;
		}
	}
	t->elapsed_ns += bpf_ktime_get_ns() - start;
	t->iters += i;
	t->runs++;
	return bench_chain_enter(ctx, slot);
}

SEC("xdp")
int bench_chain_driver(struct xdp_md *ctx)
{
	return bench_chain_run(ctx, BENCH_CHAIN_ENTRY);
}

/* The same loop around a chain of one empty program. */
SEC("xdp")
int bench_chain_overhead(struct xdp_md *ctx)
{
	return bench_chain_run(ctx, BENCH_CHAIN_EMPTY);
}

/* Counts the tail calls one pass through the chain in `slot` leaves: one
 * pass, then tail calls into the empty program until the kernel refuses one. */
static __always_inline int bench_chain_count(struct xdp_md *ctx, enum bench_chain_slot slot)
{
	struct bench_chain_totals *t = bench_chain_totals_get();
	__u32 i;

	if (!t)
		return XDP_ABORTED;
	bench_chain_enter(ctx, slot);
	t->probe_calls = 0;
	for (i = 0; i < BENCH_MAX_PASSES; i++) {
		if (bench_chain_enter(ctx, BENCH_CHAIN_EMPTY) < 0)
			break;
		t->probe_calls++;
	}
	return XDP_PASS;
}

/* The user's chain: its tail calls are the limit less what it leaves. */
SEC("xdp")
int bench_chain_probe(struct xdp_md *ctx)
{
	return bench_chain_count(ctx, BENCH_CHAIN_ENTRY);
}

/* A chain of one tail call: the kernel's limit is one more than it leaves. */
SEC("xdp")
int bench_chain_probe_limit(struct xdp_md *ctx)
{
	return bench_chain_count(ctx, BENCH_CHAIN_EMPTY);
}

SEC("xdp")
int bench_chain_empty(struct xdp_md *ctx)
{
	return XDP_PASS;
}
