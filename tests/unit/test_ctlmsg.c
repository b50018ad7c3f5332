/* SPDX-License-Identifier: MIT */
/* The control-message codec, fed well-formed and hostile input. */
#include "config.h"

#include <check.h>
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctlmsg.h"

static const struct ctl_policy pol[EFI_A_MAX] = {
	[EFI_A_STATUS] = { .kind = CTL_I32 },
	[EFI_A_INSTANCE] = { .kind = CTL_STR, .minlen = 1, .maxlen = 63 },
	[EFI_A_ADDRESS] = { .kind = CTL_STR, .multi = true, .maxlen = 64 },
	[EFI_A_MTU] = { .kind = CTL_U32 },
	[EFI_A_GID] = { .kind = CTL_NEST, .multi = true },
	[EFI_A_GID_VALUE] = { .kind = CTL_BIN, .minlen = 16, .maxlen = 16 },
};

/* Builds a frame by hand: header + raw attribute bytes. */
static size_t raw_frame(uint8_t *buf, uint16_t type, const void *attrs, size_t len)
{
	uint32_t magic = htole32(EFI_CTL_MAGIC), l = htole32((uint32_t)len), seq = htole32(7);
	uint16_t ver = htole16(EFI_CTL_VERSION), t = htole16(type);
	memcpy(buf, &magic, 4);
	memcpy(buf + 4, &ver, 2);
	memcpy(buf + 6, &t, 2);
	memcpy(buf + 8, &l, 4);
	memcpy(buf + 12, &seq, 4);
	memcpy(buf + 16, attrs, len);
	return 16 + len;
}

START_TEST(roundtrip)
{
	struct ctl_buf b;
	struct ctl_hdr h;
	struct ctl_attr tb[EFI_A_MAX];
	const char *s;
	uint32_t u;

	ctl_buf_init(&b);
	ck_assert_int_eq(ctl_msg_begin(&b, EFI_CTL_ATTACH, 42), 0);
	ctl_put_str(&b, EFI_A_INSTANCE, "vm1");
	ctl_put_str(&b, EFI_A_ADDRESS, "10.0.0.5/24");
	ctl_put_str(&b, EFI_A_ADDRESS, "fd00::5/64");
	ctl_put_u32(&b, EFI_A_MTU, 9000);
	size_t n = ctl_nest_begin(&b, EFI_A_GID);
	uint8_t g[16] = { 0xfe, 0x80 };
	ctl_put(&b, EFI_A_GID_VALUE, g, 16);
	ctl_nest_end(&b, n);
	ck_assert_int_eq(ctl_msg_end(&b), 0);

	ck_assert_int_eq(ctl_hdr_parse(b.data, b.len, EFI_CTL_MAX_REQUEST, &h), 0);
	ck_assert_uint_eq(h.type, EFI_CTL_ATTACH);
	ck_assert_uint_eq(h.seq, 42);
	ck_assert_uint_eq(h.length, b.len - CTL_HDR_SIZE);
	ck_assert_int_eq(ctl_parse(b.data + CTL_HDR_SIZE, h.length, pol, EFI_A_MAX, tb, NULL), 0);
	ck_assert_int_eq(ctl_attr_str(&tb[EFI_A_INSTANCE], &s), 0);
	ck_assert_str_eq(s, "vm1");
	ck_assert_int_eq(ctl_attr_str(&tb[EFI_A_ADDRESS], &s), 0);
	ck_assert_str_eq(s, "10.0.0.5/24"); /* first of the repeated ones */
	ck_assert_int_eq(ctl_attr_u32(&tb[EFI_A_MTU], &u), 0);
	ck_assert_uint_eq(u, 9000);

	/* Repeated attributes are all reachable by iteration. */
	struct ctl_iter it;
	struct ctl_attr a;
	int addrs = 0;
	ctl_iter_init(&it, b.data + CTL_HDR_SIZE, h.length);
	while (ctl_iter_next(&it, &a))
		addrs += a.type == EFI_A_ADDRESS;
	ck_assert_int_eq(it.err, 0);
	ck_assert_int_eq(addrs, 2);

	/* The nest holds a 16-byte GID. */
	struct ctl_iter in;
	ctl_iter_nest(&in, &tb[EFI_A_GID]);
	ck_assert(ctl_iter_next(&in, &a));
	ck_assert_uint_eq(a.type, EFI_A_GID_VALUE);
	ck_assert_uint_eq(a.len, 16);
	ck_assert_int_eq(memcmp(a.data, g, 16), 0);
	ctl_buf_free(&b);
}
END_TEST

START_TEST(header_errors)
{
	uint8_t buf[64];
	struct ctl_hdr h;
	size_t n = raw_frame(buf, EFI_CTL_LIST, "", 0);

	for (size_t k = 0; k < CTL_HDR_SIZE; k++)
		ck_assert_int_eq(ctl_hdr_parse(buf, k, EFI_CTL_MAX_REQUEST, &h), -EAGAIN);
	ck_assert_int_eq(ctl_hdr_parse(buf, n, EFI_CTL_MAX_REQUEST, &h), 0);

	buf[0] ^= 0xff; /* magic */
	ck_assert_int_eq(ctl_hdr_parse(buf, n, EFI_CTL_MAX_REQUEST, &h), -EPROTO);
	buf[0] ^= 0xff;
	buf[4] = 2; /* version */
	ck_assert_int_eq(ctl_hdr_parse(buf, n, EFI_CTL_MAX_REQUEST, &h), -EPROTONOSUPPORT);
	buf[4] = 1;
	uint32_t big = htole32(EFI_CTL_MAX_REQUEST + 1);
	memcpy(buf + 8, &big, 4);
	ck_assert_int_eq(ctl_hdr_parse(buf, n, EFI_CTL_MAX_REQUEST, &h), -EMSGSIZE);
	big = 0xffffffffu;
	memcpy(buf + 8, &big, 4);
	ck_assert_int_eq(ctl_hdr_parse(buf, n, EFI_CTL_MAX_PAYLOAD, &h), -EMSGSIZE);
}
END_TEST

START_TEST(hostile_attributes)
{
	struct ctl_attr tb[EFI_A_MAX];
	uint16_t bad;

	/* Attribute length overruns the stream. */
	uint8_t overrun[] = { EFI_A_INSTANCE, 0, 200, 0, 'v', 'm', '1', 0 };
	ck_assert_int_eq(ctl_parse(overrun, sizeof(overrun), pol, EFI_A_MAX, tb, &bad), -EBADMSG);

	/* A stream that ends inside an attribute header. */
	uint8_t stub[] = { EFI_A_INSTANCE, 0 };
	ck_assert_int_eq(ctl_parse(stub, sizeof(stub), pol, EFI_A_MAX, tb, &bad), -EBADMSG);

	/* String without NUL, with an embedded NUL, empty, too long. */
	uint8_t nonul[] = { EFI_A_INSTANCE, 0, 3, 0, 'v', 'm', '1', 0 };
	ck_assert_int_eq(ctl_parse(nonul, sizeof(nonul), pol, EFI_A_MAX, tb, &bad), -EBADMSG);
	ck_assert_uint_eq(bad, EFI_A_INSTANCE);
	uint8_t embedded[] = { EFI_A_INSTANCE, 0, 4, 0, 'v', 0, '1', 0 };
	ck_assert_int_eq(ctl_parse(embedded, sizeof(embedded), pol, EFI_A_MAX, tb, &bad), -EBADMSG);
	uint8_t empty[] = { EFI_A_INSTANCE, 0, 1, 0, 0, 0, 0, 0 };
	ck_assert_int_eq(ctl_parse(empty, sizeof(empty), pol, EFI_A_MAX, tb, &bad), -EBADMSG);
	uint8_t longstr[4 + 68] = { EFI_A_INSTANCE, 0, 65, 0 };
	memset(longstr + 4, 'a', 64);
	ck_assert_int_eq(ctl_parse(longstr, sizeof(longstr), pol, EFI_A_MAX, tb, &bad), -EBADMSG);

	/* Integer of the wrong size. */
	uint8_t shortint[] = { EFI_A_MTU, 0, 2, 0, 1, 2, 0, 0 };
	ck_assert_int_eq(ctl_parse(shortint, sizeof(shortint), pol, EFI_A_MAX, tb, &bad), -EBADMSG);

	/* A non-repeatable attribute twice. */
	uint8_t twice[] = { EFI_A_MTU, 0, 4, 0, 1, 0, 0, 0, EFI_A_MTU, 0, 4, 0, 2, 0, 0, 0 };
	ck_assert_int_eq(ctl_parse(twice, sizeof(twice), pol, EFI_A_MAX, tb, &bad), -EBADMSG);

	/* A nest whose inside is malformed. */
	uint8_t badnest[] = { EFI_A_GID, 0, 4, 0, EFI_A_GID_VALUE, 0, 16, 0 };
	ck_assert_int_eq(ctl_parse(badnest, sizeof(badnest), pol, EFI_A_MAX, tb, &bad), -EBADMSG);

	/* Unknown attribute numbers are skipped; a type beyond the table too. */
	uint8_t unknown[] = { 0xff, 0xff, 0, 0, EFI_A_MTU, 0, 4, 0, 9, 0, 0, 0 };
	ck_assert_int_eq(ctl_parse(unknown, sizeof(unknown), pol, EFI_A_MAX, tb, &bad), 0);
	ck_assert(ctl_has(tb, EFI_A_MTU));

	/* Zero-length stream, NULL stream. */
	ck_assert_int_eq(ctl_parse(NULL, 0, pol, EFI_A_MAX, tb, &bad), 0);
	ck_assert(!ctl_has(tb, EFI_A_MTU));
}
END_TEST

START_TEST(garbage_never_crashes)
{
	/* Deterministic pseudo-random garbage through every parser entry point. */
	uint32_t x = 12345;
	uint8_t buf[512];
	struct ctl_attr tb[EFI_A_MAX];
	struct ctl_hdr h;
	for (int round = 0; round < 20000; round++) {
		size_t len = (x = x * 1103515245u + 12345u) % sizeof(buf);
		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)((x = x * 1103515245u + 12345u) >> 16);
		(void)ctl_hdr_parse(buf, len, EFI_CTL_MAX_REQUEST, &h);
		(void)ctl_parse(buf, len, pol, EFI_A_MAX, tb, NULL);
	}
}
END_TEST

START_TEST(writer_limits)
{
	struct ctl_buf b;
	static char big[70000];

	ctl_buf_init(&b);
	ctl_msg_begin(&b, EFI_CTL_LIST, 1);
	memset(big, 'x', sizeof(big));
	/* One value may not exceed what a u16 length can say. */
	ck_assert_int_eq(ctl_put(&b, EFI_A_ERROR, big, sizeof(big)), -EMSGSIZE);
	/* The error is sticky. */
	ck_assert_int_eq(ctl_put_u32(&b, EFI_A_MTU, 1), -EMSGSIZE);
	ck_assert_int_eq(ctl_msg_end(&b), -EMSGSIZE);

	/* A message limit is enforced. */
	ctl_msg_begin(&b, EFI_CTL_LIST, 1);
	b.limit = 100;
	ck_assert_int_eq(ctl_put(&b, EFI_A_ERROR, big, 200), -EMSGSIZE);
	ctl_buf_free(&b);
	ctl_buf_free(&b); /* twice is fine */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ctlmsg");
	TCase *tc = tcase_create("codec");
	tcase_add_test(tc, roundtrip);
	tcase_add_test(tc, header_errors);
	tcase_add_test(tc, hostile_attributes);
	tcase_add_test(tc, garbage_never_crashes);
	tcase_add_test(tc, writer_limits);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
