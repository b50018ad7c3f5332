/* SPDX-License-Identifier: MIT */
/* libefi's reader of efid's path table (path_table.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "efi_int.h"
#include "path_table.h"

bool efi_pt_wanted(void)
{
	const char *v = getenv("EFI_PATHTABLE");

	return !(v && strcmp(v, "0") == 0);
}

int efi_pt_attach(struct efi_context_int *ctx, int fd)
{
	struct stat st;
	void *m;
	int r = 0;

	if (fd < 0)
		return -EBADF;
	/* The size efid sealed; a smaller file would fault a reader. */
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if ((size_t)st.st_size < EFI_PATHTABLE_SIZE)
		r = -EPROTO;
	if (r) {
		close(fd);
		return r;
	}
	m = mmap(NULL, EFI_PATHTABLE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -errno;
	if (!efi_pathtable_valid(m, EFI_PATHTABLE_SIZE)) {
		munmap(m, EFI_PATHTABLE_SIZE);
		return -EPROTO;
	}
	efi_pt_detach(ctx);
	ctx->pt.map = m;
	/* An odd count never matches: the first check takes a copy. */
	ctx->pt.seq = 1;
	return 0;
}

void efi_pt_detach(struct efi_context_int *ctx)
{
	if (ctx->pt.map)
		munmap((void *)ctx->pt.map, EFI_PATHTABLE_SIZE);
	ctx->pt.map = NULL;
	/* Nothing is known down any more: QPs re-admit by probing. */
	if (ctx->pt.down) {
		ctx->pt.down = 0;
		ctx->pt.epoch++;
	}
}

static void refresh(struct efi_context_int *ctx)
{
	uint8_t states[EFI_PATHTABLE_MAX_LANES];
	uint32_t seq, n;
	uint8_t down = 0;
	int r = efi_pathtable_read(ctx->pt.map, &seq, &n, states, NULL);

	if (r == -EAGAIN)
		return; /* efid is writing: the next check */
	if (r < 0) {
		/* A broken page: stop reading it. */
		ctx->pt.broken++;
		efi_pt_detach(ctx);
		return;
	}
	ctx->pt.seq = seq;
	ctx->pt.refreshes++;
	for (uint32_t i = 0; i < n; i++)
		if (states[i] == EFI_PT_DOWN)
			down |= (uint8_t)(1u << i);
	if (down != ctx->pt.down) {
		ctx->pt.down = down;
		ctx->pt.epoch++;
	}
}

static void apply(struct efi_context_int *ctx, struct efi_qp_int *qp, uint64_t now)
{
	uint8_t down = ctx->pt.down;

	qp->pt_epoch = ctx->pt.epoch;
	if (qp->npaths < 2) {
		qp->pt_down = down;
		return;
	}
	for (unsigned i = 0; i < qp->npaths; i++) {
		uint8_t bit = (uint8_t)(1u << i);
		if ((down & bit) && !(qp->pt_down & bit)) {
			if (efi_path_on_local_down(&qp->paths[i], now))
				efi_retx_path_down(qp, i);
		} else if (!(down & bit) && (qp->pt_down & bit)) {
			efi_path_on_local_up(&qp->paths[i], now);
		}
	}
	qp->pt_down = down;
}

void efi_pt_check(struct efi_context_int *ctx, struct efi_qp_int *qp, uint64_t now)
{
	if (ctx->pt.map && efi_pathtable_seq(ctx->pt.map) != ctx->pt.seq)
		refresh(ctx);
	if (qp->pt_epoch != ctx->pt.epoch)
		apply(ctx, qp, now);
}

void efi_pt_qp_reset(struct efi_context_int *ctx, struct efi_qp_int *qp)
{
	qp->pt_down = 0;
	qp->pt_epoch = ctx->pt.epoch - 1; /* differs: the next check acts */
}
