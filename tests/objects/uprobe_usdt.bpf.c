// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* A uprobe and a USDT program on bpfbench's own trigger (the bare
 * sections attach to its function bpfbench_trigger and its probe
 * bpfbench:trigger): the USDT program keeps the last event's number,
 * the uprobe counts calls into a ring buffer record each. */
#include <stdbool.h>
#include <linux/bpf.h>
#include <asm/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} events SEC(".maps");

__u64 last_event;

SEC("uprobe")
int on_call(struct pt_regs *ctx)
{
	__u64 *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e)
		return 0;
	*e = PT_REGS_PARM1(ctx);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(on_probe, __u64 event)
{
	last_event = event;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
