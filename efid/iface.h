/* SPDX-License-Identifier: MIT */
/*
 * Interfaces: attach, detach, reconcile, watch.  This is where the store and
 * the kernel meet; every change is made to the kernel and recorded in one
 * store transaction, and undone completely when any step fails.
 *
 * All functions return 0 or a negative errno and, on failure, write a message
 * into err that says what was wrong and what to do.  Errnos used:
 *   -EINVAL   the request is malformed (bad name, address, mtu, kind)
 *   -ENOENT   instance (netns), interface or uplink does not exist
 *   -EEXIST   a conflict: name or address taken, or the interface exists
 *             with different settings
 *   -EBUSY/-EROFS/-ENOSPC/-EIO  from the store (see store.h)
 *   other     from netlink
 */
#ifndef EFID_IFACE_H
#define EFID_IFACE_H

#include <stddef.h>

#include "ctlproto.h"
#include "ifacespec.h"

struct efid;

/* Opens the netlink sockets (host namespace) into d->kernel. */
int kernel_open(struct efid *d);
/* Closes everything kernel_open and iface_watch_start made; accepts a
 * context where kernel_open was never called. */
void kernel_close(struct efid *d);

/*
 * Attaches: fills defaults from d->config (kind, uplink, mtu, "efiN" when
 * name is empty, N the lowest free in the instance), checks the instance's
 * netns exists, the uplink exists, name and addresses are free; creates the
 * kernel side (veth: inner end named spec->name in /run/netns/INSTANCE,
 * addressed and up, outer end on the uplink bridge and up; macvlan: on the
 * uplink device) and records it.  Idempotent: a request equal to the
 * record gives *result = EFI_R_UNCHANGED (or EFI_R_REPAIRED when the kernel
 * side had to be re-created).  *effective receives the spec as applied.
 */
int iface_attach(struct efid *d, const struct efi_iface_spec *spec,
		 struct efi_iface_spec *effective, enum efi_ctl_result *result, char *err,
		 size_t errlen);

/* Detaches one interface: kernel side removed, record deleted. */
int iface_detach(struct efid *d, const char *instance, const char *name, char *err,
		 size_t errlen);
/* Detaches every interface of an instance; *count receives how many. */
int iface_detach_all(struct efid *d, const char *instance, unsigned *count, char *err,
		     size_t errlen);

/* Applies every *.conf in dir (the interfaces.d form) with iface_attach;
 * logs each failure and goes on.  Returns the number of files that failed. */
int iface_apply_dir(struct efid *d, const char *dir);

/*
 * At start, before READY=1: compares every record with the kernel, marks
 * what vanished `missing` (re-creating it when config.repair), refreshes
 * link state and GID tables, and finds strays (devices carrying this host's
 * mark that have no record), which are logged and listed, never deleted.
 */
int iface_reconcile(struct efid *d);

/* Subscribes to link and address events in the host namespace and in each
 * instance namespace that has interfaces, as sd-event sources on d->event,
 * keeping state, link and GIDs current in the store. */
int iface_watch_start(struct efid *d);

struct efid_stray {
	char host_ifname[EFI_IFNAME_MAX + 1];
	char instance[EFI_INSTANCE_MAX + 1]; /* "" when unknown */
	char ifname[EFI_IFNAME_MAX + 1];     /* "" when unknown */
};
/* The strays found by the last reconcile or watch event. */
size_t iface_strays(struct efid *d, const struct efid_stray **out);

#endif
