// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* A perf_event program in a profiler's shape: each sample counted by the
 * process it fell in. bpfbench attaches a bare perf_event section to the
 * page-fault software event on every CPU and fires it with its page-fault
 * trigger; the attached tests run it so. */
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} samples SEC(".maps");

SEC("perf_event")
int count_samples(struct bpf_perf_event_data *ctx)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	__u64 one = 1, *n = bpf_map_lookup_elem(&samples, &pid);

	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(&samples, &pid, &one, BPF_NOEXIST);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
