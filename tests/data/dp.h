/* SPDX-License-Identifier: MIT */
/*
 * dp-test: data-path integration tests of libefi.  One process per side:
 *     ip netns exec A dp-test server CASE [options]
 *     ip netns exec B dp-test client CASE HOST [options]
 * The two exchange QP descriptions and step-by-step synchronisation over TCP
 * (HOST:port, inside the instances' namespaces), then run CASE.  Exit 0 when
 * the case passed, 1 with a "FAIL" line saying what went wrong, 77 when the
 * case cannot run here.  Every wait has a deadline: a lost completion is a
 * failure, never a hang.
 */
#ifndef DP_H
#define DP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <efi/efi.h>

#define DP_DEFAULT_PORT	18600

struct dp_opts {
	bool server;
	const char *case_name;
	const char *dev_name;		/* NULL: the first device */
	const char *host;		/* client: the server's address */
	uint16_t port;
	uint64_t large_bytes;		/* the "large" message of case sizes */
	double timeout;			/* seconds any single wait may take */
	/* connect dp_setup's QPs through the connection manager (service
	 * port), not by hand: path MTU and segment as it negotiates them
	 * (mixed link MTUs), buffers described in its private data */
	bool cm;
};

/* One process's side: the device, the PD and the TCP connection to the peer. */
struct dp_side {
	const struct dp_opts *opts;
	struct efi_context *ctx;
	struct efi_pd *pd;
	struct efi_device_attr dev_attr;
	struct efi_port_attr port_attr;
	int gid_index;
	union efi_gid gid;
	int oob_fd;
	struct efi_cm_id *listener;	/* the server's, with --cm */
};

struct dp_remote {
	uint32_t qpn, psn, rkey;
	union efi_gid gid;
	uint64_t addr, size;
};

/* How a QP is made and connected; zero means the default. */
struct dp_qp_cfg {
	uint32_t max_send_wr, max_recv_wr;	/* 64 */
	uint32_t max_send_sge, max_recv_sge;	/* 1 */
	uint32_t max_inline_data;		/* 0 */
	int sq_sig_all;
	struct efi_cq *send_cq, *recv_cq;	/* NULL: a new CQ each, 1024 entries */
	struct efi_comp_channel *channel;	/* for the new CQs */
	size_t buf_size;			/* 64 KiB */
	int mr_access;				/* 0: local write + all remote */
	/* connection */
	uint8_t timeout;			/* 14 (67 ms) */
	uint8_t retry_cnt;			/* 7 */
	uint8_t rnr_retry;			/* 7; set rnr_retry_set for 0 */
	bool rnr_retry_set;
	uint8_t min_rnr_timer;			/* 1 (0.01 ms) */
};

struct dp_conn {
	struct dp_side *side;
	struct efi_qp *qp;
	struct efi_cq *scq, *rcq;
	bool own_cqs;
	struct efi_mr *mr;
	uint8_t *buf;
	size_t size;
	uint32_t psn;
	struct dp_qp_cfg cfg;
	struct dp_remote remote;
	struct efi_cm_id *cm_id;	/* with --cm: its connection */
};

/* ---- failing ---- */
extern const char *dp_case;
void dp_fail_at(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));
#define DP_FAIL(...) dp_fail_at(__FILE__, __LINE__, __VA_ARGS__)
/* Called (once) by a failing check before the process exits: a test's
 * chance to print the state that explains the failure. */
extern void (*dp_fail_hook)(void);
#define DP_CHECK(cond, ...) do { if (!(cond)) DP_FAIL(__VA_ARGS__); } while (0)
#define DP_CHECK_RC(expr) do {						\
	int rc_ = (expr);						\
	if (rc_) DP_FAIL("%s returned %d (%s)", #expr, rc_, strerror(rc_ > 0 ? rc_ : -rc_)); \
} while (0)
void dp_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void dp_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
double dp_now(void);
/* How long dp_wait_wc waits before it calls a completion lost. */
void dp_set_timeout(double seconds);

/* ---- side, connection ---- */
void dp_side_open(struct dp_side *s, const struct dp_opts *opts);
void dp_side_close(struct dp_side *s);
/* Creates a QP (RESET → INIT) with its buffer and MR. */
void dp_conn_create(struct dp_side *s, struct dp_conn *c, const struct dp_qp_cfg *cfg);
/* Sends the descriptions of conns[0 … n) and reads the peer's, in order. */
void dp_exchange(struct dp_side *s, struct dp_conn *conns, int n);
/* INIT → RTR → RTS towards c->remote. */
void dp_conn_connect(struct dp_conn *c);
void dp_conn_destroy(struct dp_conn *c);
/* create + exchange + connect, for n QPs of one configuration. */
void dp_setup(struct dp_side *s, struct dp_conn *conns, int n, const struct dp_qp_cfg *cfg);

/* ---- the TCP side channel ---- */
void dp_send_line(struct dp_side *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void dp_recv_line(struct dp_side *s, char *buf, size_t size);
/* Both sides call it with the same tag: a barrier. */
void dp_sync(struct dp_side *s, const char *tag);
void dp_send_u64(struct dp_side *s, const char *tag, uint64_t v);
uint64_t dp_recv_u64(struct dp_side *s, const char *tag);

/* ---- work requests and completions ---- */
/* Polls cq until one completion arrives (the side's timeout: failure). */
void dp_wait_wc(struct efi_cq *cq, struct efi_wc *wc, const char *what);
/* The same, failing unless it is a success of the given opcode. */
void dp_wait_ok(struct efi_cq *cq, struct efi_wc *wc, enum efi_wc_opcode opcode, const char *what);
/* True when no completion arrives on cq for ms milliseconds (polling). */
bool dp_no_wc_for(struct efi_cq *cq, int ms);
void dp_post_recv(struct dp_conn *c, size_t off, uint32_t len, uint64_t wr_id);
/* A one-SGE WR from c's buffer at off; remote at roff of the peer's buffer. */
int dp_post(struct dp_conn *c, enum efi_wr_opcode op, size_t off, uint32_t len, uint64_t roff,
	    unsigned flags, uint64_t wr_id);
void dp_post_ok(struct dp_conn *c, enum efi_wr_opcode op, size_t off, uint32_t len, uint64_t roff,
		unsigned flags, uint64_t wr_id);
int dp_post_atomic(struct dp_conn *c, enum efi_wr_opcode op, size_t off, uint64_t roff,
		   uint64_t compare_add, uint64_t swap, unsigned flags, uint64_t wr_id);

/* ---- data ---- */
/* A reproducible pseudo-random pattern: byte i of stream seed. */
void dp_fill(void *buf, size_t len, uint64_t seed);
/* 0 when buf holds stream seed, else 1 + the offset of the first bad byte. */
size_t dp_verify(const void *buf, size_t len, uint64_t seed);
#define DP_CHECK_DATA(buf, len, seed, what) do {			\
	size_t bad_ = dp_verify((buf), (len), (seed));			\
	if (bad_) DP_FAIL("%s: data differs at byte %zu of %zu", (what), bad_ - 1, (size_t)(len)); \
} while (0)

/* ---- the cases ---- */
typedef void dp_case_fn(struct dp_side *s);
dp_case_fn dp_case_opcodes, dp_case_sizes, dp_case_sge16, dp_case_inline, dp_case_unsignaled;
dp_case_fn dp_case_events, dp_case_solicited, dp_case_rkey, dp_case_rnr, dp_case_peerkill;
dp_case_fn dp_case_atomics8, dp_case_loss, dp_case_threads, dp_case_syscalls;

#endif
