/* SPDX-License-Identifier: MIT */
/* Names, addresses, specs and interface files, with hostile input. */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ifacespec.h"

static int text_parse(const char *t, struct efi_iface_spec *s, char *err, size_t errlen)
{
	return efi_iface_text_parse("f.conf", t, strlen(t), s, err, errlen);
}

START_TEST(instance_names)
{
	char long63[64], long64[65];
	memset(long63, 'a', 63);
	long63[63] = '\0';
	memset(long64, 'a', 64);
	long64[64] = '\0';
	ck_assert(efi_instance_name_valid("vm1"));
	ck_assert(efi_instance_name_valid("a.b-c_D9"));
	ck_assert(efi_instance_name_valid(long63));
	ck_assert(!efi_instance_name_valid(long64));
	ck_assert(!efi_instance_name_valid(""));
	ck_assert(!efi_instance_name_valid(NULL));
	ck_assert(!efi_instance_name_valid("../x"));
	ck_assert(!efi_instance_name_valid(".."));
	ck_assert(!efi_instance_name_valid(".hidden"));
	ck_assert(!efi_instance_name_valid("-opt"));
	ck_assert(!efi_instance_name_valid("a/b"));
	ck_assert(!efi_instance_name_valid("vm 1"));
	ck_assert(!efi_instance_name_valid("vm\n1"));
	ck_assert(!efi_instance_name_valid("vm\xc3\xa9"));
}
END_TEST

START_TEST(ifnames)
{
	ck_assert(efi_ifname_valid("efi0"));
	ck_assert(efi_ifname_valid("a-b.c_d@e"));
	ck_assert(efi_ifname_valid("123456789012345"));
	ck_assert(!efi_ifname_valid("1234567890123456"));
	ck_assert(!efi_ifname_valid(""));
	ck_assert(!efi_ifname_valid(NULL));
	ck_assert(!efi_ifname_valid("."));
	ck_assert(!efi_ifname_valid(".."));
	ck_assert(!efi_ifname_valid("../x"));
	ck_assert(!efi_ifname_valid("a/b"));
	ck_assert(!efi_ifname_valid("a:1"));
	ck_assert(!efi_ifname_valid("a b"));
	ck_assert(!efi_ifname_valid("a\tb"));
	ck_assert(!efi_ifname_valid("a\x7f"));
	ck_assert(!efi_ifname_valid("\xff"));
}
END_TEST

START_TEST(addresses_good)
{
	struct efi_addr a;
	char err[256], buf[64];
	ck_assert_int_eq(efi_addr_parse("10.0.0.5/24", &a, err, sizeof(err)), 0);
	ck_assert_int_eq(a.family, AF_INET);
	ck_assert_uint_eq(a.prefixlen, 24);
	ck_assert_str_eq(efi_addr_format(&a, buf, sizeof(buf)), "10.0.0.5/24");
	ck_assert_int_eq(efi_addr_parse("10.0.0.5/32", &a, err, sizeof(err)), 0);
	ck_assert_int_eq(efi_addr_parse("fd00::5/64", &a, err, sizeof(err)), 0);
	ck_assert_int_eq(a.family, AF_INET6);
	ck_assert_str_eq(efi_addr_format(&a, buf, sizeof(buf)), "fd00::5/64");
	ck_assert_int_eq(efi_addr_parse("FD00:0:0::5/128", &a, err, sizeof(err)), 0);
	ck_assert_str_eq(efi_addr_format(&a, buf, sizeof(buf)), "fd00::5/128");
}
END_TEST

START_TEST(addresses_bad)
{
	static const char *const bad[] = {
		"", "10.0.0.5", "10.0.0.5/", "/24", "10.0.0.5/33", "fd00::1/129",
		"10.0.0.5/-1", "10.0.0.5/+8", "10.0.0.5/ 8", "10.0.0.5/0x10", "10.0.0.5/24/1",
		"10.0.0/24", "10.0.0.256/24", "garbage/8", "10.0.0.5 /24", " 10.0.0.5/24",
		"10.0.0.5/99999999999999999999", "0.0.0.0/0", "127.0.0.1/8", "224.0.0.1/4",
		"255.255.255.255/32", "::/0", "::1/128", "ff02::1/16",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/8",
	};
	struct efi_addr a;
	char err[256];
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		err[0] = '\0';
		ck_assert_msg(efi_addr_parse(bad[i], &a, err, sizeof(err)) == -EINVAL,
			      "accepted '%s'", bad[i]);
		ck_assert_msg(err[0] != '\0', "no message for '%s'", bad[i]);
	}
	ck_assert_int_eq(efi_addr_parse(NULL, &a, err, sizeof(err)), -EINVAL);
	efi_addr_parse("10.0.0.5", &a, err, sizeof(err));
	ck_assert_ptr_nonnull(strstr(err, "prefix"));
	efi_addr_parse("10.0.0.5/33", &a, err, sizeof(err));
	ck_assert_ptr_nonnull(strstr(err, "at most 32"));
}
END_TEST

START_TEST(same_ip)
{
	struct efi_addr a, b, c;
	ck_assert_int_eq(efi_addr_parse("10.0.0.5/24", &a, NULL, 0), 0);
	ck_assert_int_eq(efi_addr_parse("10.0.0.5/16", &b, NULL, 0), 0);
	ck_assert_int_eq(efi_addr_parse("::ffff:10.0.0.5/120", &c, NULL, 0), 0);
	ck_assert(efi_addr_same_ip(&a, &b));
	ck_assert(!efi_addr_same_ip(&a, &c));
}
END_TEST

static void good_spec(struct efi_iface_spec *s)
{
	memset(s, 0, sizeof(*s));
	strcpy(s->instance, "vm1");
	strcpy(s->name, "efi0");
	strcpy(s->kind, "veth");
	s->naddrs = 2;
	ck_assert_int_eq(efi_addr_parse("10.0.0.5/24", &s->addrs[0], NULL, 0), 0);
	ck_assert_int_eq(efi_addr_parse("fd00::5/64", &s->addrs[1], NULL, 0), 0);
}

START_TEST(validate)
{
	struct efi_iface_spec s;
	char err[256];
	good_spec(&s);
	ck_assert_int_eq(efi_iface_spec_validate(&s, err, sizeof(err)), 0);
	s.name[0] = s.kind[0] = '\0';
	ck_assert_int_eq(efi_iface_spec_validate(&s, err, sizeof(err)), 0);

	good_spec(&s);
	s.instance[0] = '\0';
	ck_assert_int_eq(efi_iface_spec_validate(&s, err, sizeof(err)), -EINVAL);
	good_spec(&s);
	strcpy(s.instance, "../etc");
	ck_assert_int_eq(efi_iface_spec_validate(&s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "instance"));
	good_spec(&s);
	strcpy(s.name, "a/b");
	ck_assert_int_eq(efi_iface_spec_validate(&s, err, sizeof(err)), -EINVAL);
	good_spec(&s);
	strcpy(s.kind, "bond");
	ck_assert_int_eq(efi_iface_spec_validate(&s, err, sizeof(err)), -EINVAL);
	good_spec(&s);
	strcpy(s.uplink, "br 0");
	ck_assert_int_eq(efi_iface_spec_validate(&s, err, sizeof(err)), -EINVAL);
	good_spec(&s);
	s.mtu = 575;
	ck_assert_int_eq(efi_iface_spec_validate(&s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "MTU"));
	s.mtu = 65536;
	ck_assert_int_eq(efi_iface_spec_validate(&s, err, sizeof(err)), -EINVAL);
	s.mtu = 9000;
	ck_assert_int_eq(efi_iface_spec_validate(&s, err, sizeof(err)), 0);
	good_spec(&s);
	s.naddrs = 0;
	ck_assert_int_eq(efi_iface_spec_validate(&s, err, sizeof(err)), -EINVAL);
	good_spec(&s);
	s.naddrs = EFI_MAX_ADDRS + 1;
	ck_assert_int_eq(efi_iface_spec_validate(&s, err, sizeof(err)), -EINVAL);
	good_spec(&s);
	s.addrs[1] = s.addrs[0];
	s.addrs[1].prefixlen = 8;
	ck_assert_int_eq(efi_iface_spec_validate(&s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "twice"));
	good_spec(&s);
	s.addrs[0].family = 12345;
	ck_assert_int_eq(efi_iface_spec_validate(&s, err, sizeof(err)), -EINVAL);
	good_spec(&s);
	s.addrs[0].prefixlen = 33;
	ck_assert_int_eq(efi_iface_spec_validate(&s, err, sizeof(err)), -EINVAL);
	/* Unterminated fields are refused, not read past. */
	good_spec(&s);
	memset(s.name, 'x', sizeof(s.name));
	ck_assert_int_eq(efi_iface_spec_validate(&s, err, sizeof(err)), -EINVAL);
}
END_TEST

START_TEST(equal)
{
	struct efi_iface_spec a, b;
	good_spec(&a);
	good_spec(&b);
	ck_assert(efi_iface_spec_equal(&a, &b));
	/* Address order does not matter. */
	b.addrs[0] = a.addrs[1];
	b.addrs[1] = a.addrs[0];
	ck_assert(efi_iface_spec_equal(&a, &b));
	b.addrs[0].prefixlen = 48;
	ck_assert(!efi_iface_spec_equal(&a, &b));
	good_spec(&b);
	b.mtu = 1500;
	ck_assert(!efi_iface_spec_equal(&a, &b));
	good_spec(&b);
	strcpy(b.uplink, "br0");
	ck_assert(!efi_iface_spec_equal(&a, &b));
	good_spec(&b);
	b.naddrs = 1;
	ck_assert(!efi_iface_spec_equal(&a, &b));
}
END_TEST

START_TEST(file_good)
{
	struct efi_iface_spec s;
	char err[256], buf[64];
	const char *t = "# cloud-init wrote this\n"
			"[interface]\n"
			"instance = vm1\n"
			"NAME=efi0\n"
			"Address=10.0.0.5/24\n"
			"address=fd00::5/64\n"
			"Uplink=br0\n"
			"MTU=9000\n"
			"MTU=1500\n"
			"Kind=macvlan\n";
	ck_assert_int_eq(text_parse(t, &s, err, sizeof(err)), 0);
	ck_assert_str_eq(s.instance, "vm1");
	ck_assert_str_eq(s.name, "efi0");
	ck_assert_str_eq(s.uplink, "br0");
	ck_assert_str_eq(s.kind, "macvlan");
	ck_assert_uint_eq(s.mtu, 1500); /* last one wins */
	ck_assert_uint_eq(s.naddrs, 2);
	ck_assert_str_eq(efi_addr_format(&s.addrs[1], buf, sizeof(buf)), "fd00::5/64");

	/* Minimal file: defaults left empty for efid. */
	ck_assert_int_eq(text_parse("[Interface]\nInstance=vm2\nAddress=10.1.0.1/16\nName=\n",
				    &s, err, sizeof(err)),
			 0);
	ck_assert_str_eq(s.name, "");
	ck_assert_str_eq(s.kind, "");
	ck_assert_uint_eq(s.mtu, 0);
}
END_TEST

/* Parses t, expecting -EINVAL and a message containing want. */
static void expect_bad(const char *t, const char *want)
{
	struct efi_iface_spec s;
	char err[512];
	memset(&s, 0x5a, sizeof(s));
	struct efi_iface_spec before = s;
	err[0] = '\0';
	int r = text_parse(t, &s, err, sizeof(err));
	ck_assert_msg(r == -EINVAL, "accepted: %s", t);
	ck_assert_msg(strstr(err, want) != NULL, "message '%s' lacks '%s'", err, want);
	ck_assert_msg(memcmp(&s, &before, sizeof(s)) == 0, "output changed on error");
}

START_TEST(file_bad)
{
	const char *h = "[Interface]\nInstance=vm1\n";
	char t[8192];

	expect_bad("Instance=vm1\n", "outside a section");
	expect_bad("[Iface]\nInstance=vm1\n", "f.conf:2: unknown section [Iface]");
	expect_bad("[Interface]\nAddress=10.0.0.5/24\n", "Instance= is missing");
	expect_bad(h, "no Address=");
	snprintf(t, sizeof(t), "%sColour=blue\nAddress=10.0.0.5/24\n", h);
	expect_bad(t, "f.conf:3: unknown key Colour=");
	expect_bad("[Interface]\nInstance=../x\n", "f.conf:2: Instance='../x' is invalid");
	expect_bad("[Interface]\nInstance=\n", "Instance='' is invalid");
	expect_bad("[Interface]\nInstance=vm 1\n", "is invalid");
	snprintf(t, sizeof(t), "%sName=a/b\n", h);
	expect_bad(t, "f.conf:3: Name='a/b' is invalid");
	snprintf(t, sizeof(t), "%sName=1234567890123456\n", h);
	expect_bad(t, "is invalid");
	snprintf(t, sizeof(t), "%sName=my if\n", h);
	expect_bad(t, "is invalid");
	snprintf(t, sizeof(t), "%sName=..\n", h);
	expect_bad(t, "is invalid");
	snprintf(t, sizeof(t), "%sAddress=10.0.0.5\n", h);
	expect_bad(t, "f.conf:3: Address=: '10.0.0.5' has no prefix length");
	snprintf(t, sizeof(t), "%sAddress=10.0.0.5/40\n", h);
	expect_bad(t, "too large");
	snprintf(t, sizeof(t), "%sAddress=bogus/8\n", h);
	expect_bad(t, "not an IPv4 or IPv6 address");
	snprintf(t, sizeof(t), "%sAddress=\n", h);
	expect_bad(t, "empty address");
	snprintf(t, sizeof(t), "%sAddress=10.0.0.5/24\nAddress=10.0.0.5/16\n", h);
	expect_bad(t, "f.conf:4: Address=10.0.0.5/16 is given twice");
	snprintf(t, sizeof(t), "%sMTU=100\nAddress=10.0.0.5/24\n", h);
	expect_bad(t, "f.conf:3: MTU '100' is invalid");
	snprintf(t, sizeof(t), "%sMTU=65536\n", h);
	expect_bad(t, "MTU '65536' is invalid");
	snprintf(t, sizeof(t), "%sMTU=99999999999999999999999\n", h);
	expect_bad(t, "is invalid");
	snprintf(t, sizeof(t), "%sMTU=-1\n", h);
	expect_bad(t, "is invalid");
	snprintf(t, sizeof(t), "%sMTU=\n", h);
	expect_bad(t, "is invalid");
	snprintf(t, sizeof(t), "%sKind=bond\n", h);
	expect_bad(t, "Kind='bond' is invalid");
	snprintf(t, sizeof(t), "%sKind=VETH\n", h);
	expect_bad(t, "is invalid"); /* values are case-sensitive */
	snprintf(t, sizeof(t), "%sUplink=br/0\n", h);
	expect_bad(t, "not a valid device name");
	snprintf(t, sizeof(t), "%sAddress 10.0.0.5/24\n", h);
	expect_bad(t, "f.conf:3: expected");
	expect_bad("[Interface\nInstance=vm1\n", "f.conf:1: section header");

	/* Seventeen addresses. */
	size_t off = (size_t)snprintf(t, sizeof(t), "%s", h);
	for (int i = 0; i <= EFI_MAX_ADDRS; i++)
		off += (size_t)snprintf(t + off, sizeof(t) - off, "Address=10.0.0.%d/24\n", i + 1);
	expect_bad(t, "f.conf:19: too many Address= lines");
}
END_TEST

START_TEST(file_nul_byte)
{
	struct efi_iface_spec s;
	char err[256];
	const char t[] = "[Interface]\nInstance=vm1\0evil\nAddress=10.0.0.5/24\n";
	ck_assert_int_eq(efi_iface_text_parse("n.conf", t, sizeof(t) - 1, &s, err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "n.conf:2: NUL byte"));
}
END_TEST

START_TEST(file_roundtrip_and_missing)
{
	struct efi_iface_spec s, back;
	char err[512];
	char path[] = "/tmp/test_ifacespec.XXXXXX";
	good_spec(&s);
	strcpy(s.uplink, "br0");
	s.mtu = 9000;
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	FILE *f = fdopen(fd, "w");
	ck_assert_int_eq(efi_iface_spec_write(&s, f), 0);
	fclose(f);
	ck_assert_int_eq(efi_iface_file_parse(path, &back, err, sizeof(err)), 0);
	ck_assert(efi_iface_spec_equal(&s, &back));
	unlink(path);

	ck_assert_int_eq(efi_iface_file_parse(path, &back, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, path));
	ck_assert_int_eq(efi_iface_file_parse("/tmp", &back, err, sizeof(err)), -EISDIR);
}
END_TEST

static Suite *ifacespec_suite(void)
{
	Suite *s = suite_create("ifacespec");
	TCase *tc = tcase_create("spec");
	tcase_add_test(tc, instance_names);
	tcase_add_test(tc, ifnames);
	tcase_add_test(tc, addresses_good);
	tcase_add_test(tc, addresses_bad);
	tcase_add_test(tc, same_ip);
	tcase_add_test(tc, validate);
	tcase_add_test(tc, equal);
	tcase_add_test(tc, file_good);
	tcase_add_test(tc, file_bad);
	tcase_add_test(tc, file_nul_byte);
	tcase_add_test(tc, file_roundtrip_and_missing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(ifacespec_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
