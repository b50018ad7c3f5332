/* SPDX-License-Identifier: MIT */
/* GID derivation: IPv4 mapped, IPv6 as is, text round trips. */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gid.h"

START_TEST(ipv4_is_mapped)
{
	struct in_addr a;
	union efi_gid g;
	char buf[64];
	inet_pton(AF_INET, "10.0.0.5", &a);
	ck_assert_int_eq(efi_gid_from_addr(AF_INET, &a, &g), 0);
	ck_assert(efi_gid_is_v4mapped(&g));
	ck_assert_str_eq(efi_gid_format(&g, buf, sizeof(buf)), "::ffff:10.0.0.5");
	static const uint8_t want[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 5 };
	ck_assert_int_eq(memcmp(g.raw, want, 16), 0);
}
END_TEST

START_TEST(ipv6_as_is)
{
	struct in6_addr a;
	union efi_gid g;
	char buf[64];
	inet_pton(AF_INET6, "fe80::1:2", &a);
	ck_assert_int_eq(efi_gid_from_addr(AF_INET6, &a, &g), 0);
	ck_assert(!efi_gid_is_v4mapped(&g));
	ck_assert_int_eq(memcmp(g.raw, &a, 16), 0);
	ck_assert_str_eq(efi_gid_format(&g, buf, sizeof(buf)), "fe80::1:2");
}
END_TEST

START_TEST(parse)
{
	union efi_gid g, h;
	ck_assert_int_eq(efi_gid_parse("10.0.0.5", &g), 0);
	ck_assert_int_eq(efi_gid_parse("::ffff:10.0.0.5", &h), 0);
	ck_assert_int_eq(memcmp(g.raw, h.raw, 16), 0);
	ck_assert_int_eq(efi_gid_parse("fd00::5", &g), 0);
	ck_assert_int_eq(efi_gid_parse("10.0.0.256", &g), -EINVAL);
	ck_assert_int_eq(efi_gid_parse("", &g), -EINVAL);
	ck_assert_int_eq(efi_gid_parse("fd00::5/64", &g), -EINVAL);
	ck_assert_int_eq(efi_gid_from_addr(AF_UNIX, "x", &g), -EAFNOSUPPORT);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gid");
	TCase *tc = tcase_create("derivation");
	tcase_add_test(tc, ipv4_is_mapped);
	tcase_add_test(tc, ipv6_as_is);
	tcase_add_test(tc, parse);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
