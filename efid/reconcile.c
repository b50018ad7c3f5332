/* SPDX-License-Identifier: MIT */
/*
 * Keeping the store true to the kernel: refreshing what is recorded from what
 * netlink shows, re-creating what vanished (when configured to), and finding
 * strays, the devices this efid made that no record knows of.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <netlink/cache.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>

#include "efid.h"
#include "intents.h"
#include "kernel.h"
#include "log.h"
#include "netns.h"

struct record_list {
	struct store_iface *v;
	size_t n, cap;
};

static int collect_record(const struct store_iface *iface, void *ud)
{
	struct record_list *l = ud;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		void *p = realloc(l->v, cap * sizeof(*l->v));

		if (!p)
			return -ENOMEM;
		l->v = p;
		l->cap = cap;
	}
	l->v[l->n++] = *iface;
	return 0;
}

int kernel_records(struct kernel *k, const char *instance, struct store_iface **out, size_t *n)
{
	struct record_list l = { 0 };
	int rc;

	rc = store_iface_foreach(k->d->store, instance, collect_record, &l);
	if (rc < 0) {
		free(l.v);
		return rc;
	}
	*out = l.v;
	*n = l.n;
	return 0;
}

/* ---- repair bookkeeping ------------------------------------------------ */

static bool repair_known_failed(struct kernel *k, int64_t id)
{
	for (size_t i = 0; i < k->nrepair_failed; i++)
		if (k->repair_failed[i].id == id)
			return true;
	return false;
}

static void repair_note_failed(struct kernel *k, const struct store_iface *rec)
{
	struct kernel_repair_failure *p;

	if (repair_known_failed(k, rec->id))
		return;
	p = realloc(k->repair_failed, (k->nrepair_failed + 1) * sizeof(*p));
	if (!p)
		return; /* then it is merely retried on the next event */
	k->repair_failed = p;
	p[k->nrepair_failed].id = rec->id;
	snprintf(p[k->nrepair_failed].instance, sizeof(p->instance), "%s", rec->spec.instance);
	snprintf(p[k->nrepair_failed].uplink, sizeof(p->uplink), "%s", rec->spec.uplink);
	k->nrepair_failed++;
}

bool kernel_repair_forget_uplink(struct kernel *k, const char *uplink)
{
	size_t j = 0;
	bool any;

	for (size_t i = 0; i < k->nrepair_failed; i++)
		if (!k->repair_failed[i].uplink[0] || strcmp(k->repair_failed[i].uplink, uplink) != 0)
			k->repair_failed[j++] = k->repair_failed[i];
	any = j != k->nrepair_failed;
	k->nrepair_failed = j;
	return any;
}

void kernel_repair_forget(struct kernel *k, const char *instance)
{
	size_t j = 0;

	for (size_t i = 0; i < k->nrepair_failed; i++)
		if (instance && strcmp(k->repair_failed[i].instance, instance) != 0)
			k->repair_failed[j++] = k->repair_failed[i];
	k->nrepair_failed = j;
}

/* The command that re-creates rec, for messages. */
static void attach_command(const struct store_iface *rec, char *buf, size_t len)
{
	const struct efi_iface_spec *s = &rec->spec;
	size_t used;

	used = (size_t)snprintf(buf, len, "efictl attach %s --name %s", s->instance, s->name);
	for (size_t i = 0; i < s->naddrs && used < len; i++) {
		char a[INET6_ADDRSTRLEN + 8];

		used += (size_t)snprintf(buf + used, len - used, " --address %s",
					 efi_addr_format(&s->addrs[i], a, sizeof(a)));
	}
	if (used < len && s->uplink[0])
		used += (size_t)snprintf(buf + used, len - used, " --uplink %s", s->uplink);
	if (used < len && strcmp(s->kind, "veth") != 0)
		used += (size_t)snprintf(buf + used, len - used, " --kind %s", s->kind);
	if (used < len)
		snprintf(buf + used, len - used, " --mtu %u", s->mtu);
}

static void log_missing(struct kernel *k, const struct store_iface *rec)
{
	char cmd[1024];

	if (!netns_exists(rec->spec.instance)) {
		log_warning("%s/%s is missing: the network namespace of instance '%s' is gone%s",
			    rec->spec.instance, rec->spec.name, rec->spec.instance,
			    k->d->config.repair ? "; the interface is re-created when it comes back"
						: "");
		return;
	}
	if (k->d->config.repair) {
		log_warning("%s/%s is missing from the kernel; re-creating it", rec->spec.instance,
			    rec->spec.name);
		return;
	}
	attach_command(rec, cmd, sizeof(cmd));
	log_warning("%s/%s is missing from the kernel: `%s` or Repair=yes in efid.conf "
		    "re-creates it", rec->spec.instance, rec->spec.name, cmd);
}

/* ---- refreshing -------------------------------------------------------- */

static bool same_gid_set(const struct store_gid *a, size_t na, const union efi_gid *b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++) {
		bool found = false;

		for (size_t j = 0; j < nb && !found; j++)
			found = memcmp(a[i].gid.raw, b[j].raw, sizeof(b[j].raw)) == 0;
		if (!found)
			return false;
	}
	return true;
}

/* Writes what obs shows of rec to the store, only where it changed (the
 * watch calls this on every event; most change nothing). */
static int update_record(struct kernel *k, const struct store_iface *rec,
			 const struct kernel_obs *obs)
{
	struct store *st = k->d->store;
	const char *state = obs->present ? "attached" : "missing";
	struct store_gid *cur;
	size_t ncur = 0;
	int rc;

	if (strcmp(rec->state, state) != 0 || strcmp(rec->link, obs->link) != 0 ||
	    rec->ifindex != obs->ifindex) {
		rc = store_iface_set_state(st, rec->id, state, obs->link, obs->ifindex);
		if (rc < 0) {
			log_warning("cannot record the state of %s/%s: %s", rec->spec.instance,
				    rec->spec.name, store_errmsg(st));
			return rc;
		}
		/* At start iface_reconcile reports every missing one itself,
		 * including those already missing before. */
		if (!obs->present && strcmp(rec->state, "missing") != 0) {
			if (k->watching)
				log_missing(k, rec);
		} else if (obs->present && strcmp(rec->state, "attached") != 0) {
			log_info("%s/%s is back (link %s)", rec->spec.instance, rec->spec.name,
				 obs->link);
		} else if (strcmp(rec->link, obs->link) != 0) {
			log_info("%s/%s link %s", rec->spec.instance, rec->spec.name, obs->link);
		}
	}

	cur = calloc(STORE_MAX_GIDS, sizeof(*cur));
	if (!cur)
		return -ENOMEM;
	rc = store_gids_get(st, rec->id, cur, STORE_MAX_GIDS, &ncur);
	if (rc == 0 && !same_gid_set(cur, ncur, obs->gids, obs->ngids))
		rc = store_gids_update(st, rec->id, obs->gids, obs->ngids);
	if (rc < 0)
		log_warning("cannot record the GIDs of %s/%s: %s", rec->spec.instance,
			    rec->spec.name, store_errmsg(st));
	free(cur);
	return rc;
}

int kernel_refresh_instance(struct kernel *k, const char *instance, unsigned *missing)
{
	struct nl_cache *links = NULL, *addrs = NULL;
	struct store_iface *recs = NULL;
	struct nl_sock *sk = NULL;
	size_t n = 0;
	int nsfd, rc;

	*missing = 0;
	rc = kernel_records(k, instance, &recs, &n);
	if (rc < 0 || n == 0)
		goto out;
	nsfd = netns_open(instance);
	if (nsfd >= 0) {
		sk = kernel_ns_socket(k, nsfd);
		close(nsfd);
		if (!sk) {
			rc = -errno;
			log_warning("cannot enter the namespace of '%s': %s", instance,
				    strerror(-rc));
			goto out;
		}
		rc = kernel_dump(k, sk, &links, &addrs);
		if (rc < 0) {
			/* Not a reason to call anything missing. */
			log_warning("cannot list the devices of '%s': %s", instance, strerror(-rc));
			goto out;
		}
	} else if (nsfd != -ENOENT) {
		rc = nsfd;
		log_warning("cannot open the namespace of '%s': %s", instance, strerror(-rc));
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct kernel_obs obs;

		kernel_observe(k, &recs[i], links, addrs, &obs);
		update_record(k, &recs[i], &obs);
		if (obs.present && sk)
			kernel_arp_own(k, sk, links, obs.ifindex);
		if (!obs.present && !repair_known_failed(k, recs[i].id))
			(*missing)++;
	}
	rc = 0;
out:
	nl_cache_free(addrs);
	nl_cache_free(links);
	nl_socket_free(sk);
	free(recs);
	return rc;
}

struct name_list {
	char (*v)[EFI_INSTANCE_MAX + 1];
	size_t n, cap;
};

static int collect_instance(const char *instance, void *ud)
{
	struct name_list *l = ud;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		void *p = realloc(l->v, cap * sizeof(*l->v));

		if (!p)
			return -ENOMEM;
		l->v = p;
		l->cap = cap;
	}
	snprintf(l->v[l->n++], sizeof(l->v[0]), "%s", instance);
	return 0;
}

int kernel_refresh_all(struct kernel *k, unsigned *missing)
{
	struct name_list l = { 0 };
	int rc, first_error = 0;

	*missing = 0;
	rc = store_instance_foreach(k->d->store, collect_instance, &l);
	if (rc < 0) {
		free(l.v);
		return rc;
	}
	for (size_t i = 0; i < l.n; i++) {
		unsigned m = 0;

		rc = kernel_refresh_instance(k, l.v[i], &m);
		if (rc < 0 && !first_error)
			first_error = rc;
		*missing += m;
	}
	free(l.v);
	return first_error;
}

/* ---- repair ------------------------------------------------------------ */

int kernel_repair(struct kernel *k, const struct store_iface *rec, char *err, size_t errlen)
{
	char host_ifname[EFI_IFNAME_MAX + 1];
	unsigned missing;
	uint32_t mtu;
	int rc;

	if (intent_blocks_repair(k->d, rec->spec.instance, rec->spec.name)) {
		snprintf(err, errlen, "a detach of %s/%s is pending: it is finished, not undone",
			 rec->spec.instance, rec->spec.name);
		return -EALREADY;
	}
	if (!netns_exists(rec->spec.instance)) {
		snprintf(err, errlen, "the network namespace of instance '%s' is gone: it is "
			 "re-created when `ip netns add %s` brings it back", rec->spec.instance,
			 rec->spec.instance);
		repair_note_failed(k, rec);
		return -ENOENT;
	}
	/* Whatever is left of the old one (say, a host end whose peer went
	 * with a deleted namespace) makes way first. */
	rc = kernel_remove(k, rec->spec.instance, rec->spec.name, rec->host_ifname, err, errlen);
	if (rc < 0)
		goto failed;
	snprintf(host_ifname, sizeof(host_ifname), "%s", rec->host_ifname);
	rc = kernel_create(k, &rec->spec, host_ifname, &mtu, err, errlen);
	if (rc < 0)
		goto failed;
	if (strcmp(host_ifname, rec->host_ifname) != 0)
		/* Only a record without a host name (never made by this
		 * version) gets here; the store cannot rename it. */
		log_warning("%s/%s was re-created with host end %s, recorded as '%s'",
			    rec->spec.instance, rec->spec.name, host_ifname, rec->host_ifname);
	log_notice("re-created %s/%s", rec->spec.instance, rec->spec.name);
	kernel_refresh_instance(k, rec->spec.instance, &missing);
	watch_instance_add(k, rec->spec.instance);
	return 0;

failed:
	repair_note_failed(k, rec);
	return rc;
}

unsigned kernel_repair_missing(struct kernel *k)
{
	struct store_iface *recs = NULL;
	unsigned repaired = 0;
	size_t n = 0;

	if (kernel_records(k, NULL, &recs, &n) < 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char err[512];

		if (strcmp(recs[i].state, "missing") != 0 || repair_known_failed(k, recs[i].id))
			continue;
		if (!netns_exists(recs[i].spec.instance)) {
			/* Already said so; retried when the namespace returns. */
			repair_note_failed(k, &recs[i]);
			continue;
		}
		if (kernel_repair(k, &recs[i], err, sizeof(err)) == 0)
			repaired++;
		else
			log_warning("cannot re-create %s/%s: %s", recs[i].spec.instance,
				    recs[i].spec.name, err);
	}
	free(recs);
	return repaired;
}

/* ---- strays ------------------------------------------------------------ */

struct stray_scan {
	struct kernel *k;
	const char *netns;       /* NULL: the host namespace */
	struct efid_stray *v;
	size_t n, cap;
};

static bool stray_listed(const struct efid_stray *v, size_t n, const char *instance,
			 const char *ifname)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].instance, instance) == 0 && strcmp(v[i].ifname, ifname) == 0)
			return true;
	return false;
}

static void check_stray(struct nl_object *obj, void *arg)
{
	struct rtnl_link *link = (struct rtnl_link *)obj;
	struct stray_scan *s = arg;
	char instance[EFI_INSTANCE_MAX + 1], name[EFI_IFNAME_MAX + 1];
	const char *devname = rtnl_link_get_name(link);
	struct store_iface rec;
	bool known;

	if (!devname || !kernel_mark_parse(s->k, rtnl_link_get_ifalias(link), instance,
					   sizeof(instance), name, sizeof(name)))
		return;
	known = store_iface_get(s->k->d->store, instance, name, &rec) == 0;
	if (s->netns)
		/* The inner device: where and how the record says. */
		known = known && strcmp(s->netns, instance) == 0 && strcmp(devname, name) == 0;
	else
		/* In the host namespace only a veth's host end belongs. */
		known = known && rec.host_ifname[0] && strcmp(devname, rec.host_ifname) == 0;
	if (known || stray_listed(s->v, s->n, instance, name))
		return;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 4;
		void *p = realloc(s->v, cap * sizeof(*s->v));

		if (!p)
			return;
		s->v = p;
		s->cap = cap;
	}
	memset(&s->v[s->n], 0, sizeof(s->v[0]));
	snprintf(s->v[s->n].instance, sizeof(s->v[0].instance), "%s", instance);
	snprintf(s->v[s->n].ifname, sizeof(s->v[0].ifname), "%s", name);
	if (!s->netns)
		snprintf(s->v[s->n].host_ifname, sizeof(s->v[0].host_ifname), "%s", devname);
	s->n++;
}

static void scan_namespace(struct stray_scan *s, struct nl_sock *sk)
{
	struct nl_cache *links = NULL;

	if (kernel_dump(s->k, sk, &links, NULL) < 0)
		return;
	nl_cache_foreach(links, check_stray, s);
	nl_cache_free(links);
}

int kernel_strays_scan(struct kernel *k)
{
	struct stray_scan s = { .k = k };
	struct stat self = { 0 }, st;
	struct dirent *e;
	DIR *dir;

	scan_namespace(&s, k->host);
	/* efid's own namespace may have a name too (the testbed runs each
	 * host's efid inside a named namespace): it was just scanned as the
	 * host's, where a veth's host end belongs; scanned again as an
	 * instance's, every host end looked like a stray. */
	bool own_known = stat("/proc/self/ns/net", &self) == 0;
	dir = opendir(NETNS_RUN_DIR);
	while (dir && (e = readdir(dir))) {
		struct nl_sock *sk;
		int nsfd;

		if (e->d_name[0] == '.')
			continue;
		nsfd = netns_open(e->d_name);
		if (nsfd < 0)
			continue; /* gone meanwhile, or not a name an instance can have */
		if (own_known && fstat(nsfd, &st) == 0 && st.st_dev == self.st_dev &&
		    st.st_ino == self.st_ino) {
			close(nsfd);
			continue;
		}
		sk = kernel_ns_socket(k, nsfd);
		close(nsfd);
		if (!sk)
			continue;
		s.netns = e->d_name;
		scan_namespace(&s, sk);
		nl_socket_free(sk);
	}
	if (dir)
		closedir(dir);

	for (size_t i = 0; i < s.n; i++)
		if (!stray_listed(k->strays, k->nstrays, s.v[i].instance, s.v[i].ifname))
			log_warning("stray device %s%s(marked %s/%s) was made by this efid but has no "
				    "record; it is left alone: attach it again or delete it with "
				    "`ip link del`", s.v[i].host_ifname[0] ? s.v[i].host_ifname :
				    s.v[i].ifname, s.v[i].host_ifname[0] ? " " : " in its namespace ",
				    s.v[i].instance, s.v[i].ifname);
	free(k->strays);
	k->strays = s.v;
	k->nstrays = s.n;
	return 0;
}

void kernel_strays_free(struct kernel *k)
{
	free(k->strays);
	k->strays = NULL;
	k->nstrays = 0;
}

size_t iface_strays(struct efid *d, const struct efid_stray **out)
{
	struct kernel *k = d->kernel;

	*out = k ? k->strays : NULL;
	return k ? k->nstrays : 0;
}

void kernel_strays_drop(struct kernel *k, const char *instance, const char *ifname)
{
	size_t j = 0;

	for (size_t i = 0; i < k->nstrays; i++)
		if (strcmp(k->strays[i].instance, instance) != 0 ||
		    strcmp(k->strays[i].ifname, ifname) != 0)
			k->strays[j++] = k->strays[i];
	k->nstrays = j;
}

/* ---- at start ---------------------------------------------------------- */

int iface_reconcile(struct efid *d)
{
	struct kernel *k = d->kernel;
	struct store_iface *recs = NULL;
	unsigned missing = 0, repaired = 0, attached = 0;
	size_t n = 0;
	int rc;

	/* What a crash interrupted first: a pending detach must not be
	 * repaired below, a half-made attach not counted as a stray. */
	rc = intents_reconcile(d);
	if (rc < 0)
		log_warning("reconcile: some interrupted attach or detach could not be settled "
			    "(tried again at the next start): %s", strerror(-rc));
	rc = kernel_refresh_all(k, &missing);
	if (rc < 0)
		log_warning("reconcile: some instances could not be read: %s", strerror(-rc));
	rc = kernel_records(k, NULL, &recs, &n);
	if (rc < 0) {
		log_error("reconcile: cannot read the interface records: %s",
			  store_errmsg(d->store));
		return rc;
	}
	for (size_t i = 0; i < n; i++)
		if (strcmp(recs[i].state, "missing") == 0)
			log_missing(k, &recs[i]);
	free(recs);
	recs = NULL;
	if (missing && d->config.repair)
		repaired = kernel_repair_missing(k);
	kernel_strays_scan(k);

	rc = kernel_records(k, NULL, &recs, &n);
	if (rc < 0) {
		log_error("reconcile: cannot read the interface records: %s",
			  store_errmsg(d->store));
		return rc;
	}
	for (size_t i = 0; i < n; i++)
		attached += strcmp(recs[i].state, "attached") == 0;
	free(recs);
	log_info("reconciled %zu interface(s): %u attached, %zu missing, %u re-created, "
		 "%zu stray device(s)", n, attached, n - attached, repaired, k->nstrays);
	return 0;
}
