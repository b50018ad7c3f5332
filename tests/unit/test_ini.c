/* SPDX-License-Identifier: MIT */
/* The INI parser against well-formed and hostile text. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ini.h"

/* Records every key the parser hands out. */
struct seen {
	int n;
	char section[8][64];
	char key[8][64];
	char value[8][128];
	unsigned line[8];
	int fail_at;   /* 1-based key index at which the callback fails, 0: never */
};

static int record_cb(void *userdata, const char *section, const char *key, const char *value,
		     unsigned line, char *err, size_t errlen)
{
	struct seen *s = userdata;
	if (s->n >= 8)
		return -E2BIG;
	snprintf(s->section[s->n], 64, "%s", section);
	snprintf(s->key[s->n], 64, "%s", key);
	snprintf(s->value[s->n], 128, "%s", value);
	s->line[s->n] = line;
	s->n++;
	if (s->fail_at == s->n) {
		snprintf(err, errlen, "callback says no to %s", key);
		return -EINVAL;
	}
	return 0;
}

static int parse(const char *text, struct seen *s, char *err, size_t errlen)
{
	memset(s, 0, sizeof(*s));
	return ini_parse("t.ini", text, strlen(text), record_cb, s, err, errlen);
}

START_TEST(basic)
{
	struct seen s;
	char err[256];
	const char *t = "top=1\n"
			"# comment\n"
			"; other comment\n"
			"\n"
			"  [ Sec ]  \n"
			"  Key  =  some value  \n"
			"Empty=\n"
			"Hash=a#b\n"
			"Inline=val   # trailing comment\n";
	ck_assert_int_eq(parse(t, &s, err, sizeof(err)), 0);
	ck_assert_int_eq(s.n, 5);
	ck_assert_str_eq(s.section[0], "");
	ck_assert_str_eq(s.key[0], "top");
	ck_assert_str_eq(s.value[0], "1");
	ck_assert_str_eq(s.section[1], "Sec");
	ck_assert_str_eq(s.key[1], "Key");
	ck_assert_str_eq(s.value[1], "some value");
	ck_assert_uint_eq(s.line[1], 6);
	ck_assert_str_eq(s.value[2], "");
	ck_assert_str_eq(s.value[3], "a#b");
	ck_assert_str_eq(s.value[4], "val");
}
END_TEST

START_TEST(crlf_and_no_final_newline)
{
	struct seen s;
	char err[256];
	ck_assert_int_eq(parse("[A]\r\nk=v\r\nx=y", &s, err, sizeof(err)), 0);
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(s.value[0], "v");
	ck_assert_str_eq(s.value[1], "y");
	ck_assert_uint_eq(s.line[1], 3);
}
END_TEST

START_TEST(empty_input)
{
	struct seen s;
	char err[256];
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(ini_parse("e", "", 0, record_cb, &s, err, sizeof(err)), 0);
	ck_assert_int_eq(ini_parse("e", NULL, 0, record_cb, &s, err, sizeof(err)), 0);
	ck_assert_int_eq(s.n, 0);
}
END_TEST

START_TEST(missing_equals)
{
	struct seen s;
	char err[256];
	ck_assert_int_eq(parse("[A]\nk=v\njust words\n", &s, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "t.ini:3: expected \"Key=Value\" or \"[Section]\"");
}
END_TEST

START_TEST(missing_bracket)
{
	struct seen s;
	char err[256];
	ck_assert_int_eq(parse("[Section\nk=v\n", &s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "t.ini:1:"));
	ck_assert_ptr_nonnull(strstr(err, "']'"));
	ck_assert_int_eq(parse("[]\n", &s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "empty section"));
	ck_assert_int_eq(parse("[a]b]\n", &s, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(parse("[\n", &s, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(s.n, 0);
}
END_TEST

START_TEST(empty_key)
{
	struct seen s;
	char err[256];
	ck_assert_int_eq(parse("  = value\n", &s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "t.ini:1: missing key"));
}
END_TEST

START_TEST(nul_byte)
{
	struct seen s;
	char err[256];
	const char t[] = "[A]\nk=v\0x\n";
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(ini_parse("bin", t, sizeof(t) - 1, record_cb, &s, err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "bin:2: NUL byte"));
	ck_assert_int_eq(s.n, 0);
}
END_TEST

START_TEST(overlong_line)
{
	struct seen s;
	char err[256];
	size_t n = INI_LINE_MAX + 10;
	char *t = malloc(n + 1);
	memset(t, 'a', n);
	memcpy(t, "k=", 2);
	t[n] = '\0';
	ck_assert_int_eq(parse(t, &s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "t.ini:1: line longer than"));
	/* Exactly INI_LINE_MAX is still fine. */
	t[INI_LINE_MAX] = '\0';
	ck_assert_int_eq(parse(t, &s, err, sizeof(err)), 0);
	ck_assert_int_eq(s.n, 1);
	free(t);
}
END_TEST

START_TEST(callback_error_gets_location)
{
	struct seen s;
	char err[256];
	memset(&s, 0, sizeof(s));
	s.fail_at = 2;
	const char *t = "a=1\n\nb=2\nc=3\n";
	ck_assert_int_eq(ini_parse("cb.ini", t, strlen(t), record_cb, &s, err, sizeof(err)),
			 -EINVAL);
	ck_assert_str_eq(err, "cb.ini:3: callback says no to b");
	ck_assert_int_eq(s.n, 2);
}
END_TEST

START_TEST(small_err_buffer)
{
	struct seen s;
	char err[8];
	ck_assert_int_eq(parse("garbage\n", &s, err, sizeof(err)), -EINVAL);
	ck_assert_uint_eq(strlen(err), sizeof(err) - 1);
	/* No buffer at all must not crash either. */
	ck_assert_int_eq(parse("garbage\n", &s, NULL, 0), -EINVAL);
}
END_TEST

START_TEST(bools)
{
	const char *yes[] = { "yes", "YES", "true", "On", "1" };
	const char *no[] = { "no", "False", "off", "0" };
	const char *bad[] = { "", "2", "yess", "y", " yes", "nope", "-1" };
	for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++)
		ck_assert_int_eq(ini_parse_bool(yes[i]), 1);
	for (size_t i = 0; i < sizeof(no) / sizeof(*no); i++)
		ck_assert_int_eq(ini_parse_bool(no[i]), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ck_assert_int_eq(ini_parse_bool(bad[i]), -EINVAL);
	ck_assert_int_eq(ini_parse_bool(NULL), -EINVAL);
}
END_TEST

START_TEST(file_missing_and_directory)
{
	struct seen s;
	char err[512];
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(ini_parse_file("/nonexistent/efi-test.ini", record_cb, &s, err,
					sizeof(err)),
			 -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/efi-test.ini"));
	ck_assert_ptr_nonnull(strstr(err, "No such file"));
	ck_assert_int_eq(ini_parse_file("/", record_cb, &s, err, sizeof(err)), -EISDIR);
	ck_assert_ptr_nonnull(strstr(err, "directory"));
}
END_TEST

START_TEST(file_ok_and_too_big)
{
	struct seen s;
	char err[512];
	char path[] = "/tmp/test_ini.XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	FILE *f = fdopen(fd, "w");
	fputs("[A]\nk = v\n", f);
	fclose(f);
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(ini_parse_file(path, record_cb, &s, err, sizeof(err)), 0);
	ck_assert_int_eq(s.n, 1);

	/* Over 1 MiB of comments: refused before parsing. */
	f = fopen(path, "w");
	for (int i = 0; i < 1100; i++) {
		char line[1024];
		memset(line, '#', sizeof(line) - 1);
		line[sizeof(line) - 2] = '\n';
		line[sizeof(line) - 1] = '\0';
		fputs(line, f);
	}
	fclose(f);
	ck_assert_int_eq(ini_parse_file(path, record_cb, &s, err, sizeof(err)), -EFBIG);
	ck_assert_ptr_nonnull(strstr(err, path));
	unlink(path);
}
END_TEST

static Suite *ini_suite(void)
{
	Suite *s = suite_create("ini");
	TCase *tc = tcase_create("parse");
	tcase_add_test(tc, basic);
	tcase_add_test(tc, crlf_and_no_final_newline);
	tcase_add_test(tc, empty_input);
	tcase_add_test(tc, missing_equals);
	tcase_add_test(tc, missing_bracket);
	tcase_add_test(tc, empty_key);
	tcase_add_test(tc, nul_byte);
	tcase_add_test(tc, overlong_line);
	tcase_add_test(tc, callback_error_gets_location);
	tcase_add_test(tc, small_err_buffer);
	tcase_add_test(tc, bools);
	tcase_add_test(tc, file_missing_and_directory);
	tcase_add_test(tc, file_ok_and_too_big);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(ini_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
