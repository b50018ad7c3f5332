/* SPDX-License-Identifier: MIT */
/*
 * Per-path transport state for multipath: a path is one way packets of a
 * connection take through the fabric (today one local socket; later one
 * source port on one uplink, for ECMP entropy).  Each path has its own RTT
 * estimate, its own congestion window (cc.h) and its own health: a path
 * whose packets stop being acknowledged for a few RTTs is suspected and
 * avoided, probed now and then, and re-admitted (with the window it had)
 * as soon as it answers.
 * The connection's window is the sum of its usable paths' windows, so one
 * congested path shrinks only its own share.
 *
 * Pure functions of the struct, the parameters and the clock the caller
 * passes (unit-tested in tests/unit/test_path.c).
 */
#ifndef EFI_LIBEFI_PATH_H
#define EFI_LIBEFI_PATH_H

#include <stdbool.h>
#include <stdint.h>

#include "cc.h"
#include "rtt.h"

/* Paths per QP (path ids are one byte on the wire). */
#define EFI_MAX_PATHS	8u

enum efi_path_state {
	EFI_PATH_ACTIVE,
	EFI_PATH_SUSPECT,	/* silent too long: avoided, probed */
};

struct efi_path {
	struct efi_rtt rtt;
	struct efi_cc cc;
	enum efi_path_state state;
	uint32_t inflight;		/* packets sent on it, not yet acknowledged, SACKed or lost */
	uint64_t quiet_since_ns;	/* waiting for an answer since (valid while inflight) */
	uint64_t last_ack_ns;		/* last answer on this path */
	uint64_t next_probe_ns;		/* SUSPECT: when to probe it next */
	uint64_t rack_xmit_ns;		/* send time of the newest packet delivered on it (RACK) */
	uint64_t next_send_ns;		/* pacing, when cwnd < 1 */
	bool local_down;		/* its lane's uplink is down (efid's path table): suspected,
					 * not probed, not re-admitted until it is up */
	bool loss_unanswered;		/* packets of it were declared lost and it has not
					 * answered since: its silence clock keeps running */
	double cwnd_before_rto;		/* the window a timeout cut, given back if it was spurious */
	uint8_t dst_lane;		/* the peer's lane its requests go to: 0, or another once
					 * its probes went unanswered (req_timers.c, rehash_probe_path) */
	/* counters */
	uint64_t retransmissions;	/* its packets sent again (on any path) */
	uint64_t suspected, restored;
};

void efi_path_init(struct efi_path *p, const struct efi_cc_params *cp, uint64_t now);

/* How long a path with packets outstanding may stay silent before it is
 * suspected: suspect_rtts × srtt within [suspect_min, suspect_max]. */
uint64_t efi_path_suspect_after_ns(const struct efi_path *p, const struct efi_cc_params *cp);

/* A packet of weight packets left on the path.  Its silence clock starts
 * when it had nothing in flight, unless what it lost last is still
 * unanswered (a dead path must not look fresh with every retransmission). */
void efi_path_on_send(struct efi_path *p, uint32_t weight, uint64_t now);

/* Packets of the path were declared lost. */
void efi_path_on_loss(struct efi_path *p);

/* weight packets of the path left the flight (acknowledged, SACKed or
 * declared lost). */
void efi_path_on_leave(struct efi_path *p, uint32_t weight);

/* An answer on the path arrived (rtt_ns: its RTT sample, 0 if none).
 * Returns true when this re-admits a suspected path. */
bool efi_path_on_answer(struct efi_path *p, const struct efi_cc_params *cp, uint64_t rtt_ns, uint64_t now);

/* Checks the path's health.  Returns true when it becomes suspected now
 * (the caller then moves its in-flight packets to other paths). */
bool efi_path_check(struct efi_path *p, const struct efi_cc_params *cp, uint64_t now);

/* The path table says the path's local uplink went down: suspected at
 * once.  Returns true when it was active (the caller then moves its
 * in-flight packets to other paths). */
bool efi_path_on_local_down(struct efi_path *p, uint64_t now);

/* … and up again: a suspected path is probed at once (its answer
 * re-admits it). */
void efi_path_on_local_up(struct efi_path *p, uint64_t now);

/* A suspected path due for a probe (the caller sends one packet on it and
 * calls efi_path_on_probe). */
bool efi_path_probe_due(const struct efi_path *p, uint64_t now);
void efi_path_on_probe(struct efi_path *p, const struct efi_cc_params *cp, uint64_t now);

/* Packets the path may still take: window − in flight; a path with nothing
 * in flight always has room for one (a window below one packet is
 * enforced by pacing, next_send_ns). */
static inline double efi_path_room(const struct efi_path *p)
{
	return p->inflight ? p->cc.cwnd - p->inflight : (p->cc.cwnd > 1 ? p->cc.cwnd : 1);
}

/* Active, not paced out, with room: may take the next packet now. */
static inline bool efi_path_usable(const struct efi_path *p, uint64_t now)
{
	return p->state == EFI_PATH_ACTIVE && now >= p->next_send_ns && efi_path_room(p) > 0;
}

/* The connection's window in packets: the sum of the active paths'
 * windows; with none active, the largest window of any (a connection keeps
 * sending on suspected paths rather than stopping: only the QP's
 * timeout × retry_cnt fails it). */
double efi_paths_window(const struct efi_path *paths, unsigned n);

/* The path for the next packet: the active path with the most room
 * (window − in flight; a path with nothing in flight always has room for
 * one) that its pacing allows now; with none active, of the suspected paths
 * with room the one heard from last.  Returns the index, or −1 when every
 * candidate is paced out or full. */
int efi_paths_pick(const struct efi_path *paths, unsigned n, uint64_t now);

/* The path for a retransmission of a packet lost on path `avoid`: the
 * active path with room, other than avoid, heard from most recently (a
 * path that answers now is the likeliest to deliver); −1 when there is
 * none (the caller falls back to efi_paths_pick). */
int efi_paths_pick_retx(const struct efi_path *paths, unsigned n, uint64_t now, int avoid);

#endif
