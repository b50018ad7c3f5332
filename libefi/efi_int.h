/* SPDX-License-Identifier: MIT */
/*
 * libefi internals: the objects behind <efi/efi.h> and the transport's state.
 * Not installed, not exported (libefi.map lists the public names only).
 *
 * Locking (rxe style: each function says which lock it takes):
 *  - ctx->lock (a mutex) protects the transport: the wire, the QP table, every
 *    QP's queues and PSN state, the MR table, the counters.  The progress
 *    thread, post_send/post_recv, modify/destroy_qp and reg/dereg_mr take it
 *    (blocking: a futex only when contended); efi_poll_cq only *tries* it,
 *    so a poller never waits for another thread's transport work.
 *  - cq->lock protects one CQ's ring and its notification state.  Taken
 *    with ctx->lock held when completions are produced (order: ctx->lock,
 *    then cq->lock, then channel->lock), alone by efi_poll_cq.
 *  - channel->lock protects the channel's event list.
 *  - ctx->obj_lock protects object counts (PDs, CQs, channels) for close.
 */
#ifndef EFI_LIBEFI_INT_H
#define EFI_LIBEFI_INT_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <efi/efi.h>

#include "cc.h"
#include "packet.h"
#include "path.h"
#include "path_table.h"
#include "reorder.h"
#include "wire.h"

#include "efi_limits.h"

/* Transport tracing for debugging, compiled in only with -DEFI_TRACE_ON
 * (events: timeouts, suspicions, NAKs) or -DEFI_TRACE_ON=2 (every packet
 * too). */
#ifdef EFI_TRACE_ON
#include <stdio.h>
#define EFI_TRACE(...) fprintf(stderr, __VA_ARGS__)
#else
#define EFI_TRACE(...) do { } while (0)
#endif
#if defined(EFI_TRACE_ON) && EFI_TRACE_ON >= 2
#define EFI_TRACE_PKT(...) fprintf(stderr, __VA_ARGS__)
#else
#define EFI_TRACE_PKT(...) do { } while (0)
#endif

static inline uint64_t efi_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);	/* vDSO: no system call */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The largest path MTU whose packets fit a link of link_mtu bytes (IPv4,
 * UDP and the largest data header, EFI_MAX_DATA_HDR_LEN). */
static inline enum efi_mtu efi_active_mtu(uint32_t link_mtu)
{
	int m = EFI_MTU_256;
	while (m < EFI_MTU_4096 && (128u << (m + 1)) + 28u + EFI_MAX_DATA_HDR_LEN <= link_mtu)
		m++;
	return (enum efi_mtu)m;
}

/* Payload bytes per packet of a QP with this path_mtu on a link of
 * link_mtu bytes (ipv6: the peer's address family).  A path_mtu below the
 * port's active_mtu is the application's limit, in bytes of the enum.  A
 * path_mtu equal to it says "as large as the port takes": the verbs enum
 * cannot say 1424 (a 1500-byte link's room), so with link_seg the segment
 * fills the link, up to EFI_MAX_SEG; both ends compute the same when their
 * links have the same MTU (docs/wire-format.md, "Segmentation").  0 if the
 * link leaves no room. */
static inline uint32_t efi_qp_seg(uint32_t link_mtu, bool ipv6, enum efi_mtu path_mtu, bool link_seg)
{
	uint32_t limit = (uint32_t)efi_mtu_to_num(path_mtu);

	if (link_seg && path_mtu == efi_active_mtu(link_mtu))
		limit = EFI_MAX_SEG;
	return efi_pkt_seg_payload(link_mtu, ipv6, limit);
}

/* ---------------------------------------------------------------- context */

struct efi_mr_int;

struct efi_ctx_params {
	char ifname[EFI_DEVICE_NAME_MAX];
	char instance[EFI_DEVICE_NAME_MAX];
	int ifindex;
	uint32_t link_mtu;
	uint32_t port_base;
	uint32_t qpn_base;	/* slot << 12 */
	unsigned nlanes;	/* wire sockets (paths): lane L's port is
				 * port_base + L * EFI_LANE_STRIDE + slot */
	int ngids;
	union efi_gid gids[8];
	/* Congestion-control spec from efid.conf ("" = defaults), cc.h. */
	char cc_spec[512];
};

struct efi_countershm;

struct efi_context_int {
	struct efi_context pub;
	struct efi_device dev;		/* a copy: pub.device points here */
	struct efi_ctx_params p;
	void *ctl;			/* struct ctl_client *: the lease, or NULL */

	pthread_mutex_t lock;		/* the transport, see above */
	pthread_mutex_t obj_lock;
	int npd, ncq, nchannel;

	struct efi_wire *wire;
	/* QPN blocks (qpn_blocks.c): block b holds QPNs qpn_base[b] | index,
	 * its QPs in qps[b][index], its sockets as lanes b × EFI_WIRE_MAX_LANES
	 * + L of the wire.  A packet finds its QP in O(1): the slot of its
	 * destination QPN (qpn >> 12) names the block in block_of_slot. */
	struct efi_qp_int **qps[EFI_MAX_BLOCKS];	/* EFI_QPN_PER_BLOCK each, by qp_index */
	uint32_t qpn_base[EFI_MAX_BLOCKS];		/* [0] is p.qpn_base */
	unsigned nqp_block[EFI_MAX_BLOCKS];
	unsigned nblocks;
	uint8_t block_of_slot[EFI_QPN_PER_BLOCK];	/* slot → block + 1; 0: not ours */
	struct efi_wire *blocks_wire;	/* what further blocks' sockets join, or NULL (a test wire: one block) */
	unsigned nqp;
	struct efi_qp_int *qp_list;	/* every QP (counters, revoke, the CQ-loss sweep) */
	/* The QPs a transport run visits (active.c): a ring of those with
	 * something to do or a timer to run, so that a run costs O(active
	 * QPs), not O(QPs).  act_head is where the next run starts: the QPs
	 * take turns at going first. */
	struct efi_qp_int *act_head;
	unsigned nactive;
	bool busy;			/* a QP has unacknowledged or queued work */
	/* efi_poll_cq is running the transport (ctx->lock): a receive it
	 * completes may be answered by the application at once, so the ACK
	 * of its message waits ack_delay_ns for that answer (xport.c) */
	bool in_app_poll;
	uint64_t ack_delay_ns;		/* $EFI_ACK_DELAY_US; 0: no ACK waits */
	uint64_t min_dead_ns;		/* $EFI_MIN_DEAD_MS; 0: EFI_MIN_DEAD_NS */
	/* $EFI_ACK_PIGGYBACK=1 (default off): a held ACK rides on the
	 * answer (docs/wire-format.md).  Our ACKs say we read PACKs in
	 * any case (causal ACKs), unless pack_deaf: the unit tests' stand-in
	 * for a libefi that predates PACKs (it neither says so nor sends
	 * causal ones). */
	bool pack, pack_deaf;
	/* The earliest time a held ACK must leave, 0 if none is held: the
	 * progress thread sends it then if the application has not
	 * (written under ctx->lock, read racily by progress.c) */
	_Atomic uint64_t ack_deadline_ns;
	/* some CQ of the context lost a completion (set by cq.c): the next
	 * transport run takes it (clears it) and looks at every QP's CQs
	 * once (xport.c); from then on, cq_lost_seen, at each QP it visits */
	_Atomic bool cq_lost_any;
	bool cq_lost_seen;
#ifdef EFI_TRACE_ON
	uint64_t trace_last_run_ns;	/* the last transport run (trace builds) */
#endif
	size_t reorder_bytes;		/* what its QPs' reorder buffers hold (reorder.h) */
	uint32_t next_qp_index;
	uint32_t next_pd_handle, next_cq_handle, next_ah_handle;

	/* Congestion control and path parameters of every QP (read at open:
	 * defaults, then $EFI_CC). */
	struct efi_cc_params ccp;
	/* Segments fill the link MTU when a QP's path_mtu is the port's
	 * active_mtu (efi_qp_seg); false with EFI_LINK_SEG=0. */
	bool link_seg;

	/* MR table: open addressing by key (lkey == rkey). */
	struct efi_mr_int **mr_slots;
	uint32_t mr_cap, mr_count;

	/* Counters not attributable to a live QP: destroyed QPs, drops of
	 * unknown QPs and malformed packets, and totals. */
	struct efi_counters dead;

	/* Packet buffers, used under ctx->lock. */
	uint8_t *txbuf;			/* EFI_BATCH × EFI_PKTBUF_SIZE */
	uint8_t *rxbuf;			/* EFI_BATCH × EFI_RXBUF_SIZE */
	struct efi_wire_pkt txpkts[EFI_BATCH];
	struct efi_wire_pkt rxpkts[EFI_BATCH];

	/* Progress thread. */
	pthread_t progress;
	bool progress_running;
	int stop_fd;			/* eventfd: tells the progress thread to quit */
	_Atomic uint64_t app_active_ns;	/* last time efi_poll_cq ran the transport (relaxed) */
	struct efi_lease *lease;		/* lease.c: efid restarts, revoke, quota; or NULL */
	/* cm_watch.c: the thread serving all CM connections of the context,
	 * started with the first one; NULL before */
	struct efi_cm_watcher *_Atomic cm_watcher;
	struct efi_countershm *cshm;	/* counters page efid reads, or NULL (counters.c) */
	struct efi_pt pt;		/* efid's path table (path_table.h), under lock */
	struct efi_rtt_peers rtt_peers;	/* RTT per peer and path (rtt.h, retx.c), under lock */
	uint64_t cshm_next_ns;		/* progress thread only: next publication */
	_Atomic bool stopping;
};

#define ctx_of(c) ((struct efi_context_int *)(c))

/* ---------------------------------------------------------------- PD / MR */

struct efi_pd_int {
	struct efi_pd pub;
	_Atomic int users;		/* MRs and QPs */
};

struct efi_mr_int {
	struct efi_mr pub;
	int access;
	uintptr_t start, end;		/* [start, end) */
};

/* Looks up a key (under ctx->lock).  NULL if unknown. */
struct efi_mr_int *efi_mr_lookup(struct efi_context_int *ctx, uint32_t key);
/* Checks that [va, va+len) lies in an MR of key with all access bits of
 * need, and (for lkeys) that it belongs to pd (NULL: any).  Returns the MR or
 * NULL.  len 0 always passes for a known key. */
struct efi_mr_int *efi_mr_check(struct efi_context_int *ctx, uint32_t key, struct efi_pd *pd,
				uint64_t va, uint64_t len, int need);
void efi_mr_table_free(struct efi_context_int *ctx);

/* -------------------------------------------------------------- channels, CQs */

struct efi_channel_int {
	struct efi_comp_channel pub;
	pthread_mutex_t lock;
	struct efi_cq_int **events;	/* FIFO of CQs with a pending event */
	unsigned ev_head, ev_count, ev_cap;
};

struct efi_cq_int {
	struct efi_cq pub;
	pthread_mutex_t lock;
	pthread_cond_t acked;
	struct efi_wc *ring;
	uint32_t mask;			/* ring size − 1 */
	uint32_t head, tail;		/* consumer / producer */
	uint64_t overflows;
	/* A completion found the ring full and was lost: the CQ is in error
	 * (efi_poll_cq says -EOVERFLOW) and its QPs go to ERR, as a verbs CQ
	 * error would take them (read racily by the transport: it sets once) */
	_Atomic bool overflowed;
	int armed;			/* 0, 1 = any, 2 = solicited only */
	unsigned events_got, events_acked;
	_Atomic int users;		/* QPs */
};

/* Adds one completion (ctx->lock held; takes cq->lock).  solicited: a receive
 * completion of a solicited message. */
void efi_cq_push(struct efi_cq_int *cq, const struct efi_wc *wc, bool solicited);

/* ---------------------------------------------------------------- QPs */

struct efi_sge_int {
	uint8_t *addr;
	uint32_t length;
};

/* A send WQE. */
struct efi_swqe {
	uint64_t wr_id;
	enum efi_wr_opcode opcode;
	unsigned send_flags;
	bool signaled;
	uint32_t imm_be;
	uint64_t remote_addr;
	uint32_t rkey;
	uint64_t compare_add, swap;
	uint32_t length;		/* message bytes */
	uint32_t num_sge;
	struct efi_sge_int *sge;	/* max_send_sge */
	uint8_t *inline_buf;		/* max_inline_data, data when INLINE */
	bool is_inline;
	/* transport */
	uint32_t first_psn, npkts;	/* valid once started */
	uint32_t read_done;		/* Read: bytes received so far */
	bool resp_done;			/* Read/atomic: answered in full before reaching the head */
	uint32_t rd_high;		/* Read: one past the furthest response placed, in packets */
	uint32_t rd_gap_asked;		/* Read: the response (packet index + 1) asked for again, 0: none */
	enum efi_wc_status status;	/* a local error found at post time */
	bool local_error;
	uint8_t rnr_tries;
};

struct efi_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	struct efi_sge_int *sge;	/* max_recv_sge */
	uint32_t length;
	bool bad;			/* an SGE failed the lkey check */
};

/* Where a transmitted request packet stands (the SACK scoreboard, retx.c). */
enum efi_tx_state {
	EFI_TX_NONE,			/* never sent, or acknowledged */
	EFI_TX_INFLIGHT,		/* sent, counted in the pipe */
	EFI_TX_SACKED,			/* the responder holds it: never sent again */
	EFI_TX_LOST,			/* to be sent again */
};

/* A per-PSN send record: what each transmitted request packet was, when and
 * on which path it left, and where it stands. */
struct efi_txrec {
	uint32_t psn;
	uint32_t wqe;			/* send queue index */
	uint64_t tx_ns;			/* 0: never left (or its send failed) */
	uint8_t path;			/* which path it left on last */
	uint8_t retx;			/* times retransmitted */
	uint8_t nsent;			/* times it left (saturating) */
	uint8_t state;			/* enum efi_tx_state */
	uint8_t npsn;			/* PSNs it covers (a Read request: its chunk) */
};

enum efi_respq_kind { RESPQ_ACK, RESPQ_READ, RESPQ_ATOMIC };

struct efi_respq_ent {
	uint8_t kind;
	uint8_t syndrome;		/* ACK: AETH syndrome */
	uint32_t psn;			/* ACK/ATOMIC: its PSN; READ: next PSN to send */
	uint32_t msn;
	uint64_t ts_echo;
	uint8_t path;			/* echoed: the path of the request it answers */
	uint64_t orig;			/* ATOMIC */
	uint32_t first_psn;		/* READ: PSN of its request */
	uint8_t *src;			/* READ: next byte */
	uint32_t left;			/* READ: bytes left */
	uint32_t total;
};

struct efi_atomic_cache_ent {
	bool valid;
	uint32_t psn;
	uint64_t orig;
};

struct efi_qp_int {
	struct efi_qp pub;
	struct efi_context_int *ctx;
	struct efi_qp_init_attr init;	/* caps as allocated */
	struct efi_qp_attr attr;	/* as last modified */
	struct efi_counters cnt;

	struct sockaddr_in6 peer;	/* from dgid and dest_qp_num */
	uint8_t lane_base;		/* its block's first lane in ctx->wire (qpn_blocks.c) */
	/* Per-connection secret the connection manager negotiated (0: none,
	 * a QP connected by hand).  The transport stamps it on every packet
	 * and drops arriving packets that do not carry it. */
	uint32_t conn_key;
	/* The peer's link MTU as the connection manager learnt it (0: a QP
	 * connected by hand; EFI_PEER_LINK_OLD: a peer that did not say):
	 * segments are sized for the smaller of the two links, so that both
	 * sides compute the same (efi_qp_seg, docs/wire-format.md) */
	uint32_t peer_link_mtu;
	/* The connection-manager id this QP is bound to (efi_connect,
	 * efi_accept), so that destroying either one first unbinds it and the
	 * id's watcher never touches a freed QP.  Guarded by the CM's bind
	 * lock (cm.c), not ctx->lock. */
	struct efi_cm_id *cm_id;
	uint32_t seg;			/* payload bytes per packet */
	uint64_t rto_ns;		/* 0: infinite */
	uint64_t min_rnr_ns;		/* the RNR timer we advertise */

	/* send queue: ring of max_send_wr (power of two) */
	struct efi_swqe *sq;
	uint32_t sq_mask;
	uint32_t sq_head;		/* oldest not completed */
	uint32_t sq_started;		/* next WQE not given PSNs yet */
	uint32_t sq_tail;		/* next free */
	uint32_t snd_una;		/* oldest unacknowledged PSN */
	uint32_t snd_nxt;		/* next PSN to (re)transmit */
	uint32_t snd_max;		/* PSN of the next WQE to start */
	uint32_t wqe_hint;		/* WQE index snd_nxt is probably in */
	uint32_t pkts_since_ackreq;
	unsigned rd_outstanding;	/* started Reads/atomics not completed */
	uint64_t timer_start_ns;	/* retransmission timer reference */
	unsigned retries;		/* timeouts in a row with no answer at all */
	unsigned stalls;		/* timeouts in a row with answers but no progress */
	bool peer_alive;		/* a response arrived since the timer started */
	bool rnr_wait;
	uint64_t rnr_until_ns;
	/* requester: the highest PSN a plain ACK acknowledged while a Read or
	 * atomic whose response went missing held snd_una back; applied once
	 * that response arrives (the responder never goes back on an ACK) */
	uint32_t ack_high;
	bool ack_high_valid;
	uint32_t implied_nak_psn;	/* the Read/atomic (first PSN) asked for again */
	bool implied_nak_valid;
	/* requester: Read responses placed ahead of the one expected, bit
	 * psn % EFI_RD_EARLY, for every outstanding Read; NULL while none is
	 * (read_resp.c) */
	uint64_t *rd_early;
	struct efi_txrec *txrec;
	/* selective retransmission, congestion control, paths (retx.c) */
	struct efi_path paths[EFI_MAX_PATHS];
	unsigned npaths;
	/* its peer's shared RTT entry (rtt.h; checked against peer before
	 * use, the peer may have changed), or NULL: retx.c */
	struct efi_rtt_peer *rtt_peer;
	uint32_t pt_epoch;		/* path_table.c: the context's epoch acted on */
	uint8_t pt_down;		/* path_table.c: lanes acted on as down */
	uint32_t pipe;			/* packets in flight (INFLIGHT records, by weight) */
	uint32_t lost_hint;		/* no LOST record before this PSN */
	bool have_lost;
	bool force_ackreq;		/* the next packet asks for an ACK (a retransmission, a probe) */
	bool tlp_pending;		/* a tail-loss probe may go whatever the window */
	uint8_t cur_path;		/* path of the packet being built */
	uint8_t burst_left;		/* packets cur_path may still take before a new pick */
	unsigned backoff;		/* RTO doublings in a row */
	unsigned tlp_sent;		/* tail-loss probes since the last answer */
	uint64_t last_answer_ns;	/* last response of any kind from the peer */
	uint64_t answered_tx_ns;	/* send time of the newest request answered (its ts_echo) */
	uint64_t silent_since_ns;	/* dead-peer clock: last answer or start of work */
	uint64_t timers_ns;		/* when the timers last ran with work outstanding, 0: idle */
	uint64_t last_tx_ns;		/* when the last request packets left (the tail-loss
					 * probe's clock starts there, not at the first) */
	uint64_t rack_deadline_ns;	/* 0, or when a reordering candidate expires */
	uint64_t rto_at_ns;		/* the last timeout, until the next answer (0: none) */
	uint32_t rto_nxt;		/* snd_nxt before the first of those timeouts rewound it */
	uint8_t rto_path;		/* the path the probe after the last timeout takes */
	uint32_t delivered[EFI_MAX_PATHS];	/* scratch: packets delivered per path by one response */
	uint32_t lost_now[EFI_MAX_PATHS];	/* scratch: packets declared lost per path */

	/* receive queue */
	struct efi_rwqe *rq;
	uint32_t rq_mask, rq_head, rq_tail;

	/* responder */
	uint32_t rcv_psn;		/* next expected request PSN */
	uint32_t msn;
	bool nak_sent;			/* NAK sequence error sent for this gap */
	enum { RESP_IDLE, RESP_SEND, RESP_WRITE } resp_op;
	uint32_t resp_off;		/* SEND: bytes placed; */
	uint32_t resp_over;		/* SEND: bytes beyond the receive's buffers */
	uint8_t *write_ptr;		/* WRITE: next byte */
	uint32_t write_left;
	uint32_t write_total;
	struct efi_respq_ent respq[EFI_RESPQ_SLOTS];
	uint32_t respq_head, respq_count;
	struct efi_atomic_cache_ent acache[EFI_ATOMIC_CACHE];
	uint32_t acache_next;
	struct efi_reorder reorder;	/* requests that arrived ahead of rcv_psn */
	bool ack_now;			/* an early packet arrived: ACK (with SACK) without delay */
	bool ack_hold_pending;		/* a receive completed in this run (responder.c) */
	uint64_t ack_hold_ns;		/* the held ACK leaves by then; 0: none held (xport.c) */
	bool peer_reads_pack;		/* the peer said it reads piggybacked ACKs (xport.c) */
	bool peer_sends_pack;		/* the peer sent a held ACK in a request (xport.c) */
	bool peer_wide;			/* the peer said it holds EFI_SEND_WINDOW_WIDE PSNs (xport.c) */
	/* xport.c → efi_req_build: the held ACK the next request may carry
	 * (PACK), and whether one did */
	const struct efi_respq_ent *pack_offer;
	bool pack_taken;

	struct efi_qp_int *next_active, *prev_active;	/* ctx->qp_list (every QP) */
	struct efi_qp_int *act_next, *act_prev;	/* ctx->act_head's ring (active.c) */
	bool act_on;			/* on that ring */

	/* SRQ (srq.c): a QP created with one takes a receive WQE from it for
	 * each message that needs one, into srq_wqe (its SGE array holds the
	 * SRQ's max_sge), and keeps it until the message completes. */
	struct efi_srq_int *srq;	/* NULL: the QP's own receive queue */
	struct efi_rwqe srq_wqe;
	bool srq_wqe_held;

	uint32_t ud_psn;		/* UD: PSN of the next datagram (ud.c) */

	/* The stall detector (counters.c, progress thread, ctx->lock): the
	 * send queue's head, snd_una and RNR NAKs received when last seen to
	 * move, and since when neither moved with work outstanding (0: not
	 * waiting). */
	uint32_t watch_sq_head, watch_snd_una;
	uint64_t watch_rnr_naks;
	uint64_t watch_since_ns;
};

#define qp_of(q) ((struct efi_qp_int *)(q))

/* Memory a QP holds beyond its rings (issue 18; for tests and tools). */
struct efi_qp_mem {
	size_t qp_struct;		/* struct efi_qp_int */
	size_t txrec_reserved;		/* the send records' mapping */
	size_t txrec_resident;		/* of which in memory (mincore) */
	size_t reorder;			/* the reorder buffer's slot table and packets */
	size_t read_early;		/* the bitmap of Read responses placed early */
	size_t ctx_reorder;		/* every reorder buffer of the context */
};
void efi_qp_mem(const struct efi_qp *qp, struct efi_qp_mem *m);

/* ------------------------------------------------------------------ SRQs */

/* A shared receive queue (srq.c): a ring of receive WQEs like a QP's,
 * guarded by ctx->lock as receive queues are. */
struct efi_srq_int {
	struct efi_srq pub;
	struct efi_context_int *ctx;
	struct efi_rwqe *rq;		/* ring of mask + 1 slots, one kept free */
	uint32_t mask, head, tail;
	uint32_t max_wr, max_sge;	/* as allocated */
	uint32_t limit;			/* armed srq_limit, 0: disarmed */
	efi_srq_limit_fn limit_event;
	_Atomic int users;		/* QPs created with it */
};

#define srq_of(s) ((struct efi_srq_int *)(s))

/* Moves the SRQ's oldest WQE into *into (whose SGE array holds max_sge),
 * firing the limit event if that leaves fewer than an armed limit (ctx->lock
 * held).  false if the SRQ is empty. */
bool efi_srq_take(struct efi_srq_int *srq, struct efi_rwqe *into);

/* A GID holding an IPv4 address (::ffff:a.b.c.d). */
static inline bool efi_gid_is_v4(const union efi_gid *g)
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	return memcmp(g->raw, pfx, 12) == 0;
}

/* ud.c: unreliable datagram QPs (efi.h, "Unreliable datagram"), all with
 * ctx->lock held.  efi_post_send checks a UD QP's WRs with efi_ud_check
 * (0 or EINVAL, *len its bytes), builds each into a batch with efi_ud_add
 * (0, or ENOMEM: the QP has no send queue), and sends the batch with
 * efi_ud_flush, which completes its WRs: each datagram leaves before the
 * post returns.  efi_ud_receive: a datagram the parser passed, for UD QP
 * qp.  efi_ud_max_msg: the largest UD message, the port's active_mtu. */
struct efi_ud_batch {
	unsigned n, npkt;		/* WRs taken, datagrams built (ctx->txpkts) */
	struct {
		uint64_t wr_id;
		enum efi_wc_status status;
		bool complete;		/* signaled, or an error (errors always complete) */
	} done[EFI_BATCH];
};
int efi_ud_check(struct efi_qp_int *qp, const struct efi_send_wr *wr, uint64_t *len);
int efi_ud_add(struct efi_qp_int *qp, struct efi_ud_batch *b, const struct efi_send_wr *wr, uint32_t len);
void efi_ud_flush(struct efi_qp_int *qp, struct efi_ud_batch *b);
void efi_ud_receive(struct efi_context_int *ctx, struct efi_qp_int *qp, const struct efi_pkt *pkt,
		    const struct efi_wire_pkt *wp);
uint32_t efi_ud_max_msg(const struct efi_context_int *ctx);

/* qp.c */
/* Moves the QP to ERR and flushes both queues (ctx->lock held). */
void efi_qp_to_error(struct efi_qp_int *qp);
uint64_t efi_rnr_timer_ns(unsigned code);
/* Sets the connection secret (takes ctx->lock); the connection manager calls
 * it before moving the QP to RTR. */
void efi_qp_set_conn_key(struct efi_qp *qp, uint32_t key);
/* Sets the peer's link MTU (takes ctx->lock); the connection manager calls
 * it before moving the QP to RTR, where the segment is computed for the
 * smaller link.  0: the peer did not say, so it is a libefi from before
 * segments filled jumbo links, whose segments were at most
 * EFI_OLD_MAX_SEG: this side keeps to that too, so that both agree. */
void efi_qp_set_peer_link_mtu(struct efi_qp *qp, uint32_t mtu);
#define EFI_PEER_LINK_OLD	1u	/* no link MTU is this small */
#define EFI_OLD_MAX_SEG		4096u

/* transport (xport.c, requester.c, responder.c); all with ctx->lock held */
/* Receives what is waiting, runs timers and sends what can be sent.
 * Returns the number of datagrams handled. */
int efi_xport_run(struct efi_context_int *ctx);
/* The same, and *clock_ns: the clock the run read for its QPs, 0 when it
 * had none to visit and read none (efi_poll_cq's activity stamp reuses it). */
int efi_xport_run_clock(struct efi_context_int *ctx, uint64_t *clock_ns);
/* Sends what the QP has to send now (Read responses, ACKs, requests). */
/* Sends the QP's held ACK now, if it holds one (ctx->lock held): before
 * the QP is destroyed or leaves its working states, as a NIC would have
 * acknowledged what arrived.  Without it a program that exits right after
 * its last receive left the peer's last send unacknowledged: RETRY_EXC
 * (ibv_rc_pingpong under load). */
void efi_xport_send_held_ack(struct efi_context_int *ctx, struct efi_qp_int *qp);
void efi_xport_flush_qp(struct efi_context_int *ctx, struct efi_qp_int *qp);
void efi_req_handle(struct efi_qp_int *qp, const struct efi_pkt *pkt);
void efi_req_causal_ack(struct efi_qp_int *qp, uint32_t a);
void efi_resp_handle(struct efi_qp_int *qp, const struct efi_pkt *pkt);
uint32_t efi_resp_causal_psn(const struct efi_qp_int *qp);
/* requester.c: fails the head WQE and moves the QP to ERR (ctx->lock held). */
void efi_req_fail_head(struct efi_qp_int *qp, enum efi_wc_status st);
/* req_timers.c */
void efi_req_timers(struct efi_qp_int *qp, uint64_t now);
/* The dead-peer rule of efi_req_timers, apart for tests (ctx->lock held):
 * moves the silence clocks past a gap in which this process did not run; how
 * long the peer may be silent (0: for ever); whether it has been. */
void efi_req_skip_local_stall(struct efi_qp_int *qp, uint64_t now);
uint64_t efi_req_dead_after_ns(const struct efi_qp_int *qp);
bool efi_req_peer_dead(const struct efi_qp_int *qp, uint64_t now);
/* Builds the request packet psn into wp: its headers at wp->buf (room for
 * EFI_PKTBUF_SIZE), its payload there too or, when it lies in one SGE, in
 * wp->payload (sent from the application's memory, no copy).  Returns the
 * datagram's length (0: nothing to send) and the PSN after it in *next. */
size_t efi_req_build(struct efi_qp_int *qp, uint32_t psn, struct efi_wire_pkt *wp, uint32_t *next, uint64_t now);
/* Read responses ahead of the one expected (read_resp.c, ctx->lock held).
 * efi_rd_ahead: response pkt of Read or atomic w is ahead of expect, the
 * one w waits for; places it if it can and asks again for the gap when it
 * is far enough behind; returns whether it was placed (else the caller
 * drops it).  efi_rd_drain: after response p of w was taken in order,
 * takes the placed ones that follow; returns the PSN of the last one taken.
 * efi_rd_placed: whether response psn was placed.  efi_rd_chunk_limit: the
 * responses a request of w from packet k should ask for, at most chunk:
 * none that is placed already.  efi_rd_resp_len: the bytes response psn of
 * w carries.  efi_rd_early_free: forgets every placed response (flush,
 * reset, destroy, or no Read outstanding). */
bool efi_rd_ahead(struct efi_qp_int *qp, struct efi_swqe *w, const struct efi_pkt *pkt, uint32_t expect);
uint32_t efi_rd_drain(struct efi_qp_int *qp, struct efi_swqe *w, uint32_t p);
bool efi_rd_placed(const struct efi_qp_int *qp, uint32_t psn);
uint32_t efi_rd_chunk_limit(const struct efi_qp_int *qp, const struct efi_swqe *w, uint32_t k, uint32_t chunk);
uint32_t efi_rd_resp_len(const struct efi_qp_int *qp, const struct efi_swqe *w, uint32_t psn);
void efi_rd_early_free(struct efi_qp_int *qp);
/* PSNs qp may keep outstanding (EFI_SEND_WINDOW, or _WIDE once the
 * peer said it holds that many). */
static inline uint32_t efi_send_window(const struct efi_qp_int *qp)
{
	return qp->peer_wide ? EFI_SEND_WINDOW_WIDE : EFI_SEND_WINDOW;
}
bool efi_req_can_send(struct efi_qp_int *qp, uint64_t now);
/* The PSN of the next request packet to send now (a lost one first, else
 * the next in sequence) and its path (qp->cur_path); false if nothing may
 * go (window, pacing, RNR wait, nothing to send). */
bool efi_req_next(struct efi_qp_int *qp, uint64_t now, uint32_t *psn);
/* Builds the response at the head of the responder queue (entry e, from its
 * current position); returns the length; *done says it finished the entry. */
size_t efi_resp_build(struct efi_qp_int *qp, struct efi_respq_ent *e, struct efi_wire_pkt *wp, bool *done);
/* Queues an ACK/NAK for psn echoing ts_echo and path (of the request that
 * caused it). */
void efi_resp_enqueue_ack(struct efi_qp_int *qp, uint8_t syndrome, uint32_t psn, uint64_t ts_echo, uint8_t path);
/* Completes a send WQE (ctx->lock held). */
void efi_complete_send(struct efi_qp_int *qp, struct efi_swqe *w, enum efi_wc_status st);

/* retx.c: the requester's scoreboard (with ctx->lock held).  See retx.c. */
void efi_retx_init(struct efi_qp_int *qp, uint64_t now);
/* Forgets what is in flight (the QP went to ERR), keeping the paths' RTT,
 * windows and counters for a look afterwards. */
void efi_retx_flush(struct efi_qp_int *qp);
void efi_retx_on_send(struct efi_qp_int *qp, struct efi_txrec *rec, uint64_t now);
void efi_retx_unsent(struct efi_qp_int *qp, uint32_t psn);
void efi_retx_acked(struct efi_qp_int *qp, uint32_t from, uint32_t to);
void efi_retx_sack(struct efi_qp_int *qp, const struct efi_pkt *pkt);
void efi_retx_detect(struct efi_qp_int *qp, uint64_t now);
void efi_retx_rewind(struct efi_qp_int *qp, uint32_t psn);
/* An RNR NAK at from: the responder dropped what it held from there on. */
void efi_retx_unsack(struct efi_qp_int *qp, uint32_t from);
/* The responder holds [from, to]: delivered, never sent again by RACK. */
void efi_retx_held(struct efi_qp_int *qp, uint32_t from, uint32_t to);
/* Send the request at psn again, alone (a Read from the middle of its
 * chunk gets a record of its own). */
void efi_retx_resend(struct efi_qp_int *qp, uint32_t psn);
bool efi_retx_next_lost(struct efi_qp_int *qp, uint32_t *psn);
/* The path psn's packet left on last, or −1 if it never left. */
int efi_retx_path_of(const struct efi_qp_int *qp, uint32_t psn);
/* How many PSNs the request recorded at psn spans (a Read request: the
 * responses it asked for), 0 when no record starts there. */
uint32_t efi_retx_span_of(const struct efi_qp_int *qp, uint32_t psn);
void efi_retx_after_response(struct efi_qp_int *qp, const struct efi_pkt *pkt, uint64_t now);
void efi_retx_timers(struct efi_qp_int *qp, uint64_t now);
/* The path table says path's uplink is down: what the path carries goes
 * again on the others, as when it is suspected (path_table.c). */
void efi_retx_path_down(struct efi_qp_int *qp, unsigned path);
uint64_t efi_retx_rto_ns(const struct efi_qp_int *qp);
/* The tail-loss probe's timeout before its doubling per probe sent: twice
 * the largest smoothed RTT of the QP's paths (a new QP: the default, or
 * its peer's when more, rtt.h), at least tlp_min.  ctx->lock held. */
uint64_t efi_retx_pto_ns(const struct efi_qp_int *qp);
/* Request packets between two ACK requests: EFI_ACKREQ_EVERY, fewer when
 * the window is small (half a window), so a window never goes out without
 * asking for an ACK. */
uint32_t efi_retx_ackreq_every(const struct efi_qp_int *qp);

/* responder.c: processes held early requests that are now in order. */
void efi_resp_drain(struct efi_qp_int *qp);

/* Copies len bytes between a flat buffer and an SGE list at byte offset off. */
void efi_sge_copy_out(const struct efi_sge_int *sge, uint32_t nsge, uint32_t off, uint8_t *dst, uint32_t len);
void efi_sge_copy_in(const struct efi_sge_int *sge, uint32_t nsge, uint32_t off, const uint8_t *src, uint32_t len);
/* Where bytes [off, off + len) of an SGE list lie, when they lie in one
 * SGE; NULL when they span several (or lie beyond the list). */
const uint8_t *efi_sge_contig(const struct efi_sge_int *sge, uint32_t nsge, uint32_t off, uint32_t len);

/* cm_watch.c: stops the context's CM watcher, if it ever started. */
void efi_cm_context_close(struct efi_context_int *ctx);

/* active.c: the ring of QPs a transport run visits.  All with ctx->lock
 * held.  A QP joins when something may give it work (a packet for it, a
 * post, a modify: efi_qp_activate) and leaves when a run finds it with
 * nothing to do and no timer to run (efi_qp_needs_run false). */
void efi_qp_activate(struct efi_context_int *ctx, struct efi_qp_int *qp);
void efi_qp_deactivate(struct efi_context_int *ctx, struct efi_qp_int *qp);
bool efi_qp_needs_run(const struct efi_qp_int *qp);

/* progress.c */
int efi_progress_start(struct efi_context_int *ctx);
void efi_progress_stop(struct efi_context_int *ctx);
/* Hands the transport to the progress thread at once (a caller about to
 * sleep, e.g. in efi_get_cq_event). */
/* counters.c: the page efid maps to show this context's counters.
 * efi_counters_publish_open: creates it and hands it to efid over the lease
 * (ctl); best effort — without it only `efictl status` lacks the figures.
 * efi_counters_publish: progress thread only; takes ctx->lock briefly.
 * efi_counters_publish_close: after the progress thread stopped. */
void efi_counters_publish_open(struct efi_context_int *ctx, void *ctl);
void efi_counters_publish(struct efi_context_int *ctx);
void efi_counters_publish_close(struct efi_context_int *ctx);

void efi_progress_kick(struct efi_context_int *ctx);

/* device.c: a context over a given wire (ownership of wire passes).  Used by
 * efi_open_device and by the unit tests; not exported. */
struct efi_context *efi_context_create(struct efi_wire *wire, const struct efi_ctx_params *p,
				       void *ctl);

/* qpn_blocks.c: the wire a context's blocks share (lanes b × EFI_WIRE_MAX_LANES
 * + L are block b's lane L), over block 0's; takes ownership of block0.
 * NULL + errno. */
struct efi_wire *efi_wire_blocks_create(struct efi_wire *block0);
/* Adds inner as the next block of a blocks wire (ctx->lock held, or before
 * the context runs): 0, or ENOSPC (EFI_MAX_BLOCKS) or epoll's errno, and
 * then inner is still the caller's. */
int efi_wire_blocks_add(struct efi_wire *blocks, struct efi_wire *inner);
/* Gives the context one more QPN block from efid (no lock held; takes
 * ctx->lock to add it).  0, or an errno: ENOSPC when no more can be had. */
int efi_ctx_grow(struct efi_context_int *ctx);
/* The block holding qpn (ctx->lock held or the QP's own): its index, or -1. */
static inline int efi_qpn_block(const struct efi_context_int *ctx, uint32_t qpn)
{
	return (int)ctx->block_of_slot[(qpn >> 12) & (EFI_QPN_PER_BLOCK - 1)] - 1;
}

/* counters */
void efi_counters_add(struct efi_counters *to, const struct efi_counters *from);
static inline void efi_count_drop(struct efi_counters *c, enum efi_drop_reason r)
{
	c->drops++;
	c->drop_reasons[r]++;
}

/* cm.c: forget the connection-manager id qp is bound to (efi_destroy_qp,
 * before it takes ctx->lock).  Takes the CM's bind lock. */
void efi_cm_unbind_qp(struct efi_qp_int *qp);

#endif
