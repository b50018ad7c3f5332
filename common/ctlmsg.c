/* SPDX-License-Identifier: MIT */
/* Control-message codec; see ctlmsg.h for the format. */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctlmsg.h"

static void put_le16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, 2);
}

static void put_le32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static uint16_t get_le16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return le16toh(v);
}

static uint32_t get_le32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return le32toh(v);
}

void ctl_buf_init(struct ctl_buf *b)
{
	memset(b, 0, sizeof(*b));
	b->limit = EFI_CTL_MAX_PAYLOAD;
}

void ctl_buf_free(struct ctl_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

/* Makes room for n more bytes; sets the sticky error on failure. */
static int reserve(struct ctl_buf *b, size_t n)
{
	if (b->err)
		return b->err;
	if (b->len + n > CTL_HDR_SIZE + (b->limit ? b->limit : EFI_CTL_MAX_PAYLOAD))
		return b->err = -EMSGSIZE;
	if (b->len + n <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + n)
		cap *= 2;
	uint8_t *d = realloc(b->data, cap);
	if (!d)
		return b->err = -ENOMEM;
	b->data = d;
	b->cap = cap;
	return 0;
}

int ctl_msg_begin(struct ctl_buf *b, uint16_t type, uint32_t seq)
{
	b->len = 0;
	b->err = 0;
	if (!b->limit)
		b->limit = EFI_CTL_MAX_PAYLOAD;
	int r = reserve(b, CTL_HDR_SIZE);
	if (r)
		return r;
	put_le32(b->data, EFI_CTL_MAGIC);
	put_le16(b->data + 4, EFI_CTL_VERSION);
	put_le16(b->data + 6, type);
	put_le32(b->data + 8, 0);
	put_le32(b->data + 12, seq);
	b->len = CTL_HDR_SIZE;
	return 0;
}

int ctl_put(struct ctl_buf *b, uint16_t type, const void *value, size_t len)
{
	if (b->err)
		return b->err;
	if (len > UINT16_MAX - CTL_ATTR_HDR)
		return b->err = -EMSGSIZE;
	size_t total = CTL_ALIGN(CTL_ATTR_HDR + len);
	int r = reserve(b, total);
	if (r)
		return r;
	uint8_t *p = b->data + b->len;
	put_le16(p, type);
	put_le16(p + 2, (uint16_t)len);
	if (len)
		memcpy(p + CTL_ATTR_HDR, value, len);
	memset(p + CTL_ATTR_HDR + len, 0, total - CTL_ATTR_HDR - len);
	b->len += total;
	return 0;
}

int ctl_put_u32(struct ctl_buf *b, uint16_t type, uint32_t v)
{
	uint32_t le = htole32(v);
	return ctl_put(b, type, &le, sizeof(le));
}

int ctl_put_i32(struct ctl_buf *b, uint16_t type, int32_t v)
{
	return ctl_put_u32(b, type, (uint32_t)v);
}

int ctl_put_u64(struct ctl_buf *b, uint16_t type, uint64_t v)
{
	uint64_t le = htole64(v);
	return ctl_put(b, type, &le, sizeof(le));
}

int ctl_put_str(struct ctl_buf *b, uint16_t type, const char *s)
{
	return ctl_put(b, type, s, strlen(s) + 1);
}

int ctl_put_raw(struct ctl_buf *b, const void *attrs, size_t len)
{
	if (len % 4)
		return b->err ? b->err : (b->err = -EINVAL);
	int r = reserve(b, len);
	if (r)
		return r;
	if (len)
		memcpy(b->data + b->len, attrs, len);
	b->len += len;
	return 0;
}

size_t ctl_nest_begin(struct ctl_buf *b, uint16_t type)
{
	size_t off = b->len;
	if (ctl_put(b, type, NULL, 0))
		return 0;
	return off;
}

void ctl_nest_end(struct ctl_buf *b, size_t offset)
{
	if (b->err || offset < CTL_HDR_SIZE || offset >= b->len)
		return;
	size_t vlen = b->len - offset - CTL_ATTR_HDR;
	if (vlen > UINT16_MAX - CTL_ATTR_HDR) {
		b->err = -EMSGSIZE;
		return;
	}
	put_le16(b->data + offset + 2, (uint16_t)vlen);
}

int ctl_msg_end(struct ctl_buf *b)
{
	if (b->err)
		return b->err;
	if (b->len < CTL_HDR_SIZE)
		return b->err = -EINVAL;
	put_le32(b->data + 8, (uint32_t)(b->len - CTL_HDR_SIZE));
	return 0;
}

int ctl_hdr_parse(const void *buf, size_t len, size_t max_payload, struct ctl_hdr *out)
{
	const uint8_t *p = buf;
	if (len < CTL_HDR_SIZE)
		return -EAGAIN;
	struct ctl_hdr h = {
		.magic = get_le32(p),
		.version = get_le16(p + 4),
		.type = get_le16(p + 6),
		.length = get_le32(p + 8),
		.seq = get_le32(p + 12),
	};
	if (h.magic != EFI_CTL_MAGIC)
		return -EPROTO;
	if (h.version != EFI_CTL_VERSION)
		return -EPROTONOSUPPORT;
	if (h.length > max_payload || h.length > EFI_CTL_MAX_PAYLOAD)
		return -EMSGSIZE;
	*out = h;
	return 0;
}

void ctl_iter_init(struct ctl_iter *it, const void *attrs, size_t len)
{
	it->p = attrs;
	it->left = attrs ? len : 0;
	it->err = 0;
}

bool ctl_iter_next(struct ctl_iter *it, struct ctl_attr *a)
{
	if (it->err || it->left == 0)
		return false;
	if (it->left < CTL_ATTR_HDR) {
		it->err = -EBADMSG;
		return false;
	}
	uint16_t type = get_le16(it->p);
	uint16_t len = get_le16(it->p + 2);
	if ((size_t)len > it->left - CTL_ATTR_HDR) {
		it->err = -EBADMSG;
		return false;
	}
	a->type = type;
	a->len = len;
	a->data = it->p + CTL_ATTR_HDR;
	/* The last attribute's padding may be missing; never step past the end. */
	size_t step = CTL_ALIGN(CTL_ATTR_HDR + (size_t)len);
	if (step > it->left)
		step = it->left;
	it->p += step;
	it->left -= step;
	return true;
}

void ctl_iter_nest(struct ctl_iter *it, const struct ctl_attr *nest)
{
	ctl_iter_init(it, nest->data, nest->len);
}

int ctl_attr_u32(const struct ctl_attr *a, uint32_t *v)
{
	if (!a->data || a->len != 4)
		return -EBADMSG;
	*v = get_le32(a->data);
	return 0;
}

int ctl_attr_i32(const struct ctl_attr *a, int32_t *v)
{
	uint32_t u;
	int r = ctl_attr_u32(a, &u);
	if (r == 0)
		*v = (int32_t)u;
	return r;
}

int ctl_attr_u64(const struct ctl_attr *a, uint64_t *v)
{
	if (!a->data || a->len != 8)
		return -EBADMSG;
	uint64_t le;
	memcpy(&le, a->data, 8);
	*v = le64toh(le);
	return 0;
}

int ctl_attr_str(const struct ctl_attr *a, const char **s)
{
	if (!a->data || a->len == 0 || a->data[a->len - 1] != '\0')
		return -EBADMSG;
	if (memchr(a->data, '\0', a->len) != a->data + a->len - 1)
		return -EBADMSG;
	*s = (const char *)a->data;
	return 0;
}

static int check_one(const struct ctl_attr *a, const struct ctl_policy *pol)
{
	switch (pol->kind) {
	case CTL_U32:
	case CTL_I32:
		return a->len == 4 ? 0 : -EBADMSG;
	case CTL_U64:
		return a->len == 8 ? 0 : -EBADMSG;
	case CTL_STR: {
		const char *s;
		if (ctl_attr_str(a, &s))
			return -EBADMSG;
		size_t n = (size_t)a->len - 1;
		if (n < pol->minlen || (pol->maxlen && n > pol->maxlen))
			return -EBADMSG;
		return 0;
	}
	case CTL_BIN:
	case CTL_NEST:
		if (a->len < pol->minlen || (pol->maxlen && a->len > pol->maxlen))
			return -EBADMSG;
		if (pol->kind == CTL_NEST) {
			/* A nest must itself be a well-formed attribute stream. */
			struct ctl_iter it;
			struct ctl_attr inner;
			ctl_iter_nest(&it, a);
			while (ctl_iter_next(&it, &inner))
				;
			return it.err;
		}
		return 0;
	default:
		return 0;
	}
}

int ctl_parse(const void *attrs, size_t len, const struct ctl_policy *policy, size_t npolicy,
	      struct ctl_attr *tb, uint16_t *bad_type)
{
	struct ctl_iter it;
	struct ctl_attr a;

	memset(tb, 0, npolicy * sizeof(*tb));
	if (bad_type)
		*bad_type = 0;
	ctl_iter_init(&it, attrs, len);
	while (ctl_iter_next(&it, &a)) {
		if (a.type >= npolicy || policy[a.type].kind == CTL_IGNORE)
			continue;
		const struct ctl_policy *pol = &policy[a.type];
		if (check_one(&a, pol) || (tb[a.type].data && !pol->multi)) {
			if (bad_type)
				*bad_type = a.type;
			return -EBADMSG;
		}
		if (!tb[a.type].data)
			tb[a.type] = a;
	}
	return it.err;
}
