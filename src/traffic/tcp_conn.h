/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * One TCP connection driven from XDP, shared by the two programs that
 * drive it: the return path's (tcp_acks.bpf.c), which reads the
 * receiver's ACKs and drops them, and the generator's TCP sender
 * (traffic_gen.bpf.c), which sends in-window segments from what those
 * ACKs said. Each field has one writer, named per group; sequence
 * numbers are compared modulo 2^32.
 */
#ifndef BPFBENCH_TCP_CONN_H
#define BPFBENCH_TCP_CONN_H

#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* The receiver's SYN-ACK, as the return path saw it (written before the
 * kernel's socket finished connect(); read by userspace to build frames). */
struct tcp_synack {
	__u32 seen;
	__u32 seq;		/* the receiver's initial sequence number */
	__u32 ack;		/* ours, plus one */
	__u32 tsval;		/* 0 unless has_ts */
	__u32 tsecr;
	__u16 window;		/* unscaled, as in every SYN */
	__u8 has_ts;
	__u8 wscale;		/* the receiver's shift; 0xff: no window scaling */
	__u8 src_mac[6];	/* the receiver's side */
	__u8 dst_mac[6];	/* ours */
};

struct tcp_conn {
	/* Written by userspace before the takeover. */
	__u32 taken_over;	/* 1: the return path drops the connection's frames */
	__u32 payload;		/* bytes per segment */
	__u32 wscale;		/* the receiver's window shift */
	__u32 fin_set;		/* 1: the segment at fin_at ends the stream with FIN */
	__u32 fin_at;
	__u32 tsval;		/* what our segments carry as TSval */
	__u64 rto_ns;		/* no progress this long while blocked: rewind */

	/* Written by the return path. */
	struct tcp_synack synack;
	__u32 snd_una;		/* the highest ACK seen */
	__u32 wnd;		/* the receiver's window in bytes, scaled */
	__u32 rcv_nxt;		/* what our segments acknowledge */
	__u32 peer_tsval;	/* echoed as our TSecr */
	__u32 dupacks;		/* in a row, for this snd_una */
	__u32 rewind_req;	/* bumped at the third duplicate ACK */
	__u32 peer_fin;
	__u32 peer_rst;
	__u32 pad0;
	__u64 acks;
	__u64 dupacks_total;
	__u64 last_progress_ns;	/* when snd_una last moved */

	/* Written by the sender. */
	__u32 snd_nxt;
	__u32 snd_max;		/* the highest sequence sent, plus its length */
	__u32 rewind_seen;
	__u32 pad1;
	__u64 last_rewind_ns;	/* when the sender last went back (or first sent) */
	__u64 segments;		/* segments sent, first sends and again */
	__u64 retransmitted;	/* segments sent below snd_max */
	__u64 rewinds_dupack;
	__u64 rewinds_timer;
};

/*
 * Written by userspace while the programs run. A map update writes the
 * whole value, so this has a map of its own: writing it cannot put back
 * older copies of the programs' fields.
 */
struct tcp_ctl {
	__u32 fin_req;		/* 1: end after what was sent (fin_at = snd_max) */
};

/* The two maps, declared alike by both programs' objects: the generator
 * reuses the return path's (bpf_map__reuse_fd) before it loads. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tcp_conn);
} tcp_conn SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tcp_ctl);
} tcp_ctl SEC(".maps");

/* a is before b in sequence space. */
static inline int seq_before(__u32 a, __u32 b)
{
	return (__s32)(a - b) < 0;
}

#endif
