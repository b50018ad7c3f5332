/* SPDX-License-Identifier: MIT */
/*
 * LIST replies that never exceed what the protocol carries (issue 22): an
 * interface's contexts and CM objects go into its IFACE nest while they fit
 * the nest's 16-bit length, and into continuation nests after that (or are
 * counted as omitted for clients that did not ask for EFI_F_LIST_PAGED);
 * a whole listing is cut into pages of whole top-level entries.
 */
#ifndef EFID_LIST_PAGES_H
#define EFID_LIST_PAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct efid;
struct ctl_buf;

/* Payload bytes of one page: far below the protocol's 4 MiB, and below
 * the per-connection reply limit, so a page is never refused for size. */
#define LIST_PAGE_BYTES (128u * 1024u)
/* What a whole listing may take inside efid while it is paged. */
#define LIST_MAX_BYTES (256u * 1024u * 1024u)

/* Puts the contexts and CM objects of instance/ifname into the IFACE nest
 * opened at *nest in b, continuing it in new nests when paged (*nest is then
 * the last one, still open).  Sets b's sticky error on failure. */
void list_put_detail(struct efid *d, struct ctl_buf *b, size_t *nest, const char *instance,
		     const char *ifname, bool paged);

/* Copies into body (a reply being built) the header attributes of the
 * complete listing full, and its entries from number cursor on, as many
 * as fit LIST_PAGE_BYTES (at least one), then EFI_A_LIST_NEXT when more
 * remain.  Returns 0 or -errno (body's error). */
int list_page(const struct ctl_buf *full, uint32_t cursor, struct ctl_buf *body);

#endif
