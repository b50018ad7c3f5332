/* SPDX-License-Identifier: MIT */
/* The JSON reader; see jsonr.h.  Recursive descent over a bounded depth. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonr.h"

struct parser {
	const unsigned char *p, *start, *end;
	size_t nodes;
	char *err;
	size_t errlen;
	bool failed;
};

static void fail(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail(struct parser *ps, const char *fmt, ...)
{
	char what[160];
	va_list ap;

	if (ps->failed)
		return;
	ps->failed = true;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(ps->err, ps->errlen, "%s at byte %zu", what, (size_t)(ps->p - ps->start));
}

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end &&
	       (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static struct jv *new_node(struct parser *ps, enum jv_type t)
{
	struct jv *v;

	if (++ps->nodes > JSONR_MAX_NODES) {
		fail(ps, "more than %d values", JSONR_MAX_NODES);
		return NULL;
	}
	v = calloc(1, sizeof(*v));
	if (!v) {
		fail(ps, "out of memory");
		return NULL;
	}
	v->type = t;
	return v;
}

/* Decodes one UTF-8 sequence at p (at most n bytes); returns its length or
 * 0 when invalid (overlong, surrogate, beyond U+10FFFF, truncated). */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	unsigned c = p[0], cp, len;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, cp = c & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (unsigned i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

static int hex4(const unsigned char *p, unsigned *out)
{
	unsigned v = 0;

	for (int i = 0; i < 4; i++) {
		unsigned c = p[i], d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -1;
		v = v << 4 | d;
	}
	*out = v;
	return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* A string at ps->p (the opening quote); returns it decoded (malloc'd).
 * The decoded form is never longer than the source, so one allocation of
 * the source's length suffices. */
static char *parse_string(struct parser *ps)
{
	const unsigned char *q = ++ps->p;
	size_t cap;
	char *out, *o;

	while (q < ps->end && *q != '"') {
		if (*q == '\\' && q + 1 < ps->end)
			q++;
		q++;
	}
	if (q >= ps->end) {
		fail(ps, "unterminated string");
		return NULL;
	}
	cap = (size_t)(q - ps->p) + 1;
	out = o = malloc(cap);
	if (!out) {
		fail(ps, "out of memory");
		return NULL;
	}
	while (*ps->p != '"') {
		unsigned c = *ps->p;

		if (c < 0x20) {
			fail(ps, "control character in a string");
			goto bad;
		}
		if (c != '\\') {
			size_t n = utf8_seq(ps->p, (size_t)(ps->end - ps->p));
			if (!n) {
				fail(ps, "invalid UTF-8");
				goto bad;
			}
			memcpy(o, ps->p, n);
			o += n;
			ps->p += n;
			continue;
		}
		ps->p++;
		c = *ps->p++;
		switch (c) {
		case '"': *o++ = '"'; break;
		case '\\': *o++ = '\\'; break;
		case '/': *o++ = '/'; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u': {
			unsigned cp, lo;
			if (ps->end - ps->p < 4 || hex4(ps->p, &cp)) {
				fail(ps, "bad \\u escape");
				goto bad;
			}
			ps->p += 4;
			if (cp >= 0xd800 && cp <= 0xdbff) {
				/* A high surrogate needs its low half: 12 source
				 * bytes become 4 output bytes. */
				if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u' ||
				    hex4(ps->p + 2, &lo) || lo < 0xdc00 || lo > 0xdfff) {
					fail(ps, "unpaired surrogate in a \\u escape");
					goto bad;
				}
				ps->p += 6;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			} else if (cp >= 0xdc00 && cp <= 0xdfff) {
				fail(ps, "unpaired surrogate in a \\u escape");
				goto bad;
			} else if (cp == 0) {
				fail(ps, "\\u0000 is not accepted");
				goto bad;
			}
			o += put_utf8(o, cp);
			break;
		}
		default:
			ps->p--;
			fail(ps, "bad escape");
			goto bad;
		}
	}
	ps->p++; /* the closing quote */
	*o = '\0';
	return out;
bad:
	free(out);
	return NULL;
}

static bool is_digit(const unsigned char *p, const unsigned char *end)
{
	return p < end && *p >= '0' && *p <= '9';
}

static struct jv *parse_number(struct parser *ps)
{
	const unsigned char *s = ps->p, *p = s;
	bool integer = true;
	char buf[64];
	struct jv *v;

	if (p < ps->end && *p == '-')
		p++;
	if (!is_digit(p, ps->end))
		goto bad;
	if (*p == '0')
		p++;
	else
		while (is_digit(p, ps->end))
			p++;
	if (p < ps->end && *p == '.') {
		integer = false;
		if (!is_digit(++p, ps->end))
			goto bad;
		while (is_digit(p, ps->end))
			p++;
	}
	if (p < ps->end && (*p == 'e' || *p == 'E')) {
		integer = false;
		p++;
		if (p < ps->end && (*p == '+' || *p == '-'))
			p++;
		if (!is_digit(p, ps->end))
			goto bad;
		while (is_digit(p, ps->end))
			p++;
	}
	if ((size_t)(p - s) >= sizeof(buf)) {
		fail(ps, "number too long");
		return NULL;
	}
	memcpy(buf, s, (size_t)(p - s));
	buf[p - s] = '\0';
	v = new_node(ps, JV_NUMBER);
	if (!v)
		return NULL;
	v->num = strtod(buf, NULL);
	v->integer = integer;
	ps->p = p;
	return v;
bad:
	fail(ps, "invalid number");
	return NULL;
}

static bool literal(struct parser *ps, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
		return false;
	ps->p += n;
	return true;
}

static struct jv *parse_value(struct parser *ps, int depth);

/* An array or object at ps->p ('[' or '{'). */
static struct jv *parse_container(struct parser *ps, int depth, bool object)
{
	struct jv *v = new_node(ps, object ? JV_OBJECT : JV_ARRAY), **tail;
	char close = object ? '}' : ']';

	if (!v)
		return NULL;
	if (depth >= JSONR_MAX_DEPTH) {
		fail(ps, "nested deeper than %d", JSONR_MAX_DEPTH);
		return v;
	}
	tail = &v->child;
	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == close) {
		ps->p++;
		return v;
	}
	for (;;) {
		char *key = NULL;
		struct jv *e;

		skip_ws(ps);
		if (object) {
			if (ps->p >= ps->end || *ps->p != '"') {
				fail(ps, "expected a member name");
				return v;
			}
			key = parse_string(ps);
			if (!key)
				return v;
			for (struct jv *m = v->child; m; m = m->next) {
				if (strcmp(m->key, key) == 0) {
					fail(ps, "member \"%.40s\" given twice", key);
					free(key);
					return v;
				}
			}
			if (v->count == JSONR_MAX_MEMBERS) {
				fail(ps, "more than %d members in one object", JSONR_MAX_MEMBERS);
				free(key);
				return v;
			}
			skip_ws(ps);
			if (ps->p >= ps->end || *ps->p != ':') {
				fail(ps, "expected ':'");
				free(key);
				return v;
			}
			ps->p++;
		}
		e = parse_value(ps, depth + 1);
		if (!e) {
			free(key);
			return v;
		}
		e->key = key;
		*tail = e;
		tail = &e->next;
		v->count++;
		if (ps->failed)
			return v;
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == close) {
			ps->p++;
			return v;
		}
		fail(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
		return v;
	}
}

/* Returns the value, or NULL on failure; a partial tree may come back with
 * ps->failed set (the caller frees it). */
static struct jv *parse_value(struct parser *ps, int depth)
{
	struct jv *v;

	skip_ws(ps);
	if (ps->p >= ps->end) {
		fail(ps, "unexpected end of input");
		return NULL;
	}
	switch (*ps->p) {
	case '{':
		return parse_container(ps, depth, true);
	case '[':
		return parse_container(ps, depth, false);
	case '"': {
		char *s = parse_string(ps);
		if (!s)
			return NULL;
		v = new_node(ps, JV_STRING);
		if (!v) {
			free(s);
			return NULL;
		}
		v->str = s;
		return v;
	}
	case 't':
	case 'f':
		if (literal(ps, "true") || literal(ps, "false")) {
			v = new_node(ps, JV_BOOL);
			if (v)
				v->b = ps->p[-1] == 'e' && ps->p[-2] == 'u';
			return v;
		}
		break;
	case 'n':
		if (literal(ps, "null"))
			return new_node(ps, JV_NULL);
		break;
	default:
		if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))
			return parse_number(ps);
	}
	fail(ps, "unexpected character");
	return NULL;
}

struct jv *jv_parse(const char *text, size_t len, char *err, size_t errlen)
{
	struct parser ps = {
		.p = (const unsigned char *)text,
		.start = (const unsigned char *)text,
		.end = (const unsigned char *)text + len,
		.err = err,
		.errlen = errlen,
	};
	struct jv *v;

	if (errlen)
		err[0] = '\0';
	v = parse_value(&ps, 0);
	if (!ps.failed) {
		skip_ws(&ps);
		if (ps.p != ps.end)
			fail(&ps, "data after the document");
	}
	if (ps.failed) {
		jv_free(v);
		return NULL;
	}
	return v;
}

void jv_free(struct jv *v)
{
	/* Siblings iteratively, children recursively: depth is bounded. */
	while (v) {
		struct jv *next = v->next;
		jv_free(v->child);
		free(v->str);
		free(v->key);
		free(v);
		v = next;
	}
}

const struct jv *jv_get(const struct jv *v, const char *key)
{
	if (!v || v->type != JV_OBJECT)
		return NULL;
	for (const struct jv *m = v->child; m; m = m->next)
		if (strcmp(m->key, key) == 0)
			return m;
	return NULL;
}

const char *jv_string(const struct jv *v)
{
	return v && v->type == JV_STRING ? v->str : NULL;
}

bool jv_int(const struct jv *v, int64_t min, int64_t max, int64_t *out)
{
	/* Integers beyond 2^53 lose digits in a double: refuse them. */
	if (!v || v->type != JV_NUMBER || !v->integer || v->num < -9007199254740992.0 ||
	    v->num > 9007199254740992.0)
		return false;
	int64_t i = (int64_t)v->num;
	if (i < min || i > max)
		return false;
	*out = i;
	return true;
}

const char *jv_type_name(const struct jv *v)
{
	static const char *const names[] = { "null", "boolean", "number", "string", "array",
					      "object" };
	return v ? names[v->type] : "nothing";
}
