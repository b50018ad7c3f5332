/* SPDX-License-Identifier: MIT */
/*
 * A small JSON reader (RFC 8259) for efi-cni's input: the network
 * configuration a container runtime writes to the plugin's stdin.  It builds
 * a tree, and is strict, because the input comes from outside: UTF-8 is
 * checked, control characters in strings and \u0000 are refused (values are
 * used as C strings), duplicate member names are refused (two answers to one
 * question), nesting and size are bounded.  Errors say where (byte offset).
 */
#ifndef EFI_CNI_JSONR_H
#define EFI_CNI_JSONR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSONR_MAX_DEPTH 32
#define JSONR_MAX_NODES 65536
#define JSONR_MAX_MEMBERS 1024 /* per object: keeps the duplicate check cheap */

enum jv_type { JV_NULL, JV_BOOL, JV_NUMBER, JV_STRING, JV_ARRAY, JV_OBJECT };

struct jv {
	enum jv_type type;
	bool b;            /* JV_BOOL */
	bool integer;      /* JV_NUMBER written without fraction or exponent */
	double num;        /* JV_NUMBER */
	char *str;         /* JV_STRING: decoded, NUL-terminated, no inner NUL */
	char *key;         /* the member name, for a value inside an object */
	struct jv *child;  /* JV_ARRAY, JV_OBJECT: first element or member */
	struct jv *next;   /* the next element or member of the parent */
	size_t count;      /* JV_ARRAY, JV_OBJECT: elements or members */
};

/* Parses one JSON document (surrounding white space allowed).  Returns the
 * tree, or NULL with a message in err (NULL and errno ENOMEM when memory ran
 * out). */
struct jv *jv_parse(const char *text, size_t len, char *err, size_t errlen);

/* Frees a tree; accepts NULL. */
void jv_free(struct jv *v);

/* The member KEY of an object, or NULL (also when v is not an object). */
const struct jv *jv_get(const struct jv *v, const char *key);

/* The string's value, or NULL when v is NULL or not a string. */
const char *jv_string(const struct jv *v);

/* The number as an integer: true when v is an integer number in
 * [min, max], stored in *out. */
bool jv_int(const struct jv *v, int64_t min, int64_t max, int64_t *out);

/* A name for v's type, for messages ("string", "object", ...); "nothing"
 * for NULL. */
const char *jv_type_name(const struct jv *v);

#endif
