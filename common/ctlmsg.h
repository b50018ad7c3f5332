/* SPDX-License-Identifier: MIT */
/*
 * Control-message codec: framing, attribute encoding and strict parsing.
 *
 * A frame is a 16-byte header followed by `length` bytes of attributes:
 *
 *   u32 magic (EFI_CTL_MAGIC) | u16 version | u16 type | u32 length | u32 seq
 *
 * All integers little-endian.  Each attribute is u16 type, u16 len (of the
 * value), the value, then zero padding to a multiple of 4.  A nest attribute's
 * value is itself a sequence of attributes.  Nothing here allocates except
 * the growable writer buffer; parsing never reads past the given length.
 */
#ifndef EFI_CTLMSG_H
#define EFI_CTLMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctlproto.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CTL_HDR_SIZE 16u
#define CTL_ATTR_HDR 4u
#define CTL_ALIGN(n) (((n) + 3u) & ~(size_t)3u)

struct ctl_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t length;
	uint32_t seq;
};

/* ---- writing ---------------------------------------------------------- */

/* A growable message under construction.  Errors are sticky: after the
 * first failure every put is a no-op and ctl_msg_end() returns the error. */
struct ctl_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
	size_t limit; /* payload limit, EFI_CTL_MAX_PAYLOAD by default */
	int err;      /* 0, -ENOMEM or -EMSGSIZE */
};

/* Initialises an empty buffer.  Never fails. */
void ctl_buf_init(struct ctl_buf *b);
/* Frees the buffer's memory; accepts a zeroed or already-freed buffer. */
void ctl_buf_free(struct ctl_buf *b);
/* Starts a message (resets the buffer).  Returns 0 or -ENOMEM. */
int ctl_msg_begin(struct ctl_buf *b, uint16_t type, uint32_t seq);
/* Appends one attribute.  Returns 0, -ENOMEM, or -EMSGSIZE when the value
 * exceeds 65535 bytes or the message its limit. */
int ctl_put(struct ctl_buf *b, uint16_t type, const void *value, size_t len);
int ctl_put_u32(struct ctl_buf *b, uint16_t type, uint32_t v);
int ctl_put_i32(struct ctl_buf *b, uint16_t type, int32_t v);
int ctl_put_u64(struct ctl_buf *b, uint16_t type, uint64_t v);
/* Strings are sent with their terminating NUL. */
int ctl_put_str(struct ctl_buf *b, uint16_t type, const char *s);
/* Appends attributes already encoded (e.g. copied from another message);
 * len must be a multiple of 4.  Returns 0, -ENOMEM or -EMSGSIZE. */
int ctl_put_raw(struct ctl_buf *b, const void *attrs, size_t len);
/* Opens a nest; returns its offset (pass it to ctl_nest_end), or 0 on error
 * (the buffer then carries the error). */
size_t ctl_nest_begin(struct ctl_buf *b, uint16_t type);
/* Closes a nest opened by ctl_nest_begin. */
void ctl_nest_end(struct ctl_buf *b, size_t offset);
/* Fills in the header's length.  Returns 0 or the sticky error. */
int ctl_msg_end(struct ctl_buf *b);

/* ---- reading ---------------------------------------------------------- */

/*
 * Validates a frame header at the start of buf.  Returns 0 when a complete
 * header is there and valid (*out filled), -EAGAIN when fewer than
 * CTL_HDR_SIZE bytes are present, -EPROTO for a wrong magic,
 * -EPROTONOSUPPORT for an unknown version, -EMSGSIZE when length exceeds
 * max_payload.
 */
int ctl_hdr_parse(const void *buf, size_t len, size_t max_payload, struct ctl_hdr *out);

struct ctl_attr {
	uint16_t type;
	uint16_t len;
	const uint8_t *data;
};

struct ctl_iter {
	const uint8_t *p;
	size_t left;
	int err; /* -EBADMSG once a malformed attribute was met */
};

/* Iterates over a sequence of attributes. */
void ctl_iter_init(struct ctl_iter *it, const void *attrs, size_t len);
/* Returns true and fills *a with the next attribute; false at the end or on
 * a malformed one (it->err then says -EBADMSG). */
bool ctl_iter_next(struct ctl_iter *it, struct ctl_attr *a);
/* Iterates over the attributes inside a nest. */
void ctl_iter_nest(struct ctl_iter *it, const struct ctl_attr *nest);

/* Typed accessors.  Return 0, or -EBADMSG when the attribute's length does
 * not fit the type (strings: not NUL-terminated, or an embedded NUL). */
int ctl_attr_u32(const struct ctl_attr *a, uint32_t *v);
int ctl_attr_i32(const struct ctl_attr *a, int32_t *v);
int ctl_attr_u64(const struct ctl_attr *a, uint64_t *v);
int ctl_attr_str(const struct ctl_attr *a, const char **s);

enum ctl_kind { CTL_IGNORE = 0, CTL_U32, CTL_I32, CTL_U64, CTL_STR, CTL_BIN, CTL_NEST };

/* What an attribute number must look like.  maxlen bounds strings (length
 * without the NUL) and binaries (exact length when minlen == maxlen). */
struct ctl_policy {
	uint8_t kind;
	bool multi;        /* may repeat; tb[] then keeps the first */
	uint16_t minlen;
	uint16_t maxlen;
};

/*
 * Validates every attribute in attrs[0..len) against policy[0..npolicy) and
 * stores the first occurrence of each known one in tb[type] (tb has npolicy
 * entries, zeroed here; absent attributes have data == NULL).  Unknown
 * attribute numbers are skipped.  Returns 0, or -EBADMSG (malformed stream,
 * wrong length or type, a non-multi attribute repeated) with *bad_type set to
 * the offending attribute number when bad_type is not NULL.
 */
int ctl_parse(const void *attrs, size_t len, const struct ctl_policy *policy, size_t npolicy,
	      struct ctl_attr *tb, uint16_t *bad_type);

/* True when tb[type] was present. */
static inline bool ctl_has(const struct ctl_attr *tb, uint16_t type)
{
	return tb[type].data != NULL;
}

#ifdef __cplusplus
}
#endif
#endif
