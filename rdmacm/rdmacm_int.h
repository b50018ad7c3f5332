/* SPDX-License-Identifier: MIT */
/*
 * libefi-rdmacm internals: librdmacm's objects (<rdma/rdma_cma.h>), each
 * wrapping what libefi's connection manager (<efi/efi_cm.h>) gives.
 *
 * An event channel is an epoll descriptor: the event fds of the efi_cm ids
 * of its rdma_cm ids are in it, and so is an eventfd that is readable while
 * events wait in the channel's own queue (events made here, such as
 * ADDR_RESOLVED, and efi_cm events already translated).  So the channel's fd
 * is pollable as librdmacm's is, without a thread of ours.  One mutex per
 * channel guards the queue and every id on the channel.
 */
#ifndef EFI_RDMACM_INT_H
#define EFI_RDMACM_INT_H

#include <errno.h>
#include <pthread.h>
#include <sys/socket.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <efi/efi.h>
#include <efi/efi_cm.h>

#define RCM_EXPORT __attribute__((visibility("default")))

/* EFI devices an instance has at most that a listener on the wildcard
 * address listens on. */
#define RCM_MAX_DEVS 16

/* What librdmacm lets a consumer send over RDMA_PS_TCP on InfiniBand/RoCE
 * (the REQ carries a 36-byte header of the kernel's), and what fits in
 * EFI's 192 bytes beside our own header (rdmacm_int.h, struct rcm_hdr). */
#define RCM_REQ_PDATA_MAX 56
#define RCM_REP_PDATA_MAX (EFI_CM_PRIVATE_DATA_MAX - (int)sizeof(struct rcm_hdr))
#define RCM_REJ_PDATA_MAX 148

/* Carried before the consumer's private data of a REQ and a REP: what the
 * kernel's CM carries in its own headers (the sender's port and RDMA read
 * depths), which efi_cm does not. */
struct rcm_hdr {
	uint8_t magic;			/* RCM_HDR_MAGIC */
	uint8_t version;		/* 1 */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint16_t port;			/* network byte order */
	uint8_t rnr_retry_count;
	uint8_t reserved;
};
#define RCM_HDR_MAGIC 0xef
#define RCM_HDR_VERSION 1

/* hdr.c: the header on the wire.  Packs the header (port in host order)
 * and p's private data into buf (EFI_CM_PRIVATE_DATA_MAX bytes); returns
 * the length. */
size_t rcm_hdr_pack(uint8_t *buf, uint16_t port, const struct rdma_conn_param *p);
/* Parses len bytes a peer sent: with our header, fills c's depths and
 * *peer_port (when not NULL) from it; the rest is the consumer's private
 * data, copied into pdata and pointed to by c.  Returns 1 when the header
 * was there, 0 when the data is raw (all the consumer's), -1 when len is
 * beyond EFI_CM_PRIVATE_DATA_MAX (nothing changed). */
int rcm_hdr_unpack(const uint8_t *data, size_t len, struct rdma_conn_param *c,
		   uint8_t pdata[EFI_CM_PRIVATE_DATA_MAX], uint16_t *peer_port);

struct rcm_dev {
	struct ibv_context *verbs;	/* libefi-verbs' context */
	struct efi_context *ectx;	/* the libefi context inside it */
	struct ibv_pd *pd;		/* for rdma_create_qp without a PD (lazy) */
};

struct rcm_channel;
struct rcm_id;

/* An efi_cm id in a channel's epoll set (data.ptr points here). */
struct rcm_src {
	struct rcm_id *owner;
	struct efi_cm_id *eid;
	int dev;			/* index into the device table */
};

enum rcm_state {
	RCM_IDLE,
	RCM_BOUND,
	RCM_ADDR_RESOLVED,
	RCM_ROUTE_RESOLVED,
	RCM_LISTEN,
	RCM_REQUEST,			/* came with CONNECT_REQUEST, not answered */
	RCM_CONNECTING,			/* client: efi_connect started */
	RCM_ACCEPTED,			/* server: efi_accept done */
	RCM_CONNECTED,
	RCM_DISCONNECTED,
};

struct rcm_id {
	struct rdma_cm_id id;		/* first: rdma_cm_id * == rcm_id * */
	struct rcm_channel *ch;
	enum rcm_state state;
	int dev;			/* device index, -1 while unbound/wildcard */
	int port_auto;			/* bound to port 0: we chose the port */
	struct rcm_src src[RCM_MAX_DEVS]; /* listener: one per device; else [0] */
	int nsrc;
	struct efi_cm_id *request;	/* RCM_REQUEST: the efi request */
	int disconnect_sent;		/* DISCONNECTED reported once */
	unsigned int events_out;	/* taken, not acked: destroy waits */
	uint8_t resp_res, init_depth;	/* from the peer's header */
	/* client: what rdma_connect sent, to send again while nobody
	 * listens yet (conn.c, RCM_NO_LISTENER_GRACE_MS) */
	char host[46], svc[8];
	uint8_t req[EFI_CM_PRIVATE_DATA_MAX];
	size_t req_len;
	uint64_t connect_deadline_ms;	/* CLOCK_MONOTONIC */
	/* synchronous (sync.c): the channel is the id's own; every call
	 * that makes an event waits for it */
	int sync, own_channel;
	int disc_queued, disc_taken;	/* its DISCONNECTED: queued / taken */
	struct ibv_qp_init_attr *qp_init; /* rdma_create_ep's, for requests */
	struct ibv_pd *qp_pd;
	/* after DISCONNECTED: TIMEWAIT_EXIT is due then (timewait.c) */
	uint64_t timewait_at_ms;	/* CLOCK_MONOTONIC */
	struct rcm_id *tw_next;		/* in the channel's tw_head list */
	int tw_pending;
};

struct rcm_event {
	struct rdma_cm_event ev;	/* first: rdma_cm_event * == rcm_event * */
	struct rcm_event *next;
	struct rcm_id *owner;		/* whose events_out counts it */
	uint8_t pdata[EFI_CM_PRIVATE_DATA_MAX];
};

struct rcm_channel {
	struct rdma_event_channel ch;	/* first; ch.fd is the epoll fd */
	int evfd;			/* readable while head != NULL */
	int twfd;			/* timerfd: a TIMEWAIT_EXIT is due */
	struct rcm_id *tw_head;		/* ids waiting for their TIMEWAIT_EXIT */
	pthread_mutex_t lock;
	pthread_cond_t acked;		/* an event was acked */
	struct rcm_event *head, *tail;
};

static inline struct rcm_id *rcm_id(struct rdma_cm_id *id) { return (struct rcm_id *)id; }
static inline struct rcm_channel *rcm_channel(struct rdma_event_channel *c)
{
	return (struct rcm_channel *)c;
}

/* Sets errno and returns -1, librdmacm's error convention. */
static inline int rcm_err(int e)
{
	errno = e;
	return -1;
}

/* bridge.c: the EFI devices, their verbs contexts (libefi-verbs) and
 * libefi contexts. */
int rcm_devices(struct rcm_dev **devs);	/* count, or -1 with errno */
/* Index of the device with GID equal to addr's address (IPv4 mapped), or -1. */
int rcm_dev_of_addr(const struct sockaddr *addr);
/* The libefi QP inside a libefi-verbs QP. */
struct efi_qp *rcm_efi_qp(struct ibv_qp *qp);
struct ibv_pd *rcm_dev_pd(int dev);

/* addr.c: sockaddr helpers. */
int rcm_addr_len(const struct sockaddr *a);
uint16_t rcm_addr_port(const struct sockaddr *a);	/* host order */
void rcm_addr_set_port(struct sockaddr *a, uint16_t port);
int rcm_addr_is_any(const struct sockaddr *a);
void rcm_addr_from_gid(struct sockaddr_storage *ss, const union efi_gid *gid, uint16_t port);
/* The source address the kernel would use towards dst (in this netns). */
int rcm_route_src(const struct sockaddr *dst, struct sockaddr_storage *src);
uint16_t rcm_ephemeral_port(void);

/* channel.c */
/* Queues an event (the channel lock held). */
void rcm_queue(struct rcm_channel *ch, struct rcm_event *e);
struct rcm_event *rcm_event_new(struct rcm_id *id, enum rdma_cm_event_type type, int status);
/* Adds/removes an efi_cm id's fd to/from the epoll set (lock held). */
int rcm_watch(struct rcm_id *id, struct efi_cm_id *eid, int dev);
void rcm_unwatch_all(struct rcm_id *id);

/* timewait.c: TIMEWAIT_EXIT some time after DISCONNECTED (lock held,
 * but for init, which sets twfd and adds it to the epoll set). */
int rcm_timewait_init(struct rcm_channel *ch);
void rcm_timewait_start(struct rcm_id *id);
void rcm_timewait_cancel(struct rcm_id *id);
/* Queues the TIMEWAIT_EXIT events that are due. */
void rcm_timewait_expire(struct rcm_channel *ch);

/* sync.c: for a synchronous id, waits for the event of the call that just
 * succeeded, keeps it in id->id.event and returns 0, or -1 with errno from
 * its status.  rcm_sync_after returns ret as it is unless the id is
 * synchronous and ret is 0.  Called without the lock. */
int rcm_sync_complete(struct rcm_id *id);
int rcm_sync_after(struct rcm_id *id, int ret);

/* conn.c: an efi_cm event into rdma_cm events (the channel lock held). */
void rcm_translate(struct rcm_src *src, const struct efi_cm_event *ev);

/* id.c */
struct rcm_id *rcm_id_new(struct rcm_channel *ch, void *context, enum rdma_port_space ps);
void rcm_id_free(struct rcm_id *id);

#endif
