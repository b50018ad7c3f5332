/* SPDX-License-Identifier: MIT */
/* efictl's JSON writer: escaping of hostile strings and document structure. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

static char *escape(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	json_write_string(f, s);
	fclose(f);
	return buf;
}

#define ESC_EQ(in, want)                          \
	do {                                      \
		char *got_ = escape(in);          \
		ck_assert_str_eq(got_, want);     \
		free(got_);                       \
	} while (0)

START_TEST(plain_and_specials)
{
	ESC_EQ("", "\"\"");
	ESC_EQ("efi0", "\"efi0\"");
	ESC_EQ("a\"b", "\"a\\\"b\"");
	ESC_EQ("a\\b", "\"a\\\\b\"");
	ESC_EQ("/run/efi", "\"/run/efi\"");
	ESC_EQ("\b\f\n\r\t", "\"\\b\\f\\n\\r\\t\"");
	ESC_EQ("\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"");
	ESC_EQ("\x1b[31mred", "\"\\u001b[31mred\"");
}
END_TEST

START_TEST(utf8)
{
	/* Valid UTF-8 passes through. */
	ESC_EQ("caf\xc3\xa9", "\"caf\xc3\xa9\"");
	ESC_EQ("\xe2\x82\xac", "\"\xe2\x82\xac\"");
	ESC_EQ("\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"");
	/* Invalid: lone continuation, truncated sequences, overlong forms,
	 * surrogates, beyond U+10FFFF, 0xff. */
	ESC_EQ("\x80", "\"\\ufffd\"");
	ESC_EQ("a\xc3", "\"a\\ufffd\"");
	ESC_EQ("\xe2\x82", "\"\\ufffd\\ufffd\"");
	ESC_EQ("\xc0\xaf", "\"\\ufffd\\ufffd\"");
	ESC_EQ("\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"");
	ESC_EQ("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");
	ESC_EQ("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
	ESC_EQ("\xff", "\"\\ufffd\"");
}
END_TEST

START_TEST(document)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct json j;
	json_init(&j, f);
	json_obj_begin(&j);
	json_key(&j, "a");
	json_u64(&j, 1);
	json_key(&j, "b");
	json_arr_begin(&j);
	json_str(&j, "x");
	json_null(&j);
	json_bool(&j, true);
	json_i64(&j, -2);
	json_obj_begin(&j);
	json_obj_end(&j);
	json_arr_end(&j);
	json_key(&j, "c");
	json_str(&j, NULL);
	json_key(&j, "d");
	json_arr_begin(&j);
	json_arr_end(&j);
	json_obj_end(&j);
	ck_assert_int_eq(json_finish(&j), 0);
	fclose(f);
	ck_assert_str_eq(buf, "{\"a\":1,\"b\":[\"x\",null,true,-2,{}],\"c\":null,\"d\":[]}\n");
	free(buf);
}
END_TEST

START_TEST(unbalanced_is_an_error)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct json j;
	json_init(&j, f);
	json_obj_begin(&j);
	json_key(&j, "a");
	ck_assert_int_ne(json_finish(&j), 0);
	fclose(f);
	free(buf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("efictl_json");
	TCase *tc = tcase_create("json");
	tcase_add_test(tc, plain_and_specials);
	tcase_add_test(tc, utf8);
	tcase_add_test(tc, document);
	tcase_add_test(tc, unbalanced_is_an_error);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
