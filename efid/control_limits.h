/* SPDX-License-Identifier: MIT */
/*
 * What one client of the control socket may hold ([Control] in efid.conf):
 * connections, descriptors received and not yet claimed by a request, and
 * reply bytes queued and not yet read.  A "user" is one uid of one instance
 * (or of the host, or of a namespace efid does not know); an "instance" is
 * all of its users together.  Host root is exempt: it is the operator, and
 * must keep working while a tenant is at its limits.  Every check is O(1)
 * in the number of connections (accounts are per user, not per client).
 */
#ifndef EFID_CONTROL_LIMITS_H
#define EFID_CONTROL_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct efid_config;
struct peer;
struct ctl_account;
struct ctl_limits;

/* One client's share: its user's and its instance's accounts (NULL when
 * exempt, or for the instance of a host client). */
struct ctl_quota {
	struct ctl_account *user, *inst;
};

struct ctl_limits *ctl_limits_new(void);
/* Accepts NULL; every quota must have been released. */
void ctl_limits_free(struct ctl_limits *L);

/* True for callers no limit applies to (root in efid's namespace). */
bool ctl_limits_exempt(const struct peer *p);

/* Counts one more connection of p in *q.  Returns 0, or -EUSERS with the
 * reason in why (which limit, whose) when p is at a connection limit; *q
 * is then empty and nothing is counted. */
int ctl_quota_admit(struct ctl_limits *L, const struct efid_config *cfg, const struct peer *p,
		    struct ctl_quota *q, char *why, size_t whylen);
/* Gives back the connection (its descriptors and queued bytes must have
 * been given back already) and empties *q. */
void ctl_quota_release(struct ctl_limits *L, struct ctl_quota *q);

/* Takes n descriptors (n > 0) or gives -n back.  Taking fails with -EMFILE
 * and a reason when a limit would be passed (nothing taken). */
int ctl_quota_fds(const struct efid_config *cfg, struct ctl_quota *q, int n, char *why,
		  size_t whylen);
/* The same for queued reply bytes: -ENOBUFS over the user's or instance's
 * limit.  The per-connection limit is the caller's (it stops reading). */
int ctl_quota_queued(const struct efid_config *cfg, struct ctl_quota *q, int64_t n, char *why,
		     size_t whylen);

#endif
