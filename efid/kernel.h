/* SPDX-License-Identifier: MIT */
/*
 * The kernel side of efid's interfaces: its netlink sockets, the devices it
 * makes (veth pairs, macvlans), what it observes of them, and the watches
 * that keep the store current.  Internal to efid/{kernel,devices,iface,
 * reconcile,watch}.c; the rest of efid sees only iface.h.
 *
 * Every device efid makes carries IFLA_IFALIAS "efi:<host_id>:<instance>/<name>"
 * (its mark), so that several efids on one machine each touch only their
 * own devices and reconcile can recognise strays.
 */
#ifndef EFID_KERNEL_H
#define EFID_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "gid.h"
#include "ifacespec.h"
#include "iface.h"
#include "store.h"

struct efid;
struct nl_sock;
struct nl_cache;
struct rtnl_link;
struct watch_instance;

#define KERNEL_MARK_MAX 160
#define KERNEL_HOST_PREFIX "efh"

struct kernel {
	struct efid *d;
	int self_netns_fd;          /* efid's own namespace, to return to */
	struct nl_sock *host;       /* requests in the host namespace */
	int last_errno;             /* the kernel's errno for the last request */
	char last_extack[256];      /* and its extended-ack text, if any */
	int extack_rc;              /* the error last_extack explains */

	/* watch.c */
	bool watching;
	struct nl_sock *host_events;
	sd_event_source *host_events_src;
	sd_event_source *netns_dir_src;   /* inotify on /run/netns */
	sd_event_source *run_dir_src;     /* inotify on /run until netns/ appears */
	sd_event_source *resync_src;      /* deferred: refresh dirty instances */
	sd_event_source *repair_src;      /* timer: re-create missing ones */
	struct watch_instance *instances; /* one per instance with interfaces */
	bool resync_all;
	bool strays_dirty;
	char (*pending)[EFI_INSTANCE_MAX + 1]; /* instances to refresh */
	size_t npending;

	/* Interfaces whose repair failed: not retried until their namespace
	 * or uplink reappears or they are attached again, so that a repair
	 * that cannot succeed does not loop on the events it causes. */
	struct kernel_repair_failure {
		int64_t id;
		char instance[EFI_INSTANCE_MAX + 1];
		char uplink[EFI_IFNAME_MAX + 1];
	} *repair_failed;
	size_t nrepair_failed;

	/* reconcile.c */
	struct efid_stray *strays;
	size_t nstrays;
};

/* What the kernel shows of one recorded interface. */
struct kernel_obs {
	bool present;
	uint32_t ifindex;
	uint32_t mtu;
	char link[16];
	size_t ngids;
	union efi_gid gids[STORE_MAX_GIDS];
};

/* kernel.c */

/* Maps a libnl error (negative NLE_*) to a negative errno. */
int kernel_errno(int nlerr);
/* The outcome of the libnl request that returned nlrc, as 0 or -errno (the
 * kernel's own errno when it sent one). */
int kernel_result(struct kernel *k, int nlrc);
/* Writes "<what>: <strerror(-rc)> (<kernel's text>)" into err; returns rc,
 * except that -EPERM/-EACCES become -EIO (efid's failure, not the caller's). */
int kernel_fail(struct kernel *k, int rc, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* A route socket in ns_fd's namespace (-1: efid's own) whose errors are
 * recorded for kernel_result.  NULL and errno on failure. */
struct nl_sock *kernel_ns_socket(struct kernel *k, int ns_fd);
/* The mark for instance/name, and the prefix all of this efid's marks share. */
void kernel_mark(struct kernel *k, const char *instance, const char *name, char *buf,
		 size_t len);
void kernel_mark_prefix(struct kernel *k, char *buf, size_t len);
/* Parses a mark of this efid into instance and name; false when alias is
 * not one. */
bool kernel_mark_parse(struct kernel *k, const char *alias, char *instance, size_t ilen,
		       char *name, size_t nlen);
/* Looks a device up by name.  0 with *out (rtnl_link_put it), -ENOENT, -errno. */
int kernel_link_get(struct kernel *k, struct nl_sock *sk, const char *name,
		    struct rtnl_link **out);
/* True when the device's IFLA_IFALIAS is exactly mark. */
bool kernel_link_has_mark(struct rtnl_link *link, const char *mark);
/* The link state words of iface.h for a device's flags. */
const char *kernel_link_state(unsigned flags);
/* Checks the uplink for kind: exists (and is a bridge for veth).  Writes its
 * ifindex.  -ENOENT / -EINVAL with a message. */
int kernel_uplink_check(struct kernel *k, const char *kind, const char *uplink,
			int *ifindex, char *err, size_t errlen);

/* Dumps the links (and addresses, when addrs != NULL) of the namespace sk
 * lives in. */
int kernel_dump(struct kernel *k, struct nl_sock *sk, struct nl_cache **links,
		struct nl_cache **addrs);
/* Fills obs for one record from dumps of its instance's namespace (links and
 * addrs NULL: the namespace is gone); a veth's host end is looked up. */
void kernel_observe(struct kernel *k, const struct store_iface *rec, struct nl_cache *links,
		    struct nl_cache *addrs, struct kernel_obs *obs);

/* devices.c */

/* Sets arp_ignore=1 and arp_announce=2 on device ifindex of links (in sk's
 * namespace) unless it has them: interfaces an older efid made get what
 * new ones are made with (devices.c, link_change).  Failures are logged. */
void kernel_arp_own(struct kernel *k, struct nl_sock *sk, struct nl_cache *links,
		    uint32_t ifindex);

/*
 * Creates the whole kernel side of spec (defaults already applied, name set):
 * veth pair with its host end called host_ifname (generated when
 * host_ifname[0] is NUL, written back), or macvlan; addresses; up; marks.
 * *mtu receives the MTU the kernel applied.  On failure everything made is
 * deleted again and err says what went wrong.
 */
int kernel_create(struct kernel *k, const struct efi_iface_spec *spec, char *host_ifname,
		  uint32_t *mtu, char *err, size_t errlen);
/* Deletes the devices of instance/name that carry this efid's mark (the
 * host end host_ifname, the inner device name).  Missing ones are fine. */
int kernel_remove(struct kernel *k, const char *instance, const char *name,
		  const char *host_ifname, char *err, size_t errlen);
/* Adds those of spec's addresses that the inner device (ifindex, in the
 * namespace of sk) lacks.  *added receives how many. */
int kernel_addrs_ensure(struct kernel *k, struct nl_sock *sk, uint32_t ifindex,
			const struct efi_iface_spec *spec, struct nl_cache *addrs,
			unsigned *added, char *err, size_t errlen);

/* reconcile.c */

/* Every record (of one instance, or all with NULL) in a malloc'd array. */
int kernel_records(struct kernel *k, const char *instance, struct store_iface **out,
		   size_t *n);

/*
 * Re-reads one instance from the kernel and writes state, link, ifindex and
 * GIDs of each of its records to the store where they changed.  *missing
 * receives how many records are missing (and not known to be unrepairable).
 */
int kernel_refresh_instance(struct kernel *k, const char *instance, unsigned *missing);
/* The same for every recorded instance. */
int kernel_refresh_all(struct kernel *k, unsigned *missing);
/* Re-creates the kernel side of a record (leftovers with its mark removed
 * first) and refreshes it.  Failure is recorded so it is not retried. */
int kernel_repair(struct kernel *k, const struct store_iface *rec, char *err, size_t errlen);
/* Re-creates every missing record whose namespace exists.  Returns how many
 * were repaired. */
unsigned kernel_repair_missing(struct kernel *k);
/* Forget repair failures (of one instance, or all with NULL). */
void kernel_repair_forget(struct kernel *k, const char *instance);
/* Forget the repair failures of interfaces on uplink (it just appeared).
 * Returns true when there were any. */
bool kernel_repair_forget_uplink(struct kernel *k, const char *uplink);
/* Rebuilds the strays list from the host namespace and every /run/netns/ *. */
int kernel_strays_scan(struct kernel *k);
void kernel_strays_free(struct kernel *k);
/* Drops instance/ifname from the strays list (its device went away). */
void kernel_strays_drop(struct kernel *k, const char *instance, const char *ifname);

/* watch.c */

/* Starts watching instance (no-op when not watching or already watched). */
int watch_instance_add(struct kernel *k, const char *instance);
/* Stops watching instance when it has no interfaces left. */
void watch_instance_prune(struct kernel *k, const char *instance);
/* Asks for a refresh of instance (NULL: all) on the next loop iteration. */
void watch_schedule_resync(struct kernel *k, const char *instance);
/* Asks for a repair pass shortly (config.repair only). */
void watch_schedule_repair(struct kernel *k);
/* Frees every watch source and socket. */
void watch_stop(struct kernel *k);

#endif
