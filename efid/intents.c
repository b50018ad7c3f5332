/* SPDX-License-Identifier: MIT */
/*
 * Finishing what a crash interrupted (issue 22).  iface_attach and
 * iface_detach commit an intent before they touch the kernel and forget it
 * in the transaction that records the result; an intent found at start
 * means efid died in between:
 *
 * - detach: the operator asked for the interface to go, and the kernel side
 *   may be gone already.  It is completed: the devices removed (missing
 *   ones are fine), then record and intent deleted in one transaction.
 *   Until then the record is never repaired (kernel_repair asks
 *   intent_blocks_repair), so a detach whose last write failed (a full
 *   disk) does not come back either.
 * - attach: the client never got an answer.  If the record was committed,
 *   only the intent is left to forget; if not, the devices made for it are
 *   removed (also any stray carrying its instance/name) and the intent
 *   forgotten: no device efid does not know is left behind.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "efid.h"
#include "iface.h"
#include "intents.h"
#include "kernel.h"
#include "log.h"
#include "store.h"

static int finish_detach(struct efid *d, const struct store_intent *in)
{
	struct store_iface rec;
	char err[512];
	int rc;

	rc = kernel_remove(d->kernel, in->instance, in->name, in->host_ifname, err, sizeof(err));
	if (rc < 0) {
		log_error("cannot finish the detach of %s/%s: %s", in->instance, in->name, err);
		return rc;
	}
	rc = store_begin(d->store);
	if (rc < 0)
		return rc;
	rc = store_iface_get(d->store, in->instance, in->name, &rec);
	if (rc == 0)
		rc = store_iface_delete(d->store, rec.id);
	else if (rc == -ENOENT)
		rc = 0;
	if (rc == 0)
		rc = store_instance_prune(d->store, in->instance);
	if (rc == 0)
		rc = store_intent_clear(d->store, in->instance, in->name);
	if (rc == 0)
		rc = store_commit(d->store);
	if (rc < 0) {
		store_rollback(d->store);
		log_error("cannot record the detach of %s/%s: %s", in->instance, in->name,
			  store_errmsg(d->store));
		return rc;
	}
	log_notice("finished the detach of %s/%s that efid was stopped in", in->instance,
		   in->name);
	return 0;
}

static int undo_attach(struct efid *d, const struct store_intent *in)
{
	struct store_iface rec;
	const struct efid_stray *strays;
	char err[512];
	int rc;

	rc = store_iface_get(d->store, in->instance, in->name, &rec);
	if (rc == 0) {
		/* Committed before the crash: the attach happened. */
		return store_intent_clear(d->store, in->instance, in->name);
	}
	if (rc != -ENOENT)
		return rc;
	rc = kernel_remove(d->kernel, in->instance, in->name, "", err, sizeof(err));
	if (rc < 0) {
		log_error("cannot undo the attach of %s/%s: %s", in->instance, in->name, err);
		return rc;
	}
	/* A host end left in efid's namespace carries the mark too. */
	kernel_strays_scan(d->kernel);
	size_t n = iface_strays(d, &strays);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(strays[i].instance, in->instance) || strcmp(strays[i].ifname, in->name))
			continue;
		rc = kernel_remove(d->kernel, in->instance, in->name, strays[i].host_ifname, err,
				   sizeof(err));
		if (rc < 0) {
			log_error("cannot undo the attach of %s/%s: %s", in->instance, in->name, err);
			return rc;
		}
	}
	kernel_strays_drop(d->kernel, in->instance, in->name);
	rc = store_intent_clear(d->store, in->instance, in->name);
	if (rc == 0)
		log_notice("undid the attach of %s/%s that efid was stopped in", in->instance,
			   in->name);
	return rc;
}

int intents_reconcile(struct efid *d)
{
	struct store_intent *v;
	size_t n;
	int rc, first = 0;

	rc = store_intent_all(d->store, &v, &n);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		rc = strcmp(v[i].op, "detach") == 0 ? finish_detach(d, &v[i]) : undo_attach(d, &v[i]);
		if (rc < 0 && !first)
			first = rc;
	}
	free(v);
	return first;
}

bool intent_blocks_repair(struct efid *d, const char *instance, const char *name)
{
	struct store_intent in;
	return store_intent_get(d->store, instance, name, &in) == 0 && strcmp(in.op, "detach") == 0;
}
