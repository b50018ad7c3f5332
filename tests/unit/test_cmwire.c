/* SPDX-License-Identifier: MIT */
/* The connection manager's efid ⇄ efid datagrams (common/cmwire.c), fed
 * well-formed and hostile input: these arrive from the network. */
#include "config.h"

#include <check.h>
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmwire.h"
#include "ctlmsg.h"

static struct cm_wire_msg full(uint16_t type)
{
	struct cm_wire_msg m = {
		.type = type, .tid = 0x1122334455667788ull, .service = 7471,
		.qpn = 0x1234, .psn = 0xabcdef, .mtu = 5, .timeout_ms = 5000,
		.key = 0xdeadbeef, .reason = EFI_CM_REJ_CONSUMER, .from_active = true,
		.ngids = 3, .private_len = EFI_CM_PRIVATE_MAX,
	};
	efi_gid_parse("10.0.0.1", &m.dest);
	efi_gid_parse("10.0.0.2", &m.sgid);
	for (unsigned i = 0; i < m.ngids; i++)
		efi_gid_parse(i == 0 ? "10.0.0.2" : i == 1 ? "fd00::2" : "fd01::2", &m.gids[i]);
	for (unsigned i = 0; i < m.private_len; i++)
		m.private_data[i] = (uint8_t)(i * 3 + 1);
	return m;
}

START_TEST(roundtrip_every_type)
{
	for (uint16_t t = 1; t < CM_W_TYPE_MAX; t++) {
		struct cm_wire_msg m = full(t), d;
		uint8_t buf[CM_WIRE_MAX];
		int n = cm_wire_encode(&m, buf, sizeof(buf));
		ck_assert_msg(n > 0, "encode %s: %d", cm_wire_type_str(t), n);
		ck_assert_int_eq(cm_wire_decode(buf, (size_t)n, &d), 0);
		ck_assert_uint_eq(d.type, t);
		ck_assert_uint_eq(d.tid, m.tid);
		if (t == CM_W_REQ) {
			ck_assert_uint_eq(d.service, 7471);
			ck_assert_mem_eq(d.dest.raw, m.dest.raw, 16);
			ck_assert_uint_eq(d.timeout_ms, 5000);
		}
		if (t == CM_W_REQ || t == CM_W_REP) {
			ck_assert_mem_eq(d.sgid.raw, m.sgid.raw, 16);
			ck_assert_uint_eq(d.qpn, m.qpn);
			ck_assert_uint_eq(d.psn, m.psn);
			ck_assert_uint_eq(d.mtu, 5);
			ck_assert_uint_eq(d.ngids, 3);
			ck_assert_mem_eq(d.gids[2].raw, m.gids[2].raw, 16);
		}
		if (t == CM_W_REQ || t == CM_W_REP || t == CM_W_REJ) {
			ck_assert_uint_eq(d.private_len, EFI_CM_PRIVATE_MAX);
			ck_assert_mem_eq(d.private_data, m.private_data, EFI_CM_PRIVATE_MAX);
		}
		if (t == CM_W_REP)
			ck_assert_uint_eq(d.key, 0xdeadbeef);
		if (t == CM_W_REJ)
			ck_assert_uint_eq(d.reason, EFI_CM_REJ_CONSUMER);
		if (t == CM_W_DREQ || t == CM_W_DREP || t == CM_W_REJ)
			ck_assert(d.from_active);
		/* fields of other types are not carried */
		if (t != CM_W_REP)
			ck_assert_uint_eq(d.key, 0);
		if (t != CM_W_REQ)
			ck_assert_uint_eq(d.service, 0);
	}
}
END_TEST

START_TEST(encode_refuses_bad_fields)
{
	uint8_t buf[CM_WIRE_MAX];
	struct cm_wire_msg m = full(CM_W_REQ);
	m.type = 0;
	ck_assert_int_eq(cm_wire_encode(&m, buf, sizeof(buf)), -EINVAL);
	m = full(CM_W_REQ), m.qpn = 0;
	ck_assert_int_eq(cm_wire_encode(&m, buf, sizeof(buf)), -EINVAL);
	m = full(CM_W_REQ), m.qpn = 1u << 24;
	ck_assert_int_eq(cm_wire_encode(&m, buf, sizeof(buf)), -EINVAL);
	m = full(CM_W_REQ), m.service = 65536;
	ck_assert_int_eq(cm_wire_encode(&m, buf, sizeof(buf)), -EINVAL);
	m = full(CM_W_REQ), m.mtu = 6;
	ck_assert_int_eq(cm_wire_encode(&m, buf, sizeof(buf)), -EINVAL);
	m = full(CM_W_REQ), m.timeout_ms = 0;
	ck_assert_int_eq(cm_wire_encode(&m, buf, sizeof(buf)), -EINVAL);
	m = full(CM_W_REP), m.key = 0;
	ck_assert_int_eq(cm_wire_encode(&m, buf, sizeof(buf)), -EINVAL);
	m = full(CM_W_REJ), m.reason = 99;
	ck_assert_int_eq(cm_wire_encode(&m, buf, sizeof(buf)), -EINVAL);
	m = full(CM_W_REQ), m.ngids = CM_WIRE_MAX_GIDS + 1;
	ck_assert_int_eq(cm_wire_encode(&m, buf, sizeof(buf)), -EINVAL);
	m = full(CM_W_REQ);
	ck_assert_int_eq(cm_wire_encode(&m, buf, 40), -EMSGSIZE);
}
END_TEST

/* A datagram with a hand-made header and attributes. */
static size_t raw(uint8_t *buf, uint32_t magic, uint16_t version, uint16_t type, const void *attrs,
		  size_t len, int length_delta)
{
	uint32_t mg = htole32(magic), l = htole32((uint32_t)((int)len + length_delta)), seq = 0;
	uint16_t v = htole16(version), t = htole16(type);
	memcpy(buf, &mg, 4);
	memcpy(buf + 4, &v, 2);
	memcpy(buf + 6, &t, 2);
	memcpy(buf + 8, &l, 4);
	memcpy(buf + 12, &seq, 4);
	memcpy(buf + 16, attrs, len);
	return 16 + len;
}

/* Attributes: TID only (enough for ACK), then whatever follows. */
static size_t attr(uint8_t *p, uint16_t type, const void *v, uint16_t len)
{
	uint16_t t = htole16(type), l = htole16(len);
	memcpy(p, &t, 2);
	memcpy(p + 2, &l, 2);
	memcpy(p + 4, v, len);
	size_t n = 4 + len;
	while (n % 4)
		p[n++] = 0;
	return n;
}

START_TEST(decode_rejects_hostile_headers)
{
	uint8_t a[64], buf[CM_WIRE_MAX + 64];
	uint64_t tid = htole64(5);
	size_t al = attr(a, CM_WA_TID, &tid, 8);
	struct cm_wire_msg m;

	size_t n = raw(buf, CM_WIRE_MAGIC, CM_WIRE_VERSION, CM_W_ACK, a, al, 0);
	ck_assert_int_eq(cm_wire_decode(buf, n, &m), 0);
	ck_assert_uint_eq(m.tid, 5);
	/* a control frame is not a CM datagram */
	n = raw(buf, EFI_CTL_MAGIC, CM_WIRE_VERSION, CM_W_ACK, a, al, 0);
	ck_assert_int_eq(cm_wire_decode(buf, n, &m), -EPROTO);
	n = raw(buf, CM_WIRE_MAGIC, 2, CM_W_ACK, a, al, 0);
	ck_assert_int_eq(cm_wire_decode(buf, n, &m), -EPROTONOSUPPORT);
	n = raw(buf, CM_WIRE_MAGIC, CM_WIRE_VERSION, 0, a, al, 0);
	ck_assert_int_eq(cm_wire_decode(buf, n, &m), -EBADMSG);
	n = raw(buf, CM_WIRE_MAGIC, CM_WIRE_VERSION, CM_W_TYPE_MAX, a, al, 0);
	ck_assert_int_eq(cm_wire_decode(buf, n, &m), -EBADMSG);
	/* the header's length must be the datagram's */
	n = raw(buf, CM_WIRE_MAGIC, CM_WIRE_VERSION, CM_W_ACK, a, al, 4);
	ck_assert_int_eq(cm_wire_decode(buf, n, &m), -EBADMSG);
	n = raw(buf, CM_WIRE_MAGIC, CM_WIRE_VERSION, CM_W_ACK, a, al, -4);
	ck_assert_int_eq(cm_wire_decode(buf, n, &m), -EBADMSG);
	/* too short, too long */
	ck_assert_int_eq(cm_wire_decode(buf, 15, &m), -EPROTO);
	ck_assert_int_eq(cm_wire_decode(buf, 0, &m), -EPROTO);
	ck_assert_int_eq(cm_wire_decode(buf, CM_WIRE_MAX + 1, &m), -EPROTO);
	/* no TID */
	n = raw(buf, CM_WIRE_MAGIC, CM_WIRE_VERSION, CM_W_ACK, a, 0, 0);
	ck_assert_int_eq(cm_wire_decode(buf, n, &m), -EBADMSG);
}
END_TEST

START_TEST(decode_rejects_hostile_fields)
{
	uint8_t a[CM_WIRE_MAX], buf[CM_WIRE_MAX + 64];
	struct cm_wire_msg m;
	uint64_t tid = htole64(5);
	uint32_t v;
	size_t al, n;

	/* a DREQ with from_active 2 */
	al = attr(a, CM_WA_TID, &tid, 8);
	v = htole32(2);
	al += attr(a + al, CM_WA_FROM_ACTIVE, &v, 4);
	n = raw(buf, CM_WIRE_MAGIC, CM_WIRE_VERSION, CM_W_DREQ, a, al, 0);
	ck_assert_int_eq(cm_wire_decode(buf, n, &m), -EBADMSG);
	/* a REJ without a reason, then with reason 0 */
	al = attr(a, CM_WA_TID, &tid, 8);
	n = raw(buf, CM_WIRE_MAGIC, CM_WIRE_VERSION, CM_W_REJ, a, al, 0);
	ck_assert_int_eq(cm_wire_decode(buf, n, &m), -EBADMSG);
	v = 0;
	al += attr(a + al, CM_WA_REASON, &v, 4);
	n = raw(buf, CM_WIRE_MAGIC, CM_WIRE_VERSION, CM_W_REJ, a, al, 0);
	ck_assert_int_eq(cm_wire_decode(buf, n, &m), -EBADMSG);
	/* a TID of the wrong size */
	al = attr(a, CM_WA_TID, &tid, 4);
	n = raw(buf, CM_WIRE_MAGIC, CM_WIRE_VERSION, CM_W_ACK, a, al, 0);
	ck_assert_int_eq(cm_wire_decode(buf, n, &m), -EBADMSG);
	/* two TIDs */
	al = attr(a, CM_WA_TID, &tid, 8);
	al += attr(a + al, CM_WA_TID, &tid, 8);
	n = raw(buf, CM_WIRE_MAGIC, CM_WIRE_VERSION, CM_W_ACK, a, al, 0);
	ck_assert_int_eq(cm_wire_decode(buf, n, &m), -EBADMSG);
	/* private data one byte too long */
	uint8_t big[EFI_CM_PRIVATE_MAX + 1] = { 0 };
	uint32_t reason = htole32(EFI_CM_REJ_CONSUMER);
	al = attr(a, CM_WA_TID, &tid, 8);
	al += attr(a + al, CM_WA_REASON, &reason, 4);
	al += attr(a + al, CM_WA_PRIVATE, big, sizeof(big));
	n = raw(buf, CM_WIRE_MAGIC, CM_WIRE_VERSION, CM_W_REJ, a, al, 0);
	ck_assert_int_eq(cm_wire_decode(buf, n, &m), -EBADMSG);
	/* an attribute running past the end */
	al = attr(a, CM_WA_TID, &tid, 8);
	uint16_t t = htole16(CM_WA_PRIVATE), l = htole16(200);
	memcpy(a + al, &t, 2);
	memcpy(a + al + 2, &l, 2);
	al += 8;
	n = raw(buf, CM_WIRE_MAGIC, CM_WIRE_VERSION, CM_W_ACK, a, al, 0);
	ck_assert_int_eq(cm_wire_decode(buf, n, &m), -EBADMSG);
	/* more GIDs than a path set holds */
	struct cm_wire_msg r = full(CM_W_REP);
	r.ngids = 0;
	uint8_t enc[CM_WIRE_MAX];
	int e = cm_wire_encode(&r, enc, sizeof(enc));
	ck_assert_int_gt(e, 0);
	memcpy(a, enc + 16, (size_t)e - 16);
	al = (size_t)e - 16;
	for (unsigned i = 0; i <= CM_WIRE_MAX_GIDS; i++)
		al += attr(a + al, CM_WA_GID, r.sgid.raw, 16);
	n = raw(buf, CM_WIRE_MAGIC, CM_WIRE_VERSION, CM_W_REP, a, al, 0);
	ck_assert_int_eq(cm_wire_decode(buf, n, &m), -EBADMSG);
}
END_TEST

/* The link MTU (issue 14: segments for the smaller link) is optional in REQ
 * and REP: carried when set, absent when 0 (what an older efid sends and
 * reads), refused out of 576..65535, and not taken from other types. */
START_TEST(link_mtu_optional)
{
	uint8_t buf[CM_WIRE_MAX], a[CM_WIRE_MAX], raw_buf[CM_WIRE_MAX + 64];
	struct cm_wire_msg m, d;
	uint32_t v;
	int n, n0;

	for (uint16_t t = CM_W_REQ; t <= CM_W_REP; t += CM_W_REP - CM_W_REQ) {
		m = full(t);
		m.link_mtu = 9000;
		n = cm_wire_encode(&m, buf, sizeof(buf));
		ck_assert_int_gt(n, 0);
		ck_assert_int_eq(cm_wire_decode(buf, (size_t)n, &d), 0);
		ck_assert_uint_eq(d.link_mtu, 9000);
		/* 0 is not carried: the message an older efid sends */
		m.link_mtu = 0;
		n0 = cm_wire_encode(&m, buf, sizeof(buf));
		ck_assert_int_eq(n0, n - 8);
		ck_assert_int_eq(cm_wire_decode(buf, (size_t)n0, &d), 0);
		ck_assert_uint_eq(d.link_mtu, 0);
		m.link_mtu = 575;
		ck_assert_int_eq(cm_wire_encode(&m, buf, sizeof(buf)), -EINVAL);
		m.link_mtu = 65536;
		ck_assert_int_eq(cm_wire_encode(&m, buf, sizeof(buf)), -EINVAL);
		m.link_mtu = 576;
		ck_assert_int_gt(cm_wire_encode(&m, buf, sizeof(buf)), 0);
		m.link_mtu = 65535;
		ck_assert_int_gt(cm_wire_encode(&m, buf, sizeof(buf)), 0);
	}
	/* an RTU does not carry it */
	m = full(CM_W_RTU);
	m.link_mtu = 9000;
	n = cm_wire_encode(&m, buf, sizeof(buf));
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(cm_wire_decode(buf, (size_t)n, &d), 0);
	ck_assert_uint_eq(d.link_mtu, 0);
	/* hostile: a REP whose link MTU is out of range, or of the wrong size */
	m = full(CM_W_REP);
	n = cm_wire_encode(&m, buf, sizeof(buf));
	ck_assert_int_gt(n, 0);
	memcpy(a, buf + 16, (size_t)n - 16);
	v = htole32(100);
	size_t al = (size_t)n - 16 + attr(a + n - 16, CM_WA_LINK_MTU, &v, 4);
	size_t rn = raw(raw_buf, CM_WIRE_MAGIC, CM_WIRE_VERSION, CM_W_REP, a, al, 0);
	ck_assert_int_eq(cm_wire_decode(raw_buf, rn, &d), -EBADMSG);
	v = htole32(1500);
	al = (size_t)n - 16 + attr(a + n - 16, CM_WA_LINK_MTU, &v, 2);
	rn = raw(raw_buf, CM_WIRE_MAGIC, CM_WIRE_VERSION, CM_W_REP, a, al, 0);
	ck_assert_int_eq(cm_wire_decode(raw_buf, rn, &d), -EBADMSG);
	al = (size_t)n - 16 + attr(a + n - 16, CM_WA_LINK_MTU, &v, 4);
	rn = raw(raw_buf, CM_WIRE_MAGIC, CM_WIRE_VERSION, CM_W_REP, a, al, 0);
	ck_assert_int_eq(cm_wire_decode(raw_buf, rn, &d), 0);
	ck_assert_uint_eq(d.link_mtu, 1500);
}
END_TEST

/* Every prefix of a valid REQ is refused, and every single-byte change is
 * either refused or decodes to fields within their ranges. */
START_TEST(truncations_and_flips)
{
	struct cm_wire_msg m = full(CM_W_REQ), d;
	uint8_t buf[CM_WIRE_MAX];
	int n = cm_wire_encode(&m, buf, sizeof(buf));
	ck_assert_int_gt(n, 0);
	for (int k = 0; k < n; k++)
		ck_assert_int_ne(cm_wire_decode(buf, (size_t)k, &d), 0);
	srand(7);
	for (int i = 0; i < 20000; i++) {
		uint8_t c[CM_WIRE_MAX];
		memcpy(c, buf, (size_t)n);
		c[rand() % n] ^= (uint8_t)(1 + rand() % 255);
		if (cm_wire_decode(c, (size_t)n, &d) == 0 && d.type == CM_W_REQ) {
			ck_assert(d.qpn != 0 && d.qpn <= 0xffffff);
			ck_assert(d.service != 0 && d.service <= 65535);
			ck_assert(d.mtu >= 1 && d.mtu <= 5);
			ck_assert(d.ngids <= CM_WIRE_MAX_GIDS);
			ck_assert(d.private_len <= EFI_CM_PRIVATE_MAX);
		}
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cmwire");
	TCase *tc = tcase_create("codec");
	tcase_add_test(tc, roundtrip_every_type);
	tcase_add_test(tc, encode_refuses_bad_fields);
	tcase_add_test(tc, decode_rejects_hostile_headers);
	tcase_add_test(tc, decode_rejects_hostile_fields);
	tcase_add_test(tc, truncations_and_flips);
	tcase_add_test(tc, link_mtu_optional);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
