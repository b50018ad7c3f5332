/* SPDX-License-Identifier: MIT */
/*
 * The path table's memfd (pathtable.h).  Sealed against shrinking and
 * growing (a reader's mapping never faults) and against writes through
 * any mapping made after efid's own (F_SEAL_FUTURE_WRITE): a client that
 * re-opens its descriptor through /proc read-write still cannot change
 * what every other context reads.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "pathtable.h"
#include "path_table.h"

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

struct efid_pathtable {
	int fd;
	struct efi_pathtable *page;
	unsigned nlanes;
};

int efid_pathtable_create(unsigned nlanes, struct efid_pathtable **out)
{
	struct efid_pathtable *t;
	int r;

	if (!out || nlanes < 1 || nlanes > EFI_PATHTABLE_MAX_LANES)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->nlanes = nlanes;
	t->page = MAP_FAILED;
	t->fd = memfd_create("efi-pathtable", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (t->fd < 0)
		goto err_errno;
	if (ftruncate(t->fd, EFI_PATHTABLE_SIZE) < 0)
		goto err_errno;
	t->page = mmap(NULL, EFI_PATHTABLE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd, 0);
	if (t->page == MAP_FAILED)
		goto err_errno;
	/* The header before any reader exists: it never changes again. */
	t->page->magic = EFI_PATHTABLE_MAGIC;
	t->page->version = EFI_PATHTABLE_VERSION;
	t->page->size = EFI_PATHTABLE_SIZE;
	t->page->nlanes = nlanes;
	if (fcntl(t->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
		goto err_errno;
	if (fcntl(t->fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE) < 0)
		log_debug("path table: no F_SEAL_FUTURE_WRITE (%m): clients get read-only descriptors only");
	if (fcntl(t->fd, F_ADD_SEALS, F_SEAL_SEAL) < 0)
		goto err_errno;
	*out = t;
	return 0;

err_errno:
	r = -errno;
	efid_pathtable_free(t);
	return r;
}

void efid_pathtable_free(struct efid_pathtable *t)
{
	if (!t)
		return;
	if (t->page != MAP_FAILED)
		munmap(t->page, EFI_PATHTABLE_SIZE);
	if (t->fd >= 0)
		close(t->fd);
	free(t);
}

bool efid_pathtable_set(struct efid_pathtable *t, unsigned lane, uint32_t ifindex,
			const char *ifname, enum efi_pathtable_state state)
{
	struct efi_pathtable_lane *l;
	char name[EFI_PATHTABLE_IFNAME] = "";
	bool changed;

	if (!t || lane >= t->nlanes)
		return false;
	l = &t->page->lane[lane];
	if (ifname)
		snprintf(name, sizeof(name), "%s", ifname);
	changed = l->state != (uint32_t)state;
	if (!changed && l->ifindex == ifindex && strcmp(l->ifname, name) == 0)
		return false;
	efi_pathtable_write_begin(t->page);
	__atomic_store_n(&l->ifindex, ifindex, __ATOMIC_RELAXED);
	__atomic_store_n(&l->state, (uint32_t)state, __ATOMIC_RELAXED);
	if (changed)
		__atomic_store_n(&l->changes, l->changes + 1, __ATOMIC_RELAXED);
	for (size_t i = 0; i < sizeof(name); i++)
		__atomic_store_n(&l->ifname[i], name[i], __ATOMIC_RELAXED);
	efi_pathtable_write_end(t->page);
	return changed;
}

enum efi_pathtable_state efid_pathtable_get(const struct efid_pathtable *t, unsigned lane,
					    uint32_t *changes)
{
	if (!t || lane >= t->nlanes) {
		if (changes)
			*changes = 0;
		return EFI_PT_UNKNOWN;
	}
	if (changes)
		*changes = t->page->lane[lane].changes;
	return (enum efi_pathtable_state)t->page->lane[lane].state;
}

int efid_pathtable_reader_fd(const struct efid_pathtable *t)
{
	char path[64];
	int fd;

	if (!t)
		return -EINVAL;
	/* A new open file description, read-only: a descriptor duplicated
	 * from efid's would be read-write. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", t->fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

const struct efi_pathtable *efid_pathtable_page(const struct efid_pathtable *t)
{
	return t ? t->page : NULL;
}
