/* SPDX-License-Identifier: MIT */
/*
 * QPN blocks: how one context holds more than the 4,096 QPs of one efid
 * slot (issue 18).  The wire format ties a QPN to its ports (qpn = slot <<
 * 12 | index; lane L of the slot listens on PortBase + L × 4096 + slot,
 * docs/wire-format.md), so a peer finds every port from the QPN alone and a
 * QP without a connection key accepts packets only from its peer's lane
 * ports.  A context that wants more QPs therefore takes more slots, each
 * with its own sockets (one per lane), and a QP of block b sends from
 * block b's sockets: its peer's source check holds for it as for block 0.
 *
 *   - The blocks wire below is the context's wire: block b's lane L is its
 *     lane b × EFI_WIRE_MAX_LANES + L.  It forwards a send to the block
 *     the lane names and gathers receives from every block's wire.  Its
 *     poll descriptor is an epoll set over the blocks' own (fixed for the
 *     context's life, so the progress thread and the fault injector wrapped
 *     around it never need to learn of a new block).  With one block a
 *     receive goes straight to it, without the epoll look.
 *   - efi_ctx_grow asks efid for one more slot on the lease connection
 *     (OPEN_DEVICE again: efid counts at most LEASE_MAX_PER_CLIENT per
 *     connection) and adds it.  Blocks stay until the context closes:
 *     giving one back while a peer may still address its QPNs would let
 *     another process inherit their traffic.
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "efi_int.h"
#include "lease.h"

struct blocks_wire {
	struct efi_wire base;
	struct efi_wire *inner[EFI_MAX_BLOCKS];
	_Atomic unsigned n;	/* inner[0..n) set; read without the lock by pending */
	int epoll_fd;
	unsigned rr;		/* the block read first when several are ready */
};

static inline struct blocks_wire *to_blocks(struct efi_wire *w)
{
	return (struct blocks_wire *)w;
}

/* Sends runs of datagrams of one block each; stops at the first run its
 * block did not take whole (that block's socket is full: the transport
 * offers the rest again, as wire.h says). */
static int blocks_send(struct efi_wire *w, struct efi_wire_pkt *pkts, unsigned n)
{
	struct blocks_wire *bw = to_blocks(w);
	unsigned nb = atomic_load_explicit(&bw->n, memory_order_relaxed), i = 0, sent = 0;

	while (i < n) {
		unsigned b = pkts[i].lane / EFI_WIRE_MAX_LANES, j = i + 1;
		uint8_t base = (uint8_t)(b * EFI_WIRE_MAX_LANES);
		int r;

		while (j < n && pkts[j].lane / EFI_WIRE_MAX_LANES == b)
			j++;
		if (b >= nb) {
			/* no such block: a transport bug; lost, as a datagram
			 * with an error of its own is */
			sent += j - i;
			i = j;
			continue;
		}
		for (unsigned k = i; k < j; k++)
			pkts[k].lane = (uint8_t)(pkts[k].lane - base);
		r = efi_wire_send(bw->inner[b], pkts + i, j - i);
		for (unsigned k = i; k < j; k++)
			pkts[k].lane = (uint8_t)(pkts[k].lane + base);
		if (r < 0)
			return sent ? (int)sent : r;
		sent += (unsigned)r;
		if ((unsigned)r < j - i)
			break;
		i = j;
	}
	return (int)sent;
}

/* Receives from block b into pkts[0..n), its lanes shifted to the block's. */
static int recv_block(struct blocks_wire *bw, unsigned b, struct efi_wire_pkt *pkts, unsigned n)
{
	int r = efi_wire_recv(bw->inner[b], pkts, n);

	for (int k = 0; k < r; k++)
		pkts[k].lane = (uint8_t)(pkts[k].lane + b * EFI_WIRE_MAX_LANES);
	return r;
}

static int blocks_recv(struct efi_wire *w, struct efi_wire_pkt *pkts, unsigned n)
{
	struct blocks_wire *bw = to_blocks(w);
	unsigned nb = atomic_load_explicit(&bw->n, memory_order_relaxed), got = 0;
	struct epoll_event ev[EFI_MAX_BLOCKS];
	bool ready[EFI_MAX_BLOCKS] = { false };
	int k;

	if (nb == 1)
		return efi_wire_recv(bw->inner[0], pkts, n);
	/* which blocks have something: the kernel's word, or datagrams a
	 * block received and has not handed out (GRO runs) */
	k = epoll_wait(bw->epoll_fd, ev, (int)nb, 0);
	for (int i = 0; i < k; i++)
		if (ev[i].data.u32 < nb)
			ready[ev[i].data.u32] = true;
	for (unsigned b = 0; b < nb; b++)
		ready[b] |= efi_wire_pending(bw->inner[b]);
	for (unsigned i = 0; i < nb && got < n; i++) {
		unsigned b = (bw->rr + i) % nb;
		int r;

		if (!ready[b])
			continue;
		r = recv_block(bw, b, pkts + got, n - got);
		if (r < 0)
			return got ? (int)got : r;
		got += (unsigned)r;
	}
	bw->rr = (bw->rr + 1) % nb;	/* each block goes first in turn */
	return (int)got;
}

static int blocks_poll_fd(const struct efi_wire *w)
{
	return ((const struct blocks_wire *)w)->epoll_fd;
}

static bool blocks_pending(const struct efi_wire *w)
{
	const struct blocks_wire *bw = (const struct blocks_wire *)w;
	unsigned nb = atomic_load_explicit(&bw->n, memory_order_acquire);

	for (unsigned b = 0; b < nb; b++)
		if (efi_wire_pending(bw->inner[b]))
			return true;
	return false;
}

static void blocks_destroy(struct efi_wire *w)
{
	struct blocks_wire *bw = to_blocks(w);
	unsigned nb = atomic_load(&bw->n);

	for (unsigned b = 0; b < nb; b++)
		efi_wire_destroy(bw->inner[b]);
	close(bw->epoll_fd);
	free(bw);
}

static const struct efi_wire_ops blocks_ops = {
	.send_batch = blocks_send,
	.recv_batch = blocks_recv,
	.poll_fd = blocks_poll_fd,
	.pending = blocks_pending,
	.destroy = blocks_destroy,
};

int efi_wire_blocks_add(struct efi_wire *blocks, struct efi_wire *inner)
{
	struct blocks_wire *bw = to_blocks(blocks);
	unsigned nb = atomic_load_explicit(&bw->n, memory_order_relaxed);
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = nb };

	if (nb >= EFI_MAX_BLOCKS)
		return ENOSPC;
	if (epoll_ctl(bw->epoll_fd, EPOLL_CTL_ADD, efi_wire_fd(inner), &ev) < 0)
		return errno;
	bw->inner[nb] = inner;
	atomic_store_explicit(&bw->n, nb + 1, memory_order_release);
	return 0;
}

struct efi_wire *efi_wire_blocks_create(struct efi_wire *block0)
{
	struct blocks_wire *bw;
	int r;

	if (!block0) {
		errno = EINVAL;
		return NULL;
	}
	bw = calloc(1, sizeof(*bw));
	if (!bw)
		return NULL;
	bw->base.ops = &blocks_ops;
	bw->base.source_ports = block0->source_ports;
	bw->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (bw->epoll_fd < 0) {
		r = errno;
		free(bw);
		errno = r;
		return NULL;
	}
	r = efi_wire_blocks_add(&bw->base, block0);
	if (r) {
		close(bw->epoll_fd);
		free(bw);
		errno = r;
		return NULL;
	}
	return &bw->base;
}

/* True when every block held is full (ctx->lock held). */
static bool all_full(const struct efi_context_int *ctx)
{
	for (unsigned b = 0; b < ctx->nblocks; b++)
		if (ctx->nqp_block[b] < EFI_QPN_PER_BLOCK)
			return false;
	return true;
}

int efi_ctx_grow(struct efi_context_int *ctx)
{
	int fds[EFI_WIRE_MAX_LANES];
	unsigned nfds = 0, use;
	uint32_t qpn_base = 0;
	struct efi_wire *w;
	struct efi_qp_int **table;
	bool full;
	int r;

	pthread_mutex_lock(&ctx->lock);
	full = all_full(ctx);
	r = ctx->nblocks >= EFI_MAX_BLOCKS || !ctx->blocks_wire || !ctx->lease ? ENOSPC : 0;
	pthread_mutex_unlock(&ctx->lock);
	if (!full || r)
		return r;	/* another thread's block made room, or none to be had */
	/* Two threads finding every block full at once both ask: the second
	 * block is room for later QPs, not a leak (it is the context's until
	 * it closes). */
	r = efi_lease_open_block(ctx->lease, &qpn_base, fds, &nfds);
	if (r)
		return r == EMFILE || r == EADDRINUSE ? ENOSPC : r;
	use = nfds < ctx->p.nlanes ? nfds : ctx->p.nlanes;	/* EFI_LANES, as block 0 */
	table = calloc(EFI_QPN_PER_BLOCK, sizeof(*table));
	w = table ? efi_wire_udp_create_lanes(fds, use) : NULL;
	if (!w) {
		r = errno ? errno : ENOMEM;
		free(table);
		for (unsigned i = 0; i < nfds; i++)
			close(fds[i]);
		return r;	/* the slot stays the lease's until the context closes */
	}
	for (unsigned i = use; i < nfds; i++)
		close(fds[i]);	/* unused lanes: the lease holds its own copies */
	pthread_mutex_lock(&ctx->lock);
	if (ctx->nblocks >= EFI_MAX_BLOCKS || efi_qpn_block(ctx, qpn_base) >= 0)
		r = EPROTO;	/* efid gave a slot we hold: not a new block */
	else
		r = efi_wire_blocks_add(ctx->blocks_wire, w);
	if (r == 0) {
		unsigned b = ctx->nblocks++;
		ctx->qps[b] = table;
		ctx->qpn_base[b] = qpn_base;
		ctx->nqp_block[b] = 0;
		ctx->block_of_slot[qpn_base >> 12] = (uint8_t)(b + 1);
	}
	pthread_mutex_unlock(&ctx->lock);
	if (r) {
		efi_wire_destroy(w);
		free(table);
	}
	return r;
}
