/* SPDX-License-Identifier: MIT */
/*
 * The connection manager's efid ⇄ efid messages (docs/connection-manager.md):
 * one UDP datagram each, framed like a control message (ctlmsg.h: 16-byte
 * header, then attributes) but with their own magic, so that neither kind can
 * be mistaken for the other.
 *
 *   REQ   active → passive: a connect request for a service
 *   ACK   passive → active: a listener has it; stop resending, wait for REP/REJ
 *   REP   passive → active: accepted, with the passive QP and the secret
 *   REJ   passive → active: refused (reason), or active → passive: withdrawn
 *   RTU   active → passive: the active QP is in RTS
 *   DREQ  either way: the connection is over (disconnect or process death)
 *   DREP  the answer to a DREQ
 *
 * Every message carries the transaction id the active efid drew (64 random
 * bits): the only handle either side accepts, so that an off-path sender
 * cannot guess one.  cm_wire_decode() checks everything a type requires, so a
 * decoded message can be used without further checks of its own fields.
 */
#ifndef EFI_CMWIRE_H
#define EFI_CMWIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctlproto.h"
#include "gid.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CM_WIRE_MAGIC 0x31434645u /* "EFC1" little-endian */
#define CM_WIRE_VERSION 1
/* Largest datagram either side sends or accepts. */
#define CM_WIRE_MAX 1200u
/* GIDs of the path set carried per side. */
#define CM_WIRE_MAX_GIDS 8u

enum cm_wire_type {
	CM_W_REQ = 1,
	CM_W_ACK = 2,
	CM_W_REP = 3,
	CM_W_REJ = 4,
	CM_W_RTU = 5,
	CM_W_DREQ = 6,
	CM_W_DREP = 7,
	CM_W_TYPE_MAX,
};

enum cm_wire_attr {
	CM_WA_TID = 1,       /* u64, every message */
	CM_WA_SERVICE = 2,   /* u32 1..65535 (REQ) */
	CM_WA_DEST = 3,      /* bin[16]: the GID the requester connects to (REQ) */
	CM_WA_SGID = 4,      /* bin[16]: the sender QP's GID (REQ, REP) */
	CM_WA_QPN = 5,       /* u32, 24 bits, not 0 (REQ, REP) */
	CM_WA_PSN = 6,       /* u32, 24 bits (REQ, REP) */
	CM_WA_MTU = 7,       /* u32, enum efi_mtu 1..5 (REQ, REP) */
	CM_WA_TIMEOUT = 8,   /* u32 ms, 1..CM_WIRE_MAX_TIMEOUT (REQ) */
	CM_WA_PRIVATE = 9,   /* bin[0..EFI_CM_PRIVATE_MAX] (REQ, REP, REJ) */
	CM_WA_KEY = 10,      /* u32, not 0 (REP) */
	CM_WA_REASON = 11,   /* u32, an EFI_CM_REJ_* (REJ) */
	CM_WA_GID = 12,      /* bin[16], repeated: the sender's path set (REQ, REP) */
	CM_WA_FROM_ACTIVE = 13, /* u32 0/1 (DREQ, DREP, REJ) */
	CM_WA_LINK_MTU = 14, /* u32 576..65535, optional (REQ, REP): the sender's link MTU */
	CM_WA_MAX,
};

#define CM_WIRE_MAX_TIMEOUT (10u * 60u * 1000u)
/* The link MTUs CM_WA_LINK_MTU may carry (common/ifacespec.h's range). */
#define CM_WIRE_MIN_LINK_MTU 576u
#define CM_WIRE_MAX_LINK_MTU 65535u

struct cm_wire_msg {
	uint16_t type;          /* enum cm_wire_type */
	uint64_t tid;
	uint32_t service;
	union efi_gid dest;
	union efi_gid sgid;
	uint32_t qpn, psn, mtu;
	uint32_t link_mtu;      /* 0: not carried (an older side) */
	uint32_t timeout_ms;
	uint32_t key;
	uint32_t reason;
	bool from_active;
	unsigned ngids;
	union efi_gid gids[CM_WIRE_MAX_GIDS];
	uint16_t private_len;
	uint8_t private_data[EFI_CM_PRIVATE_MAX];
};

/*
 * Encodes m (the fields its type uses) into buf[0..cap).  Returns the
 * datagram's length, or -EINVAL (a field out of range, an unknown type) or
 * -EMSGSIZE (cap too small).
 */
int cm_wire_encode(const struct cm_wire_msg *m, uint8_t *buf, size_t cap);

/*
 * Decodes one datagram into *m (zeroed first).  Returns 0, or -EPROTO (not a
 * CM datagram: short, wrong magic), -EPROTONOSUPPORT (another version),
 * -EBADMSG (a malformed attribute, a length that does not match, an unknown
 * type, a required field missing or out of range).  Never reads past len.
 */
int cm_wire_decode(const void *buf, size_t len, struct cm_wire_msg *m);

/* "REQ", "REP" …, "?" for other values. */
const char *cm_wire_type_str(unsigned type);

#ifdef __cplusplus
}
#endif
#endif
