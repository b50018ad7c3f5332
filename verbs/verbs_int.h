/* SPDX-License-Identifier: MIT */
/*
 * libefi-verbs internals: the libibverbs objects of <infiniband/verbs.h>,
 * each wrapping the libefi object that does the work.
 *
 * Every wrapper starts with the public ibv_* struct, so the pointers a verbs
 * program holds are pointers to our wrappers and container_of() is a cast.
 * The library never calls anything of the real libibverbs: every ibv_*
 * symbol a program binds to is defined here (libefi-verbs.map), and the
 * inline fast-path helpers of the header reach us through
 * ibv_context.ops / struct verbs_context, which we fill.
 */
#ifndef EFI_VERBS_INT_H
#define EFI_VERBS_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include <efi/efi.h>

#define EFIV_EXPORT __attribute__((visibility("default")))

/* Objects of a context, so that ibv_close_device can release what the
 * program left behind, as closing the kernel's uverbs file does. */
struct efiv_link {
	struct efiv_link *prev, *next;
};

enum efiv_kind { EFIV_QP, EFIV_SRQ, EFIV_AH, EFIV_MR, EFIV_PD, EFIV_CQ, EFIV_CHANNEL, EFIV_KINDS };

/* One ibv_get_device_list() result: the libefi list it came from stays alive
 * while the list or any device of it is open (refs). */
struct efiv_device_list;

struct efiv_device {
	struct ibv_device ibdev;		/* first: ibv_device * == efiv_device * */
	struct efi_device *edev;
	struct efiv_device_list *owner;
	uint64_t guid;				/* network byte order */
	int index;				/* ibv_get_device_index */
};

struct efiv_device_list {
	struct efi_device **elist;
	struct efiv_device *devs;
	struct ibv_device **slots;		/* [0] = this list, then the devices, NULL */
	struct ibv_device **list;		/* what the caller gets: slots + 1 */
	int count;
	int refs;				/* the list itself + open contexts */
};

/* Async events: a pipe carries struct ibv_async_event records, so the
 * context's async_fd can be polled and set O_NONBLOCK like a real one. */
struct efiv_qp;
struct efiv_srq;
struct efiv_async {
	int wfd;				/* write end; async_fd is the read end */
	pthread_mutex_t lock;			/* qps, srqs, port_error_sent */
	struct efiv_qp *qps;			/* live QPs, to resolve queued events */
	struct efiv_srq *srqs;			/* live SRQs, likewise */
	uint32_t next_srq_handle;		/* names SRQs in queued events */
	int port_error_sent;			/* one IBV_EVENT_PORT_ERR per context */
};

struct efiv_context {
	struct verbs_context vctx;		/* ends with the struct ibv_context */
	struct efi_context *ectx;
	struct efiv_device *dev;
	struct efiv_async async;
	pthread_mutex_t obj_lock;
	struct efiv_link objs[EFIV_KINDS];	/* list heads, by enum efiv_kind */
};

struct efiv_pd {
	struct ibv_pd ibpd;
	struct efi_pd *epd;
	struct efiv_link link;
};

struct efiv_mr {
	struct ibv_mr ibmr;
	struct efi_mr *emr;
	struct efiv_link link;
};

struct efiv_comp_channel {
	struct ibv_comp_channel ibch;
	struct efi_comp_channel *ech;
	struct efiv_link link;
};

struct efiv_cq {
	struct ibv_cq ibcq;
	struct efi_cq *ecq;
	struct efiv_link link;
};

/* Work requests built with the ibv_wr_* API between ibv_wr_start and
 * ibv_wr_complete (qp_ex.c). */
struct efiv_wr_slot {
	struct ibv_send_wr wr;
	struct ibv_sge *sges;			/* max_send_sge of them */
	char *inline_buf;			/* max_inline_data bytes */
};

struct efiv_wr_batch {
	struct efiv_wr_slot *slots;
	unsigned int count, cap;
	int err;				/* first error; wr_complete returns it */
};

struct efiv_qp {
	/* first, so ibv_qp * == ibv_qp_ex * == efiv_qp *; the ibv_qp_ex part
	 * beyond qp_base is filled only for QPs with send_ops_flags */
	union {
		struct ibv_qp ibqp;
		struct ibv_qp_ex qpx;
	};
	int is_ex;				/* created with send_ops_flags */
	uint32_t max_send_sge, max_inline;	/* as allocated */
	struct efiv_wr_batch batch;
	struct efi_qp *eqp;
	struct efiv_link link;
	struct efiv_qp *next;			/* in efiv_async.qps */
	int fatal_sent;				/* one IBV_EVENT_QP_FATAL per QP */
	int last_wqe_sent;			/* one IBV_EVENT_QP_LAST_WQE_REACHED */
	uint32_t async_events;			/* handed to the program; destroy
						 * waits until it acked them all */
};

/* An address handle (ah.c). */
struct efiv_ah {
	struct ibv_ah ibah;
	struct efi_ah *eah;
	struct efiv_link link;
};

/* A shared receive queue (srq.c). */
struct efiv_srq {
	struct ibv_srq ibsrq;
	struct efi_srq *esrq;
	struct efiv_link link;
	struct efiv_srq *next;			/* in efiv_async.srqs */
	uint32_t async_events;			/* as efiv_qp's */
};

static inline struct efiv_context *efiv_ctx(struct ibv_context *c)
{
	return (struct efiv_context *)((char *)c - offsetof(struct efiv_context, vctx.context));
}

static inline struct efiv_pd *efiv_pd(struct ibv_pd *p) { return (struct efiv_pd *)p; }
static inline struct efiv_mr *efiv_mr(struct ibv_mr *m) { return (struct efiv_mr *)m; }
static inline struct efiv_cq *efiv_cq(struct ibv_cq *c) { return (struct efiv_cq *)c; }
static inline struct efiv_qp *efiv_qp(struct ibv_qp *q) { return (struct efiv_qp *)q; }
static inline struct efiv_srq *efiv_srq(struct ibv_srq *s) { return (struct efiv_srq *)s; }
static inline struct efiv_ah *efiv_ah(struct ibv_ah *a) { return (struct efiv_ah *)a; }
static inline struct efiv_comp_channel *efiv_channel(struct ibv_comp_channel *c)
{
	return (struct efiv_comp_channel *)c;
}

/* device.c */
void efiv_device_list_put(struct efiv_device_list *l);

/* objects.c: the per-context object lists. */
void efiv_objs_init(struct efiv_context *c);
void efiv_track(struct efiv_context *c, enum efiv_kind kind, struct efiv_link *l);
void efiv_untrack(struct efiv_context *c, struct efiv_link *l);
/* Destroys every object still tracked (QPs first), for ibv_close_device. */
void efiv_release_all(struct efiv_context *c);
/* resources.c / qp.c: the destroy steps without argument checks. */
int efiv_destroy_qp_now(struct efiv_qp *qp, int wait_for_acks);

/* ops.c: fills ibv_context.ops and the verbs_context (extended ops). */
void efiv_fill_ops(struct efiv_context *c);

/* async.c */
int efiv_async_init(struct efiv_context *c);
void efiv_async_fini(struct efiv_context *c);
/* Queues an event for the context's async_fd (never blocks, drops when the
 * pipe is full: a program that never reads async events loses nothing it
 * would have seen). */
void efiv_async_post(struct efiv_context *c, const struct ibv_async_event *ev);
void efiv_async_add_qp(struct efiv_context *c, struct efiv_qp *qp);
/* Forgets the QP (its queued events are dropped), after waiting until every
 * event the program took for it is acknowledged, as libibverbs does. */
void efiv_async_del_qp(struct efiv_context *c, struct efiv_qp *qp, int wait_for_acks);
/* A libefi call said ENODEV (the interface is gone): IBV_EVENT_PORT_ERR once. */
void efiv_async_port_error(struct efiv_context *c);
/* The QP left the connection by an error (not a flush): IBV_EVENT_QP_FATAL once. */
void efiv_async_qp_fatal(struct efiv_qp *qp);
/* A QP of an SRQ went to the error state: it takes no more receives from
 * the SRQ, IBV_EVENT_QP_LAST_WQE_REACHED once (what programs wait for
 * before destroying it).  No-op for a QP without an SRQ. */
void efiv_async_last_wqe(struct efiv_qp *qp);

/* The SRQ's limit was reached: IBV_EVENT_SRQ_LIMIT_REACHED (called from
 * libefi's transport, with its lock held: only writes to the pipe). */
void efiv_async_srq_limit(struct efiv_srq *srq);
void efiv_async_add_srq(struct efiv_context *c, struct efiv_srq *srq);
void efiv_async_del_srq(struct efiv_context *c, struct efiv_srq *srq, int wait_for_acks);

/* srq.c */
struct ibv_srq *efiv_create_srq_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *attr);
int efiv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
int efiv_destroy_srq_now(struct efiv_srq *srq, int wait_for_acks);
/* device.c: the limits ibv_query_device reports (query_device_ex too). */
int efiv_query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *input,
			 struct ibv_device_attr_ex *attr, size_t attr_size);

/* ah.c: ibv_destroy_ah without argument checks; a UD QP's post_send. */
void efiv_destroy_ah_now(struct efiv_ah *ah);
int efiv_post_send_ud(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);

/* qp_ex.c: the ibv_wr_* API of an extended QP. */
void efiv_qp_ex_init(struct efiv_qp *qp);
void efiv_qp_ex_fini(struct efiv_qp *qp);

/* qp.c */
struct ibv_qp *efiv_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr);
/* qp.c: the fast path ops. */
int efiv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
int efiv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
int efiv_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
int efiv_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int efiv_query_port_ex(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr, size_t port_attr_len);

#endif
