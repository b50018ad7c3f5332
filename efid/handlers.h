/* SPDX-License-Identifier: MIT */
/*
 * Request handlers: one per message type.  Each validates every attribute
 * against a policy, checks the caller's rights, and either succeeds
 * completely or changes nothing.
 */
#ifndef EFID_HANDLERS_H
#define EFID_HANDLERS_H

#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "ctlmsg.h"

#include <unistd.h>

#include "ctlproto.h"

struct efid;
struct lease;

/* Descriptors that travel with one message (SCM_RIGHTS), in order. */
struct ctl_fds {
	int fd[EFI_CTL_MAX_FDS];
	unsigned n;
};

static inline void ctl_fds_close(struct ctl_fds *f)
{
	while (f->n)
		close(f->fd[--f->n]);
}

/*
 * Handles one request of type `type` with attributes payload[0..len) from
 * a client whose endpoint leases are `lease`.  Appends the reply's result
 * attributes to body (a message begun by the caller).  in holds the
 * descriptors that came with the request; handle_request always consumes
 * (keeps or closes) them and leaves in empty.  out (initially empty) may
 * receive descriptors to pass with the reply, which the caller then owns.
 * Returns 0, or a negative errno with a message in err that says what was
 * wrong and what to do.
 */
int handle_request(struct efid *d, const struct peer *peer, struct lease *lease, uint16_t type,
		   const uint8_t *payload, size_t len, struct ctl_buf *body, struct ctl_fds *in,
		   struct ctl_fds *out, char *err, size_t errlen);

#endif
