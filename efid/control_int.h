/* SPDX-License-Identifier: MIT */
/*
 * Internals of the control socket server shared by control.c (clients:
 * buffers, framing, dispatch) and control_listen.c (the listening socket:
 * accepting, admission, backing off when out of descriptors).
 */
#ifndef EFID_CONTROL_INT_H
#define EFID_CONTROL_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "auth.h"
#include "control_limits.h"
#include "ctlproto.h"
#include "ratelimit.h"

struct efid;
struct lease;

struct client {
	struct control *ctl;
	struct client *next, *prev;
	int fd;
	uint32_t events;        /* what it is registered for in ctl->epfd */
	bool dead;              /* freed during a batch (on_clients) */
	struct peer peer;
	uint8_t *in;
	size_t in_len, in_cap;
	uint8_t *out;
	size_t out_len, out_off, out_cap;
	uint64_t partial_since; /* CLOCK_MONOTONIC usec when a request began arriving, 0 if none */
	bool close_after_flush;
	unsigned id;
	struct lease *lease;   /* wire endpoints this connection holds */
	/* Descriptors to pass, each with the first byte of its reply frame
	 * (offset into out); in offset order. */
	struct pending_fd {
		size_t offset;
		int fd;
	} fds[2 * EFI_CTL_MAX_FDS];
	unsigned nfds;
	/* Descriptors received and not yet claimed by a request (the next
	 * request takes them all: PUBLISH_COUNTERS one, LEASE_RESUME one per
	 * lane); dropped once no request is in flight. */
	int in_fds[EFI_CTL_MAX_FDS];
	unsigned nin_fds;
	struct ctl_quota quota; /* what this connection counts against (control_limits.h) */
	uint64_t queued;        /* out_len - out_off as counted in quota */
	bool in_full;           /* the input buffer holds the most it may */
};

struct control {
	struct efid *d;
	int listen_fd;
	bool owns_path;        /* efid created the socket file (not socket activation) */
	sd_event_source *listen_src;
	sd_event_source *sweep;
	struct client *clients;
	unsigned nclients;
	unsigned next_id;
	struct ctl_limits *limits;
	/* Clients live in an epoll set of efid's own, one sd-event source
	 * (control.c, on_clients); clients freed while a batch of its events
	 * is handled wait on dead until the batch is done. */
	int epfd;
	sd_event_source *clients_src;
	bool in_batch;
	struct client *dead;
	/* Out of descriptors (EMFILE/ENFILE): a descriptor kept free so that
	 * one pending connection can still be taken (host root served, others
	 * told no) instead of the backlog waiting, and a timer that turns the
	 * listener back on after a pause when even that fails (control_listen.c). */
	int reserve_fd;
	sd_event_source *backoff;
	uint64_t backoff_usec;
	struct ratelimit refuse_rl, accept_rl, limit_rl;
};

/* Adds a connected, identified client whose quota was admitted (both are
 * the client's from here on, also on failure).  Returns 0 or -errno (cfd is
 * then closed and the quota released). */
int control_client_add(struct control *ctl, int cfd, const struct peer *peer,
		       struct ctl_quota *quota);
/* Disconnects and frees c. */
void control_client_free(struct client *c);
/* The listening side (control_listen.c). */
int control_listen_start(struct efid *d, struct control *ctl);
void control_listen_stop(struct efid *d, struct control *ctl);

#endif
