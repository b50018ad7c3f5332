/* SPDX-License-Identifier: MIT */
/*
 * The connection manager's records in the store (schema 4): listeners and
 * established connections, so that a restarted efid (SIGTERM, SIGKILL,
 * upgrade) knows them and the applications can take them up again
 * (CM_RESUME, docs/connection-manager.md).  Each call is one statement;
 * the caller groups them in a transaction (store_begin/store_commit) and
 * in a batch, which prepares each kind of statement once for all of them
 * (efid writes a thousand records in one go when a thousand connections
 * end at once).
 */
#ifndef EFID_STORE_CM_H
#define EFID_STORE_CM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "gid.h"
#include "ifacespec.h"
#include "store.h"

struct store_cm_listener {
	char instance[EFI_INSTANCE_MAX + 1];
	char ifname[EFI_IFNAME_MAX + 1];
	uint32_t service, backlog;
	pid_t pid;
};

struct store_cm_conn {
	char instance[EFI_INSTANCE_MAX + 1];
	char ifname[EFI_IFNAME_MAX + 1];
	uint64_t tid;
	bool active;
	uint64_t handle;		/* passive: the listener's name for it */
	uint8_t peer[16];		/* the other efid's address (IPv6 or v4-mapped) */
	union efi_gid peer_gid;
	uint32_t local_qpn, peer_qpn;
	pid_t pid;
};

struct store_cm_batch {
	struct store *s;
	void *st[4];		/* sqlite3_stmt, prepared on first use */
};

/* A batch on s (nothing prepared yet); store_cm_batch_end finalizes. */
void store_cm_batch_begin(struct store_cm_batch *b, struct store *s);
void store_cm_batch_end(struct store_cm_batch *b);

/* Insert or replace, delete.  0 or -errno (store_errmsg says why). */
int store_cm_listener_put(struct store_cm_batch *b, const struct store_cm_listener *l);
int store_cm_listener_del(struct store_cm_batch *b, const char *instance, const char *ifname,
			  uint32_t service);
int store_cm_conn_put(struct store_cm_batch *b, const struct store_cm_conn *c);
int store_cm_conn_del(struct store_cm_batch *b, const char *instance, uint64_t tid, bool active);
/* Every record, to the callbacks (either may be NULL); a row that does not
 * check out (a hand-edited database) is skipped.  0 or -errno. */
int store_cm_load(struct store *s, void (*listener)(const struct store_cm_listener *, void *),
		  void (*conn)(const struct store_cm_conn *, void *), void *ud);

#endif
