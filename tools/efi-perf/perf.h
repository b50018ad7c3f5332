/* SPDX-License-Identifier: MIT */
/*
 * efi-perf: perftest-style latency and bandwidth tests over <efi/efi.h>.
 * The pieces: options (efi-perf.c), the out-of-band TCP exchange (oob.c),
 * connecting through the connection manager (cm.c),
 * device/QP setup (resources.c), the latency loops (lat.c), the bandwidth
 * loops (bw.c) and the tables/JSON (report.c).
 */
#ifndef EFI_PERF_H
#define EFI_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <efi/efi.h>
#include <efi/efi_cm.h>

#define PERF_DEFAULT_PORT	18515
#define PERF_MAX_QPS		64
#define PERF_ALL_MIN_SIZE	2u
#define PERF_ALL_MAX_SIZE	(8u << 20)
/* Outstanding requests per QP in the bandwidth tests, and how often one of
 * them is signaled (the others complete silently, as perftest's cq_mod). */
#define PERF_TX_DEPTH		128
#define PERF_RX_DEPTH		512
#define PERF_CQ_MOD		16

enum perf_verb { PERF_SEND, PERF_WRITE, PERF_READ, PERF_ATOMIC };
enum perf_kind { PERF_LAT, PERF_BW };

struct perf_opts {
	enum perf_verb verb;
	enum perf_kind kind;
	const char *test_name;		/* "send_lat" … */
	const char *dev_name;		/* -d, NULL: the first device */
	const char *host;		/* NULL: server */
	uint32_t size;			/* -s */
	bool all_sizes;			/* -a */
	uint64_t iters;			/* -n (0 when -D) */
	double duration;		/* -D seconds (0 when -n) */
	int num_qps;			/* -q */
	int inline_size;		/* -I, -1: default */
	bool events;			/* -e */
	int gid_index;			/* -x, -1: the first IPv4-mapped/global one */
	uint16_t port;			/* -p: TCP port, and the CM service */
	bool json;
	bool tcp_exchange;		/* --tcp-exchange: QPs by hand over TCP, no CM */
	bool use_srq;			/* --use-srq: receives through one SRQ */
};

/* What one side tells the other about one QP (perftest's "remote address"
 * line): QPN, PSN, GID, the buffer's rkey, address and size. */
struct perf_qp_info {
	uint32_t qpn;
	uint32_t psn;
	union efi_gid gid;
	uint32_t rkey;
	uint64_t addr;
	uint64_t size;
};

struct perf_qp {
	struct efi_qp *qp;
	struct efi_cq *cq;		/* send and receive completions */
	struct efi_mr *mr;
	/* Two halves of `half` bytes: the peer writes/reads/receives into the
	 * first, we send from the second (write_lat needs them apart). */
	uint8_t *buf;
	size_t buf_size;
	size_t half;
	int recvs_posted;		/* outstanding receive WRs (without an SRQ) */
	uint64_t recv_ready;		/* received, not yet consumed (lat.c) */
	uint32_t psn;
	struct perf_qp_info remote;
	uint64_t posted, completed;	/* bandwidth bookkeeping */
};

struct perf_ctx {
	const struct perf_opts *opts;
	struct efi_context *ctx;
	struct efi_pd *pd;
	struct efi_comp_channel *channel;	/* with -e */
	struct efi_device_attr dev_attr;
	struct efi_port_attr port_attr;
	int gid_index;
	union efi_gid gid;
	int inline_size;			/* effective */
	int num_qps;
	struct perf_qp qps[PERF_MAX_QPS];
	/* --use-srq: the QPs' one shared receive queue, its receives going to
	 * the first half of qps[0]'s buffer (all messages land there: only
	 * their lengths are checked) */
	struct efi_srq *srq;
	int srq_size;				/* max_wr as allocated */
	int srq_posted;				/* outstanding receive WRs */
	int oob_fd;				/* TCP to the peer */
	struct efi_cm_id *listener;		/* server, connection manager */
	struct efi_cm_id *cm_ids[PERF_MAX_QPS];	/* one connection per QP */
	char dev_name[EFI_DEVICE_NAME_MAX];
};

/* One size's result. */
struct perf_result {
	uint32_t bytes;
	uint64_t iters;
	/* latency, µs */
	double t_min, t_max, t_typical, t_avg, t_stdev, t_p99, t_p999;
	/* bandwidth */
	double bw_peak_gbps, bw_avg_gbps, msg_rate_mpps;
	double seconds;
};

/* efi-perf.c */
const char *perf_verb_name(enum perf_verb verb);
void perf_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
double perf_now(void);		/* CLOCK_MONOTONIC seconds */

/* oob.c: the TCP side channel.  Both die with a clear message on failure. */
int oob_listen_accept(uint16_t port);
int oob_connect(const char *host, uint16_t port);
void oob_send_line(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Reads one '\n'-terminated line (without it) into buf; dies on EOF. */
void oob_recv_line(int fd, char *buf, size_t size);
/* Non-blocking: true and the line in buf when one is complete. */
bool oob_try_recv_line(int fd, char *buf, size_t size);
/* Called when the peer closes the exchange connection, before efi-perf
 * dies saying so: a local completion error, if one is about to surface,
 * is the better report (a detached interface flushes our work as the
 * peer gives up).  NULL: none. */
extern void (*oob_peer_closed_hook)(void);
void oob_handshake(struct perf_ctx *pc, struct perf_opts *opts);
void oob_exchange_qps(struct perf_ctx *pc);
/* A barrier: each side sends "sync TAG" and waits for the peer's. */
void oob_sync(struct perf_ctx *pc, const char *tag);

/* resources.c */
void perf_open(struct perf_ctx *pc, const struct perf_opts *opts);
/* Buffers of 2 × half bytes per QP (see struct perf_qp). */
void perf_create_qps(struct perf_ctx *pc, size_t half);
void perf_connect_qps(struct perf_ctx *pc);
void perf_close(struct perf_ctx *pc);
/* Polls (or, with -e, waits for) at least one completion of pq's CQ; dies on
 * an error status.  Returns how many were taken into wc. */
int perf_poll(struct perf_ctx *pc, struct perf_qp *pq, struct efi_wc *wc, int n, bool wait);
/* Blocks until the completion channel has an event, and acknowledges it.
 * The caller armed its CQs first. */
void perf_wait_channel(struct perf_ctx *pc);
/* Tops pq's receive queue up to depth receives into the first half; with
 * --use-srq, the SRQ up to depth receives for each QP (at most its size). */
void perf_fill_recvs(struct perf_ctx *pc, struct perf_qp *pq, int depth);
/* Counts a receive completion of pq against the queue it came from. */
void perf_recv_taken(struct perf_ctx *pc, struct perf_qp *pq);
/* Posts one WR from the second half of pq's buffer to the peer's first half
 * (or its first 8 bytes for an atomic). */
void perf_post_one(struct perf_ctx *pc, struct perf_qp *pq, enum efi_wr_opcode op, uint32_t size,
		   bool signaled, uint64_t wr_id);

/* cm.c: connects the QPs through the connection manager (the default);
 * dies with a clear message on failure. */
void perf_cm_connect_qps(struct perf_ctx *pc);
/* Destroys the connections and the listener (before the QPs). */
void perf_cm_close(struct perf_ctx *pc);

/* lat.c / bw.c: run one size, fill *res (the client's numbers). */
void perf_run_lat(struct perf_ctx *pc, uint32_t size, struct perf_result *res);
void perf_run_bw(struct perf_ctx *pc, uint32_t size, struct perf_result *res);

/* report.c */
void report_banner(const struct perf_ctx *pc);
void report_header(const struct perf_ctx *pc);
void report_row(const struct perf_ctx *pc, const struct perf_result *res);
void report_footer(const struct perf_ctx *pc);
/* Fills the latency statistics of *res from samples (µs), sorting them. */
void report_lat_stats(double *samples, size_t n, struct perf_result *res);

#endif
