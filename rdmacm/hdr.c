/* SPDX-License-Identifier: MIT */
/*
 * The 8-byte header libefi-rdmacm puts before a consumer's private data in
 * a REQ and a REP (struct rcm_hdr): what the kernel's CM carries in its own
 * headers and efi_cm does not.  What a peer sends is outside input: the
 * parser bounds every length and trusts no field (tests/fuzz/fuzz_rcmhdr.c).
 */
#include "config.h"

#include <arpa/inet.h>
#include <string.h>

#include "rdmacm/rdmacm_int.h"

size_t rcm_hdr_pack(uint8_t *buf, uint16_t port, const struct rdma_conn_param *p)
{
	struct rcm_hdr h = {
		.magic = RCM_HDR_MAGIC,
		.version = RCM_HDR_VERSION,
		.port = htons(port),
	};
	size_t n = p && p->private_data ? p->private_data_len : 0;

	if (p) {
		h.responder_resources = p->responder_resources;
		h.initiator_depth = p->initiator_depth;
		h.rnr_retry_count = p->rnr_retry_count;
	}
	/* the callers checked the consumer's length against their limit;
	 * this bound holds whatever they did */
	if (n > EFI_CM_PRIVATE_DATA_MAX - sizeof(h))
		n = EFI_CM_PRIVATE_DATA_MAX - sizeof(h);
	memcpy(buf, &h, sizeof(h));
	if (n)
		memcpy(buf + sizeof(h), p->private_data, n);
	return sizeof(h) + n;
}

int rcm_hdr_unpack(const uint8_t *data, size_t len, struct rdma_conn_param *c,
		   uint8_t pdata[EFI_CM_PRIVATE_DATA_MAX], uint16_t *peer_port)
{
	struct rcm_hdr h;
	int ours = 0;

	if (len > EFI_CM_PRIVATE_DATA_MAX)
		return -1;
	/* a peer that is not libefi-rdmacm (an efi_connect of its own) sends
	 * raw data: it is the consumer's, whole */
	if (len >= sizeof(h) && data[0] == RCM_HDR_MAGIC && data[1] == RCM_HDR_VERSION) {
		memcpy(&h, data, sizeof(h));
		c->responder_resources = h.responder_resources;
		c->initiator_depth = h.initiator_depth;
		c->rnr_retry_count = h.rnr_retry_count;
		if (peer_port)
			*peer_port = ntohs(h.port);
		data += sizeof(h);
		len -= sizeof(h);
		ours = 1;
	}
	if (len)
		memcpy(pdata, data, len);
	c->private_data = len ? pdata : NULL;
	c->private_data_len = (uint8_t)len;
	return ours;
}
