/* SPDX-License-Identifier: MIT */
/* Streaming JSON writer; see json.h. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "json.h"

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when the bytes there
 * are not valid UTF-8 (overlong forms, surrogates and > U+10FFFF included). */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];
	size_t n;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0; /* also stops at the terminating NUL */
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void json_write_string(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	fputc('"', f);
	while (*s) {
		unsigned char c = *s;
		switch (c) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\b':
			fputs("\\b", f);
			break;
		case '\f':
			fputs("\\f", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			if (c < 0x20 || c == 0x7f) {
				fprintf(f, "\\u%04x", c);
			} else if (c < 0x80) {
				fputc(c, f);
			} else {
				size_t n = utf8_len(s);
				if (n == 0) {
					fputs("\\ufffd", f);
				} else {
					fwrite(s, 1, n, f);
					s += n - 1;
				}
			}
		}
		s++;
	}
	fputc('"', f);
}

void json_init(struct json *j, FILE *f)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
	j->first[0] = true;
}

/* Writes the separator a new value or key needs at the current level. */
static void before_value(struct json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (!j->first[j->depth])
		fputc(',', j->f);
	j->first[j->depth] = false;
}

static void open_level(struct json *j, char c)
{
	before_value(j);
	fputc(c, j->f);
	if (j->excess || j->depth + 1 >= JSON_MAX_DEPTH) {
		/* Still valid JSON, only commas at this depth are not tracked;
		 * json_finish reports it. */
		j->overflow = true;
		j->excess++;
		return;
	}
	j->depth++;
	j->first[j->depth] = true;
}

static void close_level(struct json *j, char c)
{
	fputc(c, j->f);
	if (j->excess > 0)
		j->excess--;
	else if (j->depth > 0)
		j->depth--;
	else
		j->overflow = true;
}

void json_obj_begin(struct json *j)
{
	open_level(j, '{');
}

void json_obj_end(struct json *j)
{
	close_level(j, '}');
}

void json_arr_begin(struct json *j)
{
	open_level(j, '[');
}

void json_arr_end(struct json *j)
{
	close_level(j, ']');
}

void json_key(struct json *j, const char *key)
{
	before_value(j);
	json_write_string(j->f, key);
	fputc(':', j->f);
	j->after_key = true;
}

void json_str(struct json *j, const char *s)
{
	if (!s) {
		json_null(j);
		return;
	}
	before_value(j);
	json_write_string(j->f, s);
}

void json_u64(struct json *j, uint64_t v)
{
	before_value(j);
	fprintf(j->f, "%" PRIu64, v);
}

void json_i64(struct json *j, int64_t v)
{
	before_value(j);
	fprintf(j->f, "%" PRId64, v);
}

void json_bool(struct json *j, bool v)
{
	before_value(j);
	fputs(v ? "true" : "false", j->f);
}

void json_null(struct json *j)
{
	before_value(j);
	fputs("null", j->f);
}

int json_finish(struct json *j)
{
	fputc('\n', j->f);
	if (fflush(j->f) == EOF || ferror(j->f))
		return -EIO;
	return (j->depth != 0 || j->overflow || j->after_key) ? -EIO : 0;
}

void json_member_str(struct json *j, const char *key, const char *s)
{
	json_key(j, key);
	json_str(j, s);
}

void json_member_u64(struct json *j, const char *key, uint64_t v)
{
	json_key(j, key);
	json_u64(j, v);
}
