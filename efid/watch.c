/* SPDX-License-Identifier: MIT */
/*
 * Watching the kernel: netlink event sockets (one in the host namespace for
 * links, one in each instance namespace that has interfaces for links and
 * addresses) and an inotify watch on /run/netns, all sources on efid's
 * sd-event loop.  No polling: an event marks its instance for a refresh,
 * which a deferred source then does with a fresh dump of that namespace, so
 * a burst of events costs one dump.  Lost events (ENOBUFS) cost a full
 * resync.  Re-creating what vanished runs from a short timer, never inside a
 * netlink callback.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/rtnetlink.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/object.h>
#include <netlink/route/link.h>
#include <netlink/socket.h>

#include "cm.h"
#include "efid.h"
#include "kernel.h"
#include "log.h"
#include "netns.h"

#define WATCH_SETTLE_USEC (100 * 1000)     /* before repairing / watching a new netns */
#ifndef WATCH_RCVBUF /* overridable to test overruns */
#define WATCH_RCVBUF (4 * 1024 * 1024)
#endif
#define WATCH_DRAIN_MAX 256                /* messages per wakeup, then yield */

struct watch_instance {
	struct watch_instance *next;
	struct kernel *k;
	char name[EFI_INSTANCE_MAX + 1];
	struct nl_sock *sk;
	sd_event_source *src;
};

/* ---- scheduling -------------------------------------------------------- */

void watch_schedule_resync(struct kernel *k, const char *instance)
{
	if (!k->watching)
		return;
	if (!instance) {
		k->resync_all = true;
	} else if (!k->resync_all) {
		size_t i;

		for (i = 0; i < k->npending; i++)
			if (strcmp(k->pending[i], instance) == 0)
				break;
		if (i == k->npending) {
			void *p = realloc(k->pending, (k->npending + 1) * sizeof(*k->pending));

			if (p) {
				k->pending = p;
				snprintf(k->pending[k->npending++], sizeof(k->pending[0]), "%s",
					 instance);
			} else {
				k->resync_all = true;
			}
		}
	}
	sd_event_source_set_enabled(k->resync_src, SD_EVENT_ONESHOT);
}

void watch_schedule_repair(struct kernel *k)
{
	int enabled = SD_EVENT_OFF;

	if (!k->watching)
		return;
	/* An armed timer stays as it is: bursts do not push it back. */
	if (sd_event_source_get_enabled(k->repair_src, &enabled) >= 0 && enabled != SD_EVENT_OFF)
		return;
	sd_event_source_set_time_relative(k->repair_src, WATCH_SETTLE_USEC);
	sd_event_source_set_enabled(k->repair_src, SD_EVENT_ONESHOT);
}

static int on_resync(sd_event_source *s, void *ud)
{
	struct kernel *k = ud;
	char(*pending)[EFI_INSTANCE_MAX + 1] = k->pending;
	size_t npending = k->npending;
	unsigned missing = 0, m;

	/* Take the list: refreshes may schedule more, for the next round. */
	k->pending = NULL;
	k->npending = 0;
	if (k->resync_all) {
		k->resync_all = false;
		kernel_refresh_all(k, &missing);
	} else {
		for (size_t i = 0; i < npending; i++) {
			kernel_refresh_instance(k, pending[i], &m);
			missing += m;
		}
	}
	free(pending);
	if (k->strays_dirty) {
		k->strays_dirty = false;
		kernel_strays_scan(k);
	}
	if (missing && k->d->config.repair)
		watch_schedule_repair(k);
	return 0;
}

static bool instance_watched(struct kernel *k, const char *instance)
{
	for (struct watch_instance *w = k->instances; w; w = w->next)
		if (strcmp(w->name, instance) == 0)
			return true;
	return false;
}

static int watch_new_instance(const char *instance, void *ud)
{
	struct kernel *k = ud;

	if (!instance_watched(k, instance) && netns_exists(instance))
		watch_instance_add(k, instance);
	return 0;
}

/* The settle timer: namespaces that appeared get their watch, and missing
 * interfaces are re-created when configured to. */
static int on_settle(sd_event_source *s, uint64_t usec, void *ud)
{
	struct kernel *k = ud;

	store_instance_foreach(k->d->store, watch_new_instance, k);
	if (k->d->config.repair)
		kernel_repair_missing(k);
	return 0;
}

/* ---- event sockets ----------------------------------------------------- */

static int connect_route(void *ud)
{
	return nl_connect(ud, NETLINK_ROUTE) < 0 ? -EIO : 0;
}

static struct nl_sock *event_socket(struct kernel *k, int ns_fd, nl_recvmsg_msg_cb_t cb,
				    void *arg, bool addresses)
{
	int size = WATCH_RCVBUF, rc;
	struct nl_sock *sk;

	sk = nl_socket_alloc();
	if (!sk) {
		errno = ENOMEM;
		return NULL;
	}
	/* Events are not replies: no sequence numbers to check. */
	nl_socket_disable_seq_check(sk);
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, cb, arg);
	/* The socket belongs to the namespace it is created in. */
	rc = netns_run(k->self_netns_fd, ns_fd, connect_route, sk);
	if (rc < 0)
		goto err;
	rc = addresses ? nl_socket_add_memberships(sk, RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR,
						   RTNLGRP_IPV6_IFADDR, 0)
		       : nl_socket_add_memberships(sk, RTNLGRP_LINK, 0);
	if (rc < 0 || nl_socket_set_nonblocking(sk) < 0) {
		rc = -EIO;
		goto err;
	}
	/* A big buffer makes overruns rare; they are handled anyway. */
	if (setsockopt(nl_socket_get_fd(sk), SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
		nl_socket_set_buffer_size(sk, size, 0);
	return sk;
err:
	nl_socket_free(sk);
	errno = -rc;
	return NULL;
}

/* Reads what is queued.  false when events were lost (ENOBUFS) or the
 * socket failed: the caller resynchronises in full. */
static bool drain(struct nl_sock *sk, const char *what)
{
	for (int i = 0; i < WATCH_DRAIN_MAX; i++) {
		int rc = nl_recvmsgs_default(sk);

		if (rc == -NLE_AGAIN)
			return true;
		if (rc < 0) {
			log_debug("netlink events of %s lost (%s): resynchronising", what,
				  rc == -NLE_NOMEM ? "receive buffer overrun" : nl_geterror(rc));
			return false;
		}
	}
	return true;
}

static int on_instance_msg(struct nl_msg *msg, void *arg)
{
	struct watch_instance *w = arg;

	watch_schedule_resync(w->k, w->name);
	return NL_OK;
}

static int on_instance_io(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	struct watch_instance *w = ud;

	drain(w->sk, w->name);
	/* Whatever was lost, one dump of this namespace recovers it. */
	watch_schedule_resync(w->k, w->name);
	return 0;
}

static void on_host_link(struct nl_object *obj, void *arg)
{
	struct rtnl_link *link = (struct rtnl_link *)obj;
	struct kernel *k = arg;
	char instance[EFI_INSTANCE_MAX + 1], name[EFI_IFNAME_MAX + 1];
	const char *dev = rtnl_link_get_name(link);
	struct store_iface rec;

	if (!dev)
		return;
	if (kernel_mark_parse(k, rtnl_link_get_ifalias(link), instance, sizeof(instance), name,
			      sizeof(name))) {
		bool known = store_iface_get(k->d->store, instance, name, &rec) == 0 &&
			     strcmp(rec.host_ifname, dev) == 0;

		watch_schedule_resync(k, instance);
		if (nl_object_get_msgtype(obj) == RTM_DELLINK)
			kernel_strays_drop(k, instance, name);
		else if (!known)
			k->strays_dirty = true;
	} else if (store_iface_find_host_ifname(k->d->store, dev, &rec) == 0) {
		watch_schedule_resync(k, rec.spec.instance);
	} else if (nl_object_get_msgtype(obj) == RTM_NEWLINK &&
		   kernel_repair_forget_uplink(k, dev)) {
		/* An uplink whose absence stopped a repair is back. */
		watch_schedule_repair(k);
	}
}

static int on_host_msg(struct nl_msg *msg, void *arg)
{
	nl_msg_parse(msg, on_host_link, arg);
	return NL_OK;
}

static int on_host_io(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	struct kernel *k = ud;

	if (!drain(k->host_events, "the host")) {
		k->strays_dirty = true;
		watch_schedule_resync(k, NULL);
	}
	return 0;
}

/* ---- instances --------------------------------------------------------- */

int watch_instance_add(struct kernel *k, const char *instance)
{
	struct watch_instance *w;
	int nsfd, rc;

	if (!k->watching || instance_watched(k, instance))
		return 0;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->k = k;
	snprintf(w->name, sizeof(w->name), "%s", instance);
	nsfd = netns_open(instance);
	if (nsfd < 0) {
		rc = nsfd == -ENOENT ? 0 : nsfd; /* watched once it exists */
		goto err_free;
	}
	w->sk = event_socket(k, nsfd, on_instance_msg, w, true);
	close(nsfd);
	if (!w->sk) {
		rc = -errno;
		goto err_free;
	}
	rc = sd_event_add_io(k->d->event, &w->src, nl_socket_get_fd(w->sk), EPOLLIN,
			     on_instance_io, w);
	if (rc < 0)
		goto err_sock;
	sd_event_source_set_description(w->src, "netlink-instance");
	w->next = k->instances;
	k->instances = w;
	log_debug("watching instance '%s'", instance);
	return 0;

err_sock:
	nl_socket_free(w->sk);
err_free:
	free(w);
	return rc;
}

static void watch_instance_free(struct watch_instance *w)
{
	sd_event_source_disable_unref(w->src);
	nl_socket_free(w->sk);
	free(w);
}

/* Closing the socket matters: it holds the namespace alive, and with it the
 * devices inside, after `ip netns delete`. */
static void watch_instance_remove(struct kernel *k, const char *instance)
{
	for (struct watch_instance **p = &k->instances; *p; p = &(*p)->next) {
		struct watch_instance *w = *p;

		if (strcmp(w->name, instance) == 0) {
			*p = w->next;
			watch_instance_free(w);
			log_debug("stopped watching instance '%s'", instance);
			return;
		}
	}
}

void watch_instance_prune(struct kernel *k, const char *instance)
{
	struct store_iface *recs = NULL;
	size_t n = 0;

	if (kernel_records(k, instance, &recs, &n) == 0 && n == 0)
		watch_instance_remove(k, instance);
	free(recs);
}

static int on_netns_dir(sd_event_source *s, const struct inotify_event *ev, void *ud)
{
	struct kernel *k = ud;

	if (ev->mask & IN_Q_OVERFLOW) {
		watch_schedule_resync(k, NULL);
		watch_schedule_repair(k);
		return 0;
	}
	if (!ev->len || !efi_instance_name_valid(ev->name))
		return 0;
	if (ev->mask & (IN_DELETE | IN_MOVED_FROM)) {
		watch_instance_remove(k, ev->name);
		watch_schedule_resync(k, ev->name);
		/* The connection manager's socket there holds the namespace
		 * (and so its devices) alive: let go of it now. */
		cm_sync(k->d);
	}
	if (ev->mask & (IN_CREATE | IN_MOVED_TO)) {
		/* `ip netns add` makes the file, then mounts the namespace on
		 * it: look a little later, from the settle timer. */
		kernel_repair_forget(k, ev->name);
		watch_schedule_repair(k);
	}
	return 0;
}

static int on_run_dir(sd_event_source *s, const struct inotify_event *ev, void *ud);

/*
 * Watches /run/netns, which matters more than it seems: efid's event socket
 * in an instance holds that namespace alive, so after `ip netns delete` only
 * this watch tells efid to let go.  ip creates the directory on first use;
 * when it does not exist yet (and efid, under ProtectSystem=strict, cannot
 * make it), /run is watched until it appears.
 */
static int watch_netns_dir(struct kernel *k)
{
	int rc;

	if (mkdir(NETNS_RUN_DIR, 0755) < 0 && errno != EEXIST)
		log_debug("cannot create %s: %m; waiting for ip to make it", NETNS_RUN_DIR);
	rc = sd_event_add_inotify(k->d->event, &k->netns_dir_src, NETNS_RUN_DIR,
				  IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ONLYDIR,
				  on_netns_dir, k);
	if (rc == -ENOENT && !k->run_dir_src) {
		rc = sd_event_add_inotify(k->d->event, &k->run_dir_src,
					  NETNS_RUN_PARENT, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR,
					  on_run_dir, k);
		if (rc >= 0)
			sd_event_source_set_description(k->run_dir_src, "run-dir");
		return rc;
	}
	if (rc >= 0)
		sd_event_source_set_description(k->netns_dir_src, "netns-dir");
	return rc;
}

static int on_run_dir(sd_event_source *s, const struct inotify_event *ev, void *ud)
{
	struct kernel *k = ud;
	int rc;

	if (!ev->len || strcmp(ev->name, NETNS_RUN_NAME) != 0 || k->netns_dir_src)
		return 0;
	rc = watch_netns_dir(k);
	if (rc < 0) {
		log_warning("cannot watch %s (%s)", NETNS_RUN_DIR, strerror(-rc));
		return 0;
	}
	k->run_dir_src = sd_event_source_disable_unref(k->run_dir_src);
	/* Namespaces may have been added before the watch: look now. */
	watch_schedule_repair(k);
	return 0;
}

/* ---- start and stop ---------------------------------------------------- */

static int watch_instance_cb(const char *instance, void *ud)
{
	int rc = watch_instance_add(ud, instance);

	if (rc < 0)
		log_warning("cannot watch instance '%s': %s", instance, strerror(-rc));
	return 0;
}

int iface_watch_start(struct efid *d)
{
	struct kernel *k = d->kernel;
	int rc;

	if (!k || !d->event)
		return -EINVAL;
	if (k->watching)
		return 0;
	k->watching = true;
	rc = sd_event_add_defer(d->event, &k->resync_src, on_resync, k);
	if (rc < 0)
		goto err;
	sd_event_source_set_enabled(k->resync_src, SD_EVENT_OFF);
	sd_event_source_set_description(k->resync_src, "netlink-resync");
	rc = sd_event_add_time(d->event, &k->repair_src, CLOCK_MONOTONIC, 0, 0, on_settle, k);
	if (rc < 0)
		goto err;
	sd_event_source_set_enabled(k->repair_src, SD_EVENT_OFF);
	sd_event_source_set_description(k->repair_src, "repair");

	k->host_events = event_socket(k, -1, on_host_msg, k, false);
	if (!k->host_events) {
		rc = -errno;
		goto err;
	}
	rc = sd_event_add_io(d->event, &k->host_events_src, nl_socket_get_fd(k->host_events),
			     EPOLLIN, on_host_io, k);
	if (rc < 0)
		goto err;
	sd_event_source_set_description(k->host_events_src, "netlink-host");

	rc = watch_netns_dir(k);
	if (rc < 0)
		log_warning("cannot watch %s (%s): deleted namespaces are noticed only when "
			    "their devices go", NETNS_RUN_DIR, strerror(-rc));

	rc = store_instance_foreach(d->store, watch_instance_cb, k);
	if (rc < 0)
		goto err;
	/* Whatever changed between reconcile and now. */
	watch_schedule_resync(k, NULL);
	return 0;

err:
	log_error("cannot start watching the kernel: %s", strerror(-rc));
	watch_stop(k);
	return rc;
}

void watch_stop(struct kernel *k)
{
	while (k->instances) {
		struct watch_instance *w = k->instances;

		k->instances = w->next;
		watch_instance_free(w);
	}
	k->netns_dir_src = sd_event_source_disable_unref(k->netns_dir_src);
	k->run_dir_src = sd_event_source_disable_unref(k->run_dir_src);
	k->host_events_src = sd_event_source_disable_unref(k->host_events_src);
	nl_socket_free(k->host_events);
	k->host_events = NULL;
	k->repair_src = sd_event_source_disable_unref(k->repair_src);
	k->resync_src = sd_event_source_disable_unref(k->resync_src);
	free(k->pending);
	k->pending = NULL;
	k->npending = 0;
	k->resync_all = false;
	k->watching = false;
}
