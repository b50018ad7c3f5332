/* SPDX-License-Identifier: MIT */
/* Continued IFACE nests and LIST pages (list_pages.h). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "cm.h"
#include "ctlmsg.h"
#include "lease.h"
#include "list_pages.h"

/* Room left in a nest for one more attribute and DETAIL_OMITTED. */
#define NEST_MAX (UINT16_MAX - 16u)

/* Calls fn for each top-level attribute of attrs[0..len) with its raw
 * bytes (header and padding included).  Returns false on a malformed one. */
struct raw_attr {
	const uint8_t *p;
	size_t len;
	uint16_t type;
};

static bool next_raw(struct ctl_iter *it, struct raw_attr *r)
{
	struct ctl_attr a;
	const uint8_t *start = it->p;
	if (!ctl_iter_next(it, &a))
		return false;
	r->p = start;
	r->len = (size_t)(it->p - start);
	r->type = a.type;
	return true;
}

void list_put_detail(struct efid *d, struct ctl_buf *b, size_t *nest, const char *instance,
		     const char *ifname, bool paged)
{
	struct ctl_buf det;
	struct ctl_iter it;
	struct raw_attr r;
	uint32_t omitted = 0;

	/* Built apart first: how much there is is known only afterwards. */
	ctl_buf_init(&det);
	det.limit = LIST_MAX_BYTES;
	ctl_msg_begin(&det, EFI_CTL_REPLY, 0);
	lease_put_contexts(d, &det, instance, ifname);
	cm_put_status(d, &det, instance, ifname);
	if (det.err) {
		if (!b->err)
			b->err = det.err;
		goto out;
	}
	ctl_iter_init(&it, det.data + CTL_HDR_SIZE, det.len - CTL_HDR_SIZE);
	while (!b->err && next_raw(&it, &r)) {
		if (b->len - *nest + r.len <= NEST_MAX) {
			ctl_put_raw(b, r.p, r.len);
		} else if (paged) {
			ctl_nest_end(b, *nest);
			*nest = ctl_nest_begin(b, EFI_A_IFACE);
			ctl_put_str(b, EFI_A_INSTANCE, instance);
			ctl_put_str(b, EFI_A_IFNAME, ifname);
			ctl_put_u32(b, EFI_A_LIST_CONTINUED, 1);
			ctl_put_raw(b, r.p, r.len);
		} else {
			omitted++;
		}
	}
	/* Clients that did not ask for pages still get a listing that parses
	 * (libefi lists devices this way), short of what did not fit. */
	if (omitted)
		ctl_put_u32(b, EFI_A_DETAIL_OMITTED, omitted);
out:
	ctl_buf_free(&det);
}

static bool header_attr(uint16_t type)
{
	return type == EFI_A_HOST_ID || type == EFI_A_SERVER_VERSION || type == EFI_A_CALLER_INSTANCE;
}

int list_page(const struct ctl_buf *full, uint32_t cursor, struct ctl_buf *body)
{
	struct ctl_iter it;
	struct raw_attr r;
	uint32_t index = 0;
	size_t start = body->len;
	bool any = false;

	ctl_iter_init(&it, full->data + CTL_HDR_SIZE, full->len - CTL_HDR_SIZE);
	while (!body->err && next_raw(&it, &r)) {
		if (header_attr(r.type)) {
			ctl_put_raw(body, r.p, r.len);
			continue;
		}
		if (index++ < cursor)
			continue;
		if (any && body->len - start + r.len > LIST_PAGE_BYTES) {
			ctl_put_u32(body, EFI_A_LIST_NEXT, index - 1);
			break;
		}
		ctl_put_raw(body, r.p, r.len);
		any = true;
	}
	return body->err;
}
