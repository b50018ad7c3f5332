/* SPDX-License-Identifier: MIT */
/*
 * libefi's reader of efid's path table (common/pathtable.h,
 * docs/path-table.md): which lanes leave by a local uplink that is down.
 *
 * The context maps the table read-only (PROT_READ) and looks at its
 * sequence count, one acquire load, each time a QP's packets are about to
 * be chosen paths for (efi_xport_flush_qp); only a changed count costs a
 * copy of the lanes.  A QP compares the context's epoch with the one it
 * acted on, and on a difference:
 *  - a path whose lane went down is suspected at once and what it carries
 *    goes again on the others (efi_path_on_local_down, efi_retx_path_down);
 *    it gets no probes while the table says down;
 *  - a path whose lane came back up is probed at once and re-admitted by
 *    the probe's answer, as any suspected path (efi_path_on_local_up).
 * A QP with one path is left alone: there is nowhere else to go.
 *
 * Everything here runs under ctx->lock (the transport lock); so does the
 * swap of the mapping after efid restarted (efi_pt_attach).
 */
#ifndef EFI_LIBEFI_PATH_TABLE_H
#define EFI_LIBEFI_PATH_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pathtable.h"

struct efi_context_int;
struct efi_qp_int;

/* The context's view of the table (zero: none). */
struct efi_pt {
	const struct efi_pathtable *map; /* read-only mapping, or NULL */
	uint32_t seq;                    /* the count last looked at */
	uint32_t epoch;                  /* bumped whenever down changes */
	uint8_t down;                    /* bit L: lane L's uplink is down */
	uint64_t refreshes, broken;      /* copies taken; pages found broken */
};

/* $EFI_PATHTABLE=0 turns the table off (no request for it; for
 * comparisons).  True when libefi should ask efid for one. */
bool efi_pt_wanted(void);

/* Maps the table behind fd (read-only) into ctx, replacing (and
 * unmapping) any earlier one.  Takes fd (closes it).  Returns 0, or a
 * negative errno when the page is unusable (-EPROTO: wrong magic, version
 * or size), in which case ctx keeps running without a table.
 * ctx->lock held (or the context not yet shared). */
int efi_pt_attach(struct efi_context_int *ctx, int fd);
/* Unmaps; ctx->lock held or the context no longer shared. */
void efi_pt_detach(struct efi_context_int *ctx);

/* Before qp's packets get paths: one load of the table's count; acts on a
 * change (see above).  ctx->lock held. */
void efi_pt_check(struct efi_context_int *ctx, struct efi_qp_int *qp, uint64_t now);

/* The lane a response to a request that came on `path` leaves by: that
 * lane, unless the table says its uplink is down, then the next one that
 * is not (the response still names path, so the requester credits the
 * right one; only its UDP ports change).  ctx->lock held. */
static inline unsigned efi_pt_response_lane(const struct efi_pt *pt, unsigned path,
					    unsigned nlanes)
{
	if (!(pt->down & (1u << path)) || nlanes < 2)
		return path;
	for (unsigned i = 1; i < nlanes; i++) {
		unsigned l = (path + i) % nlanes;
		if (!(pt->down & (1u << l)))
			return l;
	}
	return path; /* every lane is down: as good as any */
}

/* Forgets what qp acted on (its paths were just initialised). */
void efi_pt_qp_reset(struct efi_context_int *ctx, struct efi_qp_int *qp);

#endif
