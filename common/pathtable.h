/* SPDX-License-Identifier: MIT */
/*
 * The path table: efid's view of each lane's local uplink, published for
 * libefi to read on the fast path without a call (docs/path-table.md).
 *
 * efid makes it a memfd of EFI_PATHTABLE_SIZE bytes, seals it (it can
 * neither shrink nor grow, so a reader's mapping can never fault), maps it
 * read-write and hands each libefi context a read-only descriptor
 * (OPEN_DEVICE, LEASE_RESUME: EFI_A_PATH_TABLE).  efid writes it from its
 * event loop, a single writer, under a sequence count: odd while an update
 * is under way.  A reader loads the count (acquire), copies what it needs
 * with relaxed loads, fences (acquire) and loads the count again; it uses
 * the copy only when both loads saw the same even count.
 *
 * Everything a reader takes from the page is bounded before use: magic,
 * version and size are checked once, the lane count on every read.  A
 * page that fails a check is ignored (libefi runs as if it had none).
 */
#ifndef EFI_PATHTABLE_H
#define EFI_PATHTABLE_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EFI_PATHTABLE_MAGIC 0x54504645u /* "EFPT" little-endian */
#define EFI_PATHTABLE_VERSION 1u
#define EFI_PATHTABLE_SIZE 4096u
#define EFI_PATHTABLE_MAX_LANES 8u /* EFID_LANES_MAX, libefi's EFI_MAX_PATHS */
#define EFI_PATHTABLE_IFNAME 16u

enum efi_pathtable_state {
	EFI_PT_UNKNOWN = 0, /* no uplink for the lane, or not seen yet */
	EFI_PT_UP = 1,      /* administratively up with carrier */
	EFI_PT_DOWN = 2,    /* down, no carrier, or gone: avoid the lane */
};

/* One lane: the uplink its packets leave by on this host. */
struct efi_pathtable_lane {
	uint32_t ifindex;               /* the uplink's, in efid's namespace (0: none) */
	uint32_t state;                 /* enum efi_pathtable_state */
	uint32_t changes;               /* state changes since the table was made */
	uint32_t reserved;
	char ifname[EFI_PATHTABLE_IFNAME]; /* NUL-terminated within the field */
};

struct efi_pathtable {
	uint32_t magic;      /* EFI_PATHTABLE_MAGIC; written before the page is handed out */
	uint32_t version;    /* EFI_PATHTABLE_VERSION; a reader ignores any other */
	uint32_t size;       /* bytes of the page (EFI_PATHTABLE_SIZE) */
	uint32_t seq;        /* the sequence count: odd while being written */
	uint64_t generation; /* publications so far (under seq) */
	uint32_t nlanes;     /* entries of lane[] in use (under seq), ≤ EFI_PATHTABLE_MAX_LANES */
	uint32_t reserved;
	struct efi_pathtable_lane lane[EFI_PATHTABLE_MAX_LANES];
};

static_assert(sizeof(struct efi_pathtable) <= EFI_PATHTABLE_SIZE, "the table is one page");
static_assert(sizeof(struct efi_pathtable_lane) == 32, "compact lane entries");

/* The header a reader checks once, before it uses the page at all: false
 * for a page of another version, the wrong magic, or a size that does not
 * cover the structure (len: the bytes the reader mapped). */
static inline bool efi_pathtable_valid(const struct efi_pathtable *t, size_t len)
{
	if (!t || len < sizeof(*t))
		return false;
	return __atomic_load_n(&t->magic, __ATOMIC_RELAXED) == EFI_PATHTABLE_MAGIC &&
	       __atomic_load_n(&t->version, __ATOMIC_RELAXED) == EFI_PATHTABLE_VERSION &&
	       __atomic_load_n(&t->size, __ATOMIC_RELAXED) >= sizeof(*t) &&
	       __atomic_load_n(&t->size, __ATOMIC_RELAXED) <= len;
}

/* The sequence count (acquire): equal to an earlier value, nothing changed. */
static inline uint32_t efi_pathtable_seq(const struct efi_pathtable *t)
{
	return __atomic_load_n(&t->seq, __ATOMIC_ACQUIRE);
}

/* A consistent copy of the lane states: states[i] for i < *nlanes.
 * Returns 0 and *seq (the count the copy belongs to); -EAGAIN when the
 * writer kept it busy for every try (the caller tries again later);
 * -EINVAL when the lane count is out of range (a broken page). */
static inline int efi_pathtable_read(const struct efi_pathtable *t, uint32_t *seq,
				     uint32_t *nlanes, uint8_t states[EFI_PATHTABLE_MAX_LANES],
				     uint32_t changes[EFI_PATHTABLE_MAX_LANES])
{
	for (int tries = 0; tries < 64; tries++) {
		uint32_t s1 = __atomic_load_n(&t->seq, __ATOMIC_ACQUIRE), s2, n;

		if (s1 & 1)
			continue;
		n = __atomic_load_n(&t->nlanes, __ATOMIC_RELAXED);
		if (n > EFI_PATHTABLE_MAX_LANES) {
			/* Torn, or broken: only a stable count is an error. */
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (__atomic_load_n(&t->seq, __ATOMIC_RELAXED) == s1)
				return -22; /* EINVAL, without <errno.h> in every user */
			continue;
		}
		for (uint32_t i = 0; i < n; i++) {
			uint32_t st = __atomic_load_n(&t->lane[i].state, __ATOMIC_RELAXED);
			states[i] = st <= EFI_PT_DOWN ? (uint8_t)st : EFI_PT_UNKNOWN;
			if (changes)
				changes[i] = __atomic_load_n(&t->lane[i].changes, __ATOMIC_RELAXED);
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&t->seq, __ATOMIC_RELAXED);
		if (s1 == s2) {
			*seq = s1;
			*nlanes = n;
			return 0;
		}
	}
	return -11; /* EAGAIN */
}

/* The writer's side (efid, one writer): begin, store fields with
 * __atomic_store_n(…, __ATOMIC_RELAXED), end. */
static inline void efi_pathtable_write_begin(struct efi_pathtable *t)
{
	uint32_t s = __atomic_load_n(&t->seq, __ATOMIC_RELAXED);

	__atomic_store_n(&t->seq, s + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static inline void efi_pathtable_write_end(struct efi_pathtable *t)
{
	uint32_t s = __atomic_load_n(&t->seq, __ATOMIC_RELAXED);

	__atomic_store_n(&t->generation, __atomic_load_n(&t->generation, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&t->seq, s + 1, __ATOMIC_RELEASE);
}

/* JSON/human words, indexed by enum efi_pathtable_state. */
#define EFI_PATHTABLE_STATE_NAMES { "unknown", "up", "down" }

#endif
