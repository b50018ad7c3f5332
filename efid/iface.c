/* SPDX-License-Identifier: MIT */
/*
 * Attach and detach: the requests that change interfaces.  Each one checks
 * everything it can before touching anything, then changes the kernel and
 * the store inside one store transaction, and on any failure undoes the
 * kernel change and rolls the transaction back, so nothing partial is left
 * in either.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netlink/cache.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>

#include "efid.h"
#include "fault.h"
#include "kernel.h"
#include "log.h"
#include "netns.h"

static int store_fail(struct efid *d, int rc, char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "%s: %s", what,
		 store_errmsg(d->store)[0] ? store_errmsg(d->store) : strerror(-rc));
	return rc;
}

static void apply_defaults(struct efid *d, struct efi_iface_spec *s)
{
	if (!s->kind[0])
		snprintf(s->kind, sizeof(s->kind), "%s",
			 d->config.default_kind[0] ? d->config.default_kind : "veth");
	if (!s->uplink[0])
		snprintf(s->uplink, sizeof(s->uplink), "%s", d->config.default_uplink);
	if (!s->mtu)
		s->mtu = d->config.default_mtu;
}

static bool addr_listed(const struct efi_iface_spec *s, const struct efi_addr *a)
{
	for (size_t i = 0; i < s->naddrs; i++)
		if (efi_addr_same_ip(&s->addrs[i], a) && s->addrs[i].prefixlen == a->prefixlen)
			return true;
	return false;
}

static bool same_addrs(const struct efi_iface_spec *a, const struct efi_iface_spec *b)
{
	if (a->naddrs != b->naddrs)
		return false;
	for (size_t i = 0; i < a->naddrs; i++)
		if (!addr_listed(b, &a->addrs[i]))
			return false;
	return true;
}

static void format_addrs(const struct efi_iface_spec *s, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < s->naddrs && used < len; i++) {
		char one[INET6_ADDRSTRLEN + 8];

		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
					 efi_addr_format(&s->addrs[i], one, sizeof(one)));
	}
	if (!s->naddrs)
		snprintf(buf, len, "none");
}

/* Names the first field in which the request differs from the record, or
 * returns false when it asks for exactly what is recorded.  A request that
 * leaves the MTU to the default matches any recorded MTU. */
static bool request_differs(const struct efi_iface_spec *req, const struct efi_iface_spec *rec,
			    char *err, size_t errlen)
{
	char addrs[512];

	if (strcmp(req->kind, rec->kind) != 0) {
		snprintf(err, errlen, "%s/%s already exists as a %s interface, not %s: detach it "
			 "first to change its kind", rec->instance, rec->name, rec->kind, req->kind);
		return true;
	}
	if (strcmp(req->uplink, rec->uplink) != 0) {
		snprintf(err, errlen, "%s/%s already exists with uplink %s%s%s, not %s%s%s: detach "
			 "it first to move it", rec->instance, rec->name,
			 rec->uplink[0] ? "'" : "", rec->uplink[0] ? rec->uplink : "(none)",
			 rec->uplink[0] ? "'" : "", req->uplink[0] ? "'" : "",
			 req->uplink[0] ? req->uplink : "(none)", req->uplink[0] ? "'" : "");
		return true;
	}
	if (req->mtu && req->mtu != rec->mtu) {
		snprintf(err, errlen, "%s/%s already exists with MTU %u, not %u: detach it first "
			 "to change it", rec->instance, rec->name, rec->mtu, req->mtu);
		return true;
	}
	if (!same_addrs(req, rec)) {
		format_addrs(rec, addrs, sizeof(addrs));
		snprintf(err, errlen, "%s/%s already exists with addresses %s: detach it first to "
			 "change them, or pick another name", rec->instance, rec->name, addrs);
		return true;
	}
	return false;
}

/* The lowest efiN that is neither recorded in the instance nor a device in
 * its namespace. */
static int pick_name(struct efid *d, struct efi_iface_spec *s, char *err, size_t errlen)
{
	struct kernel *k = d->kernel;
	struct nl_cache *links = NULL;
	struct nl_sock *sk;
	int nsfd, rc = -EEXIST;

	nsfd = netns_open(s->instance);
	if (nsfd < 0)
		return kernel_fail(k, nsfd, err, errlen, "cannot open the namespace of '%s'",
				   s->instance);
	sk = kernel_ns_socket(k, nsfd);
	close(nsfd);
	if (!sk)
		return kernel_fail(k, -errno, err, errlen, "cannot enter the namespace of '%s'",
				   s->instance);
	rc = kernel_dump(k, sk, &links, NULL);
	if (rc < 0) {
		nl_socket_free(sk);
		return kernel_fail(k, rc, err, errlen, "cannot list the devices of '%s'",
				   s->instance);
	}
	rc = -EEXIST;
	for (unsigned n = 0; n < 1000; n++) {
		struct store_iface rec;
		struct rtnl_link *link;
		int got;

		snprintf(s->name, sizeof(s->name), "efi%u", n);
		got = store_iface_get(d->store, s->instance, s->name, &rec);
		if (got == 0)
			continue;
		if (got != -ENOENT) {
			rc = store_fail(d, got, err, errlen, "cannot read the interface records");
			break;
		}
		link = rtnl_link_get_by_name(links, s->name);
		if (link) {
			rtnl_link_put(link);
			continue;
		}
		rc = 0;
		break;
	}
	if (rc == -EEXIST)
		snprintf(err, errlen, "no free efiN name left in '%s': name the interface with --name",
			 s->instance);
	if (rc < 0)
		s->name[0] = '\0';
	nl_cache_free(links);
	nl_socket_free(sk);
	return rc;
}

/* Attach of an interface that is recorded exactly as asked: nothing to do
 * when the kernel side is whole, re-created when it is not. */
static int attach_recorded(struct efid *d, struct store_iface *cur, enum efi_ctl_result *result,
			   char *err, size_t errlen)
{
	struct kernel *k = d->kernel;
	struct nl_cache *links = NULL, *addrs = NULL;
	struct kernel_obs obs;
	struct nl_sock *sk;
	unsigned added = 0, missing;
	int nsfd, rc;

	nsfd = netns_open(cur->spec.instance);
	if (nsfd < 0)
		return kernel_fail(k, nsfd, err, errlen, "cannot open the namespace of '%s'",
				   cur->spec.instance);
	sk = kernel_ns_socket(k, nsfd);
	close(nsfd);
	if (!sk)
		return kernel_fail(k, -errno, err, errlen, "cannot enter the namespace of '%s'",
				   cur->spec.instance);
	rc = kernel_dump(k, sk, &links, &addrs);
	if (rc < 0) {
		rc = kernel_fail(k, rc, err, errlen, "cannot list the devices of '%s'",
				 cur->spec.instance);
		goto out;
	}
	kernel_observe(k, cur, links, addrs, &obs);
	if (obs.present) {
		/* Configured addresses removed by hand come back: the kernel
		 * is made to match the record. */
		rc = kernel_addrs_ensure(k, sk, obs.ifindex, &cur->spec, addrs, &added, err, errlen);
		if (rc < 0)
			goto out;
		*result = added ? EFI_R_REPAIRED : EFI_R_UNCHANGED;
	} else {
		kernel_repair_forget(k, cur->spec.instance);
		rc = kernel_repair(k, cur, err, errlen);
		if (rc < 0)
			goto out;
		*result = EFI_R_REPAIRED;
	}
	rc = kernel_refresh_instance(k, cur->spec.instance, &missing);
	if (rc < 0) /* the interface is fine; only its observed state may lag */
		log_warning("cannot refresh %s: %s", cur->spec.instance, strerror(-rc));
	rc = 0;
	watch_instance_add(k, cur->spec.instance);
out:
	nl_cache_free(addrs);
	nl_cache_free(links);
	nl_socket_free(sk);
	return rc;
}

/* Records a kernel side that was just created; the caller's transaction
 * makes it all or nothing. */
static int record_new(struct efid *d, struct store_iface *rec, char *err, size_t errlen)
{
	struct kernel *k = d->kernel;
	struct nl_cache *links = NULL, *addrs = NULL;
	struct kernel_obs obs;
	struct nl_sock *sk;
	int nsfd, rc;

	nsfd = netns_open(rec->spec.instance);
	if (nsfd < 0)
		return kernel_fail(k, nsfd, err, errlen, "cannot open the namespace of '%s'",
				   rec->spec.instance);
	sk = kernel_ns_socket(k, nsfd);
	close(nsfd);
	if (!sk)
		return kernel_fail(k, -errno, err, errlen, "cannot enter the namespace of '%s'",
				   rec->spec.instance);
	rc = kernel_dump(k, sk, &links, &addrs);
	if (rc < 0) {
		rc = kernel_fail(k, rc, err, errlen, "cannot read back %s/%s", rec->spec.instance,
				 rec->spec.name);
		goto out;
	}
	kernel_observe(k, rec, links, addrs, &obs);
	if (!obs.present) {
		snprintf(err, errlen, "%s/%s vanished right after it was made", rec->spec.instance,
			 rec->spec.name);
		rc = -EIO;
		goto out;
	}
	snprintf(rec->state, sizeof(rec->state), "attached");
	snprintf(rec->link, sizeof(rec->link), "%s", obs.link);
	rec->ifindex = obs.ifindex;
	rc = store_iface_insert(d->store, rec);
	if (rc < 0) {
		rc = store_fail(d, rc, err, errlen, "cannot record the interface");
		goto out;
	}
	rc = store_gids_update(d->store, rec->id, obs.gids, obs.ngids);
	if (rc < 0)
		rc = store_fail(d, rc, err, errlen, "cannot record the GID table");
out:
	nl_cache_free(addrs);
	nl_cache_free(links);
	nl_socket_free(sk);
	return rc;
}

int iface_attach(struct efid *d, const struct efi_iface_spec *spec,
		 struct efi_iface_spec *effective, enum efi_ctl_result *result, char *err,
		 size_t errlen)
{
	struct kernel *k = d->kernel;
	struct store_iface rec, cur;
	char ignored[256], buf[INET6_ADDRSTRLEN + 8];
	uint32_t mtu = 0;
	int rc;

	err[0] = '\0';
	memset(&rec, 0, sizeof(rec));
	rec.spec = *spec;
	rc = efi_iface_spec_validate(&rec.spec, err, errlen);
	if (rc < 0)
		return rc;
	apply_defaults(d, &rec.spec);
	if (strcmp(rec.spec.kind, "veth") != 0 && strcmp(rec.spec.kind, "macvlan") != 0) {
		snprintf(err, errlen, "unknown interface kind '%s': use veth or macvlan",
			 rec.spec.kind);
		return -EINVAL;
	}
	if (!netns_exists(rec.spec.instance)) {
		snprintf(err, errlen,
			 "instance '%s' does not exist: create its network namespace with "
			 "`ip netns add %s`", rec.spec.instance, rec.spec.instance);
		return -ENOENT;
	}

	/* No name given: the interface of this instance that already has the
	 * address is the one meant, so that repeating the request is a no-op. */
	for (size_t i = 0; !rec.spec.name[0] && i < rec.spec.naddrs; i++)
		if (store_iface_find_address(d->store, &rec.spec.addrs[i], &cur) == 0 &&
		    strcmp(cur.spec.instance, rec.spec.instance) == 0)
			snprintf(rec.spec.name, sizeof(rec.spec.name), "%s", cur.spec.name);
	if (!rec.spec.name[0]) {
		rc = pick_name(d, &rec.spec, err, errlen);
		if (rc < 0)
			return rc;
	}

	rc = store_iface_get(d->store, rec.spec.instance, rec.spec.name, &cur);
	if (rc == 0) {
		if (request_differs(&rec.spec, &cur.spec, err, errlen))
			return -EEXIST;
		rc = attach_recorded(d, &cur, result, err, errlen);
		if (rc == 0 && effective)
			*effective = cur.spec;
		return rc;
	}
	if (rc != -ENOENT)
		return store_fail(d, rc, err, errlen, "cannot read the interface records");
	for (size_t i = 0; i < rec.spec.naddrs; i++) {
		rc = store_iface_find_address(d->store, &rec.spec.addrs[i], &cur);
		if (rc == 0) {
			snprintf(err, errlen, "address %s is already used by %s/%s: pick another "
				 "address or detach that interface first",
				 efi_addr_format(&rec.spec.addrs[i], buf, sizeof(buf)),
				 cur.spec.instance, cur.spec.name);
			return -EEXIST;
		}
		if (rc != -ENOENT)
			return store_fail(d, rc, err, errlen, "cannot read the address records");
	}

	/* The intent is committed before the kernel is touched and forgotten
	 * in the transaction that records the result: efid killed anywhere in
	 * between undoes the attach at its next start (intents.c), so no
	 * device it does not know is left. */
	struct store_intent in = { .op = "attach" };
	snprintf(in.instance, sizeof(in.instance), "%s", rec.spec.instance);
	snprintf(in.name, sizeof(in.name), "%s", rec.spec.name);
	rc = store_intent_set(d->store, &in);
	if (rc < 0)
		return store_fail(d, rc, err, errlen, "cannot record the attach (nothing was changed)");
	fault_point("attach", 1);
	rc = store_begin(d->store);
	if (rc < 0) {
		store_fail(d, rc, err, errlen, "cannot start a transaction");
		goto err_intent;
	}
	rec.host_ifname[0] = '\0';
	rc = kernel_create(k, &rec.spec, rec.host_ifname, &mtu, err, errlen);
	if (rc < 0)
		goto err_rollback;
	fault_point("attach", 2);
	if (strcmp(rec.spec.kind, "macvlan") == 0)
		rec.host_ifname[0] = '\0';
	rec.spec.mtu = mtu;
	rc = record_new(d, &rec, err, errlen);
	if (rc == 0) {
		rc = store_intent_clear(d->store, rec.spec.instance, rec.spec.name);
		if (rc < 0)
			store_fail(d, rc, err, errlen, "cannot record the interface");
	}
	if (rc < 0)
		goto err_kernel;
	fault_point("attach", 3);
	rc = store_commit(d->store);
	if (rc < 0) {
		store_fail(d, rc, err, errlen, "cannot commit the interface record");
		goto err_kernel;
	}
	fault_point("attach", 4);

	kernel_repair_forget(k, rec.spec.instance);
	kernel_strays_drop(k, rec.spec.instance, rec.spec.name);
	rc = watch_instance_add(k, rec.spec.instance);
	if (rc < 0)
		log_warning("cannot watch instance '%s' for changes: %s", rec.spec.instance,
			    strerror(-rc));
	log_debug("attached %s/%s: %s%s%s (host end %s), mtu %u, %zu address(es)",
		  rec.spec.instance, rec.spec.name, rec.spec.kind, rec.spec.uplink[0] ? " on " : "",
		  rec.spec.uplink, rec.host_ifname[0] ? rec.host_ifname : "none", rec.spec.mtu,
		  rec.spec.naddrs);
	if (effective)
		*effective = rec.spec;
	*result = EFI_R_CREATED;
	return 0;

err_kernel:
	if (kernel_remove(k, rec.spec.instance, rec.spec.name, rec.host_ifname, ignored,
			  sizeof(ignored)) < 0) {
		/* The intent stays: the next start removes what is left. */
		log_warning("could not undo %s/%s: %s; efid removes it at its next start",
			    rec.spec.instance, rec.spec.name, ignored);
		store_rollback(d->store);
		return rc;
	}
err_rollback:
	store_rollback(d->store);
err_intent:
	if (store_intent_clear(d->store, rec.spec.instance, rec.spec.name) < 0)
		log_warning("cannot forget the failed attach of %s/%s: %s (harmless: the next "
			    "start finds nothing to undo)", rec.spec.instance, rec.spec.name,
			    store_errmsg(d->store));
	return rc;
}

int iface_detach(struct efid *d, const char *instance, const char *name, char *err,
		 size_t errlen)
{
	struct store_iface rec;
	int rc;

	err[0] = '\0';
	if (!efi_instance_name_valid(instance)) {
		snprintf(err, errlen, "'%s' is not a valid instance name", instance);
		return -EINVAL;
	}
	if (!efi_ifname_valid(name)) {
		snprintf(err, errlen, "'%s' is not a valid interface name", name);
		return -EINVAL;
	}
	rc = store_iface_get(d->store, instance, name, &rec);
	if (rc == -ENOENT) {
		snprintf(err, errlen, "instance '%s' has no interface %s (efictl list shows what "
			 "is attached)", instance, name);
		return -ENOENT;
	}
	if (rc < 0)
		return store_fail(d, rc, err, errlen, "cannot read the interface records");

	/* Intent first (committed), kernel second, then record and intent
	 * deleted in one transaction.  Killed after the intent, efid finishes
	 * the detach at its next start (intents.c); a failed last write (a
	 * full disk) leaves the intent, which keeps the record from being
	 * re-created until the detach can be finished.  Kernel and records
	 * never disagree without an intent saying how to settle it. */
	struct store_intent in = { .op = "detach" };
	snprintf(in.instance, sizeof(in.instance), "%s", instance);
	snprintf(in.name, sizeof(in.name), "%s", name);
	snprintf(in.host_ifname, sizeof(in.host_ifname), "%s", rec.host_ifname);
	rc = store_intent_set(d->store, &in);
	if (rc < 0)
		return store_fail(d, rc, err, errlen, "cannot record the detach (nothing was changed)");
	fault_point("detach", 1);
	rc = kernel_remove(d->kernel, instance, name, rec.host_ifname, err, errlen);
	if (rc < 0) {
		if (store_intent_clear(d->store, instance, name) < 0)
			log_warning("cannot forget the failed detach of %s/%s: %s; efid finishes it "
				    "at its next start", instance, name, store_errmsg(d->store));
		return rc;
	}
	fault_point("detach", 2);
	rc = store_begin(d->store);
	if (rc == 0)
		rc = store_iface_delete(d->store, rec.id);
	if (rc == 0)
		rc = store_instance_prune(d->store, instance);
	if (rc == 0)
		rc = store_intent_clear(d->store, instance, name);
	if (rc == 0 && fault_fails("detach-write"))
		rc = -ENOSPC;
	if (rc == 0)
		rc = store_commit(d->store);
	if (rc < 0) {
		store_fail(d, rc, err, errlen, "the device is removed but its record cannot be "
			   "deleted; the detach stays pending (the interface is not re-created) "
			   "and efid finishes it at its next start or the next detach");
		store_rollback(d->store);
		return rc;
	}
	fault_point("detach", 3);
	watch_instance_prune(d->kernel, instance);
	log_debug("detached %s/%s", instance, name);
	return 0;
}

struct name_list {
	size_t n, cap;
	char (*names)[EFI_IFNAME_MAX + 1];
};

static int collect_name(const struct store_iface *iface, void *ud)
{
	struct name_list *l = ud;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		void *p = realloc(l->names, cap * sizeof(*l->names));

		if (!p)
			return -ENOMEM;
		l->names = p;
		l->cap = cap;
	}
	snprintf(l->names[l->n++], sizeof(l->names[0]), "%s", iface->spec.name);
	return 0;
}

int iface_detach_all(struct efid *d, const char *instance, unsigned *count, char *err,
		     size_t errlen)
{
	struct name_list l = { 0 };
	int rc;

	*count = 0;
	err[0] = '\0';
	if (!efi_instance_name_valid(instance)) {
		snprintf(err, errlen, "'%s' is not a valid instance name", instance);
		return -EINVAL;
	}
	rc = store_iface_foreach(d->store, instance, collect_name, &l);
	if (rc < 0) {
		if (rc == -ENOMEM)
			snprintf(err, errlen, "out of memory");
		else
			store_fail(d, rc, err, errlen, "cannot read the interface records");
		goto out;
	}
	for (size_t i = 0; i < l.n; i++) {
		rc = iface_detach(d, instance, l.names[i], err, errlen);
		if (rc < 0)
			goto out;
		(*count)++;
	}
out:
	free(l.names);
	return rc;
}

static int conf_file(const struct dirent *e)
{
	return e->d_name[0] != '.' && fnmatch("*.conf", e->d_name, 0) == 0;
}

int iface_apply_dir(struct efid *d, const char *dir)
{
	struct dirent **files = NULL;
	int n, failed = 0;

	n = scandir(dir, &files, conf_file, alphasort);
	if (n < 0) {
		if (errno == ENOENT) {
			log_debug("no interface directory %s", dir);
			return 0;
		}
		log_error("cannot read interface directory %s: %m", dir);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		char path[4096], err[512];
		struct efi_iface_spec spec, eff;
		enum efi_ctl_result result;
		int rc;

		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, files[i]->d_name) >=
		    sizeof(path)) {
			log_error("%s/%s: path too long", dir, files[i]->d_name);
			failed++;
			continue;
		}
		rc = efi_iface_file_parse(path, &spec, err, sizeof(err));
		if (rc == 0)
			rc = iface_attach(d, &spec, &eff, &result, err, sizeof(err));
		if (rc < 0) {
			log_error("%s: %s", path, err[0] ? err : strerror(-rc));
			failed++;
		} else {
			log_info("%s: %s/%s %s", path, eff.instance, eff.name,
				 result == EFI_R_CREATED ? "attached" :
				 result == EFI_R_REPAIRED ? "repaired" : "unchanged");
		}
	}
	for (int i = 0; i < n; i++)
		free(files[i]);
	free(files);
	return failed;
}
