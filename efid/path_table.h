/* SPDX-License-Identifier: MIT */
/*
 * efid's side of the path table (common/pathtable.h): the sealed memfd it
 * writes and the read-only descriptors it hands to libefi contexts.  Used
 * from the event loop only (single writer; no lock).
 */
#ifndef EFID_PATH_TABLE_H
#define EFID_PATH_TABLE_H

#include <stdint.h>

#include "pathtable.h"

struct efid_pathtable;

/* A new table with nlanes (1..EFI_PATHTABLE_MAX_LANES) lanes, all unknown.
 * Returns 0 and *out, or a negative errno. */
int efid_pathtable_create(unsigned nlanes, struct efid_pathtable **out);
/* Unmaps and closes; accepts NULL. */
void efid_pathtable_free(struct efid_pathtable *t);
/* Publishes lane's uplink and state (a change of state counts in the
 * lane's changes).  Out-of-range lanes are ignored.  Returns true when
 * the state changed. */
bool efid_pathtable_set(struct efid_pathtable *t, unsigned lane, uint32_t ifindex,
			const char *ifname, enum efi_pathtable_state state);
/* The lane's published state and change count. */
enum efi_pathtable_state efid_pathtable_get(const struct efid_pathtable *t, unsigned lane,
					    uint32_t *changes);
/* A new read-only descriptor of the table for a client (O_CLOEXEC; the
 * caller passes and closes it).  Returns it or a negative errno. */
int efid_pathtable_reader_fd(const struct efid_pathtable *t);
/* The mapping, for tests. */
const struct efi_pathtable *efid_pathtable_page(const struct efid_pathtable *t);

#endif
