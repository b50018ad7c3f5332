/* SPDX-License-Identifier: MIT */
/*
 * Taking a listener or an established connection up again after efid
 * restarted (issue 18).  The restarted efid loaded them from its store as
 * orphans (efid/cm_persist.c); the context's watcher (cm_watch.c) calls
 * efi_cm_resume_try for each id whose control connection broke until it
 * succeeds or gives up.  A listener sends CM_LISTEN again (efid hands the
 * same process its own record), a connection CM_RESUME with its tid (the
 * active side) or its request's handle (the passive side).  The
 * application sees nothing, as with leases (lease.c): the channel (an
 * eventfd) stays, and events flow again on the new control connection.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "cm_int.h"
#include "efi_int.h"

#define RESUME_CALL_TIMEOUT_MS 2000

bool efi_cm_resumable(const struct efi_cm_id *id)
{
	if (id->kind == ID_LISTENER)
		return true;
	/* only established connections are in efid's store */
	return id->kind == ID_CONNECTION && id->connected && !id->closed &&
	       !atomic_load(&id->disconnected) && id->handle != 0;
}

int efi_cm_resume_try(struct efi_cm_id *id)
{
	struct ctl_client *nc = NULL;
	int r = ctl_client_connect(NULL, &nc);
	if (r < 0)
		return EAGAIN; /* efid is not back yet */
	struct ctl_buf b;
	struct ctl_reply rep;
	if (id->kind == ID_LISTENER) {
		efi_cm_begin(&b, EFI_CTL_CM_LISTEN);
		ctl_put_str(&b, EFI_A_IFNAME, id->context->device->name);
		ctl_put_u32(&b, EFI_A_CM_SERVICE, id->service);
		ctl_put_u32(&b, EFI_A_CM_BACKLOG, id->backlog);
	} else {
		efi_cm_begin(&b, EFI_CTL_CM_RESUME);
		ctl_put_u64(&b, EFI_A_CM_ID, id->handle);
		ctl_put_u32(&b, EFI_A_CM_ACTIVE, id->active ? 1 : 0);
	}
	r = ctl_msg_end(&b);
	if (r == 0)
		r = ctl_client_call_ex(nc, &b, NULL, 0, &rep, RESUME_CALL_TIMEOUT_MS, efi_cm_queue_frame, id);
	ctl_buf_free(&b);
	if (r < 0) {
		ctl_client_close(nc);
		/* efid went again, or has not finished starting */
		return r == -ECONNRESET || r == -ETIMEDOUT || r == -EPIPE ? EAGAIN : -r;
	}
	int status = rep.status;
	ctl_reply_free(&rep);
	if (status < 0) {
		ctl_client_close(nc);
		return -status;
	}
	pthread_mutex_lock(&id->lock);
	struct ctl_client *old = id->ctl;
	id->ctl = nc;
	pthread_mutex_unlock(&id->lock);
	ctl_client_close(old);
	return 0;
}
