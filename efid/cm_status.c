/* SPDX-License-Identifier: MIT */
/*
 * What `efictl status` shows of the connection manager: one CM_LISTENER
 * nest per listener and one CM_CONNECTION nest per live connection, inside
 * the interface's IFACE nest of a LIST reply (docs/control-protocol.md).
 */
#include "config.h"

#include <string.h>

#include "auth.h"
#include "cm_int.h"
#include "control.h"
#include "efid.h"

/* The three states an operator cares about; the finer ones are efid's. */
static const char *shown_state(enum conn_state s)
{
	switch (s) {
	case CS_REQ_SENT:
	case CS_ACKED:
	case CS_REP_RCVD:
	case CS_REP_SENT:
		return "connecting";
	case CS_ESTABLISHED:
		return "established";
	case CS_CLOSING:
		return "closing";
	default:
		return NULL; /* pending requests are the listener's; the dead are gone */
	}
}

void cm_put_status(struct efid *d, struct ctl_buf *b, const char *instance, const char *ifname)
{
	if (!d->cm)
		return;
	for (const struct cm_listener *l = d->cm->listeners; l; l = l->next) {
		if (strcmp(l->instance, instance) || strcmp(l->ifname, ifname))
			continue;
		size_t nest = ctl_nest_begin(b, EFI_A_CM_LISTENER);
		ctl_put_u32(b, EFI_A_CM_SERVICE, l->service);
		ctl_put_u32(b, EFI_A_PID, (uint32_t)l->pid);
		ctl_put_u32(b, EFI_A_CM_BACKLOG, l->backlog);
		ctl_put_u32(b, EFI_A_CM_PENDING, l->pending);
		ctl_nest_end(b, nest);
	}
	for (const struct cm_conn *c = d->cm->conns; c; c = c->next) {
		const char *state = shown_state(c->state);
		if (!state || strcmp(c->instance, instance) || strcmp(c->ifname, ifname))
			continue;
		size_t nest = ctl_nest_begin(b, EFI_A_CM_CONNECTION);
		ctl_put_u32(b, EFI_A_CM_QPN, c->local_qpn);
		ctl_put(b, EFI_A_CM_PEER_GID, c->peer_gid.raw, 16);
		ctl_put_u32(b, EFI_A_CM_PEER_QPN, c->peer_qpn);
		ctl_put_str(b, EFI_A_STATE, state);
		ctl_put_u32(b, EFI_A_CM_ACTIVE, c->active ? 1 : 0);
		if (c->client)
			ctl_put_u32(b, EFI_A_PID, (uint32_t)c->pid);
		ctl_nest_end(b, nest);
	}
}
