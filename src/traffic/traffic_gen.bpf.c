// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The traffic generator's XDP program. It runs in live-frames mode
 * (BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES): the kernel hands it
 * copies of one template frame, it writes the next flow's addresses and
 * ports into each, patches the checksums, and redirects the frame out of
 * the interface.
 *
 * The flows are the combinations of the packet spec's ranges, walked like
 * an odometer (the first range fastest), so frame n of a CPU carries flow
 * n mod flows, exactly as the spec numbers its packets; or, with `random`,
 * drawn uniformly per frame (what a cache such as an LRU sees from many
 * independent clients).
 *
 * The kernel's page pool recycles frames without restoring them: a frame
 * may still hold an earlier flow, or whatever the receiver's XDP wrote
 * into it (a veth's peer runs its program on the very page, and a load
 * balancer encapsulates in place). So every frame's first bytes are
 * written whole from a header this program composes per CPU: the template
 * with the flow's fields and checksums in it, derived from the template's
 * (RFC 1624: the template's sum, minus the template's words, plus the new
 * ones), never from what the frame holds. Between frames only the fastest
 * field and its checksums change in that header; the frame gets one copy.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "tcp_conn.h"

#define GEN_MAX_FIELDS 8
#define GEN_MAX_CSUMS 4
/* Bytes of the template restored per frame: every header a spec makes. */
#define GEN_RESTORE_MAX 128

/* A varied field, as userspace found it in the template. */
struct gen_field {
	__u16 off;	/* byte offset of the big-endian field */
	__u16 width;	/* 2 or 4 bytes */
	__u32 csums;	/* bit j set: checksum j covers the field */
	__u32 lo;	/* the template's value */
	__u32 span;	/* how many values: lo .. lo + span - 1 */
	__u32 old_comp; /* the sum of the template's words, complemented */
	__u32 pad;
};

/* A checksum over varied fields. */
struct gen_csum {
	__u16 off;
	__u16 udp;	/* a computed zero goes out as 0xffff */
	__u32 start;	/* the template's checksum, complemented */
};

/* TCP mode: where the segment's varying words are. */
struct gen_tcp {
	__u16 off;		/* the TCP header's offset; 0: not TCP mode */
	__u16 has_ts;		/* the template carries NOP NOP TS at +20 */
	__u32 csum_start;	/* the template's checksum, complemented */
};

struct gen_config {
	__u32 nfields;
	__u32 ncsums;
	__u32 random;	/* pick each field's value at random instead */
	__u32 restore_len;	/* even; at most the frame's length */
	__u32 pad;
	__u8 template[GEN_RESTORE_MAX] __attribute__((aligned(8)));
	struct gen_field fields[GEN_MAX_FIELDS];
	struct gen_csum csums[GEN_MAX_CSUMS];
	struct gen_tcp tcp;
};

/* Set before load: the verifier sees every offset as a constant. */
const volatile struct gen_config cfg = {};

/*
 * Per CPU (each generator thread runs on its own): the odometer, what was
 * sent, and the pacing schedule (see admit()).
 */
struct gen_state {
	__u32 idx[GEN_MAX_FIELDS];
	__u64 sent;		/* frames redirected */
	__u64 bytes;
	__u64 quota;		/* stop sending at this many (0: no limit) */
	__u64 interval_ps;	/* 0: unpaced */
	__u64 next_due_ps;	/* CLOCK_MONOTONIC, in picoseconds */
	__u64 deadline_ps;	/* paced: send nothing due at or after this (0: none) */
	/* The next frame's header, composed here and copied into each frame:
	 * the template with the current flow and its checksums written in. */
	__u32 composed;		/* 0: hdr must be composed from idx first */
	__u32 rest[GEN_MAX_CSUMS]; /* per checksum: its start and every field's words but the first's */
	__u32 pad2;
	__u64 rng;		/* random order's xorshift64 state; 0: seed it */
	__u8 hdr[GEN_RESTORE_MAX] __attribute__((aligned(8)));
};

/* Set by userspace to end the calls in flight: the rest of their frames are dropped unsent. */
struct gen_ctl {
	__u32 stop;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gen_state);
} gen_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gen_ctl);
} gen_ctl SEC(".maps");

/*
 * The interface frames go out of, entry 0 (the host writes it). A redirect
 * through a device map finds the device by pointer; bpf_redirect() by
 * ifindex looks it up for every frame (dev_get_by_index_rcu, 2.4 % of the
 * CPU at 13 Mpps here, measured with perf).
 */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} tx_port SEC(".maps");


static __always_inline __u32 fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	return (sum & 0xffff) + (sum >> 16);
}

/*
 * Whether a frame may go now: not stopped, within the quota, and due
 * (paced runs). Pacing is done here, per frame, because a live-frames
 * call has a fixed cost of ~20 ms (measured on kernel 6.18), so calls
 * must be long: a frame not yet due is dropped unsent (the kernel
 * recycles it) and the loop polls the clock again.
 */
static __always_inline int admit(struct gen_state *st, struct gen_ctl *ctl)
{
	if (ctl->stop || (st->quota && st->sent >= st->quota))
		return 0;
	if (st->interval_ps) {
		__u64 now_ps = bpf_ktime_get_ns() * 1000;

		if (now_ps < st->next_due_ps)
			return 0;
		if (st->deadline_ps && st->next_due_ps >= st->deadline_ps)
			return 0;
		/* Due times stay absolute: a late frame is followed by the
		 * ones that fell due meanwhile, so the rate over a run holds. */
		st->next_due_ps += st->interval_ps;
	}
	return 1;
}

/*
 * Copies the first `len` bytes of a header (the template or a composed one)
 * to `dst`, 8 at a time, then 2 at a time. The source is read as volatile:
 * clang would fold the template's zero initialiser otherwise.
 */
static __always_inline void copy_head(__u8 *dst, const volatile __u8 *src, __u32 len)
{
#pragma unroll
	for (int i = 0; i < GEN_RESTORE_MAX / 8; i++) {
		if (i * 8 + 8 > len)
			break;
		((__u64 *)dst)[i] = *(const volatile __u64 *)(src + i * 8);
	}
#pragma unroll
	for (int k = 0; k < 3; k++) {
		__u32 at = len / 8 * 8 + k * 2;

		if (at + 2 > len)
			break;
		*(__u16 *)(dst + at) = *(const volatile __u16 *)(src + at);
	}
}

/*
 * Checks that the frame holds the header's bytes. `cfg` is volatile, so every
 * mention is a load: the length is read once; the verifier knows its frozen
 * value, so this one check covers every store into those bytes (a check per
 * word cost ~40 instructions a frame).
 */
static __always_inline int head_fits(void *data, void *data_end, __u32 len)
{
	return len <= GEN_RESTORE_MAX && data + len <= data_end;
}

/* Writes the template's first bytes back into the frame (TCP mode). */
static __always_inline int restore_template(void *data, void *data_end)
{
	__u32 len = cfg.restore_len;

	if (!head_fits(data, data_end, len))
		return -1;
	copy_head(data, cfg.template, len);
	return 0;
}

/* A field's value written big-endian into the header; returns its 16-bit words' sum. */
static __always_inline __u32 put_field(__u8 *hdr, __u32 off, __u32 width, __u32 v)
{
	if (width == 4) {
		*(__be32 *)(hdr + off) = bpf_htonl(v);
		return (v >> 16) + (v & 0xffff);
	}
	*(__be16 *)(hdr + off) = bpf_htons((__u16)v);
	return v & 0xffff;
}

/* Checksum j from its start plus the fields' words (RFC 1624); UDP sends a zero as 0xffff. */
static __always_inline void put_csum(__u8 *hdr, int j, __u32 sum)
{
	__u16 res = ~fold(sum);

	if (cfg.csums[j].udp && res == 0)
		res = 0xffff;
	*(__be16 *)(hdr + cfg.csums[j].off) = bpf_htons(res);
}

/* xorshift64 (Marsaglia): random order's draws without a helper call each
 * (a helper's return costs 8-9 ns with SRSO's safe RET). */
static __always_inline __u64 xorshift64(__u64 x)
{
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

/*
 * Writes the template's first bytes, the flow of st->idx (or, in random
 * order, a flow drawn now) and its checksums into `hdr`: st->hdr, or in
 * random order the frame itself (its length checked by the caller). Keeps
 * per checksum the sum of everything but the first field, for next_flow()'s
 * fast step.
 */
static __always_inline void compose(__u8 *hdr, struct gen_state *st, __u32 random)
{
	__u32 nfields = cfg.nfields, ncsums = cfg.ncsums, len = cfg.restore_len;
	__u32 acc[GEN_MAX_CSUMS] = {}, first = 0;
	__u64 rng = st->rng;

	/* Seeded per CPU on the run's first draw (the host zeroes the state). */
	if (random && !rng)
		rng = ((__u64)bpf_get_prandom_u32() << 32) | bpf_get_prandom_u32() | 1;

	copy_head(hdr, cfg.template, len);
#pragma unroll
	for (int i = 0; i < GEN_MAX_FIELDS; i++) {
		if (i >= nfields)
			break;
		__u32 idx = st->idx[i], csums = cfg.fields[i].csums, sum;

		if (random) {
			rng = xorshift64(rng);
			idx = ((rng >> 32) * cfg.fields[i].span) >> 32;
		}
		sum = put_field(hdr, cfg.fields[i].off, cfg.fields[i].width, cfg.fields[i].lo + idx);
		sum += cfg.fields[i].old_comp;
		if (i == 0)
			first = sum;
#pragma unroll
		for (int j = 0; j < GEN_MAX_CSUMS; j++) {
			if (j >= ncsums)
				break;
			if (csums & (1u << j))
				acc[j] += sum;
		}
	}
#pragma unroll
	for (int j = 0; j < GEN_MAX_CSUMS; j++) {
		if (j >= ncsums)
			break;
		__u32 all = cfg.csums[j].start + acc[j];

		put_csum(hdr, j, all);
		if (!random)
			st->rest[j] = (cfg.fields[0].csums & (1u << j)) ? all - first : all;
	}
	if (random)
		st->rng = rng;
}

/*
 * Moves st->hdr on to the next flow of the odometer (the first field
 * fastest). Mostly only the first field moves: its value and the checksums
 * over it are rewritten from st->rest. When it wraps, the carry runs through
 * the other fields and the header is composed again.
 */
static __always_inline void next_flow(struct gen_state *st)
{
	__u32 nfields = cfg.nfields, ncsums = cfg.ncsums;
	__u32 idx, sum, csums;

	if (nfields == 0)
		return;
	idx = st->idx[0] + 1;
	if (idx < cfg.fields[0].span) {
		st->idx[0] = idx;
		sum = put_field(st->hdr, cfg.fields[0].off, cfg.fields[0].width, cfg.fields[0].lo + idx);
		sum += cfg.fields[0].old_comp;
		csums = cfg.fields[0].csums;
#pragma unroll
		for (int j = 0; j < GEN_MAX_CSUMS; j++) {
			if (j >= ncsums)
				break;
			if (csums & (1u << j))
				put_csum(st->hdr, j, st->rest[j] + sum);
		}
		return;
	}
#pragma unroll
	for (int i = 0; i < GEN_MAX_FIELDS; i++) {
		if (i >= nfields)
			break;
		idx = st->idx[i] + 1;
		if (idx < cfg.fields[i].span) {
			st->idx[i] = idx;
			break;
		}
		st->idx[i] = 0;
	}
	compose(st->hdr, st, 0);
}

/* Copies the composed header into the frame. */
static __always_inline int put_header(void *data, void *data_end, const struct gen_state *st)
{
	__u32 len = cfg.restore_len;

	if (!head_fits(data, data_end, len))
		return -1;
	copy_head(data, st->hdr, len);
	return 0;
}

SEC("xdp")
int xdp_gen(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 key = 0, random = cfg.random;

	struct gen_state *st = bpf_map_lookup_elem(&gen_state, &key);
	struct gen_ctl *ctl = bpf_map_lookup_elem(&gen_ctl, &key);
	if (!st || !ctl)
		return XDP_ABORTED;
	if (!admit(st, ctl))
		return XDP_DROP;
	if (random) {
		/* A new flow per frame: composed in the frame itself. */
		if (!head_fits(data, data_end, cfg.restore_len))
			return XDP_ABORTED;
		compose(data, st, 1);
	} else {
		if (!st->composed) {
			compose(st->hdr, st, 0);
			st->composed = 1;
		}
		if (put_header(data, data_end, st))
			return XDP_ABORTED;
		next_flow(st);
	}
	st->sent++;
	st->bytes += data_end - data;
	return bpf_redirect_map(&tx_port, 0, 0);
}

/*
 * TCP mode: one connection, one sending CPU. Each frame is the next
 * in-window segment of the stream, its sequence, ACK and timestamps
 * written and the checksum patched from the template's (whose varying
 * words are zero). When the window is full the frame is dropped unsent,
 * which makes the live-frames loop poll the return path's ACKs. Losses
 * are recovered the simplest way: back to snd_una (the whole window again)
 * at the third duplicate ACK, or after rto_ns without progress.
 */
SEC("xdp")
int xdp_gen_tcp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 key = 0;

	struct gen_state *st = bpf_map_lookup_elem(&gen_state, &key);
	struct gen_ctl *ctl = bpf_map_lookup_elem(&gen_ctl, &key);
	struct tcp_conn *c = bpf_map_lookup_elem(&tcp_conn, &key);
	struct tcp_ctl *tctl = bpf_map_lookup_elem(&tcp_ctl, &key);
	if (!st || !ctl || !c || !tctl)
		return XDP_ABORTED;
	if (!c->taken_over || ctl->stop)
		return XDP_DROP;

	/* The retransmission timer starts with the first segment. */
	if (!c->segments && !c->last_rewind_ns)
		c->last_rewind_ns = bpf_ktime_get_ns();

	__u32 una = c->snd_una;
	__u32 nxt = c->snd_nxt;
	__u32 req = c->rewind_req;

	if (req != c->rewind_seen) {
		c->rewind_seen = req;
		nxt = una;
		c->rewinds_dupack++;
	}
	if (seq_before(nxt, una))
		nxt = una;
	/* Asked to end: FIN on the next new segment, unless a count put it sooner. */
	if (tctl->fin_req && (!c->fin_set || seq_before(c->snd_max, c->fin_at))) {
		c->fin_at = c->snd_max;
		c->fin_set = 1;
	}
	int ended = c->fin_set && seq_before(c->fin_at, nxt);
	if (ended || seq_before(una + c->wnd, nxt + c->payload)) {
		/* Blocked: the stream is sent, or the window is full. */
		__u64 now = bpf_ktime_get_ns();
		__u64 since = c->last_progress_ns > c->last_rewind_ns ? c->last_progress_ns : c->last_rewind_ns;

		if (!seq_before(una, c->snd_max) || now - since < c->rto_ns) {
			c->snd_nxt = nxt;
			return XDP_DROP;
		}
		nxt = una;
		c->last_rewind_ns = now;
		c->rewinds_timer++;
		if (c->fin_set && seq_before(c->fin_at, nxt))
			return XDP_DROP; /* everything, FIN too, is acknowledged */
	}
	c->snd_nxt = nxt;
	if (!admit(st, ctl))
		return XDP_DROP;
	if (restore_template(data, data_end))
		return XDP_ABORTED;

	__u32 off = cfg.tcp.off;
	__u8 *tcp = data + off;
	__u32 ack = c->rcv_nxt;
	__u32 sum = cfg.tcp.csum_start;
	int fin = c->fin_set && nxt == c->fin_at;

	if ((void *)(tcp + 32) > data_end)
		return XDP_ABORTED;
	*(__be32 *)(tcp + 4) = bpf_htonl(nxt);
	*(__be32 *)(tcp + 8) = bpf_htonl(ack);
	sum += (nxt >> 16) + (nxt & 0xffff) + (ack >> 16) + (ack & 0xffff);
	if (fin) {
		tcp[13] |= 0x01;
		sum += 0x01;
	}
	if (cfg.tcp.has_ts) {
		__u32 tsval = c->tsval, tsecr = c->peer_tsval;

		*(__be32 *)(tcp + 24) = bpf_htonl(tsval);
		*(__be32 *)(tcp + 28) = bpf_htonl(tsecr);
		sum += (tsval >> 16) + (tsval & 0xffff) + (tsecr >> 16) + (tsecr & 0xffff);
	}
	*(__be16 *)(tcp + 16) = bpf_htons((__u16)~fold(sum));

	if (seq_before(nxt, c->snd_max))
		c->retransmitted++;
	c->segments++;
	nxt += c->payload + fin;
	c->snd_nxt = nxt;
	if (seq_before(c->snd_max, nxt))
		c->snd_max = nxt;
	st->sent++;
	st->bytes += data_end - data;
	return bpf_redirect_map(&tx_port, 0, 0);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
