// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Programs that return at once, one per type bpfbench measures attached:
 * attached beside a user's program on the same point, under the same
 * trigger, an empty program's ns per run is what bpf_stats reports for a
 * run that does nothing (the statistics' clock reads, the entry and the
 * return), shown beside every attached figure and never subtracted.
 * The host loads the one it needs, with the user's attach type and target.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <asm/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/usdt.bpf.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tp")
int empty_tracepoint(void *ctx)
{
	return 0;
}

SEC("raw_tp")
int empty_raw_tracepoint(void *ctx)
{
	return 0;
}

SEC("kprobe")
int empty_kprobe(void *ctx)
{
	return 0;
}

/* Loaded as a multi-kprobe (its expected attach type), attached by pattern. */
SEC("kprobe.multi")
int empty_kprobe_multi(void *ctx)
{
	return 0;
}

SEC("uprobe")
int empty_uprobe(void *ctx)
{
	return 0;
}

/* usdt.bpf.h brings the maps a USDT attach needs. */
SEC("usdt")
int empty_usdt(void *ctx)
{
	return 0;
}

/* fentry, fexit, fmod_ret and tp_btf: the attach type and target are set before load. */
SEC("tp_btf")
int empty_tracing(void *ctx)
{
	return 0;
}

SEC("lsm")
int empty_lsm(void *ctx)
{
	return 0;
}

SEC("perf_event")
int empty_perf_event(void *ctx)
{
	return 0;
}

/* cgroup sock_addr hooks allow the operation with 1. */
SEC("cgroup/connect4")
int empty_cgroup_sock_addr(void *ctx)
{
	return 1;
}

SEC("sockops")
int empty_sock_ops(void *ctx)
{
	return 1;
}

SEC("cgroup/sock_create")
int empty_cgroup_sock(void *ctx)
{
	return 1;
}

SEC("cgroup/setsockopt")
int empty_cgroup_sockopt(void *ctx)
{
	return 1;
}

SEC("cgroup/sysctl")
int empty_cgroup_sysctl(void *ctx)
{
	return 1;
}

SEC("cgroup_skb/ingress")
int empty_cgroup_skb(void *ctx)
{
	return 1;
}

SEC("sk_msg")
int empty_sk_msg(void *ctx)
{
	return 1;
}

SEC("sk_skb/stream_verdict")
int empty_sk_skb(void *ctx)
{
	return 1;
}
