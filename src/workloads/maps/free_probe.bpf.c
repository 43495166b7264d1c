// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Times the freeing of one map: fentry/fexit on bpf_map_free_deferred(), the
 * workqueue function that runs a map's ->map_free() (trie_free() for an LPM
 * trie) once its last reference is gone. The kernel bench uses the same hook
 * because lpm_trie.c itself cannot be traced. Kernels that refuse tracing
 * programs refuse to load this object; the host then reports `free` as N/A.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

/* Just the fields we read; CO-RE finds their offsets in the kernel's BTF. */
struct work_struct {
	long data;
} __attribute__((preserve_access_index));

struct bpf_map___probe {
	char name[16];
	struct work_struct work;
} __attribute__((preserve_access_index));

/*
 * The target is known by its name, which the host makes unique and sets
 * before it drops the map: not by its id, which the kernel zeroes
 * (bpf_map_free_id) before the free work runs. The kernel's lpm-trie
 * bench matches by name too.
 */
__u64 target_name[2];	/* BPF_OBJ_NAME_LEN bytes; all zero: not armed */
__u64 started_ns;
__u64 target_work;	/* the target's work_struct, to match its exit */
__u64 free_ns;		/* duration of the target's free, once done */
__u32 freed;		/* 1 when free_ns is valid */

static __always_inline int is_target(void *work)
{
	struct bpf_map___probe *map;
	__u64 name[2] = {};

	if (!target_name[0])
		return 0;
	map = (void *)((char *)work - bpf_core_field_offset(struct bpf_map___probe, work));
	bpf_probe_read_kernel(name, sizeof(name), (char *)map + bpf_core_field_offset(struct bpf_map___probe, name));
	return name[0] == target_name[0] && name[1] == target_name[1];
}

SEC("fentry/bpf_map_free_deferred")
int on_free_enter(unsigned long long *ctx)
{
	if (!started_ns && is_target((void *)ctx[0])) {
		target_work = ctx[0];
		started_ns = bpf_ktime_get_ns();
	}
	return 0;
}

SEC("fexit/bpf_map_free_deferred")
int on_free_exit(unsigned long long *ctx)
{
	/* The map is gone by now: match the work item's address instead (only
	 * compared, never dereferenced), so another map's free cannot end ours. */
	if (started_ns && !freed && ctx[0] == target_work) {
		free_ns = bpf_ktime_get_ns() - started_ns;
		freed = 1;
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
