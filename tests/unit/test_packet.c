/* SPDX-License-Identifier: MIT */
/*
 * The wire format (libefi/packet.c against docs/wire-format.md): round trips
 * of every opcode, the exact bytes of known packets, hostile input (every
 * truncation, wrong version, reserved bits, oversize lengths, unknown
 * opcodes, random corruption) and 24-bit PSN arithmetic across wrap-around.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libefi/packet.h"

#define BUF_LEN 4096

/* A packet of the given opcode with every field its headers carry set to
 * something recognisable, and a payload length that suits the opcode. */
static void sample(uint8_t opcode, struct efi_pkt *p, size_t *payload_len)
{
	memset(p, 0, sizeof(*p));
	p->opcode = opcode;
	p->dest_qpn = 0x123456;
	p->psn = 0xfffffe;
	p->src_qpn = 0x00abcd;
	p->tx_ts = 0x0102030405060708ull;
	p->path = 0xa7;
	p->conn_key = 0x9abcdef1;
	p->qkey = 0x1ee7a330;
	p->reth.va = 0x7f0011223344ull;
	p->reth.rkey = 0xdeadbeef;
	p->atomic.va = 0x7f0000001000ull;
	p->atomic.rkey = 0xcafef00d;
	p->atomic.swap_add = 0x1111222233334444ull;
	p->atomic.compare = 0x5555666677778888ull;
	p->imm_be = 0x04030201;
	p->aeth.syndrome = EFI_AETH_ACK | EFI_AETH_CREDITS_NONE;
	p->aeth.msn = 0x00fedc;
	p->ts_echo = 0x8877665544332211ull;
	p->atomic_orig = 0x0123456789abcdefull;
	switch (opcode) {
	case EFI_OP_READ_REQUEST:
	case EFI_OP_ACK:
	case EFI_OP_ATOMIC_ACK:
	case EFI_OP_CMP_SWP:
	case EFI_OP_FETCH_ADD:
		*payload_len = 0;
		break;
	default:
		*payload_len = 100;
	}
	if (opcode == EFI_OP_WRITE_ONLY || opcode == EFI_OP_WRITE_ONLY_IMM)
		p->reth.dma_len = (uint32_t)*payload_len;
	else if (opcode == EFI_OP_WRITE_FIRST)
		p->reth.dma_len = 1 << 20;
	else if (opcode == EFI_OP_READ_REQUEST)
		p->reth.dma_len = 65536;
	if (opcode == EFI_OP_SEND_ONLY || opcode == EFI_OP_WRITE_ONLY_IMM)
		p->flags = EFI_PKT_F_SOLICITED | EFI_PKT_F_ACKREQ;
	if (opcode == EFI_OP_ACK) {
		p->hdrs = EFI_HDR_SACK;
		p->sack.base_psn = 0xfffff0;
		p->sack.nbits = 20;
		p->sack.bitmap[0] = 0xa5;
		p->sack.bitmap[2] = 0x0f;
	}
}

/* Builds sample(opcode) into buf with its payload; returns the total length. */
static size_t build_sample(uint8_t opcode, uint8_t *buf, struct efi_pkt *p)
{
	size_t payload_len, hdr;
	sample(opcode, p, &payload_len);
	hdr = efi_pkt_build_hdr(buf, BUF_LEN, p);
	ck_assert_msg(hdr != 0, "build %s", efi_pkt_opcode_name(opcode));
	ck_assert_uint_eq(hdr, efi_pkt_hdr_len(opcode, buf[2]));
	for (size_t i = 0; i < payload_len; i++)
		buf[hdr + i] = (uint8_t)(i * 7 + 1);
	return hdr + payload_len;
}

START_TEST(round_trip_every_opcode)
{
	for (uint8_t op = 0; op < EFI_OP_COUNT; op++) {
		uint8_t buf[BUF_LEN];
		struct efi_pkt in, out;
		size_t len = build_sample(op, buf, &in);
		const char *name = efi_pkt_opcode_name(op);

		ck_assert_msg(efi_pkt_parse(buf, len, &out) == 0, "parse %s", name);
		ck_assert_uint_eq(out.version, EFI_WIRE_VERSION);
		ck_assert_uint_eq(out.opcode, op);
		ck_assert_uint_eq(out.dest_qpn, in.dest_qpn);
		ck_assert_uint_eq(out.psn, in.psn);
		ck_assert_uint_eq(out.src_qpn, in.src_qpn);
		ck_assert_uint_eq(out.tx_ts, in.tx_ts);
		ck_assert_uint_eq(out.path, in.path);
		ck_assert_uint_eq(out.conn_key, in.conn_key);
		ck_assert_uint_eq(out.flags & (EFI_PKT_F_SOLICITED | EFI_PKT_F_ACKREQ),
				  in.flags & (EFI_PKT_F_SOLICITED | EFI_PKT_F_ACKREQ));
		if (out.hdrs & EFI_HDR_RETH) {
			ck_assert_uint_eq(out.reth.va, in.reth.va);
			ck_assert_uint_eq(out.reth.rkey, in.reth.rkey);
			ck_assert_uint_eq(out.reth.dma_len, in.reth.dma_len);
		}
		if (out.hdrs & EFI_HDR_ATOMIC_ETH) {
			ck_assert_uint_eq(out.atomic.va, in.atomic.va);
			ck_assert_uint_eq(out.atomic.rkey, in.atomic.rkey);
			ck_assert_uint_eq(out.atomic.swap_add, in.atomic.swap_add);
			ck_assert_uint_eq(out.atomic.compare, in.atomic.compare);
		}
		if (out.hdrs & EFI_HDR_IMMDT) {
			ck_assert_uint_eq(out.imm_be, in.imm_be);
			ck_assert(out.flags & EFI_PKT_F_IMM);
		}
		if (out.hdrs & EFI_HDR_AETH) {
			ck_assert_uint_eq(out.aeth.syndrome, in.aeth.syndrome);
			ck_assert_uint_eq(out.aeth.msn, in.aeth.msn);
			ck_assert_uint_eq(out.ts_echo, in.ts_echo);
		}
		if (op == EFI_OP_ACK) {
			ck_assert(out.hdrs & EFI_HDR_SACK);
			ck_assert_uint_eq(out.sack.base_psn, in.sack.base_psn);
			ck_assert_uint_eq(out.sack.nbits, in.sack.nbits);
			ck_assert_int_eq(memcmp(out.sack.bitmap, in.sack.bitmap, 32), 0);
		}
		if (out.hdrs & EFI_HDR_ATOMIC_ACK_ETH)
			ck_assert_uint_eq(out.atomic_orig, in.atomic_orig);
		ck_assert_ptr_eq(out.payload, buf + out.hdr_len);
		ck_assert_uint_eq(out.hdr_len + out.payload_len, len);
		for (size_t i = 0; i < out.payload_len; i++)
			ck_assert_uint_eq(out.payload[i], (uint8_t)(i * 7 + 1));
		ck_assert_int_eq(efi_pkt_is_request(op), !(out.hdrs & EFI_HDR_AETH) &&
				 op != EFI_OP_READ_RESP_MIDDLE && !efi_pkt_is_datagram(op));
		if (efi_pkt_is_datagram(op))
			ck_assert_uint_eq(out.qkey, in.qkey);
	}
}
END_TEST

/* A request carrying a piggybacked ACK (PACK): every request opcode round-
 * trips with it, the PACK sits right after the base header byte for byte,
 * the builder refuses it on a response or with a NAK, and the parser
 * rejects a NAK syndrome in it. */
START_TEST(piggybacked_ack)
{
	for (uint8_t op = 0; op < EFI_OP_COUNT; op++) {
		uint8_t buf[BUF_LEN];
		struct efi_pkt in, out;
		size_t payload_len, hdr;

		sample(op, &in, &payload_len);
		in.hdrs |= EFI_HDR_PACK;
		in.pack.syndrome = EFI_AETH_ACK | EFI_AETH_CREDITS_NONE;
		in.pack.msn = 0xabcdef;
		in.pack.path = 0x5c;
		in.pack.psn = 0x00fffe;
		in.pack.ts_echo = 0x1122334455667788ull;
		hdr = efi_pkt_build_hdr(buf, BUF_LEN, &in);
		if (!efi_pkt_is_request(op)) {
			ck_assert_msg(hdr == 0, "PACK built on %s", efi_pkt_opcode_name(op));
			continue;
		}
		ck_assert_msg(hdr != 0, "build %s with PACK", efi_pkt_opcode_name(op));
		ck_assert(buf[2] & EFI_PKT_F_ACKED);
		ck_assert_uint_eq(hdr, efi_pkt_hdr_len(op, buf[2]));
		ck_assert_uint_eq(hdr, efi_pkt_hdr_len(op, buf[2] & ~EFI_PKT_F_ACKED) + EFI_PACK_LEN);
		{
			static const uint8_t want[EFI_PACK_LEN] = { 0x1f, 0xab, 0xcd, 0xef, 0x5c, 0x00, 0xff, 0xfe,
								    0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88 };
			ck_assert_mem_eq(buf + EFI_BASE_HDR_LEN, want, EFI_PACK_LEN);
		}
		for (size_t i = 0; i < payload_len; i++)
			buf[hdr + i] = (uint8_t)(i * 3);
		ck_assert_int_eq(efi_pkt_parse(buf, hdr + payload_len, &out), 0);
		ck_assert(out.hdrs & EFI_HDR_PACK);
		ck_assert_uint_eq(out.pack.syndrome, in.pack.syndrome);
		ck_assert_uint_eq(out.pack.msn, in.pack.msn);
		ck_assert_uint_eq(out.pack.path, in.pack.path);
		ck_assert_uint_eq(out.pack.psn, in.pack.psn);
		ck_assert_uint_eq(out.pack.ts_echo, in.pack.ts_echo);
		ck_assert_uint_eq(out.psn, in.psn);
		ck_assert_uint_eq(out.payload_len, payload_len);
		if (out.hdrs & EFI_HDR_RETH)
			ck_assert_uint_eq(out.reth.rkey, in.reth.rkey);
		/* a NAK does not ride on a request */
		buf[EFI_BASE_HDR_LEN] = EFI_AETH_NAK | EFI_NAK_REM_ACCESS;
		ck_assert_int_eq(efi_pkt_parse(buf, hdr + payload_len, &out), -EBADMSG);
		in.pack.syndrome = EFI_AETH_RNR_NAK;
		ck_assert_uint_eq(efi_pkt_build_hdr(buf, BUF_LEN, &in), 0);
		/* truncated inside the PACK */
		ck_assert_int_eq(efi_pkt_parse(buf, EFI_BASE_HDR_LEN + 8, &out), -EBADMSG);
	}
}
END_TEST

/* The byte layout of docs/wire-format.md, pinned: a WRITE_ONLY_IMM and an ACK
 * carrying an RNR NAK, byte for byte. */
START_TEST(exact_bytes)
{
	static const uint8_t write_only_imm[] = {
		0x02, 0x0b, 0x1f, 0x03,			/* version, opcode, SE|ACKREQ|FIRST|LAST|IMM, path */
		0x00, 0x12, 0x34, 0x56,			/* dest QPN */
		0x00, 0xab, 0xcd, 0xef,			/* PSN */
		0x00, 0x00, 0x10, 0x01,			/* source QPN */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a,	/* tx timestamp */
		0xfe, 0xed, 0xfa, 0xce,			/* connection key */
		0x00, 0x00, 0x7f, 0x00, 0x00, 0x00, 0x10, 0x00,	/* RETH va */
		0x11, 0x22, 0x33, 0x44,			/* RETH rkey */
		0x00, 0x00, 0x00, 0x03,			/* RETH DMA length */
		0xca, 0xfe, 0xba, 0xbe,			/* ImmDt */
		'a', 'b', 'c',
	};
	static const uint8_t rnr_nak[] = {
		0x02, 0x11, 0x0c, 0x03,			/* the path echoed */
		0x00, 0x00, 0x10, 0x01,
		0x00, 0xab, 0xcd, 0xef,
		0x00, 0x12, 0x34, 0x56,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2b,
		0x00, 0x00, 0x00, 0x00,			/* no connection key */
		0x2e, 0x00, 0x00, 0x07,			/* AETH: RNR NAK timer 14, MSN 7 */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a,	/* TSE */
	};
	struct efi_pkt p = {
		.opcode = EFI_OP_WRITE_ONLY_IMM,
		.flags = EFI_PKT_F_SOLICITED | EFI_PKT_F_ACKREQ,
		.dest_qpn = 0x123456, .psn = 0xabcdef, .src_qpn = 0x1001, .tx_ts = 42,
		.path = 3, .conn_key = 0xfeedface,
		.reth = { .va = 0x7f0000001000ull, .rkey = 0x11223344, .dma_len = 3 },
	};
	uint8_t buf[128];
	size_t n;

	memcpy(&p.imm_be, "\xca\xfe\xba\xbe", 4);
	n = efi_pkt_build_hdr(buf, sizeof(buf), &p);
	ck_assert_uint_eq(n, 48);
	memcpy(buf + n, "abc", 3);
	ck_assert_int_eq(memcmp(buf, write_only_imm, sizeof(write_only_imm)), 0);
	ck_assert_int_eq(efi_pkt_parse(write_only_imm, sizeof(write_only_imm), &p), 0);
	ck_assert_uint_eq(p.payload_len, 3);

	memset(&p, 0, sizeof(p));
	p.opcode = EFI_OP_ACK;
	p.dest_qpn = 0x1001;
	p.psn = 0xabcdef;
	p.src_qpn = 0x123456;
	p.tx_ts = 43;
	p.path = 3;
	p.aeth.syndrome = EFI_AETH_RNR_NAK | 14;
	p.aeth.msn = 7;
	p.ts_echo = 42;
	n = efi_pkt_build_hdr(buf, sizeof(buf), &p);
	ck_assert_uint_eq(n, sizeof(rnr_nak));
	ck_assert_int_eq(memcmp(buf, rnr_nak, sizeof(rnr_nak)), 0);
}
END_TEST

START_TEST(every_truncation)
{
	for (uint8_t op = 0; op < EFI_OP_COUNT; op++) {
		uint8_t full[BUF_LEN];
		struct efi_pkt in, out;
		size_t len = build_sample(op, full, &in);
		size_t hdr = efi_pkt_hdr_len(op, full[2]);

		for (size_t cut = 0; cut < len; cut++) {
			/* A copy of exactly cut bytes, so that a read past the
			 * end is caught by ASan/valgrind, not just by the result. */
			uint8_t *t = malloc(cut ? cut : 1);
			int rc;
			ck_assert_ptr_nonnull(t);
			memcpy(t, full, cut);
			rc = efi_pkt_parse(t, cut, &out);
			if (cut < hdr) {
				ck_assert_msg(rc == -EBADMSG, "%s cut at %zu: %d",
					      efi_pkt_opcode_name(op), cut, rc);
			} else if (op == EFI_OP_WRITE_ONLY || op == EFI_OP_WRITE_ONLY_IMM) {
				/* The RETH says how long it must be. */
				ck_assert_int_eq(rc, -EBADMSG);
			} else if (cut == hdr && op != EFI_OP_SEND_ONLY && op != EFI_OP_SEND_ONLY_IMM &&
				   op != EFI_OP_READ_RESP_ONLY && !efi_pkt_is_datagram(op)) {
				/* A segment of a multi-packet message is never empty. */
				ck_assert_msg(rc == -EBADMSG, "%s empty", efi_pkt_opcode_name(op));
			} else {
				/* A shorter payload is still a payload. */
				ck_assert_int_eq(rc, 0);
				ck_assert_uint_eq(out.payload_len, cut - hdr);
			}
			free(t);
		}
	}
}
END_TEST

START_TEST(wrong_version)
{
	/* 1: the go-back-N format of before, 28 bytes shorter a header and
	 * no connection key: refused, never misread. */
	static const uint8_t versions[] = { 0, 1, 3, 0x10, 0xff };
	for (size_t i = 0; i < sizeof(versions); i++) {
		uint8_t buf[BUF_LEN];
		struct efi_pkt p;
		size_t len = build_sample(EFI_OP_SEND_ONLY, buf, &p);
		buf[0] = versions[i];
		ck_assert_int_eq(efi_pkt_parse(buf, len, &p), -EPROTONOSUPPORT);
		/* Even a fragment shows its version. */
		ck_assert_int_eq(efi_pkt_parse(buf, 1, &p), -EPROTONOSUPPORT);
	}
}
END_TEST

/* Changes one byte of a valid packet of opcode op and expects -EBADMSG. */
static void expect_bad(uint8_t op, size_t offset, uint8_t value, const char *what)
{
	uint8_t buf[BUF_LEN];
	struct efi_pkt p;
	size_t len = build_sample(op, buf, &p);
	ck_assert(offset < len);
	buf[offset] = value;
	ck_assert_msg(efi_pkt_parse(buf, len, &p) == -EBADMSG, "%s (%s)", what,
		      efi_pkt_opcode_name(op));
}

START_TEST(reserved_bits)
{
	for (uint8_t op = 0; op < EFI_OP_COUNT; op++) {
		expect_bad(op, 4, 0x01, "dest QPN high byte");
		expect_bad(op, 8, 0x80, "PSN high byte");
		expect_bad(op, 12, 0x01, "source QPN high byte");
		for (unsigned bit = 6; bit < 8; bit++) {
			uint8_t buf[BUF_LEN];
			struct efi_pkt p;
			size_t len = build_sample(op, buf, &p);
			/* bit 6 (ACKED) is a request's: it moves the rest
			 * of the packet behind a PACK header (test
			 * piggybacked_ack), so only the others must fail */
			if (bit == 6 && efi_pkt_is_request(op))
				continue;
			buf[2] |= (uint8_t)(1u << bit);
			ck_assert_int_eq(efi_pkt_parse(buf, len, &p), -EBADMSG);
		}
	}
}
END_TEST

/* Flags that contradict the opcode or do not belong to it. */
START_TEST(inconsistent_flags)
{
	for (uint8_t op = 0; op < EFI_OP_COUNT; op++) {
		static const uint8_t implied[] = { EFI_PKT_F_FIRST, EFI_PKT_F_LAST, EFI_PKT_F_IMM };
		for (size_t i = 0; i < sizeof(implied); i++) {
			uint8_t buf[BUF_LEN];
			struct efi_pkt p;
			size_t len = build_sample(op, buf, &p);
			buf[2] ^= implied[i];
			ck_assert_int_eq(efi_pkt_parse(buf, len, &p), -EBADMSG);
		}
	}
	/* SOLICITED only on the last packet of a Send or a Write with immediate. */
	{
		uint8_t buf[BUF_LEN];
		struct efi_pkt p;
		size_t len = build_sample(EFI_OP_WRITE_FIRST, buf, &p);
		buf[2] |= EFI_PKT_F_SOLICITED;
		ck_assert_int_eq(efi_pkt_parse(buf, len, &p), -EBADMSG);
		len = build_sample(EFI_OP_SEND_LAST, buf, &p);
		buf[2] |= EFI_PKT_F_SOLICITED;
		ck_assert_int_eq(efi_pkt_parse(buf, len, &p), 0);
	}
	/* ACKREQ never on a response; SACK only on an ACK. */
	expect_bad(EFI_OP_READ_RESP_ONLY, 2, EFI_PKT_F_FIRST | EFI_PKT_F_LAST | EFI_PKT_F_ACKREQ, "ackreq");
	expect_bad(EFI_OP_ATOMIC_ACK, 2, EFI_PKT_F_FIRST | EFI_PKT_F_LAST | EFI_PKT_F_SACK, "sack");
	expect_bad(EFI_OP_SEND_ONLY, 2, EFI_PKT_F_FIRST | EFI_PKT_F_LAST | EFI_PKT_F_SACK, "sack");
}
END_TEST

START_TEST(unknown_opcodes)
{
	for (unsigned op = EFI_OP_COUNT; op <= 0xff; op++) {
		uint8_t buf[BUF_LEN] = { 0 };
		struct efi_pkt p;
		buf[0] = EFI_WIRE_VERSION;
		buf[1] = (uint8_t)op;
		buf[2] = EFI_PKT_F_FIRST | EFI_PKT_F_LAST;
		ck_assert_int_eq(efi_pkt_parse(buf, 200, &p), -EBADMSG);
		ck_assert_uint_eq(efi_pkt_hdr_len((uint8_t)op, 0), 0);
		ck_assert_str_eq(efi_pkt_opcode_name((uint8_t)op), "?");
		memset(&p, 0, sizeof(p));
		p.opcode = (uint8_t)op;
		ck_assert_uint_eq(efi_pkt_build_hdr(buf, sizeof(buf), &p), 0);
	}
}
END_TEST

START_TEST(oversize_lengths)
{
	uint8_t *big = calloc(1, EFI_PKT_MAX_LEN + 1);
	uint8_t buf[BUF_LEN];
	struct efi_pkt p;
	size_t len, hdr;

	/* A datagram longer than UDP allows. */
	ck_assert_ptr_nonnull(big);
	len = build_sample(EFI_OP_SEND_ONLY, big, &p);
	ck_assert_int_eq(efi_pkt_parse(big, EFI_PKT_MAX_LEN, &p), 0);
	ck_assert_int_eq(efi_pkt_parse(big, EFI_PKT_MAX_LEN + 1, &p), -EBADMSG);
	ck_assert_int_eq(efi_pkt_parse(big, SIZE_MAX, &p), -EBADMSG);
	free(big);

	/* A DMA length past the largest message. */
	len = build_sample(EFI_OP_READ_REQUEST, buf, &p);
	memcpy(buf + EFI_BASE_HDR_LEN + 12, "\x80\x00\x00\x00", 4);
	ck_assert_int_eq(efi_pkt_parse(buf, len, &p), 0);
	ck_assert_uint_eq(p.reth.dma_len, EFI_MAX_MSG_SIZE);
	memcpy(buf + EFI_BASE_HDR_LEN + 12, "\x80\x00\x00\x01", 4);
	ck_assert_int_eq(efi_pkt_parse(buf, len, &p), -EBADMSG);
	memcpy(buf + EFI_BASE_HDR_LEN + 12, "\xff\xff\xff\xff", 4);
	ck_assert_int_eq(efi_pkt_parse(buf, len, &p), -EBADMSG);

	/* A Write that fits one packet carries exactly its DMA length; a first
	 * segment strictly less. */
	len = build_sample(EFI_OP_WRITE_ONLY, buf, &p);
	ck_assert_int_eq(efi_pkt_parse(buf, len - 1, &p), -EBADMSG);
	ck_assert_int_eq(efi_pkt_parse(buf, len + 1, &p), -EBADMSG);
	len = build_sample(EFI_OP_WRITE_FIRST, buf, &p);
	hdr = efi_pkt_hdr_len(EFI_OP_WRITE_FIRST, buf[2]);
	memcpy(buf + EFI_BASE_HDR_LEN + 12, "\x00\x00\x00\x64", 4);	/* 100 = payload */
	ck_assert_int_eq(efi_pkt_parse(buf, hdr + 100, &p), -EBADMSG);
	ck_assert_int_eq(efi_pkt_parse(buf, hdr + 99, &p), 0);

	/* Opcodes without payload refuse one. */
	static const uint8_t no_payload[] = { EFI_OP_READ_REQUEST, EFI_OP_ACK, EFI_OP_ATOMIC_ACK,
					      EFI_OP_CMP_SWP, EFI_OP_FETCH_ADD };
	for (size_t i = 0; i < sizeof(no_payload); i++) {
		len = build_sample(no_payload[i], buf, &p);
		ck_assert_int_eq(efi_pkt_parse(buf, len, &p), 0);
		ck_assert_int_eq(efi_pkt_parse(buf, len + 1, &p), -EBADMSG);
	}
}
END_TEST

START_TEST(sack_block)
{
	uint8_t buf[BUF_LEN];
	struct efi_pkt p;
	size_t len = build_sample(EFI_OP_ACK, buf, &p);
	size_t sack = EFI_BASE_HDR_LEN + EFI_AETH_LEN + EFI_TSE_LEN;

	ck_assert_uint_eq(len, sack + EFI_SACK_LEN);
	expect_bad(EFI_OP_ACK, sack, 0x01, "SACK base high byte");
	expect_bad(EFI_OP_ACK, sack + 4, 0x01, "SACK nbits 276");
	expect_bad(EFI_OP_ACK, sack + 5, 0x00, "SACK nbits 0");
	expect_bad(EFI_OP_ACK, sack + 6, 0x01, "SACK reserved");
	expect_bad(EFI_OP_ACK, sack + 7, 0x01, "SACK reserved");
	expect_bad(EFI_OP_ACK, sack + 8 + 2, 0x1f, "SACK bit past nbits");
	expect_bad(EFI_OP_ACK, sack + 8 + 31, 0x80, "SACK bit 255 past nbits");
	/* nbits 256 is the maximum and may use every bit. */
	buf[sack + 4] = 0x01;
	buf[sack + 5] = 0x00;
	memset(buf + sack + 8, 0xff, 32);
	ck_assert_int_eq(efi_pkt_parse(buf, len, &p), 0);
	ck_assert_uint_eq(p.sack.nbits, 256);
	buf[sack + 5] = 0x01;
	ck_assert_int_eq(efi_pkt_parse(buf, len, &p), -EBADMSG);
	/* Without the SACK flag, those 40 bytes are a payload the ACK cannot have. */
	len = build_sample(EFI_OP_ACK, buf, &p);
	buf[2] &= (uint8_t)~EFI_PKT_F_SACK;
	ck_assert_int_eq(efi_pkt_parse(buf, len, &p), -EBADMSG);
	ck_assert_int_eq(efi_pkt_parse(buf, sack, &p), 0);
	ck_assert(!(p.hdrs & EFI_HDR_SACK));
}
END_TEST

START_TEST(aeth_syndromes)
{
	size_t aeth = EFI_BASE_HDR_LEN;
	for (unsigned s = 0; s <= 0xff; s++) {
		uint8_t buf[BUF_LEN];
		struct efi_pkt p;
		size_t len = build_sample(EFI_OP_ACK, buf, &p);
		bool valid = s <= 0x3f || (s >= 0x60 && s <= 0x63);
		buf[aeth] = (uint8_t)s;
		ck_assert_int_eq(efi_pkt_parse(buf, len, &p), valid ? 0 : -EBADMSG);
		/* Read responses and atomic ACKs are positive by definition. */
		len = build_sample(EFI_OP_READ_RESP_ONLY, buf, &p);
		buf[aeth] = (uint8_t)s;
		ck_assert_int_eq(efi_pkt_parse(buf, len, &p), s <= 0x1f ? 0 : -EBADMSG);
		len = build_sample(EFI_OP_ATOMIC_ACK, buf, &p);
		buf[aeth] = (uint8_t)s;
		ck_assert_int_eq(efi_pkt_parse(buf, len, &p), s <= 0x1f ? 0 : -EBADMSG);
	}
}
END_TEST

START_TEST(builder_refuses)
{
	uint8_t buf[BUF_LEN];
	struct efi_pkt p;
	size_t payload_len;

	for (uint8_t op = 0; op < EFI_OP_COUNT; op++) {
		sample(op, &p, &payload_len);
		size_t need = efi_pkt_build_hdr(buf, sizeof(buf), &p);
		ck_assert_uint_ne(need, 0);
		for (size_t cap = 0; cap < need; cap++)
			ck_assert_uint_eq(efi_pkt_build_hdr(buf, cap, &p), 0);
		ck_assert_uint_eq(efi_pkt_build_hdr(buf, need, &p), need);
	}
	sample(EFI_OP_SEND_ONLY, &p, &payload_len);
	p.dest_qpn = 0x1000000;
	ck_assert_uint_eq(efi_pkt_build_hdr(buf, sizeof(buf), &p), 0);
	sample(EFI_OP_SEND_ONLY, &p, &payload_len);
	p.psn = 0x1000000;
	ck_assert_uint_eq(efi_pkt_build_hdr(buf, sizeof(buf), &p), 0);
	sample(EFI_OP_SEND_ONLY, &p, &payload_len);
	p.src_qpn = 0xffffffff;
	ck_assert_uint_eq(efi_pkt_build_hdr(buf, sizeof(buf), &p), 0);
	sample(EFI_OP_SEND_ONLY, &p, &payload_len);
	p.flags |= 0x80;
	ck_assert_uint_eq(efi_pkt_build_hdr(buf, sizeof(buf), &p), 0);
	sample(EFI_OP_WRITE_FIRST, &p, &payload_len);
	p.flags = EFI_PKT_F_SOLICITED;
	ck_assert_uint_eq(efi_pkt_build_hdr(buf, sizeof(buf), &p), 0);
	sample(EFI_OP_READ_REQUEST, &p, &payload_len);
	p.reth.dma_len = EFI_MAX_MSG_SIZE + 1;
	ck_assert_uint_eq(efi_pkt_build_hdr(buf, sizeof(buf), &p), 0);
	sample(EFI_OP_ACK, &p, &payload_len);
	p.aeth.msn = 0x1000000;
	ck_assert_uint_eq(efi_pkt_build_hdr(buf, sizeof(buf), &p), 0);
	sample(EFI_OP_ACK, &p, &payload_len);
	p.aeth.syndrome = EFI_AETH_NAK | 9;
	ck_assert_uint_eq(efi_pkt_build_hdr(buf, sizeof(buf), &p), 0);
	sample(EFI_OP_READ_RESP_LAST, &p, &payload_len);
	p.aeth.syndrome = EFI_AETH_NAK | EFI_NAK_REM_ACCESS;
	ck_assert_uint_eq(efi_pkt_build_hdr(buf, sizeof(buf), &p), 0);
	sample(EFI_OP_ACK, &p, &payload_len);
	p.sack.nbits = 0;
	ck_assert_uint_eq(efi_pkt_build_hdr(buf, sizeof(buf), &p), 0);
	sample(EFI_OP_ACK, &p, &payload_len);
	p.sack.nbits = 257;
	ck_assert_uint_eq(efi_pkt_build_hdr(buf, sizeof(buf), &p), 0);
	sample(EFI_OP_ACK, &p, &payload_len);
	p.sack.nbits = 8;	/* bitmap byte 2 now lies past nbits */
	ck_assert_uint_eq(efi_pkt_build_hdr(buf, sizeof(buf), &p), 0);
	/* SACK on anything but an ACK is simply not written. */
	sample(EFI_OP_ATOMIC_ACK, &p, &payload_len);
	p.hdrs = EFI_HDR_SACK;
	ck_assert_uint_eq(efi_pkt_build_hdr(buf, sizeof(buf), &p),
			  EFI_BASE_HDR_LEN + EFI_AETH_LEN + EFI_TSE_LEN + EFI_ATOMIC_ACK_ETH_LEN);
	ck_assert_uint_eq(buf[2] & EFI_PKT_F_SACK, 0);
}
END_TEST

/* Random corruption of valid packets: the parser never reads out of bounds
 * (run under ASan or valgrind to see it), and whatever it accepts is
 * canonical: building the decoded headers again gives the same bytes. */
START_TEST(random_corruption_is_canonical)
{
	unsigned int seed = 12345;
	for (int iter = 0; iter < 200000; iter++) {
		uint8_t buf[BUF_LEN], again[BUF_LEN];
		struct efi_pkt p;
		uint8_t op = (uint8_t)(rand_r(&seed) % EFI_OP_COUNT);
		size_t len = build_sample(op, buf, &p);
		int flips = 1 + rand_r(&seed) % 3;
		for (int f = 0; f < flips; f++) {
			size_t at = (size_t)rand_r(&seed) % (len < 90 ? len : 90);
			buf[at] ^= (uint8_t)(1u << (rand_r(&seed) % 8));
		}
		if (rand_r(&seed) % 4 == 0)
			len = (size_t)rand_r(&seed) % (len + 1);
		int rc = efi_pkt_parse(buf, len, &p);
		ck_assert(rc == 0 || rc == -EBADMSG || rc == -EPROTONOSUPPORT);
		if (rc != 0)
			continue;
		size_t n = efi_pkt_build_hdr(again, sizeof(again), &p);
		ck_assert_uint_eq(n, p.hdr_len);
		ck_assert_int_eq(memcmp(again, buf, n), 0);
	}
}
END_TEST

START_TEST(psn_wrap_around)
{
	ck_assert_uint_eq(efi_psn_add(0xffffff, 1), 0);
	ck_assert_uint_eq(efi_psn_add(0xfffffe, 5), 3);
	ck_assert_uint_eq(efi_psn_add(5, 0xffffff), 4);	/* adding 2^24 − 1 steps back one */
	ck_assert_uint_eq(efi_psn_add(0, 0), 0);
	ck_assert_int_eq(efi_psn_diff(0, 0xffffff), 1);
	ck_assert_int_eq(efi_psn_diff(0xffffff, 0), -1);
	ck_assert_int_eq(efi_psn_diff(3, 0xfffffe), 5);
	ck_assert_int_eq(efi_psn_diff(0xfffffe, 3), -5);
	ck_assert_int_eq(efi_psn_diff(100, 100), 0);
	ck_assert_int_eq(efi_psn_diff(0x7fffff, 0), 0x7fffff);
	ck_assert_int_eq(efi_psn_diff(0, 0x7fffff), -0x7fffff);
	/* Exactly half the space apart is ambiguous: documented as "after". */
	ck_assert_int_eq(efi_psn_diff(0x800000, 0), 0x800000);
	ck_assert_int_eq(efi_psn_diff(0, 0x800000), 0x800000);
	ck_assert(efi_psn_before(0xffffff, 0));
	ck_assert(!efi_psn_before(0, 0xffffff));
	ck_assert(efi_psn_after(0, 0xffffff));
	ck_assert(efi_psn_before(0xfff000, 0x000fff));
	ck_assert(!efi_psn_before(7, 7));
	ck_assert(!efi_psn_after(7, 7));
	/* Only the low 24 bits count, whatever the caller passes. */
	ck_assert_int_eq(efi_psn_diff(0x1000005, 3), 2);
	/* Walking across the wrap, every step is one ahead of the last. */
	uint32_t psn = 0xfffff0;
	for (int i = 0; i < 64; i++) {
		uint32_t next = efi_psn_add(psn, 1);
		ck_assert(next <= EFI_PSN_MASK);
		ck_assert(efi_psn_before(psn, next));
		ck_assert_int_eq(efi_psn_diff(next, 0xfffff0), i + 1);
		psn = next;
	}
}
END_TEST

START_TEST(segment_sizes)
{
	/* 1500 − IPv4 20 − UDP 8 − 48 of EFI headers. */
	ck_assert_uint_eq(efi_pkt_seg_payload(1500, false, 0), 1424);
	ck_assert_uint_eq(efi_pkt_seg_payload(1500, true, 0), 1404);
	ck_assert_uint_eq(efi_pkt_seg_payload(1500, false, 4096), 1424);
	ck_assert_uint_eq(efi_pkt_seg_payload(1500, false, 1024), 1024);
	ck_assert_uint_eq(efi_pkt_seg_payload(9000, false, 4096), 4096);
	ck_assert_uint_eq(efi_pkt_seg_payload(65536, false, 0), EFI_PKT_MAX_LEN - EFI_MAX_DATA_HDR_LEN);
	ck_assert_uint_eq(efi_pkt_seg_payload(76, false, 0), 0);
	ck_assert_uint_eq(efi_pkt_seg_payload(77, false, 0), 1);
	ck_assert_uint_eq(efi_pkt_seg_payload(0, true, 256), 0);

	/* Packets per message, and PSNs per Read. */
	ck_assert_uint_eq(efi_pkt_count(0, 1428), 1);
	ck_assert_uint_eq(efi_pkt_count(1, 1428), 1);
	ck_assert_uint_eq(efi_pkt_count(1428, 1428), 1);
	ck_assert_uint_eq(efi_pkt_count(1429, 1428), 2);
	ck_assert_uint_eq(efi_pkt_count(EFI_MAX_MSG_SIZE, 512), 1u << 22);
	ck_assert_uint_eq(efi_pkt_count((uint64_t)256 * ((1u << 23) - 1), 256), (1u << 23) - 1);
	ck_assert_uint_eq(efi_pkt_count(EFI_MAX_MSG_SIZE, 256), 0);
	ck_assert_uint_eq(efi_pkt_count(EFI_MAX_MSG_SIZE, 1), 0);
	ck_assert_uint_eq(efi_pkt_count(100, 0), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("packet");
	TCase *codec = tcase_create("codec");
	TCase *hostile = tcase_create("hostile");
	TCase *psn = tcase_create("psn");
	SRunner *sr;
	int failed;

	tcase_add_test(codec, round_trip_every_opcode);
	tcase_add_test(codec, exact_bytes);
	tcase_add_test(codec, builder_refuses);
	tcase_add_test(codec, segment_sizes);
	tcase_add_test(hostile, every_truncation);
	tcase_add_test(hostile, wrong_version);
	tcase_add_test(hostile, reserved_bits);
	tcase_add_test(hostile, inconsistent_flags);
	tcase_add_test(codec, piggybacked_ack);
	tcase_add_test(hostile, unknown_opcodes);
	tcase_add_test(hostile, oversize_lengths);
	tcase_add_test(hostile, sack_block);
	tcase_add_test(hostile, aeth_syndromes);
	tcase_add_test(hostile, random_corruption_is_canonical);
	tcase_set_timeout(hostile, 60);
	tcase_add_test(psn, psn_wrap_around);
	suite_add_tcase(s, codec);
	suite_add_tcase(s, hostile);
	suite_add_tcase(s, psn);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
