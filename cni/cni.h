/* SPDX-License-Identifier: MIT */
/*
 * efi-cni: the CNI plugin (spec 1.0) that puts an EFI interface into a pod.
 * A container runtime runs it with CNI_* in the environment and the network
 * configuration on stdin; it asks efid to ATTACH an interface to the pod's
 * namespace, named by its path (docs/cni.md).
 */
#ifndef EFI_CNI_H
#define EFI_CNI_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ifacespec.h"
#include "jsonr.h"

#define CNI_VERSION "1.0.0"
#define CNI_DEFAULT_DATA_DIR "/var/lib/cni/efi"
#define CNI_MAX_INPUT (1024 * 1024)
#define CNI_CID_MAX 128

/* The spec's well-known error codes; 100 and up are this plugin's. */
enum cni_code {
	CNI_E_VERSION = 1,   /* incompatible CNI version */
	CNI_E_FIELD = 2,     /* unsupported field in the network configuration */
	CNI_E_UNKNOWN = 3,   /* container unknown or does not exist */
	CNI_E_ENV = 4,       /* invalid necessary environment variables */
	CNI_E_IO = 5,        /* I/O failure */
	CNI_E_DECODE = 6,    /* failed to decode content */
	CNI_E_CONFIG = 7,    /* invalid network configuration */
	CNI_E_AGAIN = 11,    /* try again later */
	CNI_E_EFID = 100,    /* efid refused the request (details: its message) */
	CNI_E_CHECK = 101,   /* CHECK: the interface or an address is not as added */
	CNI_E_RANGE = 102,   /* the address range is used up */
};

struct cni_err {
	int code;
	char msg[256];
	char details[640];
};

/* Sets e (the first error wins) and returns -1, for `return cni_fail(...)`. */
int cni_fail(struct cni_err *e, int code, const char *details, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

enum cni_cmd { CMD_ADD, CMD_DEL, CMD_CHECK, CMD_VERSION };

struct cni_env {
	enum cni_cmd cmd;
	const char *container_id;
	const char *netns;  /* may be NULL for DEL */
	const char *ifname;
	const char *args;   /* CNI_ARGS, may be NULL */
	const char *path;   /* CNI_PATH */
};

struct cni_range {
	uint32_t subnet;    /* IPv4, host order */
	uint8_t prefixlen;
	uint32_t start, end; /* inclusive, host order */
};

struct cni_conf {
	char name[128];
	char socket[PATH_MAX]; /* "" → $EFI_SOCKET or the default */
	char data_dir[PATH_MAX];
	char uplink[EFI_IFNAME_MAX + 1];
	char kind[16];
	uint32_t mtu;
	struct efi_addr addrs[EFI_MAX_ADDRS]; /* static: "addresses", runtimeConfig, CNI_ARGS */
	size_t naddrs;
	bool has_range;
	struct cni_range range;
	const struct jv *prev_result; /* CHECK, DEL: points into the parsed tree */
};

/* conf.c: reads the environment for cmd's needs.  Returns 0 or -1 with e. */
int cni_env_read(struct cni_env *env, struct cni_err *e);

/* conf.c: checks the parsed stdin and fills c.  env->args (CNI_ARGS, "IP=")
 * may supply addresses.  Returns 0 or -1 with e. */
int cni_conf_parse(const struct jv *root, const struct cni_env *env, struct cni_conf *c,
		   struct cni_err *e);

/* The instance name efi-cni asks efid for: "efi-" and the container id,
 * shortened with a hash when too long.  name holds EFI_INSTANCE_MAX + 1. */
void cni_instance_name(const char *container_id, char *name, size_t len);

/* state.c: what ADD did, kept in DATA_DIR/NETWORK/ so that DEL and CHECK
 * know it even when the namespace is gone. */
struct cni_record {
	char instance[EFI_INSTANCE_MAX + 1];
	struct efi_addr addrs[EFI_MAX_ADDRS];
	size_t naddrs;
};

struct cni_state;
/* Opens (making it) and locks DATA_DIR/NETWORK; the lock is held until
 * cni_state_close.  Returns NULL and sets e. */
struct cni_state *cni_state_open(const struct cni_conf *c, struct cni_err *e);
void cni_state_close(struct cni_state *s);
/* 0 found, 1 none, -1 error (e). */
int cni_record_get(struct cni_state *s, const struct cni_env *env, struct cni_record *r,
		   struct cni_err *e);
int cni_record_put(struct cni_state *s, const struct cni_env *env, const struct cni_record *r,
		   struct cni_err *e);
void cni_record_drop(struct cni_state *s, const struct cni_env *env);
/* Takes an address of the range for (container, ifname): the one it already
 * holds, else the lowest free one.  Returns 0 or -1 with e. */
int cni_range_take(struct cni_state *s, const struct cni_conf *c, const struct cni_env *env,
		   struct efi_addr *out, struct cni_err *e);
/* Gives back every range address (container, ifname) holds. */
void cni_range_release(struct cni_state *s, const struct cni_env *env);

/* efid.c: the requests.  Each returns 0 or -1 with e. */
int cni_efid_attach(const struct cni_conf *c, const struct cni_env *env, const char *instance,
		    const struct efi_addr *addrs, size_t naddrs, char *got_instance, size_t len,
		    struct cni_err *e);
/* *gone: the interface was not there (already detached). */
int cni_efid_detach(const struct cni_conf *c, const char *instance, const char *ifname,
		    bool *gone, struct cni_err *e);
/* The interface is attached (state and link) with every address of r. */
int cni_efid_check(const struct cni_conf *c, const struct cni_record *r, const char *ifname,
		   struct cni_err *e);

/* netns.c: inside the pod's namespace.  The MAC of ifname as
 * "aa:bb:cc:dd:ee:ff" (mac holds 18), or "" when it has none. */
int cni_ns_mac(const char *netns, const char *ifname, char *mac, struct cni_err *e);
/* ifname exists in the namespace, is up and has every address of r. */
int cni_ns_check(const char *netns, const char *ifname, const struct cni_record *r,
		 struct cni_err *e);

#endif
