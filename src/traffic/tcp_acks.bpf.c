// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The return path of the generator's TCP mode, in XDP on the sending
 * interface. The kernel's own socket does the handshake (connect()); this
 * program sees the receiver's SYN-ACK on the way and records what the
 * generator's frames need (addresses, initial sequence numbers, window
 * scale, timestamps). Once userspace has taken the connection over, every
 * frame of it is read (ACK number, window, timestamp, duplicate ACKs) and
 * dropped: the kernel's socket stays idle while the generator sends.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "tcp_conn.h"

/* The connection: set before load, from the bound socket and the peer. */
struct acks_filter {
	__u32 ipv6;
	__u8 peer_addr[16];	/* IPv4 in the first 4 bytes */
	__be16 peer_port;
	__be16 local_port;
};

const volatile struct acks_filter filter = {};


#define TCPOPT_EOL 0
#define TCPOPT_NOP 1
#define TCPOPT_WINDOW 3
#define TCPOPT_TIMESTAMP 8
#define TCP_MAX_OPTIONS 40

struct tcp_opts {
	__u32 tsval;
	__u32 tsecr;
	__u8 has_ts;
	__u8 wscale;
};

/* The options, copied to the stack, and where the walk is. */
struct opts_walk {
	__u8 buf[64];	/* indexed & 63: every read is in bounds */
	__u32 i;
	__u32 len;
	struct tcp_opts o;
};

static __always_inline __u32 be32_at(const __u8 *b, __u32 at)
{
	return (__u32)b[at & 63] << 24 | (__u32)b[(at + 1) & 63] << 16 | (__u32)b[(at + 2) & 63] << 8 | b[(at + 3) & 63];
}

/* One option per call (bpf_loop): verified once, where an open-coded loop
 * makes the verifier follow every mix of NOPs and options. */
static long walk_option(__u64 n, void *arg)
{
	struct opts_walk *w = arg;
	__u32 i = w->i;
	__u8 kind, olen;

	if (i >= w->len)
		return 1;
	kind = w->buf[i & 63];
	if (kind == TCPOPT_EOL)
		return 1;
	if (kind == TCPOPT_NOP) {
		w->i = i + 1;
		return 0;
	}
	if (i + 1 >= w->len)
		return 1;
	olen = w->buf[(i + 1) & 63];
	if (olen < 2 || i + olen > w->len)
		return 1;
	if (kind == TCPOPT_WINDOW && olen == 3)
		w->o.wscale = w->buf[(i + 2) & 63];
	if (kind == TCPOPT_TIMESTAMP && olen == 10) {
		w->o.tsval = be32_at(w->buf, i + 2);
		w->o.tsecr = be32_at(w->buf, i + 6);
		w->o.has_ts = 1;
	}
	w->i = i + olen;
	return 0;
}

/* The TCP options at `off` (`len` bytes, at most 40). */
static __always_inline void parse_options(struct xdp_md *ctx, __u32 off, __u32 len, struct tcp_opts *o)
{
	struct opts_walk w = { .len = len, .o = { .wscale = 0xff } };

	if (len > 0 && len <= TCP_MAX_OPTIONS && !bpf_xdp_load_bytes(ctx, off, w.buf, len))
		bpf_loop(TCP_MAX_OPTIONS, walk_option, &w, 0);
	*o = w.o;
}

SEC("xdp")
int xdp_tcp_acks(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct tcphdr *tcp;
	__u32 key = 0, ip_payload;

	if ((void *)(eth + 1) > data_end)
		return XDP_PASS;
	if (filter.ipv6) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if (eth->h_proto != bpf_htons(ETH_P_IPV6) || (void *)(ip6 + 1) > data_end)
			return XDP_PASS;
		if (ip6->nexthdr != IPPROTO_TCP)
			return XDP_PASS;
#pragma unroll
		for (int i = 0; i < 4; i++)
			if (ip6->saddr.in6_u.u6_addr32[i] != ((const volatile __u32 *)filter.peer_addr)[i])
				return XDP_PASS;
		tcp = (void *)(ip6 + 1);
		ip_payload = bpf_ntohs(ip6->payload_len);
	} else {
		struct iphdr *ip = (void *)(eth + 1);

		if (eth->h_proto != bpf_htons(ETH_P_IP) || (void *)(ip + 1) > data_end)
			return XDP_PASS;
		if (ip->protocol != IPPROTO_TCP || ip->ihl < 5 || ip->saddr != *(const volatile __u32 *)filter.peer_addr)
			return XDP_PASS;
		tcp = (void *)ip + ip->ihl * 4;
		ip_payload = bpf_ntohs(ip->tot_len) - ip->ihl * 4;
	}
	if ((void *)(tcp + 1) > data_end || tcp->source != filter.peer_port || tcp->dest != filter.local_port)
		return XDP_PASS;

	struct tcp_conn *c = bpf_map_lookup_elem(&tcp_conn, &key);
	if (!c)
		return XDP_PASS;
	__u32 hdr_len = tcp->doff * 4;
	struct tcp_opts o = {};

	if (hdr_len < sizeof(*tcp) || hdr_len > 60)
		return XDP_PASS;
	parse_options(ctx, (void *)(tcp + 1) - data, hdr_len - sizeof(*tcp), &o);
	__u32 seq = bpf_ntohl(tcp->seq);
	__u32 ack = bpf_ntohl(tcp->ack_seq);

	if (tcp->syn && tcp->ack) {
		/* The handshake is the kernel's: note it and let it through. */
		struct tcp_synack *s = &c->synack;

		s->seq = seq;
		s->ack = ack;
		s->window = bpf_ntohs(tcp->window);
		s->has_ts = o.has_ts;
		s->tsval = o.tsval;
		s->tsecr = o.tsecr;
		s->wscale = o.wscale;
		__builtin_memcpy(s->src_mac, eth->h_source, 6);
		__builtin_memcpy(s->dst_mac, eth->h_dest, 6);
		s->seen = 1;
		return XDP_PASS;
	}
	if (!c->taken_over)
		return XDP_PASS;

	__u32 len = ip_payload > hdr_len ? ip_payload - hdr_len : 0;
	__u32 wnd = (__u32)bpf_ntohs(tcp->window) << (c->wscale & 15);

	c->acks++;
	if (o.has_ts)
		c->peer_tsval = o.tsval;
	if (tcp->rst) {
		c->peer_rst = 1;
		return XDP_DROP;
	}
	if (tcp->fin) {
		c->rcv_nxt = seq + len + 1;
		c->peer_fin = 1;
	}
	if (!tcp->ack)
		return XDP_DROP;
	__u32 una = c->snd_una;

	if (seq_before(una, ack)) {
		if (seq_before(c->snd_max, ack))
			return XDP_DROP; /* acknowledges what was never sent */
		c->snd_una = ack;
		c->wnd = wnd;
		c->dupacks = 0;
		c->last_progress_ns = bpf_ktime_get_ns();
	} else if (ack == una) {
		/* RFC 5681's duplicate: nothing new, no data, same window, data outstanding. */
		if (len == 0 && !tcp->fin && wnd == c->wnd && seq_before(una, c->snd_max)) {
			c->dupacks_total++;
			if (++c->dupacks == 3)
				c->rewind_req++;
		}
		c->wnd = wnd;
	}
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
