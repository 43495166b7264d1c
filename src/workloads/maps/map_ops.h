/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Shared between map_ops.bpf.c and its host driver, which reads these
 * definitions from the object's BTF (instance.rs): host constants are enums. */
#ifndef MAP_OPS_H
#define MAP_OPS_H

enum map_op {
	MAP_OP_NOOP = 0,
	MAP_OP_BASELINE = 1,
	MAP_OP_LOOKUP = 2,
	MAP_OP_INSERT = 3,
	MAP_OP_UPDATE = 4,
	MAP_OP_DELETE = 5,
};

enum key_kind {
	KEY_INDEX = 0,	/* __u32 index in the first 4 bytes, the rest zero */
	KEY_LPM = 1,	/* struct { __u32 prefixlen; __be32 data; } */
};

enum map_ops_limit {
	MAX_KEY_SIZE = 64,
	MAX_VALUE_SIZE = 4096,
};

struct map_op_state {
	__u64 cursor;	/* next sequential key index */
	__u64 failures;	/* operations that did not do what they should */
	__u64 ops;	/* operations run */
};

/* op_state slots */
#define OP_STATE_BODY 0
#define OP_STATE_EMPTY 1

#endif
