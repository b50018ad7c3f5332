/* SPDX-License-Identifier: MIT */
/*
 * <efi/efi.h> — the EFI verbs API.
 *
 * Reliable-connected RDMA between cloud instances over ordinary Ethernet.  The
 * API has the shape of libibverbs (<infiniband/verbs.h>) with an efi_ prefix:
 * the same objects (device, context, PD, MR, completion channel, CQ, QP), the
 * same lifecycles, the same struct field names and enum values, so porting a
 * verbs program is a rename (ibv_ → efi_, IBV_ → EFI_).  Two transports
 * exist: reliable connected (RC) and unreliable datagram (UD, with address
 * handles); what verbs has and EFI does not (UC/XRC, memory windows,
 * multicast, extended verbs) is left out rather than stubbed.
 *
 * Conventions, as in libibverbs:
 *  - Constructors (efi_open_device, efi_alloc_pd, efi_reg_mr, efi_create_*)
 *    return a pointer, or NULL with errno set.
 *  - Other calls return 0 on success or a positive errno value, and do not
 *    rely on errno.  The post calls also set *bad_wr to the first work
 *    request that was not posted.  Two exceptions keep verbs' own shapes:
 *    efi_poll_cq returns a count or a negative value, efi_get_cq_event
 *    returns 0 or -1 with errno.
 *  - Destroy and free functions accept NULL (and then do nothing, returning 0).
 *  - Every function is thread safe.  Several threads may post and poll on
 *    different QPs and CQs of one context at once, and even on the same ones.
 *  - Objects belong to the library: applications read the public fields of
 *    the structs below but never allocate, copy or write them.
 *
 * The data path (efi_post_send, efi_post_recv, efi_poll_cq) makes no system
 * call other than the datagram I/O of the transport itself, and never talks
 * to efid.  Control calls (open, create, modify, destroy) may.
 *
 * The wire format behind this API is docs/wire-format.md.
 */
#ifndef EFI_EFI_H
#define EFI_EFI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ GIDs */

/* A GID: a 128-bit interface address as in RoCEv2, an IPv6 address as is or
 * an IPv4 address as IPv4-mapped IPv6 (::ffff:a.b.c.d), network byte order.
 * The same layout as ibv_gid, plus u64 for comparisons. */
#ifndef EFI_GID_DEFINED
#define EFI_GID_DEFINED
union efi_gid {
	uint8_t raw[16];
	uint64_t u64[2];
	struct {
		uint64_t subnet_prefix;	/* network byte order */
		uint64_t interface_id;	/* network byte order */
	} global;
};
#endif

/* --------------------------------------------------------------- devices */

#define EFI_DEVICE_NAME_MAX	64

/* An EFI interface the calling process may use: one of its instance's EFI
 * interfaces, as efid lists them. */
struct efi_device {
	char name[EFI_DEVICE_NAME_MAX];		/* the interface name, e.g. "efi0" */
	char instance[EFI_DEVICE_NAME_MAX];	/* the instance it belongs to */
	int ifindex;				/* in the instance's namespace */
};

/* An open device: the lease with efid and everything allocated under it. */
struct efi_context {
	struct efi_device *device;
	int num_comp_vectors;		/* valid comp_vector values: 0 … n − 1 */
};

/* Lists the EFI interfaces of the caller's instance, asking efid.  Returns a
 * NULL-terminated array (empty, not NULL, when there are none) and stores its
 * length in *num_devices if num_devices is not NULL; free it with
 * efi_free_device_list.  NULL with errno on failure: ECONNREFUSED or ENOENT
 * (efid is not running), EACCES (the caller may not talk to efid), EPROTO
 * (efid speaks another protocol version), ENOMEM. */
struct efi_device **efi_get_device_list(int *num_devices);

/* Frees a list from efi_get_device_list.  Devices already opened stay valid
 * for their contexts.  Accepts NULL. */
void efi_free_device_list(struct efi_device **list);

/* The device's name (device->name).  NULL if device is NULL. */
const char *efi_get_device_name(struct efi_device *device);

/* Opens a device: connects to efid, which checks that the caller belongs to
 * the interface's instance, allocates the context's QPNs and hands over its
 * UDP sockets.  The connection is a lease: when the process exits or crashes
 * efid reclaims everything the context held.  Returns the context, or NULL
 * with errno: ENODEV (the interface is gone or detached), EACCES (the caller
 * is not in the interface's instance), ECONNREFUSED/ENOENT (efid is not
 * running), EMFILE, ENOMEM. */
struct efi_context *efi_open_device(struct efi_device *device);

/* Closes a context and ends its lease.  Returns 0, or EBUSY (and leaves the
 * context open) while PDs, CQs or completion channels still exist under it.
 * Accepts NULL. */
int efi_close_device(struct efi_context *context);

enum efi_atomic_cap {
	EFI_ATOMIC_NONE,
	EFI_ATOMIC_HCA,		/* atomic among the operations of this device */
	EFI_ATOMIC_GLOB,	/* also against the CPU's atomics on the target */
};

/* The vendor id every EFI device reports: "EFI" in ASCII.  Its first byte
 * has the IEEE group bit set, so it is no valid OUI and no NIC vendor owns
 * it (docs/verbs.md). */
#define EFI_VENDOR_ID 0x454649u

struct efi_device_attr {
	char fw_ver[64];		/* libefi's version */
	uint64_t node_guid;		/* network byte order */
	uint64_t sys_image_guid;	/* network byte order */
	uint64_t max_mr_size;		/* bytes one MR may cover */
	uint64_t page_size_cap;
	uint32_t vendor_id;		/* EFI_VENDOR_ID */
	uint32_t vendor_part_id;
	uint32_t hw_ver;
	int max_qp;			/* QPs per context */
	int max_qp_wr;			/* max_send_wr / max_recv_wr per QP */
	unsigned int device_cap_flags;
	int max_sge;			/* SGEs per send or receive WR */
	int max_sge_rd;			/* SGEs per RDMA Read WR */
	int max_cq;
	int max_cqe;			/* entries per CQ */
	int max_mr;
	int max_pd;
	int max_qp_rd_atom;		/* max_rd_atomic per QP */
	int max_res_rd_atom;
	int max_qp_init_rd_atom;	/* max_dest_rd_atomic per QP */
	enum efi_atomic_cap atomic_cap;
	uint8_t phys_port_cnt;		/* 1 */
	/* EFI additions (in verbs these live in ibv_device_attr_ex or the port). */
	uint32_t max_inline_data;	/* bytes of EFI_SEND_INLINE per WR */
	uint32_t max_msg_sz;		/* bytes per message: 2^31 */
};

/* Fills *attr with the device's limits.  Returns 0, or EINVAL (NULL
 * argument). */
int efi_query_device(struct efi_context *context, struct efi_device_attr *attr);

enum efi_port_state {
	EFI_PORT_NOP		= 0,
	EFI_PORT_DOWN		= 1,	/* the interface is down or has no address */
	EFI_PORT_INIT		= 2,
	EFI_PORT_ARMED		= 3,
	EFI_PORT_ACTIVE		= 4,	/* up, with at least one GID */
	EFI_PORT_ACTIVE_DEFER	= 5,
};

/* Path MTUs: payload bytes per packet, the verbs values. */
enum efi_mtu {
	EFI_MTU_256	= 1,
	EFI_MTU_512	= 2,
	EFI_MTU_1024	= 3,
	EFI_MTU_2048	= 4,
	EFI_MTU_4096	= 5,
};

/* Bytes of a path MTU value, or -1 for a value not in enum efi_mtu. */
static inline int efi_mtu_to_num(enum efi_mtu mtu)
{
	return mtu >= EFI_MTU_256 && mtu <= EFI_MTU_4096 ? 128 << (int)mtu : -1;
}

enum {
	EFI_LINK_LAYER_UNSPECIFIED,
	EFI_LINK_LAYER_INFINIBAND,
	EFI_LINK_LAYER_ETHERNET,
};

struct efi_port_attr {
	enum efi_port_state state;
	enum efi_mtu max_mtu;		/* EFI_MTU_4096 */
	enum efi_mtu active_mtu;	/* the largest that fits the interface's MTU */
	int gid_tbl_len;		/* GIDs of the interface (its addresses) */
	uint32_t port_cap_flags;
	uint32_t max_msg_sz;
	uint8_t link_layer;		/* EFI_LINK_LAYER_ETHERNET */
	/* EFI addition: the interface's MTU in bytes (IP packet size). */
	uint32_t link_mtu;
};

/* Fills *attr with the state of port port_num, which must be 1 (an EFI
 * interface has one port).  Returns 0, or EINVAL (another port number, NULL
 * argument), ENODEV (the interface has been detached). */
int efi_query_port(struct efi_context *context, uint8_t port_num, struct efi_port_attr *attr);

/* Stores GID number index (0 … gid_tbl_len − 1) of port port_num in *gid.
 * Returns 0, or EINVAL (no such port or index, NULL argument). */
int efi_query_gid(struct efi_context *context, uint8_t port_num, int index, union efi_gid *gid);

/* "active", "down" …, "unknown" for a value not in enum efi_port_state. */
const char *efi_port_state_str(enum efi_port_state port_state);

/* ---------------------------------------------------- protection domains */

struct efi_pd {
	struct efi_context *context;
	uint32_t handle;
};

/* Returns a new PD, or NULL with errno: EINVAL (NULL context), ENOMEM. */
struct efi_pd *efi_alloc_pd(struct efi_context *context);

/* Returns 0, or EBUSY (and keeps the PD) while MRs or QPs still use it.
 * Accepts NULL. */
int efi_dealloc_pd(struct efi_pd *pd);

/* ------------------------------------------------------- memory regions */

enum efi_access_flags {
	EFI_ACCESS_LOCAL_WRITE		= 1 << 0,
	EFI_ACCESS_REMOTE_WRITE		= 1 << 1,
	EFI_ACCESS_REMOTE_READ		= 1 << 2,
	EFI_ACCESS_REMOTE_ATOMIC	= 1 << 3,
};

struct efi_mr {
	struct efi_context *context;
	struct efi_pd *pd;
	void *addr;
	size_t length;
	uint32_t handle;
	uint32_t lkey;		/* for local SGEs */
	uint32_t rkey;		/* for the peer's RETH/AtomicETH: random, not sequential */
};

/* Registers [addr, addr + length) for the accesses in access (enum
 * efi_access_flags).  The memory is neither copied nor pinned: it must stay
 * mapped until efi_dereg_mr.  Every remote access is checked against the
 * rkey, these bounds and these flags before a byte is touched.  Returns the
 * MR, or NULL with errno: EINVAL (unknown access bits, REMOTE_WRITE or
 * REMOTE_ATOMIC without LOCAL_WRITE as verbs requires, addr NULL with a
 * non-zero length, the range wraps around, length above max_mr_size, NULL pd),
 * ENOMEM. */
struct efi_mr *efi_reg_mr(struct efi_pd *pd, void *addr, size_t length, int access);

/* Deregisters an MR: its keys stop working immediately (later remote access
 * is a remote access error).  Deregistering an MR that posted, uncompleted
 * work requests still use is an application error, as in verbs: they may
 * complete with an error.  Returns 0.  Accepts NULL. */
int efi_dereg_mr(struct efi_mr *mr);

/* -------------------------------------------------- completion channels */

struct efi_comp_channel {
	struct efi_context *context;
	int fd;		/* readable while an event is pending: poll/epoll/select
			 * it; set O_NONBLOCK with fcntl to make
			 * efi_get_cq_event return EAGAIN instead of waiting */
	int refcnt;	/* CQs attached */
};

/* Returns a new completion channel, or NULL with errno: EINVAL (NULL
 * context), EMFILE, ENOMEM. */
struct efi_comp_channel *efi_create_comp_channel(struct efi_context *context);

/* Returns 0, or EBUSY (and keeps the channel) while CQs are attached to it.
 * Accepts NULL. */
int efi_destroy_comp_channel(struct efi_comp_channel *channel);

/* -------------------------------------------------- completion queues */

struct efi_cq {
	struct efi_context *context;
	struct efi_comp_channel *channel;
	void *cq_context;
	uint32_t handle;
	int cqe;		/* the capacity actually allocated (≥ requested) */
};

/* Creates a CQ of at least cqe entries.  channel (may be NULL) receives its
 * completion events, cq_context is returned by efi_get_cq_event, comp_vector
 * selects the progress thread (0 … num_comp_vectors − 1).  Returns the CQ, or
 * NULL with errno: EINVAL (cqe < 1 or above max_cqe, comp_vector out of
 * range, channel of another context), ENOMEM. */
struct efi_cq *efi_create_cq(struct efi_context *context, int cqe, void *cq_context,
			     struct efi_comp_channel *channel, int comp_vector);

/* Destroys a CQ.  As in verbs, waits until every event efi_get_cq_event
 * returned for it has been acknowledged.  Returns 0, or EBUSY (and keeps the
 * CQ) while a QP uses it.  Accepts NULL. */
int efi_destroy_cq(struct efi_cq *cq);

enum efi_wc_status {
	EFI_WC_SUCCESS,
	EFI_WC_LOC_LEN_ERR,		/* receive buffer too small for the Send:
					 * byte_len bytes placed (the buffers
					 * full), vendor_err = bytes that did
					 * not fit */
	EFI_WC_LOC_QP_OP_ERR,
	EFI_WC_LOC_EEC_OP_ERR,
	EFI_WC_LOC_PROT_ERR,		/* an SGE outside its MR or a bad lkey */
	EFI_WC_WR_FLUSH_ERR,		/* QP moved to ERR or destroyed first */
	EFI_WC_MW_BIND_ERR,
	EFI_WC_BAD_RESP_ERR,		/* the responder answered nonsense */
	EFI_WC_LOC_ACCESS_ERR,
	EFI_WC_REM_INV_REQ_ERR,		/* the responder found the request invalid */
	EFI_WC_REM_ACCESS_ERR,		/* rkey, bounds or access flags refused */
	EFI_WC_REM_OP_ERR,		/* the responder could not complete it */
	EFI_WC_RETRY_EXC_ERR,		/* no answer after timeout × retry_cnt */
	EFI_WC_RNR_RETRY_EXC_ERR,	/* no receive posted after rnr_retry tries */
	EFI_WC_LOC_RDD_VIOL_ERR,
	EFI_WC_REM_INV_RD_REQ_ERR,
	EFI_WC_REM_ABORT_ERR,
	EFI_WC_INV_EECN_ERR,
	EFI_WC_INV_EEC_STATE_ERR,
	EFI_WC_FATAL_ERR,
	EFI_WC_RESP_TIMEOUT_ERR,
	EFI_WC_GENERAL_ERR,
};

/* A constant description of a status ("success", "remote access error" …),
 * "unknown" for a value not in enum efi_wc_status.  Never NULL. */
const char *efi_wc_status_str(enum efi_wc_status status);

enum efi_wc_opcode {
	EFI_WC_SEND,
	EFI_WC_RDMA_WRITE,
	EFI_WC_RDMA_READ,
	EFI_WC_COMP_SWAP,
	EFI_WC_FETCH_ADD,
	/* Receive completions have this bit set: test (opcode & EFI_WC_RECV). */
	EFI_WC_RECV			= 1 << 7,
	EFI_WC_RECV_RDMA_WITH_IMM,
};

enum efi_wc_flags {
	EFI_WC_GRH		= 1 << 0,
	EFI_WC_WITH_IMM		= 1 << 1,	/* imm_data is valid */
};

/* A work completion, laid out as struct ibv_wc.  For an error status only
 * wr_id, status, qp_num and vendor_err are valid, as in verbs. */
struct efi_wc {
	uint64_t wr_id;
	enum efi_wc_status status;
	enum efi_wc_opcode opcode;
	uint32_t vendor_err;
	uint32_t byte_len;		/* bytes received (receive completions) */
	uint32_t imm_data;		/* network byte order, if EFI_WC_WITH_IMM */
	uint32_t qp_num;		/* the local QP */
	uint32_t src_qp;		/* the remote QP (receive completions) */
	unsigned int wc_flags;		/* enum efi_wc_flags */
	uint16_t pkey_index;		/* 0 */
	uint16_t slid;			/* 0 */
	uint8_t sl;			/* 0 */
	uint8_t dlid_path_bits;		/* 0 */
};

/* Takes up to num_entries completions off the CQ into wc[], oldest first, and
 * runs the transport of the CQ's QPs in the calling thread first.  Never
 * waits.  Returns the number taken (0 if none), or a negative value (-EINVAL:
 * num_entries < 0 or NULL wc with num_entries > 0; -EOVERFLOW, once the
 * completions it still held are taken: more completions came than the CQ
 * has room for and some were lost, so every QP using it has been moved to
 * the error state — size CQs for the work requests of all their QPs). */
int efi_poll_cq(struct efi_cq *cq, int num_entries, struct efi_wc *wc);

/* Arms the CQ: the next completion added to it (with solicited_only, the next
 * receive completion of a solicited message or any error completion) posts
 * one event to its channel.  One event per arming, as in verbs.  Returns 0,
 * or EINVAL (the CQ has no completion channel). */
int efi_req_notify_cq(struct efi_cq *cq, int solicited_only);

/* Takes the next event off the channel, waiting for one unless the channel's
 * fd is O_NONBLOCK, and stores the CQ and its cq_context.  Every event must
 * be acknowledged with efi_ack_cq_events.  Returns 0, or -1 with errno:
 * EAGAIN (non-blocking, no event), EINTR, EINVAL (NULL argument). */
int efi_get_cq_event(struct efi_comp_channel *channel, struct efi_cq **cq, void **cq_context);

/* Acknowledges nevents events of cq taken with efi_get_cq_event (batching is
 * cheaper, as in verbs). */
void efi_ack_cq_events(struct efi_cq *cq, unsigned int nevents);

/* ------------------------------------------------------------ queue pairs */

/* ------------------------------------------------- shared receive queues */

struct efi_recv_wr;

/* A shared receive queue: receive work requests that any QP created with it
 * takes from, in posting order, for each incoming Send (or Write with
 * immediate) as it needs one.  An empty SRQ makes the QP that needs one answer
 * with an RNR NAK, as hardware does: the requester retries after the QP's
 * min_rnr_timer, rnr_retry times (7: for ever). */
struct efi_srq {
	struct efi_context *context;
	void *srq_context;
	struct efi_pd *pd;
	uint32_t handle;
};

/* As struct ibv_srq_attr. */
struct efi_srq_attr {
	uint32_t max_wr;	/* receive WRs the SRQ holds */
	uint32_t max_sge;	/* SGEs per receive WR */
	uint32_t srq_limit;	/* 0: disarmed; else the limit event fires once
				 * when fewer WRs than this remain */
};

/* The SRQ limit event: called once when the WRs left in an SRQ armed with a
 * srq_limit drop below it (the SRQ is then disarmed: srq_limit reads 0, as in
 * verbs).  It runs in whichever thread runs the transport (a poster, a
 * poller or the progress thread) with libefi's transport lock held: it must
 * return quickly and call no libefi function (write to a pipe or an eventfd,
 * set a flag). */
typedef void (*efi_srq_limit_fn)(struct efi_srq *srq, void *srq_context);

/* As struct ibv_srq_init_attr, plus the event callback (EFI's way to
 * deliver the one asynchronous event an SRQ has: libefi has no async event
 * queue). */
struct efi_srq_init_attr {
	void *srq_context;
	struct efi_srq_attr attr;
	efi_srq_limit_fn limit_event;	/* may be NULL */
};

/* Which fields efi_modify_srq applies: the verbs bits. */
enum efi_srq_attr_mask {
	EFI_SRQ_MAX_WR	= 1 << 0,	/* resize (grow or shrink to what is posted) */
	EFI_SRQ_LIMIT	= 1 << 1,	/* arm the limit event (0: disarm) */
};

/* Creates an SRQ for the QPs of pd's context.  max_wr is raised to what was
 * allocated (a power of two) and written back, max_sge too (at least 1).
 * Returns the SRQ, or NULL with errno: EINVAL (NULL argument, max_wr 0 or
 * above max_qp_wr, max_sge above max_sge, srq_limit above max_wr), ENOMEM. */
struct efi_srq *efi_create_srq(struct efi_pd *pd, struct efi_srq_init_attr *init_attr);

/* EFI_SRQ_MAX_WR resizes to at least attr->max_wr (not below the WRs now
 * posted); EFI_SRQ_LIMIT arms the limit event at attr->srq_limit.  Returns 0,
 * or EINVAL (NULL argument, an unknown mask bit, max_wr 0, above the device
 * limit or below what is posted, srq_limit above max_wr), ENOMEM. */
int efi_modify_srq(struct efi_srq *srq, struct efi_srq_attr *attr, int attr_mask);

/* Fills *attr: max_wr and max_sge as allocated, srq_limit as armed (0 after
 * the event fired).  Returns 0, or EINVAL (NULL argument). */
int efi_query_srq(struct efi_srq *srq, struct efi_srq_attr *attr);

/* Destroys an SRQ; receive WRs still posted are dropped without completions
 * (as verbs does).  Returns 0, or EBUSY (and keeps the SRQ) while QPs use it.
 * Accepts NULL. */
int efi_destroy_srq(struct efi_srq *srq);

/* Posts receive work requests to the SRQ; SGEs are checked against pd's MRs
 * (one that fails completes with EFI_WC_LOC_PROT_ERR when used, as in
 * efi_post_recv).  Returns 0, or, setting *bad_wr to the first WR not posted:
 * EINVAL (NULL argument, num_sge < 0 or above max_sge), ENOMEM (the SRQ is
 * full). */
int efi_post_srq_recv(struct efi_srq *srq, struct efi_recv_wr *wr, struct efi_recv_wr **bad_wr);

/* ------------------------------------------------------------ queue pairs */

enum efi_qp_type {
	EFI_QPT_RC = 2,		/* reliable connected; the verbs value */
	EFI_QPT_UD = 4,		/* unreliable datagram; the verbs value */
};

/* Bytes a UD receive gets in front of the message: the datagram's GRH, as
 * InfiniBand and RoCE v1 lay it out (struct ibv_grh): version 6, the
 * sender's GID at byte 8 (sgid) and ours at byte 24 (dgid), whole; an IPv4
 * address as its IPv4-mapped GID (::ffff:a.b.c.d), whose last 4 bytes are
 * the address. */
#define EFI_GRH_LEN 40

struct efi_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};

struct efi_qp_init_attr {
	void *qp_context;
	struct efi_cq *send_cq;
	struct efi_cq *recv_cq;
	struct efi_srq *srq;		/* NULL, or receive from this SRQ
					 * (cap.max_recv_wr/sge are then ignored) */
	struct efi_qp_cap cap;
	enum efi_qp_type qp_type;	/* EFI_QPT_RC or EFI_QPT_UD */
	int sq_sig_all;			/* every send WR is signaled */
};

enum efi_qp_state {
	EFI_QPS_RESET,
	EFI_QPS_INIT,
	EFI_QPS_RTR,
	EFI_QPS_RTS,
	EFI_QPS_SQD,
	EFI_QPS_SQE,
	EFI_QPS_ERR,
	EFI_QPS_UNKNOWN,
};

enum efi_mig_state {
	EFI_MIG_MIGRATED,
	EFI_MIG_REARM,
	EFI_MIG_ARMED,
};

struct efi_qp {
	struct efi_context *context;
	void *qp_context;
	struct efi_pd *pd;
	struct efi_cq *send_cq;
	struct efi_cq *recv_cq;
	struct efi_srq *srq;		/* as created */
	uint32_t handle;
	uint32_t qp_num;		/* 24 bits; tell the peer (dest_qp_num) */
	enum efi_qp_state state;	/* as of the last efi_modify_qp/query */
	enum efi_qp_type qp_type;
};

/* Creates a QP in state RESET: an RC QP (connected to one peer QP at RTR)
 * or a UD QP (sends datagrams to any QP through address handles, receives
 * from any: see "Unreliable datagram" below).  The caps are checked against the device
 * limits and then raised to what was actually allocated, written back to
 * init_attr->cap.  A max_send_wr or max_recv_wr of 0 makes a receive-only or
 * send-only QP (posting to its missing queue fails with ENOMEM, as to a full
 * one).  With an SRQ the QP receives from it: max_recv_wr and max_recv_sge
 * read 0 and efi_post_recv fails.  Returns the QP, or NULL with errno:
 * EINVAL (qp_type neither EFI_QPT_RC nor EFI_QPT_UD, send_cq or recv_cq NULL or of another
 * context, an srq of another context, a cap above the device limits),
 * ENOSPC (no QP number left and efid refused another block: a context
 * holds at most 16 blocks of 4096), EAGAIN (every block held is full and
 * efid, restarting, cannot give another yet), EDQUOT (the instance's
 * [Limits] MaxQPs), ENODEV (the interface was detached), ENOMEM. */
struct efi_qp *efi_create_qp(struct efi_pd *pd, struct efi_qp_init_attr *init_attr);

/* Destroys a QP.  Work requests still outstanding complete with
 * EFI_WC_WR_FLUSH_ERR on their CQs first.  Returns 0, or an errno if efid
 * could not be told (the QP is destroyed anyway).  Accepts NULL. */
int efi_destroy_qp(struct efi_qp *qp);

/* Address vector of the peer: as struct ibv_ah_attr.  Only grh.dgid (the
 * peer interface's GID), grh.sgid_index (which local GID to send from) and
 * is_global (must be 1) matter; the others are accepted and ignored. */
struct efi_global_route {
	union efi_gid dgid;
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
};

struct efi_ah_attr {
	struct efi_global_route grh;
	uint16_t dlid;
	uint8_t sl;
	uint8_t src_path_bits;
	uint8_t static_rate;
	uint8_t is_global;
	uint8_t port_num;
};

/* ------------------------------------------------ unreliable datagram */

/*
 * A UD QP sends datagrams of one packet each (at most the port's
 * active_mtu bytes) to any UD QP whose GID and QPN it knows, through an
 * address handle, and receives from any UD QP of the fabric whose datagram
 * carries its Q_Key.  Nothing is acknowledged or retransmitted: a datagram
 * that finds no receive posted, or is lost on the way, is gone (counted as
 * EFI_DROP_NO_RECEIVE at the receiver).  A send completes once the datagram
 * has left.  Each receive gets EFI_GRH_LEN bytes of "GRH" in front of the
 * message (so a receive buffer needs EFI_GRH_LEN + active_mtu bytes for the
 * largest datagram), byte_len counts them, wc_flags has EFI_WC_GRH and
 * src_qp names the sender; a message longer than the receive completes it
 * with EFI_WC_LOC_LEN_ERR (the QP stays usable, as datagram loss does not
 * fail a UD QP).  The source of a datagram is authenticated as an RC QP's
 * without a connection key: it must come from a UDP port that efid bound for
 * the context holding its source QPN (docs/wire-format.md, "Datagrams").
 */
struct efi_ah {
	struct efi_context *context;
	struct efi_pd *pd;
	uint32_t handle;
};

/* Which fields of struct efi_qp_attr efi_modify_qp applies: the verbs bits. */
enum efi_qp_attr_mask {
	EFI_QP_STATE			= 1 << 0,
	EFI_QP_CUR_STATE		= 1 << 1,
	EFI_QP_EN_SQD_ASYNC_NOTIFY	= 1 << 2,	/* not supported */
	EFI_QP_ACCESS_FLAGS		= 1 << 3,
	EFI_QP_PKEY_INDEX		= 1 << 4,	/* must be 0 */
	EFI_QP_PORT			= 1 << 5,	/* must be 1 */
	EFI_QP_QKEY			= 1 << 6,	/* UD only */
	EFI_QP_AV			= 1 << 7,
	EFI_QP_PATH_MTU			= 1 << 8,
	EFI_QP_TIMEOUT			= 1 << 9,
	EFI_QP_RETRY_CNT		= 1 << 10,
	EFI_QP_RNR_RETRY		= 1 << 11,
	EFI_QP_RQ_PSN			= 1 << 12,
	EFI_QP_MAX_QP_RD_ATOMIC		= 1 << 13,
	EFI_QP_ALT_PATH			= 1 << 14,	/* not supported */
	EFI_QP_MIN_RNR_TIMER		= 1 << 15,
	EFI_QP_SQ_PSN			= 1 << 16,
	EFI_QP_MAX_DEST_RD_ATOMIC	= 1 << 17,
	EFI_QP_PATH_MIG_STATE		= 1 << 18,	/* not supported */
	EFI_QP_CAP			= 1 << 19,	/* query only */
	EFI_QP_DEST_QPN			= 1 << 20,
	EFI_QP_RATE_LIMIT		= 1 << 25,	/* not supported */
};

/* QP attributes, laid out as struct ibv_qp_attr. */
struct efi_qp_attr {
	enum efi_qp_state qp_state;
	enum efi_qp_state cur_qp_state;
	enum efi_mtu path_mtu;
	enum efi_mig_state path_mig_state;
	uint32_t qkey;			/* UD: what arriving datagrams must carry */
	uint32_t rq_psn;		/* 24 bits: first PSN expected from the peer */
	uint32_t sq_psn;		/* 24 bits: first PSN sent */
	uint32_t dest_qp_num;		/* the peer QP's qp_num */
	unsigned int qp_access_flags;	/* EFI_ACCESS_REMOTE_* the peer may use */
	struct efi_qp_cap cap;
	struct efi_ah_attr ah_attr;
	struct efi_ah_attr alt_ah_attr;
	uint16_t pkey_index;
	uint16_t alt_pkey_index;
	uint8_t en_sqd_async_notify;
	uint8_t sq_draining;
	uint8_t max_rd_atomic;		/* Reads/atomics outstanding as requester */
	uint8_t max_dest_rd_atomic;	/* … as responder (the atomic replay cache) */
	uint8_t min_rnr_timer;		/* verbs encoding: 0 = 655.36 ms, 1 = 0.01 ms … 31 = 491.52 ms */
	uint8_t port_num;
	uint8_t timeout;		/* 4.096 µs × 2^timeout, 0 = infinite, as verbs */
	uint8_t retry_cnt;		/* 0 … 7 */
	uint8_t rnr_retry;		/* 0 … 7, 7 = retry forever */
	uint8_t alt_port_num;
	uint8_t alt_timeout;
	uint32_t rate_limit;
};

/* Creates an address handle for UD sends: attr->grh.dgid (the peer
 * interface's GID) from the local GID attr->grh.sgid_index, is_global 1;
 * the rest is accepted and ignored, as for an RC QP's AV.  Returns the AH, or
 * NULL with errno: EINVAL (NULL argument, is_global 0, sgid_index not a GID
 * of the port, dgid of another address family than that GID), ENOMEM. */
struct efi_ah *efi_create_ah(struct efi_pd *pd, struct efi_ah_attr *attr);

/* Destroys an address handle.  Work requests already posted with it are not
 * affected (the datagram left at post time).  Returns 0.  Accepts NULL. */
int efi_destroy_ah(struct efi_ah *ah);

/* Changes the QP's state and attributes.  The transitions and the
 * attributes they take are those of a verbs RC QP:
 *
 *   RESET → INIT  required STATE, ACCESS_FLAGS; optional PKEY_INDEX, PORT
 *   INIT  → INIT  optional ACCESS_FLAGS, PKEY_INDEX, PORT
 *   INIT  → RTR   required STATE, AV, PATH_MTU, DEST_QPN, RQ_PSN,
 *                 MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER; optional ACCESS_FLAGS,
 *                 PKEY_INDEX
 *   RTR   → RTS   required STATE, TIMEOUT, RETRY_CNT, RNR_RETRY, SQ_PSN,
 *                 MAX_QP_RD_ATOMIC; optional ACCESS_FLAGS, MIN_RNR_TIMER
 *   RTS   → RTS   optional ACCESS_FLAGS, MIN_RNR_TIMER
 *   any   → ERR   STATE only: outstanding work completes with WR_FLUSH_ERR
 *   any   → RESET STATE only: outstanding work is discarded, no completions
 *
 * A UD QP's transitions (the verbs UD table; there is no peer to name):
 *
 *   RESET → INIT  required STATE, QKEY; optional PKEY_INDEX, PORT
 *                 (verbs requires those two; EFI has one of each)
 *   INIT  → INIT  optional QKEY, PKEY_INDEX, PORT
 *   INIT  → RTR   required STATE; optional QKEY, PKEY_INDEX
 *   RTR   → RTS   required STATE, SQ_PSN; optional QKEY
 *   RTS   → RTS   optional QKEY
 *   any   → ERR, any → RESET as above
 *
 * CUR_STATE may be added to any of them and must then equal the QP's state.
 * A transition fails as a whole: nothing changes.  Returns 0, or EINVAL (a
 * transition not in the table, a required attribute missing, one not allowed
 * in this transition, an unsupported one, a value out of range: PSN or QPN
 * above 24 bits, path_mtu not in enum efi_mtu or above the port's
 * active_mtu, is_global 0, sgid_index not a GID of the port, dgid of another
 * address family than that GID, retry counts above 7, min_rnr_timer above 31,
 * max_rd_atomic or max_dest_rd_atomic above the device limits), ENODEV (the
 * interface has been detached). */
int efi_modify_qp(struct efi_qp *qp, struct efi_qp_attr *attr, int attr_mask);

/* Fills *attr with the QP's current attributes (all of them, whatever
 * attr_mask says, as most verbs providers do) and *init_attr with those it
 * was created with (caps as allocated).  Returns 0, or EINVAL (NULL
 * argument). */
int efi_query_qp(struct efi_qp *qp, struct efi_qp_attr *attr, int attr_mask,
		 struct efi_qp_init_attr *init_attr);

/* ------------------------------------------------------- work requests */

struct efi_sge {
	uint64_t addr;		/* inside the MR of lkey */
	uint32_t length;
	uint32_t lkey;
};

enum efi_wr_opcode {
	EFI_WR_RDMA_WRITE,
	EFI_WR_RDMA_WRITE_WITH_IMM,
	EFI_WR_SEND,
	EFI_WR_SEND_WITH_IMM,
	EFI_WR_RDMA_READ,
	EFI_WR_ATOMIC_CMP_AND_SWP,
	EFI_WR_ATOMIC_FETCH_AND_ADD,
};

enum efi_send_flags {
	EFI_SEND_FENCE		= 1 << 0,	/* wait for earlier Reads/atomics first */
	EFI_SEND_SIGNALED	= 1 << 1,	/* a completion even without sq_sig_all */
	EFI_SEND_SOLICITED	= 1 << 2,	/* the peer's receive completion is solicited */
	EFI_SEND_INLINE		= 1 << 3,	/* copy the data at post time; lkeys ignored */
};

struct efi_send_wr {
	uint64_t wr_id;
	struct efi_send_wr *next;
	struct efi_sge *sg_list;
	int num_sge;
	enum efi_wr_opcode opcode;
	unsigned int send_flags;	/* enum efi_send_flags */
	uint32_t imm_data;		/* *_WITH_IMM: network byte order */
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;
		struct {
			uint64_t remote_addr;	/* 8-byte aligned */
			uint64_t compare_add;	/* CMP_AND_SWP: compare; FETCH_AND_ADD: add */
			uint64_t swap;		/* CMP_AND_SWP only */
			uint32_t rkey;
		} atomic;
		struct {			/* UD QPs: where the datagram goes */
			struct efi_ah *ah;
			uint32_t remote_qpn;
			uint32_t remote_qkey;
		} ud;
	} wr;
};

struct efi_recv_wr {
	uint64_t wr_id;
	struct efi_recv_wr *next;
	struct efi_sge *sg_list;
	int num_sge;
};

/* Posts a list of send work requests.  A work request whose memory turns out
 * to be bad (an lkey that is not an MR of the QP's PD, an SGE outside it, an
 * MR without LOCAL_WRITE as a Read/atomic target) completes with
 * EFI_WC_LOC_PROT_ERR, as in verbs.  Atomics operate on 8 bytes: one SGE of
 * length 8 receives the original value.  Returns 0, or, setting *bad_wr to
 * the first WR not posted (those before it are posted): EINVAL (QP in RESET,
 * INIT or RTR; unknown opcode or flag; num_sge < 0 or above max_send_sge;
 * EFI_SEND_INLINE with more than max_inline_data bytes or on a Read or
 * atomic; a message above max_msg_sz, or of 2^23 packets or more at the
 * QP's path MTU (only possible with EFI_MTU_256); an atomic remote_addr not
 * 8-byte aligned or an atomic SGE not 8 bytes), ENOMEM (the send queue is
 * full).
 * In state ERR work requests are accepted and complete with WR_FLUSH_ERR.
 * On a UD QP only EFI_WR_SEND and EFI_WR_SEND_WITH_IMM exist, wr.ud names
 * the destination, and a message is at most the port's active_mtu bytes
 * (EINVAL otherwise, and for a NULL ah or one of another context). */
int efi_post_send(struct efi_qp *qp, struct efi_send_wr *wr, struct efi_send_wr **bad_wr);

/* Posts a list of receive work requests, allowed from state INIT on.
 * Returns 0, or, setting *bad_wr as efi_post_send does: EINVAL (QP in
 * RESET, num_sge < 0 or above max_recv_sge), ENOMEM (the receive queue is
 * full).  In state ERR they are accepted and complete with WR_FLUSH_ERR. */
int efi_post_recv(struct efi_qp *qp, struct efi_recv_wr *wr, struct efi_recv_wr **bad_wr);

/* ------------------------------------------------------------- counters */

/* Why a received datagram was dropped (docs/wire-format.md, "Receiving"). */
enum efi_drop_reason {
	EFI_DROP_MALFORMED,	/* the header failed the parser */
	EFI_DROP_BAD_VERSION,	/* another wire-format version */
	EFI_DROP_UNKNOWN_QP,	/* no such QP in this context */
	EFI_DROP_BAD_SOURCE,	/* not from the QP's peer (unauthenticated) */
	EFI_DROP_QP_STATE,	/* the QP's state does not accept it */
	EFI_DROP_OUT_OF_WINDOW,	/* PSN outside the window, or a stray response */
	EFI_DROP_INJECTED,	/* the fault injector (EFI_FAULT) dropped it */
	EFI_DROP_BAD_KEY,	/* not the connection key the QP was given */
	EFI_DROP_NO_RECEIVE,	/* a datagram for a UD QP with no receive posted */
	EFI_DROP_QP_TYPE,	/* a datagram for an RC QP, or RC traffic for a UD QP */
	EFI_DROP_REASON_COUNT,
	EFI_DROP_REASON_MAX = 16,	/* room in struct efi_counters */
};

/* A constant name for a drop reason ("malformed", "bad_source" …), "unknown"
 * for any other value.  Never NULL. */
const char *efi_drop_reason_str(enum efi_drop_reason reason);

/* Paths whose state efi_query_qp_counters reports (a QP may have more). */
#define EFI_COUNTERS_PATHS 4

/* One path of a QP (the ways its packets take through the fabric): its RTT
 * estimate, congestion window and health. */
struct efi_path_counters {
	uint64_t rtt_min_ns;		/* smallest RTT measured (0: none yet) */
	uint64_t rtt_smoothed_ns;	/* smoothed RTT (0: none yet) */
	uint64_t cwnd_milli;		/* congestion window, thousandths of a packet */
	uint64_t inflight;		/* packets in flight on it */
	uint64_t retransmissions;	/* its packets sent again */
	uint64_t suspected;		/* times it went silent and was avoided */
	uint64_t restored;		/* times it answered again and was re-admitted */
	uint32_t active;		/* 1: in use, 0: suspected */
	uint32_t peer_lane;		/* the peer's lane its requests go to: 0, or another
					 * after its probes went unanswered (a new four-tuple
					 * for the fabric's ECMP hash) */
};

/* Transport counters since the QP or context was created.  Packets and bytes
 * count datagrams and their UDP payload, headers included. */
struct efi_counters {
	uint64_t tx_packets;
	uint64_t tx_bytes;
	uint64_t rx_packets;		/* accepted by the parser */
	uint64_t rx_bytes;
	uint64_t retransmissions;	/* packets sent again */
	uint64_t timeouts;		/* retransmission timer expiries */
	uint64_t duplicates;		/* duplicate requests received (re-acknowledged/replayed) */
	uint64_t rnr_naks_sent;
	uint64_t rnr_naks_received;
	uint64_t seq_naks_sent;		/* NAK PSN sequence error */
	uint64_t seq_naks_received;
	uint64_t drops;			/* sum of drop_reasons[] */
	uint64_t drop_reasons[EFI_DROP_REASON_MAX];	/* indexed by enum efi_drop_reason */
	uint64_t fast_retransmits;	/* packets declared lost by SACK/RACK (not a timeout) */
	uint64_t tail_probes;		/* tail-loss probes sent */
	/* Per path: efi_query_qp_counters only (zero for a context). */
	uint32_t num_paths;		/* paths the QP has (paths[] shows the first EFI_COUNTERS_PATHS) */
	uint32_t reserved;
	struct efi_path_counters paths[EFI_COUNTERS_PATHS];
};

/* Fills *counters with the QP's counters.  Returns 0, or EINVAL (NULL
 * argument). */
int efi_query_qp_counters(struct efi_qp *qp, struct efi_counters *counters);

/* Fills *counters with the context's: the sum over its QPs, present and
 * destroyed, plus drops not attributable to a QP (unknown QP, malformed).
 * Returns 0, or EINVAL (NULL argument). */
int efi_query_context_counters(struct efi_context *context, struct efi_counters *counters);

#ifdef __cplusplus
}
#endif
#endif
