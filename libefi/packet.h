/* SPDX-License-Identifier: MIT */
/*
 * The EFI RC-over-UDP wire format, version 2: decoding and encoding of the
 * headers, and 24-bit PSN arithmetic.  docs/wire-format.md is the
 * specification; this file follows it field for field.
 *
 * Nothing here allocates, locks or performs I/O: a packet is a byte buffer,
 * struct efi_pkt is its decoded form in host byte order.  Internal to libefi
 * (not part of <efi/efi.h>, not exported: libefi.map lists the public names).
 */
#ifndef EFI_LIBEFI_PACKET_H
#define EFI_LIBEFI_PACKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EFI_WIRE_VERSION	2

/* Sizes of the headers on the wire, in bytes. */
#define EFI_BASE_HDR_LEN	28
#define EFI_RETH_LEN		16
#define EFI_ATOMIC_ETH_LEN	28
#define EFI_IMMDT_LEN		4
#define EFI_AETH_LEN		4
#define EFI_TSE_LEN		8
#define EFI_SACK_LEN		40
#define EFI_ATOMIC_ACK_ETH_LEN	8
#define EFI_PACK_LEN		16	/* a request's piggybacked ACK (EFI_PKT_F_ACKED) */
#define EFI_DETH_LEN		4	/* a datagram's Q_Key (its source QPN is the base header's) */
/* The largest header any data-carrying request packet has (WRITE_ONLY_IMM:
 * base + RETH + ImmDt); segmentation sizes payloads so that every packet of a
 * message fits the link MTU with it. */
#define EFI_MAX_DATA_HDR_LEN	(EFI_BASE_HDR_LEN + EFI_RETH_LEN + EFI_IMMDT_LEN)
/* The largest segment libefi sends (efi_qp_seg): what a 9000-byte link
 * carries over IPv4 (8924 bytes; 8904 over IPv6), so that jumbo frames are
 * filled.  The sender's CPU per packet is what limits one QP (sendmmsg, the
 * kernel's per-packet path), so fewer, larger packets are bandwidth: 4096,
 * the verbs enum's largest, left half of a jumbo frame unused.  Every
 * buffer that holds a packet (EFI_PKTBUF_SIZE, EFI_RXBUF_SIZE, the reorder
 * buffer's EFI_REORDER_PKT_MAX) holds one this large with its headers. */
#define EFI_JUMBO_MTU		9000u
#define EFI_MAX_SEG		(EFI_JUMBO_MTU - 20u - 8u - EFI_MAX_DATA_HDR_LEN)
/* More than the headers of any packet together: what a buffer needs that
 * holds headers only (a response's: its payload leaves from memory). */
#define EFI_MAX_HDR_LEN		(EFI_BASE_HDR_LEN + EFI_RETH_LEN + EFI_ATOMIC_ETH_LEN + EFI_IMMDT_LEN + \
				 EFI_AETH_LEN + EFI_TSE_LEN + EFI_SACK_LEN + EFI_ATOMIC_ACK_ETH_LEN + \
				 EFI_PACK_LEN + EFI_DETH_LEN)

/* The largest datagram the parser accepts: the largest UDP payload over IPv4.
 * Anything longer cannot have come off a UDP socket intact. */
#define EFI_PKT_MAX_LEN		65507
/* The largest message (RETH DMA length, total message size):
 * 2^31 bytes, the verbs max_msg_sz. */
#define EFI_MAX_MSG_SIZE	(UINT32_C(1) << 31)

#define EFI_PSN_MASK		UINT32_C(0xffffff)
#define EFI_QPN_MASK		UINT32_C(0xffffff)
#define EFI_SACK_MAX_BITS	256

/* Opcodes, numbered as the IBTA RC opcodes (transport bits 000). */
enum efi_pkt_opcode {
	EFI_OP_SEND_FIRST		= 0x00,
	EFI_OP_SEND_MIDDLE		= 0x01,
	EFI_OP_SEND_LAST		= 0x02,
	EFI_OP_SEND_LAST_IMM		= 0x03,
	EFI_OP_SEND_ONLY		= 0x04,
	EFI_OP_SEND_ONLY_IMM		= 0x05,
	EFI_OP_WRITE_FIRST		= 0x06,
	EFI_OP_WRITE_MIDDLE		= 0x07,
	EFI_OP_WRITE_LAST		= 0x08,
	EFI_OP_WRITE_LAST_IMM		= 0x09,
	EFI_OP_WRITE_ONLY		= 0x0a,
	EFI_OP_WRITE_ONLY_IMM		= 0x0b,
	EFI_OP_READ_REQUEST		= 0x0c,
	EFI_OP_READ_RESP_FIRST		= 0x0d,
	EFI_OP_READ_RESP_MIDDLE		= 0x0e,
	EFI_OP_READ_RESP_LAST		= 0x0f,
	EFI_OP_READ_RESP_ONLY		= 0x10,
	EFI_OP_ACK			= 0x11,
	EFI_OP_ATOMIC_ACK		= 0x12,
	EFI_OP_CMP_SWP			= 0x13,
	EFI_OP_FETCH_ADD		= 0x14,
	/* Unreliable datagram (UD QPs): one packet is one message, no PSN
	 * order, no acknowledgement. */
	EFI_OP_UD_SEND_ONLY		= 0x15,
	EFI_OP_UD_SEND_ONLY_IMM		= 0x16,
	EFI_OP_COUNT			/* one past the last valid opcode */
};

/* Base-header flags.  FIRST, LAST and IMM repeat what the opcode says (the
 * builder sets them, the parser rejects a packet where they disagree); SACK
 * says an ACK carries a SACK block. */
enum efi_pkt_flag {
	EFI_PKT_F_SOLICITED	= 1u << 0,
	EFI_PKT_F_ACKREQ	= 1u << 1,
	EFI_PKT_F_FIRST		= 1u << 2,
	EFI_PKT_F_LAST		= 1u << 3,
	EFI_PKT_F_IMM		= 1u << 4,
	EFI_PKT_F_SACK		= 1u << 5,
	/* A request that also acknowledges the peer's requests: the PACK
	 * header follows the base header.  Sent only to a peer that said it
	 * reads it (EFI_AETH_CREDITS_PACK in its ACKs). */
	EFI_PKT_F_ACKED		= 1u << 6,
	EFI_PKT_F_RESERVED	= 0x80u,
};

/* Which extension headers a packet carries (struct efi_pkt.hdrs). */
enum efi_pkt_hdr {
	EFI_HDR_RETH		= 1u << 0,
	EFI_HDR_ATOMIC_ETH	= 1u << 1,
	EFI_HDR_IMMDT		= 1u << 2,
	EFI_HDR_AETH		= 1u << 3,	/* always with the TSE */
	EFI_HDR_SACK		= 1u << 4,
	EFI_HDR_ATOMIC_ACK_ETH	= 1u << 5,
	EFI_HDR_PACK		= 1u << 6,	/* with EFI_PKT_F_ACKED */
	EFI_HDR_DETH		= 1u << 7,	/* datagrams: the Q_Key */
};

/* AETH syndrome (IBTA encoding): top 3 bits the kind, low 5 bits its value. */
#define EFI_AETH_KIND_MASK	0xe0u
#define EFI_AETH_VALUE_MASK	0x1fu
enum efi_aeth_kind {
	EFI_AETH_ACK		= 0x00,	/* value: credits, 0x1f = none (v1 sends 0x1f) */
	EFI_AETH_RNR_NAK	= 0x20,	/* value: RNR timer code (min_rnr_timer table) */
	EFI_AETH_NAK		= 0x60,	/* value: enum efi_nak_code */
};
enum efi_nak_code {
	EFI_NAK_PSN_SEQ_ERR	= 0,
	EFI_NAK_INV_REQ		= 1,
	EFI_NAK_REM_ACCESS	= 2,
	EFI_NAK_REM_OP		= 3,
	EFI_NAK_CODE_MAX	= EFI_NAK_REM_OP,
};
#define EFI_AETH_CREDITS_NONE	0x1fu
/* A positive ACK's value saying "no credits, and I read piggybacked ACKs"
 * (EFI_PKT_F_ACKED): an older receiver takes it as any ACK. */
#define EFI_AETH_CREDITS_PACK	0x1eu
/* "No credits, and I hold requests up to EFI_REORDER_WIDE PSNs ahead" (a
 * requester may then keep that many PSNs outstanding), and the same with
 * "I read piggybacked ACKs": older receivers take either as any ACK. */
#define EFI_AETH_CREDITS_WIDE		0x1du
#define EFI_AETH_CREDITS_WIDE_PACK	0x1cu
#define EFI_REORDER_WIDE		1024u
#define EFI_MSN_MASK		UINT32_C(0xffffff)

/* A decoded packet, host byte order.  Fields of headers the packet does not
 * carry (see hdrs) are zero after efi_pkt_parse. */
struct efi_pkt {
	uint8_t version;
	uint8_t opcode;		/* enum efi_pkt_opcode */
	uint8_t flags;		/* enum efi_pkt_flag */
	uint32_t dest_qpn;	/* 24 bits */
	uint32_t psn;		/* 24 bits */
	uint32_t src_qpn;	/* 24 bits */
	/* Requests: the sender's path the packet left on; responses: the path
	 * of the request echoed in the TSE.  Opaque to the receiver. */
	uint8_t path;
	uint64_t tx_ts;		/* sender's clock, ns */
	uint32_t conn_key;	/* the connection's secret, 0 = none */
	uint32_t qkey;		/* DETH (datagrams): the receiving QP's Q_Key */
	unsigned int hdrs;	/* enum efi_pkt_hdr */
	struct {
		uint64_t va;
		uint32_t rkey;
		uint32_t dma_len;
	} reth;
	struct {
		uint64_t va;
		uint32_t rkey;
		uint64_t swap_add;
		uint64_t compare;
	} atomic;
	/* Immediate data exactly as on the wire (network byte order), as verbs
	 * hands imm_data through: the application's bytes, untouched. */
	uint32_t imm_be;
	struct {
		uint8_t syndrome;
		uint32_t msn;	/* 24 bits */
	} aeth;
	uint64_t ts_echo;	/* TSE: tx_ts of the packet that caused this response */
	struct {
		uint32_t base_psn;	/* 24 bits: PSN of bit 0 */
		uint16_t nbits;		/* 1 … EFI_SACK_MAX_BITS */
		uint8_t bitmap[EFI_SACK_MAX_BITS / 8];	/* bit i = byte i/8, 1 << (i%8) */
	} sack;
	uint64_t atomic_orig;
	/* PACK (EFI_HDR_PACK): the acknowledgement a request carries, read
	 * as an ACK packet with these fields would be */
	struct {
		uint8_t syndrome;	/* a positive ACK */
		uint32_t msn;		/* 24 bits */
		uint8_t path;		/* the path byte of the request it echoes */
		uint32_t psn;		/* 24 bits: the last PSN acknowledged */
		uint64_t ts_echo;
	} pack;
	/* Parse results: where the payload starts in the buffer and its length;
	 * hdr_len = bytes of headers. */
	const uint8_t *payload;
	size_t payload_len;
	size_t hdr_len;
};

/* Decodes and validates one datagram.  Every field is bounds-checked, the
 * headers the opcode requires must be present and fit, reserved bits must be
 * zero and the payload length must suit the opcode (docs/wire-format.md,
 * "Receiving").  Returns 0 and fills *out (payload points into buf), or
 * -EPROTONOSUPPORT (version byte is not EFI_WIRE_VERSION) or -EBADMSG (anything
 * else malformed); *out is then unspecified. */
int efi_pkt_parse(const void *buf, size_t len, struct efi_pkt *out);

/* Length of the headers a packet with this opcode and these flags carries,
 * or 0 for an unknown opcode. */
size_t efi_pkt_hdr_len(uint8_t opcode, uint8_t flags);

/* Writes the headers of pkt (opcode, flags, QPNs, PSN, timestamp and the
 * extension headers its opcode needs) at buf; the caller appends the payload.
 * FIRST/LAST/IMM flags are derived from the opcode, ACKED from
 * pkt->hdrs & EFI_HDR_PACK on a request, and SACK from
 * pkt->hdrs & EFI_HDR_SACK on an ACK, whatever pkt->flags says; pkt->hdrs is
 * otherwise ignored.  Returns the header length, or 0 if the opcode is
 * unknown, a field does not fit its wire width (QPN/PSN/MSN > 24 bits,
 * SACK nbits 0 or > 256, reserved flag bits) or cap is too small. */
size_t efi_pkt_build_hdr(void *buf, size_t cap, const struct efi_pkt *pkt);

/* Payload bytes per packet for a connection: the path MTU payload limit
 * (path_mtu_bytes, 256 … 4096 from enum efi_mtu, 0 = no limit) capped by
 * what fits in one datagram on a link of link_mtu bytes under an IPv4
 * (ipv6 false) or IPv6 header, the UDP header and EFI_MAX_DATA_HDR_LEN.
 * Returns 0 if the link MTU leaves no room for payload. */
uint32_t efi_pkt_seg_payload(uint32_t link_mtu, bool ipv6, uint32_t path_mtu_bytes);

/* Packets a message of len bytes travels in with segment size seg:
 * max(1, ceil(len / seg)); also the PSNs a READ_REQUEST of DMA length len
 * takes.  0 if seg is 0 or the count reaches 2^23, half the PSN space: such a
 * message cannot be told apart from its own wrap-around (docs/wire-format.md,
 * "PSNs"), and posting it is EINVAL. */
static inline uint32_t efi_pkt_count(uint64_t len, uint32_t seg)
{
	uint64_t n;
	if (seg == 0)
		return 0;
	n = len == 0 ? 1 : (len - 1) / seg + 1;
	return n >= (EFI_PSN_MASK >> 1) + 1 ? 0 : (uint32_t)n;
}

/* Name of an opcode for logs and tests ("SEND_FIRST" …), "?" if unknown. */
const char *efi_pkt_opcode_name(uint8_t opcode);

/* True if the opcode is a request (requester → responder), false for the
 * responses (READ_RESP_*, ACK, ATOMIC_ACK), datagrams and unknown opcodes. */
bool efi_pkt_is_request(uint8_t opcode);
/* The last packet of a message that completes a receive at the peer (a
 * Send, or a Write with immediate). */
bool efi_pkt_completes_receive(uint8_t opcode);

/* True if the opcode is an unreliable datagram's (a UD QP's message). */
static inline bool efi_pkt_is_datagram(uint8_t opcode)
{
	return opcode == EFI_OP_UD_SEND_ONLY || opcode == EFI_OP_UD_SEND_ONLY_IMM;
}

/*
 * PSN arithmetic, modulo 2^24.  Two PSNs compare by their signed distance:
 * a is before b when b − a (mod 2^24) is in 1 … 2^23 − 1; the distance 2^23
 * is ambiguous and counts as "a is after b" (diff > 0), so a window must stay
 * below 2^23 packets.
 */
static inline uint32_t efi_psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & EFI_PSN_MASK;
}

/* Signed distance a − b in −(2^23 − 1) … 2^23. */
static inline int32_t efi_psn_diff(uint32_t a, uint32_t b)
{
	uint32_t d = (a - b) & EFI_PSN_MASK;
	return d > (EFI_PSN_MASK >> 1) + 1 ? (int32_t)d - (int32_t)(EFI_PSN_MASK + 1) : (int32_t)d;
}

static inline bool efi_psn_before(uint32_t a, uint32_t b)
{
	return efi_psn_diff(a, b) < 0;
}

static inline bool efi_psn_after(uint32_t a, uint32_t b)
{
	return efi_psn_diff(a, b) > 0;
}

#endif
