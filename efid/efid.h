/* SPDX-License-Identifier: MIT */
/*
 * The daemon's context: one per efid process, owned by the event loop
 * (single-threaded; nothing here needs a lock).
 */
#ifndef EFID_EFID_H
#define EFID_EFID_H

#include <limits.h>
#include <stdbool.h>
#include <systemd/sd-event.h>

#include "efid_config.h"

struct store;
struct kernel;
struct control;
struct lease_registry;
struct cm;
struct uplinks;

struct efid {
	sd_event *event;
	struct efid_config config;
	char config_path[PATH_MAX];
	char state_dir[PATH_MAX];
	char runtime_dir[PATH_MAX];
	char socket_path[PATH_MAX];
	struct store *store;     /* store.h */
	struct kernel *kernel;   /* kernel.h: netlink sockets and watches */
	struct control *control; /* control.h: the socket server */
	struct lease_registry *leases; /* lease.c: wire endpoints handed to libefi */
	struct cm *cm;           /* cm.c: listeners, connections, efid ⇄ efid sockets */
	struct uplinks *uplinks; /* uplinks.c: [Transport] Uplinks and the path table, or NULL */
	bool stopping;
};

/* Sends a STATUS= line to systemd (no-op without $NOTIFY_SOCKET) and logs it
 * at debug level. */
void efid_status(struct efid *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
