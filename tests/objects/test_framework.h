/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A test framework in the shape of Cilium's bpf/tests, small enough to read
 * in one go: a test NAME is up to three programs in sections
 * tc/test/NAME/pktgen|setup|check; a check reports into suite_result_map
 * as Cilium's does, a protobuf SuiteResult (bpf/tests/bpftest/trf.proto):
 * one TestResult {name, status, one Log {fmt, two fixed64 args}}. Lengths
 * stay under 128, so each varint is one byte.
 */
#ifndef TEST_FRAMEWORK_H
#define TEST_FRAMEWORK_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define TEST_ERROR 0
#define TEST_PASS 1
#define TEST_FAIL 2

#define PKTGEN(type, name) SEC(type "/test/" name "/pktgen")
#define SETUP(type, name) SEC(type "/test/" name "/setup")
#define CHECK(type, name) SEC(type "/test/" name "/check")

struct suite_result {
	char bytes[1024];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct suite_result);
} suite_result_map SEC(".maps");

/* Writes the report of a test NAME of STATUS with one log line FMT (printk
 * specifiers, as Cilium's runner prints them) and its two arguments. */
#define TEST_REPORT(name, status, fmt, a0, a1)                                        \
	do {                                                                          \
		__u32 __key = 0;                                                      \
		char *__p = bpf_map_lookup_elem(&suite_result_map, &__key);          \
		const char __name[] = name;                                           \
		const char __fmt[] = fmt;                                             \
		__u64 __args[2] = { (a0), (a1) };                                     \
		const int __log = 2 + sizeof(__fmt) + 2 * 9;                          \
		const int __result = 2 + sizeof(__name) + 2 + 2 + __log;              \
		if (!__p)                                                             \
			break;                                                        \
		*__p++ = 0x0a; /* SuiteResult.results */                              \
		*__p++ = __result;                                                    \
		*__p++ = 0x0a; /* TestResult.name */                                  \
		*__p++ = sizeof(__name);                                              \
		__builtin_memcpy(__p, __name, sizeof(__name));                        \
		__p += sizeof(__name);                                                \
		*__p++ = 0x10; /* TestResult.status */                                \
		*__p++ = (status);                                                    \
		*__p++ = 0x1a; /* TestResult.test_log */                              \
		*__p++ = __log;                                                       \
		*__p++ = 0x0a; /* Log.fmt */                                          \
		*__p++ = sizeof(__fmt);                                               \
		__builtin_memcpy(__p, __fmt, sizeof(__fmt));                          \
		__p += sizeof(__fmt);                                                 \
		*__p++ = 0x11; /* Log.args, fixed64 */                                \
		__builtin_memcpy(__p, &__args[0], 8);                                 \
		__p += 8;                                                             \
		*__p++ = 0x11;                                                        \
		__builtin_memcpy(__p, &__args[1], 8);                                 \
	} while (0)

#endif /* TEST_FRAMEWORK_H */
