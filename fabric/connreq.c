/* SPDX-License-Identifier: MIT */
/*
 * Connection requests (FI_CLASS_CONNREQ, the info->handle of an FI_CONNREQ
 * event) and who frees them.
 *
 * An application may end a request in many orders: fi_endpoint on it then
 * fi_accept, or fi_reject, or fi_close of the handle, or closing the
 * endpoint, or just fi_freeinfo (which never looks at the handle), and a
 * failed fi_accept (the client gave up) is followed by fi_reject and the
 * endpoint's close in either order (fabtests, ofi_rxm).  Freeing the
 * request in more than one of these places was a double free (issue 21).
 *
 * So a request has two holders: the application's handle, released by
 * fi_reject, fi_close(handle) or a successful fi_accept, and the endpoint
 * opened on it, released when the endpoint closes.  The struct is freed
 * when neither holds it any more; the efi_cm request inside is answered
 * exactly once, by whichever call comes first (accept, reject, or destroy
 * at the endpoint's close, which rejects).  Each passive endpoint lists
 * its requests the application has not released, so fi_reject checks its
 * handle against the list before touching it (a handle accepted or
 * rejected already is -FI_EINVAL, not a use after free), and closing the
 * passive endpoint refuses those nobody holds: it frees the ones whose
 * FI_CONNREQ was never read, and keeps the ones the application may still
 * name (fi_endpoint on them fails, fi_close frees them) as the fabric's
 * orphans until the fabric closes.
 *
 * The fabric's cr_lock guards every field below; no efi_cm call is made
 * under it (they talk to efid): a caller takes the request out under the
 * lock, and whoever holds it answers it.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "efi_fi.h"

static int connreq_close(struct fid *fid)
{
	struct efi_fi_connreq *cr = container_of(fid, struct efi_fi_connreq, fid);
	struct efi_fi_fabric *fab = cr->fab;
	struct efi_cm_id *req = NULL;
	bool free_it = false;

	pthread_mutex_lock(&fab->cr_lock);
	if (!cr->released) {
		cr->released = true;
		/* an endpoint opened on it may still accept it: its call */
		if (!cr->ep) {
			req = cr->request;
			cr->request = NULL;
			free_it = true;
			efi_fi_connreq_unlink(cr);
		}
	}
	pthread_mutex_unlock(&fab->cr_lock);
	efi_cm_destroy_id(req);	/* not answered: rejected */
	if (free_it)
		free(cr);
	return 0;
}

static struct fi_ops connreq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = connreq_close,
	.bind = efi_fi_no_bind,
	.control = efi_fi_no_control,
	.ops_open = efi_fi_no_ops_open,
	.tostr = efi_fi_no_tostr,
	.ops_set = efi_fi_no_ops_set,
};

/* Takes cr off its list; cr_lock held. */
void efi_fi_connreq_unlink(struct efi_fi_connreq *cr)
{
	for (struct efi_fi_connreq **pp = cr->list; pp && *pp; pp = &(*pp)->next) {
		if (*pp == cr) {
			*pp = cr->next;
			break;
		}
	}
	cr->list = NULL;
	cr->pep = NULL;
	cr->next = NULL;
}

void efi_fi_connreq_handed_out(struct efi_fi_connreq *cr)
{
	pthread_mutex_lock(&cr->fab->cr_lock);
	cr->handed_out = true;
	pthread_mutex_unlock(&cr->fab->cr_lock);
}

struct efi_fi_connreq *efi_fi_connreq_new(struct efi_fi_pep *pep, struct efi_cm_id *request)
{
	struct efi_fi_connreq *cr = calloc(1, sizeof(*cr));

	if (!cr)
		return NULL;
	cr->fid.fclass = FI_CLASS_CONNREQ;
	cr->fid.ops = &connreq_fi_ops;
	cr->fab = pep->fab;
	cr->request = request;
	pthread_mutex_lock(&pep->fab->cr_lock);
	cr->pep = pep;
	cr->list = &pep->connreqs;
	cr->next = pep->connreqs;
	pep->connreqs = cr;
	pthread_mutex_unlock(&pep->fab->cr_lock);
	return cr;
}

void efi_fi_connreq_drop(struct efi_fi_connreq *cr)
{
	connreq_close(&cr->fid);
}

int efi_fi_connreq_hold(struct efi_fi_connreq *cr, struct efi_fi_ep *ep)
{
	struct efi_fi_fabric *fab = cr->fab;
	int ret = 0;

	pthread_mutex_lock(&fab->cr_lock);
	if (cr->ep)
		ret = -FI_EBUSY;	/* another endpoint has it */
	else if (!cr->request)
		ret = -FI_EINVAL;	/* answered already */
	else
		cr->ep = ep;
	pthread_mutex_unlock(&fab->cr_lock);
	return ret;
}

struct efi_cm_id *efi_fi_connreq_take(struct efi_fi_ep *ep)
{
	struct efi_fi_connreq *cr = ep->connreq;
	struct efi_cm_id *req;

	if (!cr)
		return NULL;
	pthread_mutex_lock(&cr->fab->cr_lock);
	req = cr->request;
	cr->request = NULL;
	pthread_mutex_unlock(&cr->fab->cr_lock);
	return req;
}

void efi_fi_connreq_settle(struct efi_fi_ep *ep, struct efi_cm_id *req, bool accepted)
{
	struct efi_fi_connreq *cr = ep->connreq;
	bool destroy = false;

	pthread_mutex_lock(&cr->fab->cr_lock);
	if (accepted) {
		/* the request is the endpoint's connection now: the handle is
		 * spent (its struct lives on until the endpoint closes, so a
		 * late fi_close(handle) still finds it) */
		cr->released = true;
		efi_fi_connreq_unlink(cr);
	} else if (cr->released) {
		destroy = true;	/* rejected meanwhile */
	} else {
		cr->request = req;	/* for fi_reject, or another fi_accept */
	}
	pthread_mutex_unlock(&cr->fab->cr_lock);
	if (destroy)
		efi_cm_destroy_id(req);
}

void efi_fi_connreq_ep_close(struct efi_fi_ep *ep)
{
	struct efi_fi_connreq *cr = ep->connreq;
	struct efi_cm_id *req;
	bool free_it;

	if (!cr)
		return;
	pthread_mutex_lock(&cr->fab->cr_lock);
	req = cr->request;
	cr->request = NULL;
	cr->ep = NULL;
	/* freed once the application released it; else kept for its
	 * fi_reject/fi_close, on its listener's list or, that closed, as an
	 * orphan of the fabric */
	free_it = cr->released;
	if (free_it) {
		efi_fi_connreq_unlink(cr);
	} else if (!cr->list) {
		cr->list = &cr->fab->orphans;
		cr->next = cr->fab->orphans;
		cr->fab->orphans = cr;
	}
	pthread_mutex_unlock(&cr->fab->cr_lock);
	ep->connreq = NULL;
	efi_cm_destroy_id(req);	/* never accepted: rejected */
	if (free_it)
		free(cr);
}

int efi_fi_connreq_reject(struct efi_fi_pep *pep, fid_t handle, const void *param, size_t len)
{
	struct efi_fi_connreq *cr = NULL;
	struct efi_cm_id *req = NULL;
	bool free_it = false;
	int err = 0;

	pthread_mutex_lock(&pep->fab->cr_lock);
	/* compare pointers only: a handle accepted or rejected before is not
	 * on the list any more, and may be freed memory */
	for (struct efi_fi_connreq *c = pep->connreqs; c; c = c->next) {
		if (&c->fid == handle) {
			cr = c;
			break;
		}
	}
	if (cr) {
		req = cr->request;	/* NULL: its endpoint's close refused it */
		cr->request = NULL;
		cr->released = true;
		/* an endpoint opened on it frees it when it closes */
		free_it = !cr->ep;
		efi_fi_connreq_unlink(cr);
	}
	pthread_mutex_unlock(&pep->fab->cr_lock);
	if (!cr)
		return -FI_EINVAL;	/* not a pending request of this listener */
	if (req) {
		err = efi_reject(req, param, len);
		efi_cm_destroy_id(req);
	}
	if (free_it)
		free(cr);
	/* ENOENT: the client gave up already; it is not connected either way */
	return err == ENOENT ? 0 : efi_fi_errno(err);
}

void efi_fi_connreq_pep_close(struct efi_fi_pep *pep)
{
	struct efi_fi_fabric *fab = pep->fab;
	struct efi_fi_connreq *drop = NULL;
	struct efi_cm_id **refuse;
	size_t n = 0, nrefuse = 0;

	pthread_mutex_lock(&fab->cr_lock);
	for (struct efi_fi_connreq *cr = pep->connreqs; cr; cr = cr->next)
		n++;
	/* the requests to refuse once the lock is let go */
	refuse = calloc(n ? n : 1, sizeof(*refuse));
	while (pep->connreqs) {
		struct efi_fi_connreq *cr = pep->connreqs;

		pep->connreqs = cr->next;
		cr->pep = NULL;
		cr->list = NULL;
		cr->next = NULL;
		if (cr->ep)
			continue;	/* its endpoint's close frees it */
		if (!cr->handed_out) {
			/* never read (its entry went with the EQ's purge) */
			cr->next = drop;
			drop = cr;
			continue;
		}
		/* the application may still name it (fi_endpoint fails on it,
		 * fi_close frees it): refused now, freed with the fabric at
		 * the latest */
		if (cr->request && refuse)
			refuse[nrefuse++] = cr->request;
		else
			efi_cm_destroy_id(cr->request);	/* ENOMEM: under the lock */
		cr->request = NULL;
		cr->list = &fab->orphans;
		cr->next = fab->orphans;
		fab->orphans = cr;
	}
	pthread_mutex_unlock(&fab->cr_lock);
	while (drop) {
		struct efi_fi_connreq *cr = drop;

		drop = cr->next;
		efi_cm_destroy_id(cr->request);
		free(cr);
	}
	for (size_t i = 0; i < nrefuse; i++)
		efi_cm_destroy_id(refuse[i]);
	free(refuse);
}

void efi_fi_connreq_fabric_close(struct efi_fi_fabric *fab)
{
	while (fab->orphans) {
		struct efi_fi_connreq *cr = fab->orphans;

		fab->orphans = cr->next;
		free(cr);
	}
}
