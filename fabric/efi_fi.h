/* SPDX-License-Identifier: MIT */
/*
 * The "efi" libfabric provider (libefi-fi.so): FI_EP_MSG endpoints over
 * libefi's RC queue pairs, connected by libefi's connection manager.  A thin
 * layer over <efi/efi.h> and <efi/efi_cm.h>; see docs/libfabric.md.
 *
 * Object map:
 *   fabric      one per fi_fabric; opens each EFI device at most once and
 *               shares the context (a listener and the QPs it accepts must
 *               live in one context)
 *   domain      an EFI device (context) + one PD
 *   eq          CM events: every listener/connection bound to it is polled
 *               for efi_cm events; an epoll fd over their channels (and an
 *               eventfd for queued entries) is the FI_WAIT_FD object
 *   cq          an efi_cq with a completion channel (the FI_WAIT_FD object)
 *   pep         an efi_cm listener
 *   ep          an RC QP (created at fi_enable) + its efi_cm connection
 *   mr          an efi_mr; desc is the struct, key the rkey
 *
 * Locks: each EQ has a mutex that also serialises the efi_cm calls on the
 * ids bound to it (libefi allows one thread per id); each CQ has a mutex
 * over its software backlog.  libefi itself is thread safe.
 */
#ifndef EFI_FABRIC_EFI_FI_H
#define EFI_FABRIC_EFI_FI_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_prov.h>

#include <efi/efi.h>
#include <efi/efi_cm.h>

#define EFI_FI_PROV_NAME	"efi"
#define EFI_FI_FABRIC_NAME	"EFI"
#define EFI_FI_VERSION		FI_VERSION(1, 0)
#define EFI_FI_API_VERSION	FI_VERSION(1, 17)

#define EFI_FI_CAPS	(FI_MSG | FI_RMA | FI_SEND | FI_RECV | FI_READ | FI_WRITE | \
			 FI_REMOTE_READ | FI_REMOTE_WRITE | FI_LOCAL_COMM | FI_REMOTE_COMM)
/* added when the device has libefi's atomics (fetch-add, compare-swap) */
#define EFI_FI_ATOMIC_CAPS FI_ATOMIC
#define EFI_FI_MSG_ORDER (FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_RAS | FI_ORDER_WAW | \
			  FI_ORDER_WAS | FI_ORDER_SAW | FI_ORDER_SAS)
/* How long fi_connect waits for the server's answer.  libfabric 1.17 has
 * no FI_OPT_CM_* option for it; rdma_cm (the verbs provider) waits tens of
 * seconds and tcp as long as the kernel does, so a server that takes a few
 * seconds to fi_accept (allocating its buffers, a loaded host) must not
 * lose the connection.  FI_EFI_CONNECT_TIMEOUT (ms) overrides it, up to
 * efid's limit (common/cmwire.h: CM_WIRE_MAX_TIMEOUT). */
#define EFI_FI_CONNECT_TIMEOUT_MS	60000
#define EFI_FI_CONNECT_TIMEOUT_MAX_MS	600000
/* FI_OPT_CM_DATA_SIZE: what efi_cm carries each way. */
#define EFI_FI_CM_DATA_MAX	EFI_CM_PRIVATE_DATA_MAX

extern struct fi_provider efi_fi_prov;

/* ------------------------------------------------------------ fabric */

struct efi_fi_devctx {
	struct efi_fi_devctx *next;
	char name[EFI_DEVICE_NAME_MAX];
	struct efi_context *ctx;
	int refs;
};

struct efi_fi_fabric {
	struct fid_fabric fabric;
	pthread_mutex_t lock;
	pthread_mutex_t cr_lock;	/* connection requests (connreq.c) */
	struct efi_fi_connreq *orphans;	/* handed out, their listener closed */
	struct efi_fi_devctx *devs;
	int refs;			/* domains, EQs, PEPs open on it */
};

/* A shared, counted context of the named device (NULL + errno). */
struct efi_context *efi_fi_ctx_get(struct efi_fi_fabric *fab, const char *devname);
void efi_fi_ctx_put(struct efi_fi_fabric *fab, struct efi_context *ctx);

int efi_fi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
/* fi_connect's timeout: FI_EFI_CONNECT_TIMEOUT or the default. */
int efi_fi_connect_timeout_ms(void);

/* ------------------------------------------------------------ getinfo */

int efi_fi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		   const struct fi_info *hints, struct fi_info **info);
/* The device whose interface has address sa (by GID), in devname. */
int efi_fi_addr_device(const struct sockaddr *sa, char *devname, size_t len);
size_t efi_fi_sockaddr_len(const struct sockaddr *sa);
/* The port of a sockaddr_in/in6, network order. */
uint16_t efi_fi_sockaddr_port(const struct sockaddr *sa);
/* A GID as a sockaddr_in/in6 with port_be; whether it can be one. */
void efi_fi_gid_sockaddr(const union efi_gid *gid, uint16_t port_be, struct sockaddr_storage *ss);
bool efi_fi_gid_usable(const union efi_gid *gid);
/* The device's address matching want's IP (want NULL or its IP any: the
 * first of its family) with want's port, in *out; 0 or
 * -FI_EADDRNOTAVAIL. */
int efi_fi_local_addr(struct efi_context *ctx, const struct sockaddr *want,
		      struct sockaddr_storage *out);
/* host and port strings of a sockaddr_in/in6 (for efi_connect). */
int efi_fi_sockaddr_str(const struct sockaddr *sa, char *host, size_t hostlen, char *port,
			size_t portlen);

/* ------------------------------------------------------------ domain, mr */

struct efi_fi_domain {
	struct fid_domain domain;
	struct efi_fi_fabric *fab;
	struct efi_context *ctx;
	struct efi_pd *pd;
	struct efi_device_attr attr;
	struct fi_info *info;
	int refs;			/* CQs, EPs, MRs */
	pthread_mutex_t lock;
};

int efi_fi_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom,
		       void *context);

struct efi_fi_mr {
	struct fid_mr mr;
	struct efi_fi_domain *dom;
	struct efi_mr *emr;
};

extern struct fi_ops_mr efi_fi_mr_ops;
uint32_t efi_fi_desc_lkey(void *desc);

/* ------------------------------------------------------------ eq */

struct efi_fi_eq_entry;

/* Something whose efi_cm id an EQ polls: a PEP or an EP. */
struct efi_fi_cm_owner {
	struct efi_fi_cm_owner *next;
	fid_t fid;
	struct efi_cm_id *id;		/* NULL until listening / connecting */
	bool is_pep;
	bool watched;			/* its fd is in the epoll set */
};

struct efi_fi_eq {
	struct fid_eq eq;
	struct efi_fi_fabric *fab;
	pthread_mutex_t lock;
	int epfd;			/* the wait object */
	int evfd;			/* readable while entries are queued */
	struct efi_fi_eq_entry *head, *tail;
	struct efi_fi_cm_owner *owners;
	void *err_data;			/* of the last fi_eq_readerr */
	int refs;
};

int efi_fi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq,
		   void *context);
void efi_fi_eq_attach(struct efi_fi_eq *eq, struct efi_fi_cm_owner *owner);
void efi_fi_eq_detach(struct efi_fi_eq *eq, struct efi_fi_cm_owner *owner);
/* Starts watching owner->id's fd (after listen/connect/accept). */
void efi_fi_eq_watch(struct efi_fi_eq *eq, struct efi_fi_cm_owner *owner);
/* Queues an error entry (err: positive FI_E* value) for fid. */
int efi_fi_eq_push_err(struct efi_fi_eq *eq, fid_t fid, void *context, int err, int prov_errno,
		       const void *data, size_t len);
/* Queues a CM entry without data (FI_SHUTDOWN) for fid; eq->lock held. */
int efi_fi_eq_push_event(struct efi_fi_eq *eq, uint32_t event, fid_t fid);
int efi_fi_eq_trywait(struct efi_fi_eq *eq);

/* ------------------------------------------------------------ bounce */

/* tx_attr->inject_size: ofi_rxm's eager messages (its 16 KiB buffers plus
 * its 64-byte header) all fit, so none waits for the peer's ACK; above
 * libefi's max_inline_data they go through a bounce pool (bounce.c). */
#define EFI_FI_INJECT_MAX	(16384 + 64)
/* Large injects in flight per pool. */
#define EFI_FI_BOUNCE_SLOTS	64

struct efi_fi_bounce {
	pthread_mutex_t lock;
	uint8_t *base;			/* NULL until the first large inject */
	struct efi_mr *mr;
	unsigned int nslots, nfree;
	uint16_t free[EFI_FI_BOUNCE_SLOTS];	/* indexes of free slots */
};

/* An empty pool of up to nslots slots (0: none, large injects fail). */
void efi_fi_bounce_init(struct efi_fi_bounce *b, unsigned int nslots);
void efi_fi_bounce_fini(struct efi_fi_bounce *b);
/* Copies iov into a free slot (mapping and registering the pool in pd at
 * the first call), fills *sge with it and *slot_wr_id with the wr_id to
 * post; the slot keeps wr_id, the operation's own.  0, -FI_EAGAIN (every
 * slot in flight) or -FI_E*. */
int efi_fi_bounce_get(struct efi_fi_bounce *b, struct efi_pd *pd, uint64_t wr_id,
		      const struct iovec *iov, size_t count, struct efi_sge *sge,
		      uint64_t *slot_wr_id);
/* If *wr_id is a slot of b: frees it, sets *wr_id to the operation's own
 * and returns true. */
bool efi_fi_bounce_put(struct efi_fi_bounce *b, uint64_t *wr_id);

/* ------------------------------------------------------------ cq */

#define EFI_FI_CQ_BATCH 64

struct efi_fi_cq {
	struct fid_cq cq;
	struct efi_fi_domain *dom;
	struct efi_comp_channel *channel;
	int sigfd;			/* eventfd of fi_cq_signal (with a channel) */
	struct efi_cq *ecq;
	enum fi_cq_format format;
	enum fi_wait_obj wait_obj;
	pthread_mutex_t lock;
	struct efi_wc backlog[EFI_FI_CQ_BATCH];	/* polled, not yet returned */
	int head, count;
	/* libefi lost a completion (efi_poll_cq said -EOVERFLOW): once the
	 * backlog is read, every fi_cq_read says -FI_EOVERRUN */
	bool overrun;
	int refs;			/* endpoints bound */
	struct efi_fi_bounce bounce;	/* large injects of its endpoints */
};

int efi_fi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq,
		   void *context);
int efi_fi_cq_trywait(struct efi_fi_cq *cq);

/* wr_id of work requests: the fi context, with the low bit flagging an
 * operation whose completion the application did not ask for (its CQ entry
 * is suppressed) and bit 1 an fi_atomic write (a fetch-add whose completion
 * says FI_WRITE, not FI_READ).  Contexts must therefore be NULL or 4-byte
 * aligned (every libfabric context is a pointer-aligned struct); the post
 * calls refuse others with -FI_EINVAL. */
#define EFI_FI_WR_SILENT 1ULL
#define EFI_FI_WR_AWRITE 2ULL
#define EFI_FI_WR_BITS (EFI_FI_WR_SILENT | EFI_FI_WR_AWRITE)

/* ------------------------------------------------------------ endpoints */

/* A connection request: the handle of an FI_CONNREQ's info.  Who frees
 * it, and when: connreq.c.  Fields under fab->cr_lock. */
struct efi_fi_connreq {
	struct fid fid;			/* FI_CLASS_CONNREQ */
	struct efi_fi_fabric *fab;
	struct efi_fi_connreq *next;	/* on *list */
	struct efi_fi_connreq **list;	/* &pep->connreqs, &fab->orphans or NULL */
	struct efi_fi_pep *pep;		/* NULL once released or the pep closed */
	struct efi_fi_ep *ep;		/* the endpoint opened on it, until it closes */
	struct efi_cm_id *request;	/* until accepted, rejected or destroyed */
	bool released;			/* fi_reject, fi_close(handle) or fi_accept done */
	bool handed_out;		/* its FI_CONNREQ was read */
};

struct efi_fi_pep {
	struct fid_pep pep;
	struct efi_fi_fabric *fab;
	struct fi_info *info;
	struct efi_context *ctx;	/* shared with the fabric */
	struct efi_fi_eq *eq;
	struct efi_fi_cm_owner owner;
	struct sockaddr_storage addr;	/* the interface address; port = service */
	struct efi_fi_connreq *connreqs;	/* not released yet (fab->cr_lock) */
};

int efi_fi_pep_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_pep **pep,
		    void *context);
/* Whether fid is one of this provider's passive endpoints. */
bool efi_fi_is_pep(const struct fid *fid);

struct efi_fi_ep {
	struct fid_ep ep;
	struct efi_fi_domain *dom;
	struct fi_info *info;
	struct efi_fi_eq *eq;
	struct efi_fi_cq *tx_cq, *rx_cq;
	uint64_t tx_flags, rx_flags;	/* FI_SELECTIVE_COMPLETION, FI_COMPLETION */
	struct efi_cq *own_cq;		/* stands in for an unbound send/recv CQ */
	struct efi_qp *qp;
	struct efi_fi_cm_owner owner;
	struct efi_fi_connreq *connreq;	/* from fi_endpoint(info->handle) */
	struct sockaddr_storage peer;
	bool enabled, connected, shut;
	uint32_t max_inline;		/* libefi's EFI_SEND_INLINE limit on the QP */
	uint32_t inject_size;		/* tx_attr->inject_size: bounce above max_inline */
	struct efi_fi_bounce bounce;	/* large injects without a transmit CQ */
	/* where fi_atomic writes (fetch-adds) put the value nobody reads;
	 * its MR is registered by the first one (atomic.c) */
	uint64_t atomic_scratch;
	struct efi_mr *scratch_mr;
};

int efi_fi_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
		   void *context);

/* Connection requests (connreq.c). */
/* A request of pep, listed on it (NULL on ENOMEM; request untouched). */
struct efi_fi_connreq *efi_fi_connreq_new(struct efi_fi_pep *pep, struct efi_cm_id *request);
/* Rejects and frees a request never handed to the application. */
void efi_fi_connreq_drop(struct efi_fi_connreq *cr);
/* fi_endpoint on the request: 0, -FI_EBUSY (another endpoint has it) or
 * -FI_EINVAL (answered already). */
int efi_fi_connreq_hold(struct efi_fi_connreq *cr, struct efi_fi_ep *ep);
/* The request for efi_accept, taken out (NULL: none left); hand it back
 * with efi_fi_connreq_settle, accepted or not. */
struct efi_cm_id *efi_fi_connreq_take(struct efi_fi_ep *ep);
void efi_fi_connreq_settle(struct efi_fi_ep *ep, struct efi_cm_id *req, bool accepted);
/* The endpoint's close: a request still unanswered is rejected. */
void efi_fi_connreq_ep_close(struct efi_fi_ep *ep);
/* fi_reject: 0 or -FI_E*; -FI_EINVAL for a handle not pending on pep. */
int efi_fi_connreq_reject(struct efi_fi_pep *pep, fid_t handle, const void *param, size_t len);
/* The passive endpoint's close: its requests nobody holds are rejected. */
void efi_fi_connreq_pep_close(struct efi_fi_pep *pep);
/* Takes cr off its list; fab->cr_lock held. */
void efi_fi_connreq_unlink(struct efi_fi_connreq *cr);
/* Its FI_CONNREQ was read: the application may name it from now on. */
void efi_fi_connreq_handed_out(struct efi_fi_connreq *cr);
/* The fabric's close: frees the requests orphaned by their listener. */
void efi_fi_connreq_fabric_close(struct efi_fi_fabric *fab);
extern struct fi_ops_cm efi_fi_ep_cm_ops;
extern struct fi_ops_msg efi_fi_msg_ops;
extern struct fi_ops_rma efi_fi_rma_ops;
extern struct fi_ops_tagged efi_fi_no_tagged_ops;
extern struct fi_ops_atomic efi_fi_no_atomic_ops;
extern struct fi_ops_atomic efi_fi_atomic_ops;
/* Whether the device has libefi's atomics (FI_ATOMIC in fi_info). */
bool efi_fi_atomics_offered(const struct efi_device_attr *da);
int efi_fi_query_atomic(struct fid_domain *domain, enum fi_datatype datatype, enum fi_op op,
			struct fi_atomic_attr *attr, uint64_t flags);
/* An internal op flag of the fi_inject* calls: no completion.  FI_INJECT
 * alone (fi_sendmsg, fi_writemsg) only says the buffer is reusable on
 * return; the operation completes as any other.  No libfabric 1.17 op
 * flag uses bit 63; the *msg calls clear it from the application's. */
#define EFI_FI_NO_COMPLETION (1ULL << 63)
/* Whether a transmit operation with these flags gets no CQ entry. */
bool efi_fi_tx_silent(const struct efi_fi_ep *ep, uint64_t flags);
extern struct fi_ops_collective efi_fi_no_collective_ops;

/* Posts one send WR built from the arguments (msg.c); -FI_E* or 0. */
ssize_t efi_fi_post(struct efi_fi_ep *ep, enum efi_wr_opcode op, const struct iovec *iov,
		    void **desc, size_t count, uint64_t raddr, uint64_t rkey, uint64_t data,
		    uint64_t flags, void *context);

/* ------------------------------------------------------------ misc */

/* -FI_E* from a positive errno. */
int efi_fi_errno(int err);

int efi_fi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int efi_fi_no_control(struct fid *fid, int command, void *arg);
int efi_fi_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
		       void *context);
int efi_fi_no_tostr(const struct fid *fid, char *buf, size_t len);
int efi_fi_no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops,
		      void *context);

#endif
