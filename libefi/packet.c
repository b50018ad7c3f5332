/* SPDX-License-Identifier: MIT */
/*
 * Wire format version 2 (docs/wire-format.md): one table says, per opcode,
 * which headers follow the base header, which flags it implies and what
 * payload it may carry.  The parser and the builder both read that table, so
 * they cannot disagree about the layout, and the builder refuses to write a
 * header the parser would reject.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "libefi/packet.h"

enum payload_rule {
	PAYLOAD_NONE,		/* exactly 0 bytes */
	PAYLOAD_ANY,		/* 0 … what is left */
	PAYLOAD_NONEMPTY,	/* at least 1 byte: a FIRST/MIDDLE/LAST segment */
};

struct opcode_desc {
	const char *name;
	unsigned int hdrs;	/* enum efi_pkt_hdr, SACK excluded (flag-driven) */
	uint8_t implied;	/* FIRST/LAST/IMM this opcode must carry */
	uint8_t allowed;	/* SOLICITED/ACKREQ/SACK it may carry */
	enum payload_rule payload;
	bool request;
};

#define F_FL (EFI_PKT_F_FIRST | EFI_PKT_F_LAST)
#define F_REQ (EFI_PKT_F_ACKREQ | EFI_PKT_F_ACKED)
#define F_SE (EFI_PKT_F_ACKREQ | EFI_PKT_F_SOLICITED | EFI_PKT_F_ACKED)
#define AETH_TSE EFI_HDR_AETH

static const struct opcode_desc opcodes[EFI_OP_COUNT] = {
	[EFI_OP_SEND_FIRST] = { "SEND_FIRST", 0, EFI_PKT_F_FIRST, F_REQ, PAYLOAD_NONEMPTY, true },
	[EFI_OP_SEND_MIDDLE] = { "SEND_MIDDLE", 0, 0, F_REQ, PAYLOAD_NONEMPTY, true },
	[EFI_OP_SEND_LAST] = { "SEND_LAST", 0, EFI_PKT_F_LAST, F_SE, PAYLOAD_NONEMPTY, true },
	[EFI_OP_SEND_LAST_IMM] = { "SEND_LAST_IMM", EFI_HDR_IMMDT,
		EFI_PKT_F_LAST | EFI_PKT_F_IMM, F_SE, PAYLOAD_NONEMPTY, true },
	[EFI_OP_SEND_ONLY] = { "SEND_ONLY", 0, F_FL, F_SE, PAYLOAD_ANY, true },
	[EFI_OP_SEND_ONLY_IMM] = { "SEND_ONLY_IMM", EFI_HDR_IMMDT,
		F_FL | EFI_PKT_F_IMM, F_SE, PAYLOAD_ANY, true },
	[EFI_OP_WRITE_FIRST] = { "WRITE_FIRST", EFI_HDR_RETH, EFI_PKT_F_FIRST, F_REQ,
		PAYLOAD_NONEMPTY, true },
	[EFI_OP_WRITE_MIDDLE] = { "WRITE_MIDDLE", 0, 0, F_REQ, PAYLOAD_NONEMPTY, true },
	[EFI_OP_WRITE_LAST] = { "WRITE_LAST", 0, EFI_PKT_F_LAST, F_REQ, PAYLOAD_NONEMPTY, true },
	[EFI_OP_WRITE_LAST_IMM] = { "WRITE_LAST_IMM", EFI_HDR_IMMDT,
		EFI_PKT_F_LAST | EFI_PKT_F_IMM, F_SE, PAYLOAD_NONEMPTY, true },
	[EFI_OP_WRITE_ONLY] = { "WRITE_ONLY", EFI_HDR_RETH, F_FL, F_REQ, PAYLOAD_ANY, true },
	[EFI_OP_WRITE_ONLY_IMM] = { "WRITE_ONLY_IMM", EFI_HDR_RETH | EFI_HDR_IMMDT,
		F_FL | EFI_PKT_F_IMM, F_SE, PAYLOAD_ANY, true },
	[EFI_OP_READ_REQUEST] = { "READ_REQUEST", EFI_HDR_RETH, F_FL, F_REQ, PAYLOAD_NONE, true },
	[EFI_OP_READ_RESP_FIRST] = { "READ_RESP_FIRST", AETH_TSE, EFI_PKT_F_FIRST, 0,
		PAYLOAD_NONEMPTY, false },
	[EFI_OP_READ_RESP_MIDDLE] = { "READ_RESP_MIDDLE", 0, 0, 0, PAYLOAD_NONEMPTY, false },
	[EFI_OP_READ_RESP_LAST] = { "READ_RESP_LAST", AETH_TSE, EFI_PKT_F_LAST, 0,
		PAYLOAD_NONEMPTY, false },
	[EFI_OP_READ_RESP_ONLY] = { "READ_RESP_ONLY", AETH_TSE, F_FL, 0, PAYLOAD_ANY, false },
	[EFI_OP_ACK] = { "ACK", AETH_TSE, F_FL, EFI_PKT_F_SACK, PAYLOAD_NONE, false },
	[EFI_OP_ATOMIC_ACK] = { "ATOMIC_ACK", AETH_TSE | EFI_HDR_ATOMIC_ACK_ETH, F_FL, 0,
		PAYLOAD_NONE, false },
	[EFI_OP_CMP_SWP] = { "CMP_SWP", EFI_HDR_ATOMIC_ETH, F_FL, F_REQ, PAYLOAD_NONE, true },
	[EFI_OP_FETCH_ADD] = { "FETCH_ADD", EFI_HDR_ATOMIC_ETH, F_FL, F_REQ, PAYLOAD_NONE, true },
	/* datagrams: neither requests (nothing acknowledges them, so no
	 * ACKREQ, no PACK) nor responses */
	[EFI_OP_UD_SEND_ONLY] = { "UD_SEND_ONLY", EFI_HDR_DETH, F_FL, EFI_PKT_F_SOLICITED,
		PAYLOAD_ANY, false },
	[EFI_OP_UD_SEND_ONLY_IMM] = { "UD_SEND_ONLY_IMM", EFI_HDR_DETH | EFI_HDR_IMMDT,
		F_FL | EFI_PKT_F_IMM, EFI_PKT_F_SOLICITED, PAYLOAD_ANY, false },
};

#define IMPLIED_FLAGS (EFI_PKT_F_FIRST | EFI_PKT_F_LAST | EFI_PKT_F_IMM)

static const struct opcode_desc *lookup(uint8_t opcode)
{
	return opcode < EFI_OP_COUNT ? &opcodes[opcode] : NULL;
}

/* Big-endian accessors: the wire is network order and unaligned. */
static uint32_t get24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | get24(p + 1);
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static size_t hdr_len_of(const struct opcode_desc *d, uint8_t flags)
{
	size_t len = EFI_BASE_HDR_LEN;
	if (flags & EFI_PKT_F_ACKED)
		len += EFI_PACK_LEN;
	if (d->hdrs & EFI_HDR_DETH)
		len += EFI_DETH_LEN;
	if (d->hdrs & EFI_HDR_RETH)
		len += EFI_RETH_LEN;
	if (d->hdrs & EFI_HDR_ATOMIC_ETH)
		len += EFI_ATOMIC_ETH_LEN;
	if (d->hdrs & EFI_HDR_IMMDT)
		len += EFI_IMMDT_LEN;
	if (d->hdrs & EFI_HDR_AETH)
		len += EFI_AETH_LEN + EFI_TSE_LEN;
	if (flags & EFI_PKT_F_SACK)
		len += EFI_SACK_LEN;
	if (d->hdrs & EFI_HDR_ATOMIC_ACK_ETH)
		len += EFI_ATOMIC_ACK_ETH_LEN;
	return len;
}

size_t efi_pkt_hdr_len(uint8_t opcode, uint8_t flags)
{
	const struct opcode_desc *d = lookup(opcode);
	return d ? hdr_len_of(d, flags) : 0;
}

const char *efi_pkt_opcode_name(uint8_t opcode)
{
	const struct opcode_desc *d = lookup(opcode);
	return d ? d->name : "?";
}

bool efi_pkt_completes_receive(uint8_t opcode)
{
	return opcode == EFI_OP_SEND_LAST || opcode == EFI_OP_SEND_LAST_IMM || opcode == EFI_OP_SEND_ONLY ||
	       opcode == EFI_OP_SEND_ONLY_IMM || opcode == EFI_OP_WRITE_LAST_IMM ||
	       opcode == EFI_OP_WRITE_ONLY_IMM;
}

bool efi_pkt_is_request(uint8_t opcode)
{
	const struct opcode_desc *d = lookup(opcode);
	return d && d->request;
}

/* A syndrome is valid for this opcode: NAKs and RNR NAKs travel only in ACK
 * packets (a Read response or an atomic ACK is by definition a positive
 * acknowledgement), and only the NAK codes of enum efi_nak_code exist. */
static bool syndrome_ok(uint8_t opcode, uint8_t syndrome)
{
	uint8_t kind = syndrome & EFI_AETH_KIND_MASK;
	uint8_t value = syndrome & EFI_AETH_VALUE_MASK;
	if (kind == EFI_AETH_ACK)
		return true;
	if (opcode != EFI_OP_ACK)
		return false;
	if (kind == EFI_AETH_RNR_NAK)
		return true;
	return kind == EFI_AETH_NAK && value <= EFI_NAK_CODE_MAX;
}

/* A SACK block is well formed: 24-bit base, 1 … 256 bits, the bits past
 * nbits clear (so two encodings of one SACK are byte-identical). */
static bool sack_ok(uint32_t base_psn, unsigned int nbits, const uint8_t *bitmap)
{
	if (base_psn > EFI_PSN_MASK || nbits == 0 || nbits > EFI_SACK_MAX_BITS)
		return false;
	for (unsigned int i = nbits; i < EFI_SACK_MAX_BITS; i++)
		if (bitmap[i / 8] & (1u << (i % 8)))
			return false;
	return true;
}

static bool flags_ok(const struct opcode_desc *d, uint8_t flags)
{
	if ((flags & IMPLIED_FLAGS) != d->implied)
		return false;
	return (flags & ~(IMPLIED_FLAGS | d->allowed)) == 0;
}

static bool payload_ok(uint8_t opcode, const struct opcode_desc *d, const struct efi_pkt *p)
{
	switch (d->payload) {
	case PAYLOAD_NONE:
		if (p->payload_len != 0)
			return false;
		break;
	case PAYLOAD_NONEMPTY:
		if (p->payload_len == 0)
			return false;
		break;
	case PAYLOAD_ANY:
		break;
	}
	/* The RETH announces the whole message: a Write that fits one packet
	 * carries exactly that much, a first segment strictly less. */
	if (opcode == EFI_OP_WRITE_ONLY || opcode == EFI_OP_WRITE_ONLY_IMM)
		return p->payload_len == p->reth.dma_len;
	if (opcode == EFI_OP_WRITE_FIRST)
		return p->payload_len < p->reth.dma_len;
	return true;
}

int efi_pkt_parse(const void *buf, size_t len, struct efi_pkt *out)
{
	const uint8_t *b = buf;
	const struct opcode_desc *d;
	size_t off;

	memset(out, 0, sizeof(*out));
	if (len < 1 || len > EFI_PKT_MAX_LEN)
		return -EBADMSG;
	/* The version comes first so that a later version with another base
	 * header is recognised as such, not as garbage. */
	if (b[0] != EFI_WIRE_VERSION)
		return -EPROTONOSUPPORT;
	if (len < EFI_BASE_HDR_LEN)
		return -EBADMSG;

	out->version = b[0];
	out->opcode = b[1];
	out->flags = b[2];
	out->path = b[3];
	d = lookup(out->opcode);
	if (!d || b[4] != 0 || b[8] != 0 || b[12] != 0)
		return -EBADMSG;
	if (!flags_ok(d, out->flags))
		return -EBADMSG;
	out->dest_qpn = get24(b + 5);
	out->psn = get24(b + 9);
	out->src_qpn = get24(b + 13);
	out->tx_ts = get64(b + 16);
	out->conn_key = get32(b + 24);

	out->hdr_len = hdr_len_of(d, out->flags);
	if (len < out->hdr_len)
		return -EBADMSG;
	out->hdrs = d->hdrs;
	off = EFI_BASE_HDR_LEN;
	if (out->flags & EFI_PKT_F_ACKED) {
		out->hdrs |= EFI_HDR_PACK;
		out->pack.syndrome = b[off];
		out->pack.msn = get24(b + off + 1);
		out->pack.path = b[off + 4];
		out->pack.psn = get24(b + off + 5);
		out->pack.ts_echo = get64(b + off + 8);
		if ((out->pack.syndrome & EFI_AETH_KIND_MASK) != EFI_AETH_ACK)
			return -EBADMSG;
		off += EFI_PACK_LEN;
	}
	if (d->hdrs & EFI_HDR_DETH) {
		out->qkey = get32(b + off);
		off += EFI_DETH_LEN;
	}
	if (d->hdrs & EFI_HDR_RETH) {
		out->reth.va = get64(b + off);
		out->reth.rkey = get32(b + off + 8);
		out->reth.dma_len = get32(b + off + 12);
		if (out->reth.dma_len > EFI_MAX_MSG_SIZE)
			return -EBADMSG;
		off += EFI_RETH_LEN;
	}
	if (d->hdrs & EFI_HDR_ATOMIC_ETH) {
		out->atomic.va = get64(b + off);
		out->atomic.rkey = get32(b + off + 8);
		out->atomic.swap_add = get64(b + off + 12);
		out->atomic.compare = get64(b + off + 20);
		off += EFI_ATOMIC_ETH_LEN;
	}
	if (d->hdrs & EFI_HDR_IMMDT) {
		memcpy(&out->imm_be, b + off, EFI_IMMDT_LEN);
		off += EFI_IMMDT_LEN;
	}
	if (d->hdrs & EFI_HDR_AETH) {
		out->aeth.syndrome = b[off];
		out->aeth.msn = get24(b + off + 1);
		out->ts_echo = get64(b + off + EFI_AETH_LEN);
		if (!syndrome_ok(out->opcode, out->aeth.syndrome))
			return -EBADMSG;
		off += EFI_AETH_LEN + EFI_TSE_LEN;
	}
	if (out->flags & EFI_PKT_F_SACK) {
		out->hdrs |= EFI_HDR_SACK;
		out->sack.base_psn = get32(b + off);
		out->sack.nbits = get16(b + off + 4);
		memcpy(out->sack.bitmap, b + off + 8, sizeof(out->sack.bitmap));
		if (get16(b + off + 6) != 0 ||
		    !sack_ok(out->sack.base_psn, out->sack.nbits, out->sack.bitmap))
			return -EBADMSG;
		off += EFI_SACK_LEN;
	}
	if (d->hdrs & EFI_HDR_ATOMIC_ACK_ETH) {
		out->atomic_orig = get64(b + off);
		off += EFI_ATOMIC_ACK_ETH_LEN;
	}

	out->payload = b + off;
	out->payload_len = len - off;
	if (!payload_ok(out->opcode, d, out))
		return -EBADMSG;
	return 0;
}

size_t efi_pkt_build_hdr(void *buf, size_t cap, const struct efi_pkt *pkt)
{
	const struct opcode_desc *d = lookup(pkt->opcode);
	uint8_t *b = buf;
	uint8_t flags;
	size_t len, off;

	if (!d || (pkt->flags & EFI_PKT_F_RESERVED))
		return 0;
	flags = (uint8_t)((pkt->flags & (EFI_PKT_F_SOLICITED | EFI_PKT_F_ACKREQ)) | d->implied);
	if (pkt->hdrs & EFI_HDR_PACK)
		flags |= EFI_PKT_F_ACKED;
	if (pkt->opcode == EFI_OP_ACK && (pkt->hdrs & EFI_HDR_SACK))
		flags |= EFI_PKT_F_SACK;
	if (!flags_ok(d, flags))
		return 0;
	if (pkt->dest_qpn > EFI_QPN_MASK || pkt->src_qpn > EFI_QPN_MASK || pkt->psn > EFI_PSN_MASK)
		return 0;
	if ((d->hdrs & EFI_HDR_RETH) && pkt->reth.dma_len > EFI_MAX_MSG_SIZE)
		return 0;
	if ((flags & EFI_PKT_F_ACKED) &&
	    (pkt->pack.msn > EFI_MSN_MASK || pkt->pack.psn > EFI_PSN_MASK ||
	     (pkt->pack.syndrome & EFI_AETH_KIND_MASK) != EFI_AETH_ACK))
		return 0;
	if ((d->hdrs & EFI_HDR_AETH) &&
	    (pkt->aeth.msn > EFI_MSN_MASK || !syndrome_ok(pkt->opcode, pkt->aeth.syndrome)))
		return 0;
	if ((flags & EFI_PKT_F_SACK) &&
	    !sack_ok(pkt->sack.base_psn, pkt->sack.nbits, pkt->sack.bitmap))
		return 0;
	len = hdr_len_of(d, flags);
	if (cap < len)
		return 0;

	b[0] = EFI_WIRE_VERSION;
	b[1] = pkt->opcode;
	b[2] = flags;
	b[3] = pkt->path;
	put32(b + 4, pkt->dest_qpn);
	put32(b + 8, pkt->psn);
	put32(b + 12, pkt->src_qpn);
	put64(b + 16, pkt->tx_ts);
	put32(b + 24, pkt->conn_key);
	off = EFI_BASE_HDR_LEN;
	if (flags & EFI_PKT_F_ACKED) {
		put32(b + off, (uint32_t)pkt->pack.syndrome << 24 | pkt->pack.msn);
		put32(b + off + 4, (uint32_t)pkt->pack.path << 24 | pkt->pack.psn);
		put64(b + off + 8, pkt->pack.ts_echo);
		off += EFI_PACK_LEN;
	}
	if (d->hdrs & EFI_HDR_DETH) {
		put32(b + off, pkt->qkey);
		off += EFI_DETH_LEN;
	}
	if (d->hdrs & EFI_HDR_RETH) {
		put64(b + off, pkt->reth.va);
		put32(b + off + 8, pkt->reth.rkey);
		put32(b + off + 12, pkt->reth.dma_len);
		off += EFI_RETH_LEN;
	}
	if (d->hdrs & EFI_HDR_ATOMIC_ETH) {
		put64(b + off, pkt->atomic.va);
		put32(b + off + 8, pkt->atomic.rkey);
		put64(b + off + 12, pkt->atomic.swap_add);
		put64(b + off + 20, pkt->atomic.compare);
		off += EFI_ATOMIC_ETH_LEN;
	}
	if (d->hdrs & EFI_HDR_IMMDT) {
		memcpy(b + off, &pkt->imm_be, EFI_IMMDT_LEN);
		off += EFI_IMMDT_LEN;
	}
	if (d->hdrs & EFI_HDR_AETH) {
		put32(b + off, (uint32_t)pkt->aeth.syndrome << 24 | pkt->aeth.msn);
		put64(b + off + EFI_AETH_LEN, pkt->ts_echo);
		off += EFI_AETH_LEN + EFI_TSE_LEN;
	}
	if (flags & EFI_PKT_F_SACK) {
		put32(b + off, pkt->sack.base_psn);
		put16(b + off + 4, pkt->sack.nbits);
		put16(b + off + 6, 0);
		memcpy(b + off + 8, pkt->sack.bitmap, sizeof(pkt->sack.bitmap));
		off += EFI_SACK_LEN;
	}
	if (d->hdrs & EFI_HDR_ATOMIC_ACK_ETH) {
		put64(b + off, pkt->atomic_orig);
		off += EFI_ATOMIC_ACK_ETH_LEN;
	}
	return off;
}

uint32_t efi_pkt_seg_payload(uint32_t link_mtu, bool ipv6, uint32_t path_mtu_bytes)
{
	uint32_t overhead = (ipv6 ? 40u : 20u) + 8u + EFI_MAX_DATA_HDR_LEN;
	uint32_t room;

	if (link_mtu <= overhead)
		return 0;
	room = link_mtu - overhead;
	if (room > EFI_PKT_MAX_LEN - EFI_MAX_DATA_HDR_LEN)
		room = EFI_PKT_MAX_LEN - EFI_MAX_DATA_HDR_LEN;
	if (path_mtu_bytes != 0 && path_mtu_bytes < room)
		room = path_mtu_bytes;
	return room;
}
