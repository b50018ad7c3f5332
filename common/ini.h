/* SPDX-License-Identifier: MIT */
/*
 * A small strict INI parser: "[Section]", "Key=Value", '#' and ';' comments,
 * blank lines.  Keys before any section belong to section "".  Whitespace
 * around keys and values is trimmed; values may not span lines.  A '#' or ';'
 * after a blank ends the line ("Group=efi  # who may attach"); one not after
 * a blank is part of the value.  Lines longer than INI_LINE_MAX, NUL bytes,
 * a missing ']' or '=', an empty key or section name are errors with the
 * line number.  Section and key names are passed as written; callers decide
 * about case.  Used for efid.conf and the interface files.
 */
#ifndef EFI_INI_H
#define EFI_INI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define INI_LINE_MAX 4096

/* Called once per key.  Returns 0 to go on, or a negative errno to stop; it
 * may write a message into err (errlen bytes), which ini_parse prefixes with
 * "NAME:LINE: " (so the callback says only what is wrong). */
typedef int (*ini_cb)(void *userdata, const char *section, const char *key,
		      const char *value, unsigned line, char *err, size_t errlen);

/*
 * Parses text[0..len).  Returns 0, the callback's error, or -EINVAL for a
 * syntax error; err then holds "NAME:LINE: what is wrong" (NAME is the
 * caller's name for the text, e.g. a path).
 */
int ini_parse(const char *name, const char *text, size_t len, ini_cb cb, void *userdata,
	      char *err, size_t errlen);

/* Reads a whole file (at most 1 MiB) and parses it.  Returns as ini_parse, or
 * -errno when the file cannot be read (err says which file and why). */
int ini_parse_file(const char *path, ini_cb cb, void *userdata, char *err, size_t errlen);

/* Parses yes/no/true/false/on/off/1/0.  Returns 1, 0, or -EINVAL. */
int ini_parse_bool(const char *v);

#ifdef __cplusplus
}
#endif
#endif
