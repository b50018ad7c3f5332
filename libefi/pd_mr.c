/* SPDX-License-Identifier: MIT */
/*
 * Protection domains and memory regions.  MR keys are random 32-bit values
 * from getrandom (lkey == rkey), unguessable and never sequential, kept in an
 * open-addressing hash table so the responder finds an MR by rkey in O(1).
 * Every remote access goes through efi_mr_check before a byte is touched.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "efi_int.h"
#include "lease.h"

/* Takes ctx->obj_lock. */
struct efi_pd *efi_alloc_pd(struct efi_context *context)
{
	struct efi_context_int *ctx = ctx_of(context);
	struct efi_pd_int *pd;

	if (!context) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->pub.context = context;
	pthread_mutex_lock(&ctx->obj_lock);
	pd->pub.handle = ++ctx->next_pd_handle;
	ctx->npd++;
	pthread_mutex_unlock(&ctx->obj_lock);
	return &pd->pub;
}

/* Takes ctx->obj_lock. */
int efi_dealloc_pd(struct efi_pd *pub)
{
	struct efi_pd_int *pd = (struct efi_pd_int *)pub;
	struct efi_context_int *ctx;

	if (!pd)
		return 0;
	if (atomic_load(&pd->users) > 0)
		return EBUSY;
	ctx = ctx_of(pd->pub.context);
	pthread_mutex_lock(&ctx->obj_lock);
	ctx->npd--;
	pthread_mutex_unlock(&ctx->obj_lock);
	free(pd);
	return 0;
}

static uint32_t mr_hash(uint32_t key)
{
	return key * 2654435761u;
}

static struct efi_mr_int **mr_slot(struct efi_context_int *ctx, uint32_t key)
{
	uint32_t mask = ctx->mr_cap - 1, i = mr_hash(key) & mask;

	for (;;) {
		struct efi_mr_int *m = ctx->mr_slots[i];
		if (!m || m->pub.rkey == key)
			return &ctx->mr_slots[i];
		i = (i + 1) & mask;
	}
}

/* ctx->lock held. */
struct efi_mr_int *efi_mr_lookup(struct efi_context_int *ctx, uint32_t key)
{
	if (!ctx->mr_cap)
		return NULL;
	return *mr_slot(ctx, key);
}

/* ctx->lock held. */
struct efi_mr_int *efi_mr_check(struct efi_context_int *ctx, uint32_t key, struct efi_pd *pd,
				uint64_t va, uint64_t len, int need)
{
	struct efi_mr_int *mr = efi_mr_lookup(ctx, key);

	if (!mr || (pd && mr->pub.pd != pd))
		return NULL;
	if ((mr->access & need) != need)
		return NULL;
	if (len == 0)
		return mr;
	/* Overflow-safe bounds check: va ≥ start and len ≤ end − va. */
	if (va < mr->start || va > mr->end || len > mr->end - va)
		return NULL;
	return mr;
}

static int mr_table_grow(struct efi_context_int *ctx)
{
	uint32_t ncap = ctx->mr_cap ? ctx->mr_cap * 2 : 64, ocap = ctx->mr_cap;
	struct efi_mr_int **old = ctx->mr_slots, **nslots = calloc(ncap, sizeof(*nslots));

	if (!nslots)
		return -ENOMEM;
	ctx->mr_slots = nslots;
	ctx->mr_cap = ncap;
	for (uint32_t i = 0; i < ocap; i++)
		if (old[i])
			*mr_slot(ctx, old[i]->pub.rkey) = old[i];
	free(old);
	return 0;
}

/* Removes a key, re-inserting the rest of its cluster (linear probing). */
static void mr_table_remove(struct efi_context_int *ctx, uint32_t key)
{
	uint32_t mask = ctx->mr_cap - 1;
	struct efi_mr_int **s = mr_slot(ctx, key);
	uint32_t i;

	if (!*s)
		return;
	*s = NULL;
	ctx->mr_count--;
	i = (uint32_t)(s - ctx->mr_slots);
	for (i = (i + 1) & mask; ctx->mr_slots[i]; i = (i + 1) & mask) {
		struct efi_mr_int *m = ctx->mr_slots[i];
		ctx->mr_slots[i] = NULL;
		*mr_slot(ctx, m->pub.rkey) = m;
	}
}

void efi_mr_table_free(struct efi_context_int *ctx)
{
	free(ctx->mr_slots);
	ctx->mr_slots = NULL;
	ctx->mr_cap = ctx->mr_count = 0;
}

#define EFI_ACCESS_ALL (EFI_ACCESS_LOCAL_WRITE | EFI_ACCESS_REMOTE_WRITE | \
			EFI_ACCESS_REMOTE_READ | EFI_ACCESS_REMOTE_ATOMIC)

/* Takes ctx->lock (the MR table). */
struct efi_mr *efi_reg_mr(struct efi_pd *pd, void *addr, size_t length, int access)
{
	struct efi_context_int *ctx;
	struct efi_mr_int *mr;
	uint32_t key;

	if (!pd || (access & ~EFI_ACCESS_ALL) || (!addr && length) ||
	    ((access & (EFI_ACCESS_REMOTE_WRITE | EFI_ACCESS_REMOTE_ATOMIC)) &&
	     !(access & EFI_ACCESS_LOCAL_WRITE)) ||
	    (uintptr_t)addr + length < (uintptr_t)addr || length > EFI_MAX_MR_SIZE) {
		errno = EINVAL;
		return NULL;
	}
	ctx = ctx_of(pd->context);
	int quota = efi_lease_reserve_mr(ctx->lease, length);
	if (quota) {
		errno = quota;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		efi_lease_release_mr(ctx->lease, length);
		errno = ENOMEM;
		return NULL;
	}
	mr->pub.context = pd->context;
	mr->pub.pd = pd;
	mr->pub.addr = addr;
	mr->pub.length = length;
	mr->access = access;
	mr->start = (uintptr_t)addr;
	mr->end = (uintptr_t)addr + length;

	pthread_mutex_lock(&ctx->lock);
	if ((ctx->mr_count + 1) * 2 > ctx->mr_cap && mr_table_grow(ctx) < 0) {
		pthread_mutex_unlock(&ctx->lock);
		free(mr);
		efi_lease_release_mr(ctx->lease, length);
		errno = ENOMEM;
		return NULL;
	}
	do {
		if (getrandom(&key, sizeof(key), 0) != sizeof(key)) {
			pthread_mutex_unlock(&ctx->lock);
			free(mr);
			efi_lease_release_mr(ctx->lease, length);
			errno = EAGAIN;
			return NULL;
		}
	} while (key == 0 || efi_mr_lookup(ctx, key));
	mr->pub.lkey = mr->pub.rkey = key;
	mr->pub.handle = key;
	*mr_slot(ctx, key) = mr;
	ctx->mr_count++;
	pthread_mutex_unlock(&ctx->lock);
	atomic_fetch_add(&((struct efi_pd_int *)pd)->users, 1);
	return &mr->pub;
}

/* Takes ctx->lock: once it returns, no packet can reach the memory. */
int efi_dereg_mr(struct efi_mr *pub)
{
	struct efi_mr_int *mr = (struct efi_mr_int *)pub;
	struct efi_context_int *ctx;

	if (!mr)
		return 0;
	ctx = ctx_of(mr->pub.context);
	pthread_mutex_lock(&ctx->lock);
	mr_table_remove(ctx, mr->pub.rkey);
	pthread_mutex_unlock(&ctx->lock);
	atomic_fetch_sub(&((struct efi_pd_int *)mr->pub.pd)->users, 1);
	size_t len = mr->pub.length;
	free(mr);
	efi_lease_release_mr(ctx->lease, len);
	return 0;
}
