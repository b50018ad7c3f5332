/* SPDX-License-Identifier: MIT */
/* A small strict INI parser; see ini.h for the accepted syntax. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ini.h"

/* Files larger than this are refused: no configuration is that big, and a
 * bound keeps a hostile file from making us allocate without limit. */
#define INI_FILE_MAX (1024u * 1024u)

static void set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Trims blanks at both ends in place; returns the new start. */
static char *trim(char *s)
{
	while (is_blank(*s))
		s++;
	size_t n = strlen(s);
	while (n > 0 && is_blank(s[n - 1]))
		s[--n] = '\0';
	return s;
}

/* Cuts an inline comment: '#' or ';' preceded by a blank starts one, so that
 * "Group=efi   # who may attach" works while "a#b" stays a value. */
static void cut_inline_comment(char *s)
{
	if (*s == '\0')
		return;
	for (char *p = s + 1; *p; p++) {
		if ((*p == '#' || *p == ';') && is_blank(p[-1])) {
			*p = '\0';
			return;
		}
	}
}

static bool printable_section_char(char c)
{
	return (unsigned char)c >= 0x20 && c != 0x7f && c != '[' && c != ']';
}

int ini_parse(const char *name, const char *text, size_t len, ini_cb cb, void *userdata,
	      char *err, size_t errlen)
{
	char line[INI_LINE_MAX + 1];
	char section[INI_LINE_MAX + 1] = "";
	char cberr[512];
	size_t pos = 0;
	unsigned lineno = 0;

	if (!name)
		name = "<input>";
	if (err && errlen)
		err[0] = '\0';
	if (!text && len)
		return -EINVAL;

	while (pos < len) {
		lineno++;
		const char *start = text + pos;
		const char *nl = memchr(start, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - start) : len - pos;
		pos += n + (nl ? 1 : 0);

		if (n > INI_LINE_MAX) {
			set_err(err, errlen, "%s:%u: line longer than %u bytes", name, lineno,
				INI_LINE_MAX);
			return -EINVAL;
		}
		if (memchr(start, '\0', n)) {
			set_err(err, errlen, "%s:%u: NUL byte in line (is this a text file?)",
				name, lineno);
			return -EINVAL;
		}
		memcpy(line, start, n);
		line[n] = '\0';

		char *s = trim(line);
		if (*s == '\0' || *s == '#' || *s == ';')
			continue;

		if (*s == '[') {
			cut_inline_comment(s);
			s = trim(s);
			size_t sl = strlen(s);
			if (sl < 2 || s[sl - 1] != ']') {
				set_err(err, errlen, "%s:%u: section header lacks its closing ']'",
					name, lineno);
				return -EINVAL;
			}
			s[sl - 1] = '\0';
			char *sec = trim(s + 1);
			if (*sec == '\0') {
				set_err(err, errlen, "%s:%u: empty section name", name, lineno);
				return -EINVAL;
			}
			for (const char *p = sec; *p; p++) {
				if (!printable_section_char(*p)) {
					set_err(err, errlen,
						"%s:%u: invalid character in section name", name,
						lineno);
					return -EINVAL;
				}
			}
			strcpy(section, sec);
			continue;
		}

		char *eq = strchr(s, '=');
		if (!eq) {
			set_err(err, errlen, "%s:%u: expected \"Key=Value\" or \"[Section]\"", name,
				lineno);
			return -EINVAL;
		}
		*eq = '\0';
		char *key = trim(s);
		char *value = eq + 1;
		cut_inline_comment(value);
		value = trim(value);
		if (*key == '\0') {
			set_err(err, errlen, "%s:%u: missing key before '='", name, lineno);
			return -EINVAL;
		}

		cberr[0] = '\0';
		int r = cb(userdata, section, key, value, lineno, cberr, sizeof(cberr));
		if (r) {
			if (r > 0)
				r = -EINVAL;
			if (cberr[0])
				set_err(err, errlen, "%s:%u: %s", name, lineno, cberr);
			else
				set_err(err, errlen, "%s:%u: %s=%s: %s", name, lineno, key, value,
					strerror(-r));
			return r;
		}
	}
	return 0;
}

int ini_parse_file(const char *path, ini_cb cb, void *userdata, char *err, size_t errlen)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	int r;

	if (err && errlen)
		err[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		set_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		set_err(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		r = -EISDIR;
		set_err(err, errlen, "%s: is a directory, expected a file", path);
		goto out;
	}
	/* Read up to one byte past the limit, so that "too big" is detected even
	 * for files whose size stat cannot tell (pipes, /proc). */
	buf = malloc(INI_FILE_MAX + 1);
	if (!buf) {
		r = -ENOMEM;
		set_err(err, errlen, "%s: out of memory", path);
		goto out;
	}
	while (len <= INI_FILE_MAX) {
		ssize_t n = read(fd, buf + len, INI_FILE_MAX + 1 - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			set_err(err, errlen, "%s: cannot read: %s", path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > INI_FILE_MAX) {
		r = -EFBIG;
		set_err(err, errlen, "%s: larger than %u bytes; not a configuration file?", path,
			INI_FILE_MAX);
		goto out;
	}
	r = ini_parse(path, buf, len, cb, userdata, err, errlen);
out:
	free(buf);
	close(fd);
	return r;
}

int ini_parse_bool(const char *v)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };
	if (!v)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(v, yes[i]) == 0)
			return 1;
		if (strcasecmp(v, no[i]) == 0)
			return 0;
	}
	return -EINVAL;
}
