/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * bpfbench in-BPF batch timing.
 *
 * A workload program includes this header and wraps its per-packet work in
 * BENCH_TIMED_LOOP(). When the host enables timing, the body runs
 * `batch_iters` times between one pair of bpf_ktime_get_ns() reads, so the
 * cost of the clock, the syscall and the test-run setup is amortised over the
 * whole batch. A caller-supplied reset block runs after every iteration to
 * undo side effects; one extra, untimed iteration follows, and its return
 * value and output packet are what BPF_PROG_TEST_RUN hands back to the host
 * for validation.
 *
 * The host reads each batch's result from this CPU's slot of bench_result.
 * Its views of these structs and enums are generated from this object's BTF
 * (src/harness/timing.rs), so there is nothing to keep in step by hand.
 */
#ifndef BENCH_TIMING_BPF_H
#define BENCH_TIMING_BPF_H

#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* Header bytes saved before the batch and written back after an iteration
 * that changed the packet length (encapsulation). Covers Ethernet + IPv6 +
 * TCP, the deepest headers a typical datapath rewrites. */
#define BENCH_SAVE_BYTES 64

enum bench_restore_mode {
	BENCH_RESTORE_NONE = 0,		/* body never changes the packet */
	BENCH_RESTORE_ON_RESIZE = 1,	/* undo head adjustments (encap/decap) */
	BENCH_RESTORE_ALWAYS = 2,	/* body rewrites headers in place too */
};

/* What went wrong in a batch, if anything (bench_result.status). */
enum bench_status {
	BENCH_OK = 0,
	BENCH_ERR_RESTORE = -1,		/* the packet head could not be restored */
	BENCH_ERR_RESET = -2,		/* the workload's reset block failed */
	BENCH_ERR_SHORT_PACKET = -22,	/* EINVAL: shorter than BENCH_SAVE_BYTES */
};

struct bench_ctl {
	__u32 enabled;		/* 0: run the body once, as in production */
	__u32 batch_iters;	/* timed iterations per invocation */
	enum bench_restore_mode restore_mode;
	__u32 _pad;
};

struct bench_result {
	__u64 started_ns;	/* bpf_ktime_get_ns() when the last batch started */
	__u64 elapsed_ns;	/* time of the last batch on this CPU */
	__u64 iters;		/* iterations that batch really ran */
	__u64 invocations;	/* batches run on this CPU, for the host to spot a fresh sample */
	enum bench_status status;
	__u32 _pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bench_ctl);
} bench_ctl SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bench_result);
} bench_result SEC(".maps");

/*
 * The loop construct. may_goto ("can_loop") was the cheapest of the measured
 * candidates (see `bpfbench loops`): one instruction and a stack counter per
 * iteration, against a kfunc call for bpf_for() and an indirect call for
 * bpf_loop(). The verifier may cut a may_goto loop short, so the loop counts
 * the iterations it really ran and the host divides by that count.
 */
#ifndef can_loop
#define can_loop					\
	({ __label__ l_break, l_continue;		\
	bool ret = true;				\
	asm volatile goto("may_goto %l[l_break]"	\
		      :::: l_break);			\
	goto l_continue;				\
	l_break: ret = false;				\
	l_continue:;					\
	ret;						\
	})
#endif

struct bench_saved_hdr {
	__u8 bytes[BENCH_SAVE_BYTES];
	__u32 len;
};

/* Snapshot the packet head so the reset block can restore it. */
static __always_inline int bench_xdp_save(struct xdp_md *ctx, struct bench_saved_hdr *saved)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;

	if (data + BENCH_SAVE_BYTES > data_end)
		return -1;
	__builtin_memcpy(saved->bytes, data, BENCH_SAVE_BYTES);
	saved->len = data_end - data;
	return 0;
}

/* Undo what the body did to the packet head, per the host's restore mode. */
static __always_inline int bench_xdp_restore(struct xdp_md *ctx, const struct bench_saved_hdr *saved,
					     __u32 mode)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	int delta = (int)(data_end - data) - (int)saved->len;

	if (mode == BENCH_RESTORE_NONE || (mode == BENCH_RESTORE_ON_RESIZE && delta == 0))
		return 0;
	if (delta && bpf_xdp_adjust_head(ctx, delta))
		return -1;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (data + BENCH_SAVE_BYTES > data_end)
		return -1;
	__builtin_memcpy(data, saved->bytes, BENCH_SAVE_BYTES);
	return 0;
}

static __always_inline struct bench_ctl *bench_ctl_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&bench_ctl, &zero);
}

static __always_inline void bench_record(__u64 started_ns, __u64 elapsed_ns, __u64 iters,
					 enum bench_status status)
{
	__u32 zero = 0;
	struct bench_result *r = bpf_map_lookup_elem(&bench_result, &zero);

	if (!r)
		return;
	r->started_ns = started_ns;
	r->elapsed_ns = elapsed_ns;
	r->iters = iters;
	r->status = status;
	r->invocations++;
}

/*
 * BENCH_TIMED_BATCH(ctx, ret, BODY, RESET)
 *   ret:   an int lvalue receiving BODY's value
 *   BODY:  expression evaluated once per iteration (the work under test)
 *   RESET: int expression run after each timed iteration, inside the timed
 *          region; non-zero aborts the batch (status BENCH_ERR_RESET)
 * When the host enabled timing, saves the packet head, runs `batch_iters`
 * timed iterations (restoring the packet per ctl->restore_mode, then RESET,
 * after each) and records the result. Does nothing when timing is disabled.
 */
#define BENCH_TIMED_BATCH(ctx, ret, BODY, RESET)					\
	do {										\
		struct bench_ctl *__ctl = bench_ctl_get();				\
		struct bench_saved_hdr __saved = {};					\
		__u32 __n = (__ctl && __ctl->enabled) ? __ctl->batch_iters : 0;		\
		__u32 __mode = __ctl ? __ctl->restore_mode : 0;				\
		enum bench_status __status = BENCH_OK;					\
		__u64 __i = 0, __t0 = 0, __t1 = 0;					\
										\
		if (__n) {								\
			if (__mode != BENCH_RESTORE_NONE && bench_xdp_save(ctx, &__saved)) { \
				bench_record(0, 0, 0, BENCH_ERR_SHORT_PACKET);		\
				return XDP_ABORTED;					\
			}								\
			__t0 = bpf_ktime_get_ns();					\
			for (__i = 0; __i < __n && can_loop; __i++) {			\
				ret = BODY;						\
				if (__mode != BENCH_RESTORE_NONE &&			\
				    bench_xdp_restore(ctx, &__saved, __mode)) {		\
					__status = BENCH_ERR_RESTORE;			\
					break;						\
				}							\
				if (RESET) {						\
					__status = BENCH_ERR_RESET;			\
					break;						\
				}							\
			}								\
			__t1 = bpf_ktime_get_ns();					\
			bench_record(__t0, __t1 - __t0, __i, __status);		\
		}									\
	} while (0)

/*
 * BENCH_TIMED_ITERATIONS(ret, BODY, RESET): the bare timed loop, with
 * nothing saved on the stack and no packet restore of its own (RESET does
 * all of it). For bodies that need the whole stack, such as a user's
 * program spliced into a driver.
 *
 * It repeats BENCH_TIMED_BATCH's loop on purpose: a shared core changed the
 * code clang emits for the built-in workloads' timed loops (measured: five
 * more instructions in xdp-lb's timed region), and their stored figures
 * rest on that code.
 */
#define BENCH_TIMED_ITERATIONS(ret, BODY, RESET)					\
	do {										\
		struct bench_ctl *__ctl = bench_ctl_get();				\
		__u32 __n = (__ctl && __ctl->enabled) ? __ctl->batch_iters : 0;		\
		enum bench_status __status = BENCH_OK;					\
		__u64 __i = 0, __t0, __t1;						\
										\
		if (__n) {								\
			__t0 = bpf_ktime_get_ns();					\
			for (__i = 0; __i < __n && can_loop; __i++) {			\
				ret = BODY;						\
				if (RESET) {						\
					__status = BENCH_ERR_RESET;			\
					break;						\
				}							\
			}								\
			__t1 = bpf_ktime_get_ns();					\
			bench_record(__t0, __t1 - __t0, __i, __status);		\
		}									\
	} while (0)

/*
 * BENCH_TIMED_LOOP(ctx, ret, BODY, RESET): BENCH_TIMED_BATCH, then one
 * untimed iteration whose verdict and packet the host validates. Packet
 * workloads use this; workloads whose every iteration changes state (map
 * inserts) use BENCH_TIMED_BATCH alone.
 */
#define BENCH_TIMED_LOOP(ctx, ret, BODY, RESET)						\
	do {										\
		BENCH_TIMED_BATCH(ctx, ret, BODY, RESET);				\
		ret = BODY;								\
	} while (0)

#endif /* BENCH_TIMING_BPF_H */
