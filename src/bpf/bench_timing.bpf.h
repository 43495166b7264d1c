/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
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
#include "can_loop.bpf.h"

struct bench_saved_hdr {
	__u8 bytes[BENCH_SAVE_BYTES] __attribute__((aligned(8)));
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

/* Writes the saved head back in 8-byte words. The packet pointer's alignment
 * is unknown to clang, so a memcpy became 64 byte stores and 120 shifts,
 * ~190 instructions per restored iteration (measured in xdp_lb's object),
 * all of them in the body's figure and none in the overhead's. */
static __always_inline void bench_xdp_write_saved(void *data, const struct bench_saved_hdr *saved)
{
#pragma unroll
	for (int i = 0; i < BENCH_SAVE_BYTES / 8; i++)
		((__u64 *)data)[i] = ((const __u64 *)saved->bytes)[i];
}

/*
 * Undo what the body did to the packet head, per the host's restore mode.
 * clang likes to fold the length into one 32-bit sum with the saved length,
 * pointer arithmetic the verifier refuses, so the length is taken first, in
 * 64 bits, behind a barrier.
 */
static __always_inline int bench_xdp_restore(struct xdp_md *ctx, const struct bench_saved_hdr *saved, __u32 mode)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	long len = data_end - data;
	int delta;

	asm volatile("" : "+r"(len));
	delta = (int)len - (int)saved->len;
	if (mode == BENCH_RESTORE_NONE || (mode == BENCH_RESTORE_ON_RESIZE && delta == 0))
		return 0;
	if (delta && bpf_xdp_adjust_head(ctx, delta))
		return -1;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (data + BENCH_SAVE_BYTES > data_end)
		return -1;
	bench_xdp_write_saved(data, saved);
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
	__BENCH_TIMED_CORE(ret, BODY, RESET, can_loop,					\
		struct bench_saved_hdr __saved = {};					\
		__u32 __n = (__ctl && __ctl->enabled) ? __ctl->batch_iters : 0;		\
		__u32 __mode = __ctl ? __ctl->restore_mode : 0;				\
		enum bench_status __status = BENCH_OK;					\
		__u64 __i = 0;								\
		__u64 __t0 = 0;								\
		__u64 __t1 = 0;,							\
		if (__mode != BENCH_RESTORE_NONE && bench_xdp_save(ctx, &__saved)) {	\
			bench_record(0, 0, 0, BENCH_ERR_SHORT_PACKET);			\
			return XDP_ABORTED;						\
		},									\
		if (__mode != BENCH_RESTORE_NONE &&					\
		    bench_xdp_restore(ctx, &__saved, __mode)) {				\
			__status = BENCH_ERR_RESTORE;					\
			break;								\
		}, )

/*
 * The timed loop every may_goto and inline bounded form shares: the
 * forms' own are the loop's condition beside the count (CAN_LOOP), the
 * declarations of __n, __status, __i, __t0 and __t1 with whatever else
 * the form keeps (LOCALS, which may end in capping the count), what runs
 * before the clock starts (BEFORE: saving the packet head), after each
 * BODY before RESET (AFTER: restoring the head), and a pragma on the loop
 * (PRAGMA). The declarations stay the forms' own because their order and
 * initial values decide the code clang emits (a shared set once cost five
 * more instructions in xdp-lb's timed region): as written, every object is
 * the same instruction for instruction as with a loop written out per form.
 */
#define __BENCH_TIMED_CORE(ret, BODY, RESET, CAN_LOOP, LOCALS, BEFORE, AFTER, PRAGMA)	\
	do {										\
		struct bench_ctl *__ctl = bench_ctl_get();				\
		LOCALS									\
											\
		if (__n) {								\
			BEFORE								\
			__t0 = bpf_ktime_get_ns();					\
			PRAGMA								\
			for (__i = 0; __i < __n && CAN_LOOP; __i++) {			\
				ret = BODY;						\
				AFTER							\
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
 */
#define BENCH_TIMED_ITERATIONS(ret, BODY, RESET)					\
	__BENCH_TIMED_CORE(ret, BODY, RESET, can_loop, __BENCH_ITERATIONS_LOCALS(__u64), , , )

#define __BENCH_ITERATIONS_LOCALS(INDEX_T)						\
	__u32 __n = (__ctl && __ctl->enabled) ? __ctl->batch_iters : 0;		\
	enum bench_status __status = BENCH_OK;						\
	INDEX_T __i = 0;								\
	__u64 __t0, __t1;

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

/*
 * The same batch for kernels without may_goto (6.9). Two more loop
 * constructs, each in programs of their own (an old kernel refuses an
 * unknown instruction anywhere in a program, even where it cannot run);
 * the host loads the programs of the construct it chose and leaves the
 * others unloaded. Their names end in _bpf_loop and _bounded.
 *
 * Each comes in two forms, as the may_goto loop does: _BATCH saves and
 * restores an XDP packet's head per the host's restore mode; _ITERATIONS
 * does neither (RESET does all of it; tc programs use this form). The
 * `xdp` argument of the internal macros is a constant, so the form not
 * used leaves no XDP helper call behind.
 *
 * bpf_loop (5.17): the body runs in a callback, one indirect call per
 * iteration. BENCH_LOOP_CALLBACK(fn, CTX_T, BODY, RESET) defines the
 * callback of a _BATCH loop, BENCH_LOOP_CALLBACK_BARE that of an
 * _ITERATIONS loop: BODY and RESET see `ctx` (a CTX_T *) and `__lc` (the
 * loop's state; `__lc->st` is the workload's state pointer, if it passed one).
 */
struct bench_loop_state {
	void *ctx;
	void *st;
	struct bench_saved_hdr saved;
	__u32 mode;
	int ret;
	enum bench_status status;
};

#define __BENCH_LOOP_CALLBACK(fn, CTX_T, BODY, RESET, xdp)				\
	static long fn(__u32 __idx, void *__data)					\
	{										\
		struct bench_loop_state *__lc = __data;					\
		CTX_T *ctx = __lc->ctx;							\
											\
		__lc->ret = BODY;							\
		if (xdp && __lc->mode != BENCH_RESTORE_NONE &&				\
		    bench_xdp_restore((void *)ctx, &__lc->saved, __lc->mode)) { \
			__lc->status = BENCH_ERR_RESTORE;				\
			return 1;							\
		}									\
		if (RESET) {								\
			__lc->status = BENCH_ERR_RESET;					\
			return 1;							\
		}									\
		return 0;								\
	}
#define BENCH_LOOP_CALLBACK(fn, CTX_T, BODY, RESET) __BENCH_LOOP_CALLBACK(fn, CTX_T, BODY, RESET, 1)
#define BENCH_LOOP_CALLBACK_BARE(fn, CTX_T, BODY, RESET) __BENCH_LOOP_CALLBACK(fn, CTX_T, BODY, RESET, 0)

#define __BENCH_TIMED_BPF_LOOP(ctx, state, ret, CALLBACK, xdp)				\
	do {										\
		struct bench_ctl *__ctl = bench_ctl_get();				\
		struct bench_loop_state __ls = { .ctx = ctx, .st = state };		\
		__u32 __n = (__ctl && __ctl->enabled) ? __ctl->batch_iters : 0;		\
		__u64 __t0, __t1;							\
		long __done;								\
											\
		__ls.mode = (xdp && __ctl) ? __ctl->restore_mode : 0;			\
		if (__n) {								\
			if (xdp && __ls.mode != BENCH_RESTORE_NONE &&			\
			    bench_xdp_save((void *)ctx, &__ls.saved)) {			\
				bench_record(0, 0, 0, BENCH_ERR_SHORT_PACKET);		\
				return XDP_ABORTED;					\
			}								\
			__t0 = bpf_ktime_get_ns();					\
			__done = bpf_loop(__n, CALLBACK, &__ls, 0);			\
			__t1 = bpf_ktime_get_ns();					\
			bench_record(__t0, __t1 - __t0, __done < 0 ? 0 : __done, __ls.status); \
			ret = __ls.ret;							\
		}									\
	} while (0)
#define BENCH_TIMED_BATCH_BPF_LOOP(ctx, state, ret, CALLBACK) __BENCH_TIMED_BPF_LOOP(ctx, state, ret, CALLBACK, 1)
#define BENCH_TIMED_ITERATIONS_BPF_LOOP(ctx, state, ret, CALLBACK) __BENCH_TIMED_BPF_LOOP(ctx, state, ret, CALLBACK, 0)

/*
 * A bounded loop (5.3): the verifier walks every iteration, so a batch has
 * at most BENCH_BOUNDED_ITERS; the host reads how many ran, as for may_goto.
 * Each iteration calls the body and then a step, both global functions:
 * a verifier walking the loop pays one instruction for a call to a global
 * function, where the step's own paths (restore, reset) inlined cost older
 * verifiers over a million instructions for 32 iterations of xdp-lb.
 *
 * BENCH_BOUNDED_STEP(fn, RESET) defines the step (restore the packet head
 * per the host's mode, then RESET; RESET sees `ctx`) and the per-CPU map
 * fn##_saved that holds the head the batch saved (a global function may
 * take no stack pointer on older kernels). BENCH_BOUNDED_STEP_BARE(fn,
 * CTX_T, RESET) is the step of an _ITERATIONS loop: RESET alone.
 */
#ifndef BENCH_BOUNDED_ITERS
#define BENCH_BOUNDED_ITERS 256
#endif

#define BENCH_BOUNDED_STEP(fn, RESET)							\
	struct {									\
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);				\
		__uint(max_entries, 1);							\
		__type(key, __u32);							\
		__type(value, struct bench_saved_hdr);					\
	} fn##_saved SEC(".maps");							\
	__noinline int fn(struct xdp_md *ctx)						\
	{										\
		__u32 __zero = 0;							\
		struct bench_ctl *__ctl = bench_ctl_get();				\
		struct bench_saved_hdr *__saved = bpf_map_lookup_elem(&fn##_saved, &__zero); \
											\
		if (!ctx || !__ctl || !__saved)						\
			return BENCH_ERR_RESTORE;					\
		if (__ctl->restore_mode != BENCH_RESTORE_NONE &&			\
		    bench_xdp_restore(ctx, __saved, __ctl->restore_mode))		\
			return BENCH_ERR_RESTORE;					\
		if (RESET)								\
			return BENCH_ERR_RESET;						\
		return BENCH_OK;							\
	}

#define BENCH_BOUNDED_STEP_BARE(fn, CTX_T, RESET)					\
	__noinline int fn(CTX_T *ctx)							\
	{										\
		if (!ctx)								\
			return BENCH_ERR_RESET;						\
		return (RESET) ? BENCH_ERR_RESET : BENCH_OK;				\
	}

#define __BENCH_TIMED_BOUNDED(ctx, ret, BODY, STEP, SAVE)				\
	do {										\
		struct bench_ctl *__ctl = bench_ctl_get();				\
		__u32 __n = (__ctl && __ctl->enabled) ? __ctl->batch_iters : 0;		\
		enum bench_status __status = BENCH_OK;					\
		__u32 __i = 0;								\
		__u64 __t0 = 0, __t1 = 0;						\
											\
		if (__n > BENCH_BOUNDED_ITERS)						\
			__n = BENCH_BOUNDED_ITERS;					\
		if (__n) {								\
			if (SAVE) {							\
				bench_record(0, 0, 0, BENCH_ERR_SHORT_PACKET);		\
				return XDP_ABORTED;					\
			}								\
			__t0 = bpf_ktime_get_ns();					\
			/* Unrolled, the loop's copies spill past the stack limit. */	\
			_Pragma("clang loop unroll(disable)")				\
			for (__i = 0; __i < __n; __i++) {				\
				ret = BODY;						\
				__status = STEP(ctx);					\
				if (__status != BENCH_OK)				\
					break;						\
			}								\
			__t1 = bpf_ktime_get_ns();					\
			bench_record(__t0, __t1 - __t0, __i, __status);		\
		}									\
	} while (0)

/* Saves the packet head into the step's map where the host restores. The
 * copy goes in 8-byte words: a byte-wise memcpy into a map value (alignment
 * unknown) has clang load all 64 bytes first and spill them, 512 bytes of
 * stack. */
static __always_inline int bench_bounded_save(struct xdp_md *ctx, void *saved_map, struct bench_ctl *ctl)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 zero = 0;
	struct bench_saved_hdr *saved;

	if (!ctl || ctl->restore_mode == BENCH_RESTORE_NONE)
		return 0;
	saved = bpf_map_lookup_elem(saved_map, &zero);
	if (!saved || data + BENCH_SAVE_BYTES > data_end)
		return -1;
#pragma unroll
	for (int i = 0; i < BENCH_SAVE_BYTES / 8; i++)
		((__u64 *)saved->bytes)[i] = ((__u64 *)data)[i];
	saved->len = data_end - data;
	return 0;
}

/*
 * BENCH_TIMED_ITERATIONS_BOUNDED_INLINE(ret, BODY, RESET): the bare timed
 * loop of BENCH_TIMED_ITERATIONS as a bounded loop, RESET inline: for
 * bodies that are one call to a global function and a RESET of a few
 * instructions, which the verifier walks 256 times for little (map_ops).
 */
#define BENCH_TIMED_ITERATIONS_BOUNDED_INLINE(ret, BODY, RESET)				\
	__BENCH_TIMED_CORE(ret, BODY, RESET, 1, __BENCH_ITERATIONS_LOCALS(__u32)		\
			   if (__n > BENCH_BOUNDED_ITERS) __n = BENCH_BOUNDED_ITERS;, ,	\
			   , _Pragma("clang loop unroll(disable)"))

#define BENCH_TIMED_BATCH_BOUNDED(ctx, ret, BODY, STEP)					\
	__BENCH_TIMED_BOUNDED(ctx, ret, BODY, STEP, bench_bounded_save(ctx, &STEP##_saved, __ctl))
#define BENCH_TIMED_ITERATIONS_BOUNDED(ctx, ret, BODY, STEP) __BENCH_TIMED_BOUNDED(ctx, ret, BODY, STEP, 0)

#endif /* BENCH_TIMING_BPF_H */
