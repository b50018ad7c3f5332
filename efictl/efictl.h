/* SPDX-License-Identifier: MIT */
/*
 * efictl: the operator CLI.  efictl.c parses the global options and
 * dispatches to one function per subcommand (attach.c, detach.c, ...);
 * ipc.c talks to efid, model.c turns replies into structs and prints them,
 * json.c writes --json output.
 */
#ifndef EFICTL_EFICTL_H
#define EFICTL_EFICTL_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ctlclient.h"
#include "countershm.h"
#include "gid.h"
#include "json.h"

/* Exit codes: part of the interface scripts rely on (efictl --help and
 * docs/efictl.md list them). */
enum efictl_exit {
	EXIT_OK = 0,
	EXIT_FAIL = 1,        /* efid error, store busy/full, protocol error */
	EXIT_USAGE = 2,       /* usage error, invalid argument or file (EINVAL) */
	EXIT_NOT_FOUND = 3,   /* instance, interface or uplink missing (ENOENT) */
	EXIT_CONFLICT = 4,    /* name or address taken (EEXIST) */
	EXIT_PERMISSION = 5,  /* EPERM/EACCES */
	EXIT_UNREACHABLE = 6, /* efid not running, or did not answer in time */
};

struct efictl {
	const char *socket_path;   /* --socket, else ctl_default_socket_path() */
	bool json;
	int timeout_ms;            /* -1: wait forever */
	struct ctl_client *client; /* connected lazily by ipc.c */
	int stop_exit;             /* see efictl_getopt */
};

/* ---- global options, shared by every subcommand's getopt table -------- */

enum { OPT_SOCKET = 0x100, OPT_JSON, OPT_TIMEOUT, OPT_HELP };
#define EFICTL_GLOBAL_OPTIONS                                      \
	{ "socket", required_argument, NULL, OPT_SOCKET },         \
	{ "json", no_argument, NULL, OPT_JSON },                   \
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },       \
	{ "help", no_argument, NULL, OPT_HELP }

/*
 * Runs getopt_long over a subcommand's arguments (argv[0] is the command
 * name), handling the global options and reporting unknown options and
 * missing arguments.  Returns the next subcommand option character, -1 at
 * the end of the options (optind then indexes the first operand), or
 * EFICTL_OPT_STOP when the command must end now with ctx->stop_exit (a usage
 * error was reported, or --help printed).
 */
#define EFICTL_OPT_STOP (-2)
int efictl_getopt(struct efictl *ctx, int argc, char **argv, const char *shortopts,
		  const struct option *longopts);

/* ---- errors ------------------------------------------------------------ */

/* Prints "efictl: MESSAGE" to stderr and, with --json, the error document
 * on stdout.  code is the JSON code ("usage", "not-found", ...), err the
 * errno (positive).  Returns exit. */
int efictl_report(struct efictl *ctx, int exit, const char *code, int err, const char *fmt,
		  ...) __attribute__((format(printf, 5, 6)));
/* A usage error for command cmd: message plus "see efictl CMD --help". */
int efictl_usage_error(struct efictl *ctx, const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Maps a positive errno to the exit code and JSON code efictl uses. */
int efictl_exit_for_errno(int err);
const char *efictl_code_for_errno(int err);
/* Prints a subcommand's usage text (from the dispatch table). */
void efictl_print_command_usage(FILE *f, const char *cmd);

/* ---- talking to efid (ipc.c) ------------------------------------------- */

/* Sends req and waits for the reply, without printing.  Returns 0 (rep
 * filled; rep->status may still be an error) or a negative errno from the
 * transport (connect, timeout, malformed reply). */
int ipc_request(struct efictl *ctx, struct ctl_buf *req, struct ctl_reply *rep);
/* Like ipc_request, but reports every failure (transport or efid's status)
 * and returns its exit code; 0 when efid said yes.  what names the request
 * in messages ("attach vm1"). */
int ipc_call(struct efictl *ctx, struct ctl_buf *req, struct ctl_reply *rep, const char *what);
/* Reports a transport error from ipc_request; returns the exit code. */
int ipc_report_transport(struct efictl *ctx, int err);
/* Reports a failed reply (status < 0); returns the exit code. */
int ipc_report_status(struct efictl *ctx, const struct ctl_reply *rep, const char *what);
void ipc_close(struct efictl *ctx);

/* ---- replies as structs (model.c) ------------------------------------- */

struct ec_gid {
	uint32_t index;
	union efi_gid gid;
};

/* One path to a peer, summed over the context's QPs to it
 * (libefi/peer_table.h); values in enum efi_cshm_path_value order. */
struct ec_path {
	uint32_t index;
	bool suspect;
	uint64_t values[EFI_CSHM_PATH_VALUES];
};

/* A remote peer of a context and the health of each path to it. */
struct ec_peer {
	union efi_gid addr;
	uint32_t qps;
	struct ec_path *paths;
	size_t npaths;
};

/* A libefi context on the interface: its process and transport counters
 * (common/countershm.h order), and its peers (path_view.c; has_peers is
 * false for a libefi that publishes no peer table). */
/* One QP of a context and its own counters (qp_view.c). */
struct ec_qp {
	uint32_t qpn, state; /* state: libefi's enum efi_qp_state */
	bool has_peer;
	union efi_gid peer;
	uint64_t v[EFI_CSHM_QP_VALUES]; /* enum efi_cshm_qp_value order */
	/* the stall detector, from a version 4 page; false: an older libefi */
	bool has_work;
	uint32_t outstanding, stalled_ms, work_flags; /* work_flags: EFI_CSHM_QPW_* */
};

struct ec_context {
	uint32_t pid;
	uint64_t counters[EFI_CSHM_COUNT];
	bool has_peers;
	uint32_t peers_omitted;
	struct ec_peer *peers;
	size_t npeers;
	/* from a version 3 counters page (qp_view.c); false: an older libefi */
	bool has_drops, has_qps;
	uint64_t drop_reasons[EFI_CSHM_DROP_REASONS];
	uint32_t qps_omitted;
	bool has_stalled; /* from a version 4 page */
	uint32_t stalled_qps;
	struct ec_qp *qps;
	size_t nqps;
};

/* A connection-manager listener on the interface. */
struct ec_cm_listener {
	uint32_t service, pid, backlog, pending;
};

/* A connection-manager connection; state points into the reply. */
struct ec_cm_conn {
	uint32_t qpn, peer_qpn, pid;
	bool has_pid, active;
	union efi_gid peer_gid;
	const char *state; /* "connecting" | "established" | "closing" */
};

/* One interface.  Strings point into the reply's buffer; NULL when absent. */
struct ec_iface {
	const char *instance, *name, *kind, *state, *link, *uplink, *host_ifname;
	uint32_t mtu, ifindex;
	bool has_mtu, has_ifindex;
	const char **addrs;
	size_t naddrs;
	struct ec_gid *gids;
	size_t ngids;
	struct ec_context *contexts; /* open libefi contexts and their counters */
	size_t ncontexts;
	uint32_t leases, qps;        /* contexts holding an endpoint, QPs they hold */
	bool has_leases;
	struct ec_cm_listener *listeners;
	size_t nlisteners;
	struct ec_cm_conn *conns;
	size_t nconns;
};

struct ec_instance {
	const char *name;
	const char *netns; /* "present" | "missing" | NULL when not listed */
};

struct ec_stray {
	const char *host_ifname, *instance, *ifname;
};

/* [Transport] Uplinks of efid: which lanes leave by it, its state. */
struct ec_uplink {
	const char *name, *link;
	uint32_t ifindex, lanes, changes; /* lanes: bit L for lane L */
};

struct ec_listing {
	const char *host_id, *server_version;
	struct ec_uplink *uplinks;
	size_t nuplinks;
	struct ec_instance *instances;
	size_t ninstances;
	struct ec_iface *ifaces;
	size_t nifaces;
	struct ec_stray *strays;
	size_t nstrays;
};

/* Parses one EFI_A_IFACE nest.  Returns 0 or -EBADMSG / -ENOMEM. */
/* Appends one zeroed element of size sz to the array *arr_ptr of *n;
 * returns it, or NULL (nothing changed) without memory. */
void *ec_grow_one(void *arr_ptr, size_t *n, size_t sz);
int ec_iface_parse(const struct ctl_attr *nest, struct ec_iface *out);
void ec_iface_free(struct ec_iface *i);
/* Parses a LIST reply.  Instances named only by interfaces are added, so
 * every interface has its instance.  Returns 0 or -EBADMSG / -ENOMEM. */
int ec_listing_parse(const struct ctl_reply *rep, struct ec_listing *out);
void ec_listing_free(struct ec_listing *l);

/* cm_view.c: an IFACE nest's CM_LISTENER / CM_CONNECTION attribute into
 * out; 1 when a was one of them, 0 when not, -EBADMSG / -ENOMEM. */
int ec_cm_parse_attr(const struct ctl_attr *a, struct ec_iface *out);
void ec_cm_free(struct ec_iface *i);
/* The "listeners" and "connections" keys of an interface object. */
void ec_cm_json(struct json *j, const struct ec_iface *i);
/* The human lines, indented by in2. */
void ec_cm_print(FILE *f, const struct ec_iface *i, int in2);

/* path_view.c: a CONTEXT nest's PEER / PEERS_OMITTED attribute into x;
 * 1 when a was one of them, 0 when not, -EBADMSG / -ENOMEM. */
int ec_peer_parse_attr(const struct ctl_attr *a, struct ec_context *x);
void ec_peers_free(struct ec_context *x);
/* The "peers" and "peers_omitted" keys of a context object. */
void ec_peers_json(struct json *j, const struct ec_context *x);
/* The human lines of a context's peers, indented by indent. */
void ec_peers_print(FILE *f, const struct ec_context *x, int indent);

/* qp_view.c: a CONTEXT nest's DROP_REASONS / QP / QPS_OMITTED attribute
 * into x; 1 when a was one of them, 0 when not, -EBADMSG / -ENOMEM. */
int ec_qp_parse_attr(const struct ctl_attr *a, struct ec_context *x);
void ec_qps_free(struct ec_context *x);
/* A drop reason's name (libefi's efi_drop_reason_str), NULL past the known. */
const char *ec_drop_reason_name(unsigned i);
/* "reset" … "err", "unknown". */
const char *ec_qp_state_name(uint32_t state);
/* The stall detector (qp_view.c): whether a QP counts as stalled; for
 * `efictl status`, only the stalled QPs of a context and their count, in
 * JSON ("stalled_qps", "stalled") and for people. */
bool ec_qp_stalled(const struct ec_qp *q);
void ec_stalls_json(struct json *j, const struct ec_context *x);
void ec_stalls_print(FILE *f, const struct ec_context *x, int indent);
/* The "drops_by_reason", "qps_omitted" and "qps" keys of a context object. */
void ec_qps_json(struct json *j, const struct ec_context *x);
/* The human lines of a context's drops and QPs, indented by indent. */
void ec_qps_print(FILE *f, const struct ec_context *x, int indent);

/* The interface object of the JSON schema. */
void ec_iface_json(struct json *j, const struct ec_iface *i);
/* The status/list document body: host_id, efid_version, instances, strays. */
void ec_listing_json(struct json *j, const struct ec_listing *l);
/* The whole status/list document, as one JSON object, to f.  Returns what
 * json_finish returns (0, or an error writing f). */
int ec_listing_print_json(FILE *f, const struct ec_listing *l);
/* The detailed human view of one interface, indented by indent spaces. */
void ec_iface_print(FILE *f, const struct ec_iface *i, int indent);

/* ---- subcommands ------------------------------------------------------- */

int cmd_attach(struct efictl *ctx, int argc, char **argv);
int cmd_detach(struct efictl *ctx, int argc, char **argv);
int cmd_list(struct efictl *ctx, int argc, char **argv);
int cmd_status(struct efictl *ctx, int argc, char **argv);
int cmd_apply(struct efictl *ctx, int argc, char **argv);
int cmd_version(struct efictl *ctx, int argc, char **argv);
int cmd_stats(struct efictl *ctx, int argc, char **argv); /* stats.c */
int cmd_help(struct efictl *ctx, int argc, char **argv);

struct efi_iface_spec;
/* Sends ATTACH for spec.  Returns 0 when efid answered: rep->status then
 * says whether it attached, and on success *result and *iface (pointing into
 * rep) are filled.  Otherwise a negative errno from the transport, or
 * -EBADMSG for a malformed reply (rep is then freed). */
int attach_request(struct efictl *ctx, const struct efi_iface_spec *spec, struct ctl_reply *rep,
		   enum efi_ctl_result *result, struct ec_iface *iface);
/* "created" | "unchanged" | "repaired" */
const char *attach_result_name(enum efi_ctl_result r);

/* Sends LIST with optional filters and parses the reply.  what names the
 * command in messages.  Returns 0 or an exit code after reporting. */
int efictl_fetch_listing(struct efictl *ctx, const char *what, const char *instance,
			 const char *ifname, struct ctl_reply *rep, struct ec_listing *out);

#endif
