// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* A sockmap's programs: an sk_msg program counting the bytes of the
 * messages its sockets send, and an sk_skb stream verdict program counting
 * what they receive; both pass everything on. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_SOCKMAP);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} sockets SEC(".maps");

__u64 messages, message_bytes;
__u64 skbs, skb_bytes;

SEC("sk_msg")
int count_messages(struct sk_msg_md *msg)
{
	__sync_fetch_and_add(&messages, 1);
	__sync_fetch_and_add(&message_bytes, msg->size);
	return SK_PASS;
}

SEC("sk_skb/stream_verdict")
int count_received(struct __sk_buff *skb)
{
	__sync_fetch_and_add(&skbs, 1);
	__sync_fetch_and_add(&skb_bytes, skb->len);
	return SK_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
