/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the control-message decoder (common/ctlmsg.c): the
 * code efid runs on every byte a client sends.
 *
 * The input is treated as a stream of frames, as efid reads them: header
 * (ctl_hdr_parse), then the payload through ctl_parse with a policy that
 * covers every attribute of common/ctlproto.h, then a recursive walk of every
 * nest with ctl_iter and the typed accessors.  Each well-formed payload is
 * re-encoded with the writer and parsed again, which must succeed and give
 * the same attributes: a mismatch aborts, so the fuzzer checks the codec's
 * consistency as well as its memory safety.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctlmsg.h"
#include "ctlproto.h"

/* What each attribute of ctlproto.h carries, as documented there.  Strings
 * are bounded like the server bounds them (instance names, interface names,
 * addresses); repeatable attributes are marked multi. */
static const struct ctl_policy policy[EFI_A_MAX] = {
	[EFI_A_STATUS] = { .kind = CTL_I32 },
	[EFI_A_ERROR] = { .kind = CTL_STR, .maxlen = 4096 },
	[EFI_A_CLIENT] = { .kind = CTL_STR, .maxlen = 255 },
	[EFI_A_SERVER_VERSION] = { .kind = CTL_STR, .maxlen = 255 },
	[EFI_A_HOST_ID] = { .kind = CTL_STR, .maxlen = 64 },
	[EFI_A_CALLER_INSTANCE] = { .kind = CTL_STR, .maxlen = 63 },
	[EFI_A_CAN_MUTATE] = { .kind = CTL_U32 },
	[EFI_A_INSTANCE] = { .kind = CTL_STR, .minlen = 1, .maxlen = 63 },
	[EFI_A_IFNAME] = { .kind = CTL_STR, .minlen = 1, .maxlen = 15 },
	[EFI_A_ADDRESS] = { .kind = CTL_STR, .multi = true, .minlen = 1, .maxlen = 64 },
	[EFI_A_UPLINK] = { .kind = CTL_STR, .maxlen = 15 },
	[EFI_A_MTU] = { .kind = CTL_U32 },
	[EFI_A_KIND] = { .kind = CTL_STR, .maxlen = 15 },
	[EFI_A_HOST_IFNAME] = { .kind = CTL_STR, .maxlen = 15 },
	[EFI_A_STATE] = { .kind = CTL_STR, .maxlen = 31 },
	[EFI_A_LINK] = { .kind = CTL_STR, .maxlen = 31 },
	[EFI_A_GID] = { .kind = CTL_NEST, .multi = true },
	[EFI_A_GID_INDEX] = { .kind = CTL_U32 },
	[EFI_A_GID_VALUE] = { .kind = CTL_BIN, .minlen = 16, .maxlen = 16 },
	[EFI_A_IFINDEX] = { .kind = CTL_U32 },
	[EFI_A_FLAGS] = { .kind = CTL_U32 },
	[EFI_A_RESULT] = { .kind = CTL_U32 },
	[EFI_A_COUNT] = { .kind = CTL_U32 },
	[EFI_A_IFACE] = { .kind = CTL_NEST, .multi = true },
	[EFI_A_INSTANCE_ENTRY] = { .kind = CTL_NEST, .multi = true },
	[EFI_A_NETNS] = { .kind = CTL_STR, .maxlen = 31 },
	[EFI_A_STRAY] = { .kind = CTL_NEST, .multi = true },
	[EFI_A_PORT] = { .kind = CTL_U32 },
	[EFI_A_PORT_BASE] = { .kind = CTL_U32 },
	[EFI_A_QPN_BASE] = { .kind = CTL_U32 },
	[EFI_A_QPN_COUNT] = { .kind = CTL_U32 },
	[EFI_A_CONTEXT] = { .kind = CTL_NEST, .multi = true },
	[EFI_A_PID] = { .kind = CTL_U32 },
	[EFI_A_COUNTERS] = { .kind = CTL_BIN, .minlen = 96, .maxlen = 96 },
	/* connection manager (50–63) */
	[EFI_A_CM_SERVICE] = { .kind = CTL_U32 },
	[EFI_A_CM_BACKLOG] = { .kind = CTL_U32 },
	[EFI_A_CM_DEST] = { .kind = CTL_BIN, .minlen = 16, .maxlen = 16 },
	[EFI_A_CM_QPN] = { .kind = CTL_U32 },
	[EFI_A_CM_PSN] = { .kind = CTL_U32 },
	[EFI_A_CM_MTU] = { .kind = CTL_U32 },
	[EFI_A_CM_SGID] = { .kind = CTL_BIN, .minlen = 16, .maxlen = 16 },
	[EFI_A_CM_TIMEOUT] = { .kind = CTL_U32 },
	[EFI_A_CM_PRIVATE] = { .kind = CTL_BIN, .minlen = 0, .maxlen = EFI_CM_PRIVATE_MAX },
	[EFI_A_CM_ID] = { .kind = CTL_U64 },
	[EFI_A_CM_KEY] = { .kind = CTL_U32 },
	[EFI_A_CM_EVENT] = { .kind = CTL_U32 },
	[EFI_A_CM_REASON] = { .kind = CTL_U32 },
	[EFI_A_CM_PEER_GID] = { .kind = CTL_BIN, .multi = true, .minlen = 16, .maxlen = 16 },
	/* CM status in LIST replies, quotas, leases (64–73) */
	[EFI_A_CM_LISTENER] = { .kind = CTL_NEST, .multi = true },
	[EFI_A_CM_CONNECTION] = { .kind = CTL_NEST, .multi = true },
	[EFI_A_CM_PENDING] = { .kind = CTL_U32 },
	[EFI_A_CM_PEER_QPN] = { .kind = CTL_U32 },
	[EFI_A_CM_ACTIVE] = { .kind = CTL_U32 },
	[EFI_A_RES_QPS] = { .kind = CTL_U32 },
	[EFI_A_RES_MRS] = { .kind = CTL_U32 },
	[EFI_A_RES_BYTES] = { .kind = CTL_U64 },
	[EFI_A_LEASES] = { .kind = CTL_U32 },
};

#define NPOLICY (sizeof(policy) / sizeof(policy[0]))
/* Nests inside nests are legal on the wire; bound the walk like a server
 * must, so a deeply nested input costs linear time, not a stack overflow. */
#define MAX_DEPTH 8

/* Folds values into a sink the compiler cannot drop, so every accessor's
 * read really happens. */
static volatile uint32_t sink;

static void use_typed(const struct ctl_attr *a)
{
	uint32_t u32;
	int32_t i32;
	uint64_t u64;
	const char *s;

	if (ctl_attr_u32(a, &u32) == 0)
		sink ^= u32;
	if (ctl_attr_i32(a, &i32) == 0)
		sink ^= (uint32_t)i32;
	if (ctl_attr_u64(a, &u64) == 0)
		sink ^= (uint32_t)u64;
	if (ctl_attr_str(a, &s) == 0)
		sink ^= (uint32_t)strlen(s);
}

/* Walks an attribute stream: every attribute through the accessors, every
 * nest parsed against the policy and walked in turn. */
static void walk(const void *attrs, size_t len, int depth)
{
	struct ctl_attr tb[NPOLICY];
	struct ctl_iter it;
	struct ctl_attr a;
	uint16_t bad = 0;

	if (depth > MAX_DEPTH)
		return;
	(void)ctl_parse(attrs, len, policy, NPOLICY, tb, &bad);
	sink ^= bad;

	ctl_iter_init(&it, attrs, len);
	while (ctl_iter_next(&it, &a)) {
		use_typed(&a);
		if (a.type < NPOLICY && policy[a.type].kind == CTL_NEST) {
			struct ctl_iter inner;
			struct ctl_attr b;
			size_t n = 0;
			ctl_iter_nest(&inner, &a);
			while (ctl_iter_next(&inner, &b))
				n++;
			sink ^= (uint32_t)n;
			walk(a.data, a.len, depth + 1);
		}
	}
	/* An iterator that stopped early must say why: either it consumed
	 * everything or it reports a malformed attribute. */
	if (it.left != 0 && it.err != -EBADMSG)
		abort();
}

/* Re-encodes an accepted payload with the writer and checks that the copy
 * parses and yields the same attributes in the same order. */
static void roundtrip(const uint8_t *attrs, size_t len, uint16_t type, uint32_t seq)
{
	struct ctl_buf b;
	struct ctl_iter it, again;
	struct ctl_attr a, c;
	struct ctl_attr tb[NPOLICY];
	struct ctl_hdr h;

	ctl_buf_init(&b);
	if (ctl_msg_begin(&b, type, seq) < 0)
		goto out;
	ctl_iter_init(&it, attrs, len);
	while (ctl_iter_next(&it, &a))
		ctl_put(&b, a.type, a.data, a.len);
	if (it.err || ctl_msg_end(&b) < 0)
		goto out; /* out of memory, or the original was malformed */

	if (ctl_hdr_parse(b.data, b.len, EFI_CTL_MAX_PAYLOAD, &h) != 0)
		abort();
	if (h.type != type || h.seq != seq || h.length != b.len - CTL_HDR_SIZE)
		abort();
	if (ctl_parse(b.data + CTL_HDR_SIZE, h.length, policy, NPOLICY, tb, NULL) != 0)
		abort();

	ctl_iter_init(&it, attrs, len);
	ctl_iter_init(&again, b.data + CTL_HDR_SIZE, h.length);
	while (ctl_iter_next(&it, &a)) {
		if (!ctl_iter_next(&again, &c))
			abort();
		if (a.type != c.type || a.len != c.len || memcmp(a.data, c.data, a.len) != 0)
			abort();
	}
	if (ctl_iter_next(&again, &c))
		abort();
out:
	ctl_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Frames back to back, as on a stream socket.  A request larger than
	 * EFI_CTL_MAX_REQUEST is refused by the header parser, as in efid. */
	while (size > 0) {
		struct ctl_hdr h;
		struct ctl_attr tb[NPOLICY];
		int r = ctl_hdr_parse(data, size, EFI_CTL_MAX_REQUEST, &h);
		if (r != 0) {
			/* -EAGAIN (short), or a bad header: efid drops the
			 * connection; nothing more to read. */
			if (r != -EAGAIN && r != -EPROTO && r != -EPROTONOSUPPORT &&
			    r != -EMSGSIZE)
				abort();
			break;
		}
		data += CTL_HDR_SIZE;
		size -= CTL_HDR_SIZE;
		if (h.length > size)
			break; /* truncated frame: efid waits for the rest */

		if (ctl_parse(data, h.length, policy, NPOLICY, tb, NULL) == 0)
			roundtrip(data, h.length, h.type, h.seq);
		walk(data, h.length, 0);

		data += h.length;
		size -= h.length;
	}
	return 0;
}
