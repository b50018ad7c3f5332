/* SPDX-License-Identifier: MIT */
/*
 * A small streaming JSON writer for efictl --json: it places commas and
 * colons itself, escapes strings (control characters, quotes, backslashes,
 * invalid UTF-8 replaced by U+FFFD), and writes one compact document.
 */
#ifndef EFICTL_JSON_H
#define EFICTL_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 16

struct json {
	FILE *f;
	int depth;
	bool first[JSON_MAX_DEPTH]; /* nothing written yet at this level */
	bool after_key;             /* the next value follows a key */
	bool overflow;              /* nested deeper than JSON_MAX_DEPTH, or unbalanced */
	int excess;                 /* open levels beyond JSON_MAX_DEPTH */
};

void json_init(struct json *j, FILE *f);
void json_obj_begin(struct json *j);
void json_obj_end(struct json *j);
void json_arr_begin(struct json *j);
void json_arr_end(struct json *j);
/* Writes "key": (the next call writes its value). */
void json_key(struct json *j, const char *key);
void json_str(struct json *j, const char *s);   /* NULL writes null */
void json_u64(struct json *j, uint64_t v);
void json_i64(struct json *j, int64_t v);
void json_bool(struct json *j, bool v);
void json_null(struct json *j);
/* "key": value, for the common object members */
void json_member_str(struct json *j, const char *key, const char *s);
void json_member_u64(struct json *j, const char *key, uint64_t v);
/* Ends the document with a newline and flushes.  Returns 0, or -EIO when
 * the stream failed or the document was not balanced. */
int json_finish(struct json *j);

/* Writes s as a quoted, escaped JSON string. */
void json_write_string(FILE *f, const char *s);

#endif
