/* SPDX-License-Identifier: MIT */
/*
 * Injects larger than libefi's inline limit: the data is copied into a slot
 * of a registered bounce pool and sent from there, so the caller's buffer
 * is free on return and, for fi_inject, no completion is waited for.
 *
 * Why: libefi copies at most max_inline_data (1024) bytes with a work
 * request.  Above that an application that cannot inject posts a signaled
 * send and waits for its completion, which needs the peer's ACK: a network
 * round trip per message on top of the answer.  ofi_rxm (and Open MPI above
 * it) inject whatever fits the core's inject_size; with 1024 its 1 KiB
 * messages waited for that ACK, and under load the waiting rank yields the
 * CPU (mpi_yield_when_idle), so 1 KiB ping-pongs cost ~165 µs against
 * ~11 µs at 512 B.  The tcp provider completes a send once it is in the
 * socket, which is what a bounce copy gives here.
 *
 * The pool belongs to the CQ the sends complete on (an endpoint's own for
 * an endpoint without a transmit CQ): a slot's send is always signaled, and
 * its completion, found by its address in cq.c, gives the slot back and is
 * then reported (or not) as the application's operation, whose wr_id the
 * slot keeps.  efi_destroy_qp flushes every send still queued into the CQ,
 * so closing an endpoint returns its slots; the pool outlives every
 * endpoint bound to the CQ and is unmapped with it.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "efi_fi.h"

/* Header of a slot (the data follows it): the operation's own wr_id. */
struct bounce_hdr {
	uint64_t wr_id;
};

#define SLOT_DATA	64	/* data offset: header, cache-line aligned */
#define SLOT_STRIDE	(SLOT_DATA + ((EFI_FI_INJECT_MAX + 63) / 64) * 64)

void efi_fi_bounce_init(struct efi_fi_bounce *b, unsigned int nslots)
{
	memset(b, 0, sizeof(*b));
	pthread_mutex_init(&b->lock, NULL);
	b->nslots = nslots > EFI_FI_BOUNCE_SLOTS ? EFI_FI_BOUNCE_SLOTS : nslots;
}

void efi_fi_bounce_fini(struct efi_fi_bounce *b)
{
	efi_dereg_mr(b->mr);
	if (b->base)
		munmap(b->base, (size_t)b->nslots * SLOT_STRIDE);
	pthread_mutex_destroy(&b->lock);
	b->base = NULL;
	b->mr = NULL;
}

/* Maps and registers the pool (the first large inject); b->lock held.
 * Anonymous pages: only slots ever used take memory. */
static int pool_map(struct efi_fi_bounce *b, struct efi_pd *pd)
{
	size_t len = (size_t)b->nslots * SLOT_STRIDE;
	void *p;

	if (!b->nslots)
		return -FI_EAGAIN;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -FI_ENOMEM;
	b->mr = efi_reg_mr(pd, p, len, EFI_ACCESS_LOCAL_WRITE);
	if (!b->mr) {
		int ret = efi_fi_errno(errno);

		munmap(p, len);
		return ret ? ret : -FI_ENOMEM;
	}
	for (unsigned int i = 0; i < b->nslots; i++)
		b->free[i] = (uint16_t)(b->nslots - 1 - i);
	b->nfree = b->nslots;
	/* read without the lock by efi_fi_bounce_put */
	__atomic_store_n(&b->base, (uint8_t *)p, __ATOMIC_RELEASE);
	return 0;
}

int efi_fi_bounce_get(struct efi_fi_bounce *b, struct efi_pd *pd, uint64_t wr_id,
		      const struct iovec *iov, size_t count, struct efi_sge *sge,
		      uint64_t *slot_wr_id)
{
	uint8_t *slot;
	size_t off = 0;
	int ret = 0;

	pthread_mutex_lock(&b->lock);
	if (!b->base)
		ret = pool_map(b, pd);
	if (!ret && !b->nfree)
		ret = -FI_EAGAIN;	/* all in flight: reap completions first */
	if (ret) {
		pthread_mutex_unlock(&b->lock);
		return ret;
	}
	slot = b->base + (size_t)b->free[--b->nfree] * SLOT_STRIDE;
	sge->lkey = b->mr->lkey;
	pthread_mutex_unlock(&b->lock);
	((struct bounce_hdr *)slot)->wr_id = wr_id;
	for (size_t i = 0; i < count; i++) {
		memcpy(slot + SLOT_DATA + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	sge->addr = (uint64_t)(uintptr_t)(slot + SLOT_DATA);
	sge->length = (uint32_t)off;
	/* slots are 64-byte aligned: no flag bit of wr_id is set */
	*slot_wr_id = (uint64_t)(uintptr_t)slot;
	return 0;
}

bool efi_fi_bounce_put(struct efi_fi_bounce *b, uint64_t *wr_id)
{
	uintptr_t a = (uintptr_t)*wr_id;
	/* set once, before any slot's send is posted */
	uintptr_t base = (uintptr_t)__atomic_load_n(&b->base, __ATOMIC_ACQUIRE);
	size_t i;

	if (!base || a < base || a >= base + (size_t)b->nslots * SLOT_STRIDE)
		return false;
	i = (a - base) / SLOT_STRIDE;
	*wr_id = ((struct bounce_hdr *)(uintptr_t)a)->wr_id;
	pthread_mutex_lock(&b->lock);
	b->free[b->nfree++] = (uint16_t)i;
	pthread_mutex_unlock(&b->lock);
	return true;
}
