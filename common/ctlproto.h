/* SPDX-License-Identifier: MIT */
/*
 * The efid control protocol: message types and attribute numbers.
 *
 * Shared by efid (server), efictl and libefi (clients).  The framing and the
 * attribute encoding are in ctlmsg.h; docs/control-protocol.md describes the
 * whole format.  Numbers are part of the wire contract: never renumber, only
 * append.  Bump EFI_CTL_VERSION only for incompatible changes.
 */
#ifndef EFI_CTLPROTO_H
#define EFI_CTLPROTO_H

#ifdef __cplusplus
extern "C" {
#endif

#define EFI_CTL_MAGIC 0x31494645u  /* "EFI1" little-endian */
#define EFI_CTL_VERSION 1

/* Largest payload a server accepts in a request; replies may be larger. */
#define EFI_CTL_MAX_REQUEST (64u * 1024u)
/* Largest payload anybody accepts at all. */
#define EFI_CTL_MAX_PAYLOAD (4u * 1024u * 1024u)
/* File descriptors one message may carry. */
#define EFI_CTL_MAX_FDS 16

/* Default socket path; $EFI_SOCKET overrides for clients. */
#define EFI_CTL_DEFAULT_SOCKET "/run/efi/efid.sock"

enum efi_ctl_type {
	EFI_CTL_REPLY = 0x0001,    /* server → client: the answer to one request */
	EFI_CTL_HELLO = 0x0002,    /* who am I, which daemon is this */
	EFI_CTL_ATTACH = 0x0010,   /* create (or confirm) an interface */
	EFI_CTL_DETACH = 0x0011,   /* remove one interface, or all of an instance */
	EFI_CTL_LIST = 0x0012,     /* instances, interfaces, GIDs, strays */
	EFI_CTL_OPEN_DEVICE = 0x0020, /* libefi: lease a wire endpoint on an interface */
	EFI_CTL_PUBLISH_COUNTERS = 0x0021, /* libefi: one descriptor, the counters page (countershm.h) */
	EFI_CTL_LEASE_RESUME = 0x0022, /* libefi, after efid restarted: IFNAME, QPN_BASE + one
	                                  descriptor (the wire socket it holds); the lease is
	                                  efid's again (docs/control-protocol.md) */
	EFI_CTL_RESERVE = 0x0023,      /* libefi: RES_QPS?, RES_MRS?, RES_BYTES? against the
	                                  instance's [Limits]; all or nothing (-EDQUOT) */
	EFI_CTL_RELEASE = 0x0024,      /* libefi: gives back what RESERVE granted */
	EFI_CTL_REVOKE = 0x0025,       /* efid → libefi, unsolicited (seq 0) on a lease: the
	                                  interface is being detached; IFNAME */
	/* Connection manager (docs/connection-manager.md).  Each listener and
	 * each connection is a control connection of its own; efid pushes
	 * EFI_CTL_CM_EVENT frames (seq 0) on it between replies. */
	EFI_CTL_CM_LISTEN = 0x0030,     /* IFNAME, CM_SERVICE, CM_BACKLOG */
	EFI_CTL_CM_CONNECT = 0x0031,    /* IFNAME, CM_DEST, CM_SERVICE, CM_QPN, CM_PSN,
	                                   CM_MTU, CM_SGID, CM_TIMEOUT, [CM_PRIVATE] */
	EFI_CTL_CM_ACCEPT = 0x0032,     /* CM_ID (the request), CM_QPN, CM_PSN, CM_MTU,
	                                   [CM_PRIVATE]; reply: CM_KEY */
	EFI_CTL_CM_REJECT = 0x0033,     /* CM_ID (the request), [CM_PRIVATE] */
	EFI_CTL_CM_READY = 0x0034,      /* active side: its QP is in RTS (sends the RTU) */
	EFI_CTL_CM_DISCONNECT = 0x0035, /* this connection's: tell the peer, forget it */
	EFI_CTL_CM_EVENT = 0x0036,      /* efid → client, unsolicited: CM_EVENT + fields */
	EFI_CTL_CM_RESUME = 0x0037,     /* after an efid restart: CM_ID (tid, or the handle of an
	                                   accepted request), CM_ACTIVE; takes up the connection */
};

/*
 * Attributes.  Which ones appear in which message is documented next to
 * each; unknown attribute numbers are ignored by receivers (so new optional
 * fields can be added), known ones are strictly validated.
 */
enum efi_ctl_attr {
	EFI_A_UNSPEC = 0,
	/* reply header */
	EFI_A_STATUS = 1,       /* i32: 0 or a negative errno */
	EFI_A_ERROR = 2,        /* str: human message saying what was wrong and what to do */
	/* identity */
	EFI_A_CLIENT = 3,       /* str: client program name, for logs */
	EFI_A_SERVER_VERSION = 4, /* str: efid package version */
	EFI_A_HOST_ID = 5,      /* str: this efid's host id (uuid) */
	EFI_A_CALLER_INSTANCE = 6, /* str: instance the caller lives in, if any */
	EFI_A_CAN_MUTATE = 7,   /* u32: 1 if the caller may attach/detach */
	/* interface fields (top level in ATTACH/DETACH/LIST requests, inside
	 * EFI_A_IFACE nests in replies) */
	EFI_A_INSTANCE = 10,    /* str: instance name (netns /run/netns/NAME) */
	EFI_A_IFNAME = 11,      /* str: interface name inside the instance */
	EFI_A_ADDRESS = 12,     /* str, repeated: "10.0.0.5/24", "fd00::5/64" */
	EFI_A_UPLINK = 13,      /* str: bridge (veth) or parent device (macvlan) */
	EFI_A_MTU = 14,         /* u32: 0 = default */
	EFI_A_KIND = 15,        /* str: "veth" | "macvlan" */
	EFI_A_HOST_IFNAME = 16, /* str: the host-side device name */
	EFI_A_STATE = 17,       /* str: "attached" | "missing" | "detaching" (a detach whose record write failed; efid finishes it) */
	EFI_A_LINK = 18,        /* str: "up" | "down" | "no-carrier" | "missing" */
	EFI_A_GID = 19,         /* nest, repeated: EFI_A_GID_INDEX + EFI_A_GID_VALUE */
	EFI_A_GID_INDEX = 20,   /* u32 */
	EFI_A_GID_VALUE = 21,   /* bin[16]: the GID, network order */
	EFI_A_IFINDEX = 22,     /* u32: ifindex inside the instance, 0 if missing */
	EFI_A_FLAGS = 23,       /* u32: request flags, EFI_F_* */
	EFI_A_RESULT = 24,      /* u32: EFI_R_* */
	EFI_A_COUNT = 25,       /* u32 */
	/* list replies */
	EFI_A_IFACE = 30,       /* nest, repeated: one interface */
	EFI_A_INSTANCE_ENTRY = 31, /* nest, repeated: EFI_A_INSTANCE + EFI_A_NETNS */
	EFI_A_NETNS = 32,       /* str: "present" | "missing" */
	EFI_A_STRAY = 33,       /* nest, repeated: a device efid made but has no record of;
	                           EFI_A_HOST_IFNAME, optional EFI_A_INSTANCE/EFI_A_IFNAME */
	/* OPEN_DEVICE replies (with SCM_RIGHTS descriptors: the UDP sockets, one
	 * per lane, EFI_A_LANES) */
	EFI_A_PORT = 40,        /* u32: the UDP port lane 0's socket is bound to */
	EFI_A_PORT_BASE = 41,   /* u32: fabric-wide; lane 0's udp_port = PORT_BASE + (qpn >> 12) */
	EFI_A_QPN_BASE = 42,    /* u32: first QPN of the leased block (= slot << 12) */
	EFI_A_QPN_COUNT = 43,   /* u32: QPNs in the block (4096) */
	/* LIST replies: inside an EFI_A_IFACE nest, one per open libefi context */
	EFI_A_CONTEXT = 44,     /* nest, repeated: EFI_A_PID + EFI_A_COUNTERS */
	EFI_A_PID = 45,         /* u32: the context's process (as efid sees it) */
	EFI_A_COUNTERS = 46,    /* bin: EFI_CSHM_COUNT little-endian u64 (countershm.h order) */
	/* connection manager (EFI_CTL_CM_*) */
	EFI_A_CM_SERVICE = 50,  /* u32: 1..65535, the application's service number */
	EFI_A_CM_BACKLOG = 51,  /* u32: requests a listener may leave unanswered */
	EFI_A_CM_DEST = 52,     /* bin[16]: the GID connected to */
	EFI_A_CM_QPN = 53,      /* u32: 24 bits */
	EFI_A_CM_PSN = 54,      /* u32: 24 bits, the first PSN this side sends */
	EFI_A_CM_MTU = 55,      /* u32: enum efi_mtu, the largest this side takes */
	EFI_A_CM_SGID = 56,     /* bin[16]: the GID this side sends from */
	EFI_A_CM_TIMEOUT = 57,  /* u32: milliseconds */
	EFI_A_CM_PRIVATE = 58,  /* bin[0..EFI_CM_PRIVATE_MAX]: the application's bytes */
	EFI_A_CM_ID = 59,       /* u64: a request's or connection's handle */
	EFI_A_CM_KEY = 60,      /* u32: the per-connection secret */
	EFI_A_CM_EVENT = 61,    /* u32: EFI_CM_EV_* */
	EFI_A_CM_REASON = 62,   /* u32: EFI_CM_REJ_* */
	EFI_A_CM_PEER_GID = 63, /* bin[16], repeated: the peer's GIDs (its path set) */
	/* LIST replies: inside an EFI_A_IFACE nest */
	EFI_A_CM_LISTENER = 64, /* nest, repeated: CM_SERVICE, PID, CM_BACKLOG, CM_PENDING */
	EFI_A_CM_CONNECTION = 65, /* nest, repeated: CM_QPN (local), CM_PEER_GID, CM_PEER_QPN,
	                             STATE, CM_ACTIVE, PID? (none once closing) */
	EFI_A_CM_PENDING = 66,  /* u32: requests the listener has not answered yet */
	EFI_A_CM_PEER_QPN = 67, /* u32: the peer's QP number, 0 until known */
	EFI_A_CM_ACTIVE = 68,   /* u32: 1 if this side connected, 0 if it accepted */
	EFI_A_CM_LINK_MTU = 69, /* u32: CONNECT, ACCEPT, REQUEST and REPLY events: the
				 * MTU of the sending side's link (576..65535), so that
				 * both take the smaller one's segment
				 * (docs/wire-format.md, "Segmentation"); optional:
				 * absent from older libefi and efid */
	/* quotas ([Limits] in efid.conf): RESERVE/RELEASE amounts; in RESERVE
	 * replies the instance's limits (0: none) */
	EFI_A_RES_QPS = 70,     /* u32 */
	EFI_A_RES_MRS = 71,     /* u32 */
	EFI_A_RES_BYTES = 72,   /* u64: registered memory */
	EFI_A_LEASES = 73,      /* u32, in IFACE: libefi contexts holding an endpoint on it
	                           (IFACE also carries RES_QPS: the QPs they hold) */
	/* OPEN_DEVICE reply */
	EFI_A_CC_PARAMS = 74,   /* string: efid.conf [CongestionControl] as libefi's
				 * "key=value,..." spec (libefi/cc.h); absent = defaults */
	EFI_A_LANES = 75,       /* u32, OPEN_DEVICE reply: sockets passed, one per lane
				 * (path), lane L bound to PORT_BASE + L*4096 + (qpn >> 12);
				 * absent = 1 */
	/* LIST replies: inside an EFI_A_CONTEXT nest, the health of each path
	 * to each remote peer (counters page version 2, countershm.h) */
	EFI_A_PEER = 80,        /* nest, repeated: PEER_ADDR, PEER_QPS, PATH... */
	EFI_A_PEER_ADDR = 81,   /* bin[16]: the peer's address (IPv4-mapped for IPv4), network order */
	EFI_A_PEER_QPS = 82,    /* u32: the context's connected (RTS/SQD) QPs to that peer */
	EFI_A_PEERS_OMITTED = 83, /* u32, in CONTEXT: further peers the page had no room for */
	EFI_A_PATH = 84,        /* nest, repeated, in PEER: PATH_INDEX, PATH_STATE, PATH_VALUES */
	EFI_A_PATH_INDEX = 85,  /* u32: 0..7, the path (UDP source port lane) */
	EFI_A_PATH_STATE = 86,  /* u32: enum efi_cshm_path_state (0 active, 1 suspect) */
	EFI_A_PATH_VALUES = 87, /* bin: EFI_CSHM_PATH_VALUES little-endian u64
				 * (countershm.h enum efi_cshm_path_value order) */
	/* 88, 89: reserved for more path-health fields */
	/* The path table (common/pathtable.h, docs/path-table.md) */
	EFI_A_PATH_TABLE = 90,  /* u32.  OPEN_DEVICE / LEASE_RESUME request: the table
				 * version the client reads (it takes one); reply: the
				 * index, among the descriptors passed, of the table's
				 * read-only memfd (after the lanes'); absent = none */
	EFI_A_UPLINK_ENTRY = 91, /* nest, repeated, LIST replies (host callers): one
				  * uplink of [Transport] Uplinks: UPLINK, IFINDEX, LINK,
				  * UPLINK_LANES, UPLINK_CHANGES */
	EFI_A_UPLINK_LANES = 92, /* u32: bit L set when lane L leaves by this uplink */
	EFI_A_UPLINK_CHANGES = 93, /* u32: state changes since efid started */
	/* LIST paging (issue 22): a listing is as long as it needs to be, a
	 * reply is not.  Requests with EFI_F_LIST_PAGED get pages of whole
	 * top-level entries; an interface whose contexts and CM objects do not
	 * fit one IFACE nest (65,535 bytes) is continued in further IFACE nests
	 * carrying its INSTANCE, IFNAME, LIST_CONTINUED and more of them. */
	EFI_A_LIST_CURSOR = 100,  /* u32, LIST request: entries already received (0 first) */
	EFI_A_LIST_NEXT = 101,    /* u32, LIST reply: the cursor of the next page; absent on the last */
	EFI_A_LIST_CONTINUED = 102, /* u32, in IFACE: 1 when it continues the one before */
	EFI_A_DETAIL_OMITTED = 103, /* u32, in IFACE (requests without EFI_F_LIST_PAGED): contexts
				       and CM objects left out because the nest was full */

	/* ATTACH by a container runtime's plugin (efi-cni): the instance is
	 * the network namespace at this path (/proc/PID/ns/net,
	 * /var/run/netns/X, ...), recorded under the INSTANCE name asked for
	 * unless the namespace already has a name (the reply's IFACE says
	 * which).  Root callers only: efid opens the path with its own rights. */
	EFI_A_NETNS_PATH = 110,   /* str: absolute path of an nsfs file, < PATH_MAX */

	/* Inside CONTEXT, from a version 3 counters page (countershm.h). */
	EFI_A_DROP_REASONS = 111, /* bin: EFI_CSHM_DROP_REASONS little-endian u64, by reason */
	EFI_A_QP = 112,           /* nest, repeated: QP_NUM, QP_STATE, PEER_ADDR, QP_VALUES */
	EFI_A_QP_NUM = 113,       /* u32: the QP number (24 bits) */
	EFI_A_QP_STATE = 114,     /* u32: libefi's enum efi_qp_state */
	EFI_A_QP_VALUES = 115,    /* bin: EFI_CSHM_QP_VALUES little-endian u64
				   * (enum efi_cshm_qp_value order) */
	EFI_A_QPS_OMITTED = 116,  /* u32: further QPs the page had no room for */
	/* From a version 4 page: the stall detector (countershm.h). */
	EFI_A_QP_OUTSTANDING = 117, /* u32, inside QP: send WQEs not completed */
	EFI_A_QP_STALLED_MS = 118,  /* u32, inside QP: ms without progress with work outstanding */
	EFI_A_QP_WORK_FLAGS = 119,  /* u32, inside QP: EFI_CSHM_QPW_* */
	EFI_A_QPS_STALLED = 120,    /* u32, inside CONTEXT: QPs stalled ≥ EFI_CSHM_STALL_MS */
	EFI_A_MAX, /* keep last: parsers size their tables by it */
};

/* Private data the application may carry in each direction. */
#define EFI_CM_PRIVATE_MAX 192u

/* EFI_A_FLAGS bits */
#define EFI_F_ALL 0x1u          /* DETACH: every interface of the instance */
#define EFI_F_LIST_PAGED 0x2u   /* LIST: pages and continued IFACE nests (EFI_A_LIST_*) */

/* EFI_A_RESULT values */
enum efi_ctl_result {
	EFI_R_CREATED = 1,    /* ATTACH made a new interface */
	EFI_R_UNCHANGED = 2,  /* ATTACH: it already existed exactly as asked */
	EFI_R_REPAIRED = 3,   /* ATTACH: the record existed, the kernel side was re-created */
};

/* EFI_A_CM_EVENT values (the internal EFI_CM_EV_REPLY is turned into
 * ESTABLISHED by libefi once its QP is in RTS). */
enum efi_ctl_cm_event {
	EFI_CM_EV_REQUEST = 1,      /* listener: CM_ID, CM_QPN, CM_PSN, CM_MTU, CM_SGID
	                               (the requester's), CM_DEST, CM_PEER_GID…, CM_PRIVATE */
	EFI_CM_EV_REPLY = 2,        /* active: CM_QPN, CM_PSN, CM_MTU, CM_KEY, CM_PEER_GID…,
	                               CM_PRIVATE */
	EFI_CM_EV_ESTABLISHED = 3,  /* passive: the RTU arrived */
	EFI_CM_EV_REJECTED = 4,     /* active: CM_REASON, CM_PRIVATE */
	EFI_CM_EV_UNREACHABLE = 5,  /* active: no efid answered at the address */
	EFI_CM_EV_TIMEOUT = 6,      /* active: the listener did not answer in time */
	EFI_CM_EV_DISCONNECTED = 7, /* either: the peer disconnected or died */
};

/* EFI_A_CM_REASON values (also on the wire between efids) */
enum efi_ctl_cm_reason {
	EFI_CM_REJ_CONSUMER = 1,    /* the listening application rejected it */
	EFI_CM_REJ_NO_LISTENER = 2, /* nobody listens on that service and address */
	EFI_CM_REJ_BACKLOG = 3,     /* the listener has too many unanswered requests */
	EFI_CM_REJ_INVALID = 4,     /* the request was malformed or named no interface */
	EFI_CM_REJ_EXPIRED = 5,     /* the answer came after the requester gave up */
	EFI_CM_REJ_DETACHED = 6,    /* efid to its application only, on DISCONNECTED:
				     * the local interface was detached */
};

#ifdef __cplusplus
}
#endif
#endif
