/* SPDX-License-Identifier: MIT */
/* Connection-manager datagrams between efids; see cmwire.h. */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

#include "cmwire.h"
#include "ctlmsg.h"

static const struct ctl_policy wire_policy[CM_WA_MAX] = {
	[CM_WA_TID] = { .kind = CTL_U64 },
	[CM_WA_SERVICE] = { .kind = CTL_U32 },
	[CM_WA_DEST] = { .kind = CTL_BIN, .minlen = 16, .maxlen = 16 },
	[CM_WA_SGID] = { .kind = CTL_BIN, .minlen = 16, .maxlen = 16 },
	[CM_WA_QPN] = { .kind = CTL_U32 },
	[CM_WA_PSN] = { .kind = CTL_U32 },
	[CM_WA_MTU] = { .kind = CTL_U32 },
	[CM_WA_TIMEOUT] = { .kind = CTL_U32 },
	[CM_WA_PRIVATE] = { .kind = CTL_BIN, .minlen = 0, .maxlen = EFI_CM_PRIVATE_MAX },
	[CM_WA_KEY] = { .kind = CTL_U32 },
	[CM_WA_REASON] = { .kind = CTL_U32 },
	[CM_WA_GID] = { .kind = CTL_BIN, .multi = true, .minlen = 16, .maxlen = 16 },
	[CM_WA_FROM_ACTIVE] = { .kind = CTL_U32 },
	[CM_WA_LINK_MTU] = { .kind = CTL_U32 },
};

#define BIT(a) (1u << (a))
/* Fields each type must carry. */
static const unsigned required[CM_W_TYPE_MAX] = {
	[CM_W_REQ] = BIT(CM_WA_TID) | BIT(CM_WA_SERVICE) | BIT(CM_WA_DEST) | BIT(CM_WA_SGID) |
		     BIT(CM_WA_QPN) | BIT(CM_WA_PSN) | BIT(CM_WA_MTU) | BIT(CM_WA_TIMEOUT),
	[CM_W_ACK] = BIT(CM_WA_TID),
	[CM_W_REP] = BIT(CM_WA_TID) | BIT(CM_WA_SGID) | BIT(CM_WA_QPN) | BIT(CM_WA_PSN) |
		     BIT(CM_WA_MTU) | BIT(CM_WA_KEY),
	[CM_W_REJ] = BIT(CM_WA_TID) | BIT(CM_WA_REASON),
	[CM_W_RTU] = BIT(CM_WA_TID),
	[CM_W_DREQ] = BIT(CM_WA_TID) | BIT(CM_WA_FROM_ACTIVE),
	[CM_W_DREP] = BIT(CM_WA_TID) | BIT(CM_WA_FROM_ACTIVE),
};

const char *cm_wire_type_str(unsigned type)
{
	static const char *const names[CM_W_TYPE_MAX] = {
		[CM_W_REQ] = "REQ", [CM_W_ACK] = "ACK", [CM_W_REP] = "REP", [CM_W_REJ] = "REJ",
		[CM_W_RTU] = "RTU", [CM_W_DREQ] = "DREQ", [CM_W_DREP] = "DREP",
	};
	return type < CM_W_TYPE_MAX && names[type] ? names[type] : "?";
}

static bool fields_valid(const struct cm_wire_msg *m, unsigned have)
{
	if (m->type == 0 || m->type >= CM_W_TYPE_MAX)
		return false;
	if ((have & required[m->type]) != required[m->type])
		return false;
	if ((have & BIT(CM_WA_SERVICE)) && (m->service == 0 || m->service > 65535))
		return false;
	if ((have & BIT(CM_WA_QPN)) && (m->qpn == 0 || m->qpn > 0xffffffu))
		return false;
	if ((have & BIT(CM_WA_PSN)) && m->psn > 0xffffffu)
		return false;
	if ((have & BIT(CM_WA_MTU)) && (m->mtu < 1 || m->mtu > 5))
		return false;
	if ((have & BIT(CM_WA_TIMEOUT)) && (m->timeout_ms == 0 || m->timeout_ms > CM_WIRE_MAX_TIMEOUT))
		return false;
	if ((have & BIT(CM_WA_LINK_MTU)) &&
	    (m->link_mtu < CM_WIRE_MIN_LINK_MTU || m->link_mtu > CM_WIRE_MAX_LINK_MTU))
		return false;
	if ((have & BIT(CM_WA_KEY)) && m->key == 0)
		return false;
	if ((have & BIT(CM_WA_REASON)) &&
	    (m->reason < EFI_CM_REJ_CONSUMER || m->reason > EFI_CM_REJ_EXPIRED))
		return false;
	if (m->ngids > CM_WIRE_MAX_GIDS || m->private_len > EFI_CM_PRIVATE_MAX)
		return false;
	return true;
}

/* The fields a message of m->type carries (required plus optional). */
static unsigned carried(uint16_t type)
{
	unsigned f = required[type];
	if (type == CM_W_REQ || type == CM_W_REP)
		f |= BIT(CM_WA_GID) | BIT(CM_WA_PRIVATE) | BIT(CM_WA_LINK_MTU);
	if (type == CM_W_REJ)
		f |= BIT(CM_WA_PRIVATE) | BIT(CM_WA_FROM_ACTIVE);
	return f;
}

int cm_wire_encode(const struct cm_wire_msg *m, uint8_t *buf, size_t cap)
{
	struct ctl_buf b;
	int r;

	if (m->type == 0 || m->type >= CM_W_TYPE_MAX)
		return -EINVAL;
	unsigned f = carried(m->type);
	if (!m->link_mtu)
		f &= ~BIT(CM_WA_LINK_MTU);	/* optional: 0 is not carried */
	if (!fields_valid(m, required[m->type] | (f & BIT(CM_WA_LINK_MTU))))
		return -EINVAL;
	ctl_buf_init(&b);
	b.limit = CM_WIRE_MAX - CTL_HDR_SIZE;
	ctl_msg_begin(&b, m->type, 0);
	ctl_put_u64(&b, CM_WA_TID, m->tid);
	if (f & BIT(CM_WA_SERVICE))
		ctl_put_u32(&b, CM_WA_SERVICE, m->service);
	if (f & BIT(CM_WA_DEST))
		ctl_put(&b, CM_WA_DEST, m->dest.raw, 16);
	if (f & BIT(CM_WA_SGID))
		ctl_put(&b, CM_WA_SGID, m->sgid.raw, 16);
	if (f & BIT(CM_WA_QPN))
		ctl_put_u32(&b, CM_WA_QPN, m->qpn);
	if (f & BIT(CM_WA_PSN))
		ctl_put_u32(&b, CM_WA_PSN, m->psn);
	if (f & BIT(CM_WA_MTU))
		ctl_put_u32(&b, CM_WA_MTU, m->mtu);
	if (f & BIT(CM_WA_TIMEOUT))
		ctl_put_u32(&b, CM_WA_TIMEOUT, m->timeout_ms);
	if (f & BIT(CM_WA_LINK_MTU))
		ctl_put_u32(&b, CM_WA_LINK_MTU, m->link_mtu);
	if (f & BIT(CM_WA_KEY))
		ctl_put_u32(&b, CM_WA_KEY, m->key);
	if (f & BIT(CM_WA_REASON))
		ctl_put_u32(&b, CM_WA_REASON, m->reason);
	if (f & BIT(CM_WA_FROM_ACTIVE))
		ctl_put_u32(&b, CM_WA_FROM_ACTIVE, m->from_active ? 1 : 0);
	if (f & BIT(CM_WA_GID))
		for (unsigned i = 0; i < m->ngids; i++)
			ctl_put(&b, CM_WA_GID, m->gids[i].raw, 16);
	if ((f & BIT(CM_WA_PRIVATE)) && m->private_len)
		ctl_put(&b, CM_WA_PRIVATE, m->private_data, m->private_len);
	r = ctl_msg_end(&b);
	if (r == 0 && b.len > cap)
		r = -EMSGSIZE;
	if (r == 0) {
		uint32_t magic = htole32(CM_WIRE_MAGIC);
		memcpy(b.data, &magic, 4);
		memcpy(buf, b.data, b.len);
		r = (int)b.len;
	}
	ctl_buf_free(&b);
	return r;
}

int cm_wire_decode(const void *buf, size_t len, struct cm_wire_msg *m)
{
	const uint8_t *p = buf;
	struct ctl_attr tb[CM_WA_MAX];
	uint32_t magic, length;
	uint16_t version, type;
	unsigned have = 0;

	memset(m, 0, sizeof(*m));
	if (len < CTL_HDR_SIZE || len > CM_WIRE_MAX)
		return -EPROTO;
	memcpy(&magic, p, 4);
	memcpy(&version, p + 4, 2);
	memcpy(&type, p + 6, 2);
	memcpy(&length, p + 8, 4);
	if (le32toh(magic) != CM_WIRE_MAGIC)
		return -EPROTO;
	if (le16toh(version) != CM_WIRE_VERSION)
		return -EPROTONOSUPPORT;
	type = le16toh(type);
	if ((size_t)le32toh(length) != len - CTL_HDR_SIZE)
		return -EBADMSG;
	if (type == 0 || type >= CM_W_TYPE_MAX)
		return -EBADMSG;
	size_t plen = len - CTL_HDR_SIZE;
	m->type = type;
	if (ctl_parse(p + CTL_HDR_SIZE, plen, wire_policy, CM_WA_MAX, tb, NULL) < 0)
		return -EBADMSG;
	for (unsigned a = 1; a < CM_WA_MAX; a++)
		if (ctl_has(tb, (uint16_t)a))
			have |= BIT(a);
	/* Fields another type carries are not an error (a newer sender may add
	 * some), but they are not taken either. */
	have &= carried(m->type);
	if (have & BIT(CM_WA_TID))
		ctl_attr_u64(&tb[CM_WA_TID], &m->tid);
	if (have & BIT(CM_WA_SERVICE))
		ctl_attr_u32(&tb[CM_WA_SERVICE], &m->service);
	if (have & BIT(CM_WA_DEST))
		memcpy(m->dest.raw, tb[CM_WA_DEST].data, 16);
	if (have & BIT(CM_WA_SGID))
		memcpy(m->sgid.raw, tb[CM_WA_SGID].data, 16);
	if (have & BIT(CM_WA_QPN))
		ctl_attr_u32(&tb[CM_WA_QPN], &m->qpn);
	if (have & BIT(CM_WA_PSN))
		ctl_attr_u32(&tb[CM_WA_PSN], &m->psn);
	if (have & BIT(CM_WA_MTU))
		ctl_attr_u32(&tb[CM_WA_MTU], &m->mtu);
	if (have & BIT(CM_WA_TIMEOUT))
		ctl_attr_u32(&tb[CM_WA_TIMEOUT], &m->timeout_ms);
	if (have & BIT(CM_WA_LINK_MTU))
		ctl_attr_u32(&tb[CM_WA_LINK_MTU], &m->link_mtu);
	if (have & BIT(CM_WA_KEY))
		ctl_attr_u32(&tb[CM_WA_KEY], &m->key);
	if (have & BIT(CM_WA_REASON))
		ctl_attr_u32(&tb[CM_WA_REASON], &m->reason);
	if (have & BIT(CM_WA_FROM_ACTIVE)) {
		uint32_t v;
		ctl_attr_u32(&tb[CM_WA_FROM_ACTIVE], &v);
		if (v > 1)
			return -EBADMSG;
		m->from_active = v == 1;
	}
	if (have & BIT(CM_WA_PRIVATE)) {
		m->private_len = tb[CM_WA_PRIVATE].len;
		memcpy(m->private_data, tb[CM_WA_PRIVATE].data, m->private_len);
	}
	if (have & BIT(CM_WA_GID)) {
		struct ctl_iter it;
		struct ctl_attr a;
		ctl_iter_init(&it, p + CTL_HDR_SIZE, plen);
		while (ctl_iter_next(&it, &a)) {
			if (a.type != CM_WA_GID)
				continue;
			if (m->ngids >= CM_WIRE_MAX_GIDS)
				return -EBADMSG;
			memcpy(m->gids[m->ngids++].raw, a.data, 16);
		}
	}
	if (!fields_valid(m, have))
		return -EBADMSG;
	return 0;
}
