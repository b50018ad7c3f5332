/* SPDX-License-Identifier: MIT */
/*
 * The lease watcher (lease.c): what keeps a context's lease — its control
 * connection to efid, opened by efi_open_device — in step with efid while
 * the data path runs on without it.
 *
 *   - efid restarts (SIGTERM, crash, upgrade): the connection reads EOF; the
 *     watcher reconnects with backoff and hands efid the wire socket back
 *     (EFI_CTL_LEASE_RESUME), so the new efid knows the slot is taken, lets
 *     the connection manager announce its QPs, and accounts its quota.
 *   - the interface is detached: efid pushes EFI_CTL_REVOKE; every QP of the
 *     context goes to ERR with its outstanding work flushed (WR_FLUSH_ERR),
 *     and new QPs and registrations fail with ENODEV.
 *   - [Limits]: QP creation and memory registration reserve quota first
 *     (EFI_CTL_RESERVE), destruction releases it; QPs in batches when the
 *     instance has no QP limit (lease.c), so creating one costs no round
 *     trip to efid most of the time.
 *
 * Every function accepts a NULL lease (a context without one: no efid
 * watch, no quota) and then does nothing and succeeds.
 */
#ifndef EFI_LIBEFI_LEASE_H
#define EFI_LIBEFI_LEASE_H

#include <stdbool.h>
#include <stdint.h>

struct efi_context_int;
struct efi_lease;

/*
 * Starts watching ctx's lease: takes over ctx->ctl (sets it to NULL; the
 * lease closes it in efi_lease_stop) and keeps duplicates of wire_fds[0..n),
 * the sockets efid passed (one per lane), as the proof of ownership a
 * restarted efid asks for.
 * Asks efid for the instance's limits once.  Returns NULL with errno set
 * (ctx->ctl then stays as it was).
 */
struct efi_lease *efi_lease_start(struct efi_context_int *ctx, const int *wire_fds, unsigned n);
/* Stops the watcher and closes the lease connection (efid frees the slot).
 * Call when no QP of the context is left. */
void efi_lease_stop(struct efi_lease *l);

/* Quota for one QP / one MR of len bytes: 0, EDQUOT (over a [Limits] of
 * the instance), ENODEV (the interface was detached).  While efid is away
 * reservations succeed and are reported to it when it is back.  Call
 * without ctx->lock held. */
int efi_lease_reserve_qp(struct efi_lease *l);
void efi_lease_release_qp(struct efi_lease *l);
int efi_lease_reserve_mr(struct efi_lease *l, uint64_t len);
void efi_lease_release_mr(struct efi_lease *l, uint64_t len);

/*
 * One more QPN block (qpn_blocks.c): OPEN_DEVICE again on the lease
 * connection; efid leases the context another slot.  Sets *qpn_base and
 * fds[0..*nfds) (the slot's lane sockets, the caller's; the lease keeps
 * copies to hand back if efid restarts).  Returns 0 or an errno: ENOSPC
 * (no lease, or EFI_MAX_BLOCKS held), EAGAIN (efid is away), ENODEV
 * (revoked), or what efid answered (EMFILE: its limit per connection).
 * Call without ctx->lock held.
 */
int efi_lease_open_block(struct efi_lease *l, uint32_t *qpn_base, int *fds, unsigned *nfds);

/* True once efid revoked the lease (detach). */
bool efi_lease_revoked(const struct efi_lease *l);

#endif
