/* SPDX-License-Identifier: MIT */
/*
 * efid.conf: the daemon's settings, with embedded defaults so that a missing
 * file is fine (an unreadable or malformed one is not).
 *
 *   [Daemon]
 *   LogLevel=info
 *   [Control]
 *   Group=efi              # members may attach/detach (root always may)
 *   MaxConnectionsPerUser=2048      # per-client limits (control_limits.h);
 *   MaxConnectionsPerInstance=4096  # 0 = no limit; host root is exempt
 *   MaxDescriptorsPerUser=256
 *   MaxDescriptorsPerInstance=1024
 *   MaxQueuedRepliesPerConnection=1M
 *   MaxQueuedRepliesPerUser=16M
 *   MaxQueuedRepliesPerInstance=64M
 *   [Interfaces]
 *   Directory=/etc/efi/interfaces.d   # applied at start, like `efictl apply`
 *   Repair=yes             # re-create interfaces found missing
 *   DefaultUplink=         # bridge used when attach names none
 *   DefaultMTU=0           # 0: the kernel's default
 *   DefaultKind=veth
 *   [Transport]
 *   PortBase=20000         # fabric-wide: every host must use the same value
 *   Lanes=4                # fabric-wide: paths (UDP source ports) per context
 *   [ConnectionManager]
 *   Port=19999             # fabric-wide UDP port efids negotiate connections on
 *   [Limits]               # per instance, summed over its processes; 0 = no limit
 *   MaxQPs=0
 *   MaxMRs=0
 *   MaxRegisteredBytes=0   # a number with an optional K, M, G or T (powers of 1024)
 *   MaxListeners=0
 */
#ifndef EFID_CONFIG_H
#define EFID_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EFID_DEFAULT_CONFIG SYSCONFDIR "/efi/efid.conf"

#define EFID_UPLINKS_MAX 8u   /* one per lane at most */

struct efid_config {
	int log_level;               /* LOG_* ; -1 when not set in the file */
	char group[64];              /* "" = root only */
	/* [Control] limits per client: a user is one uid of one instance (or
	 * of the host), an instance all of its users; 0 = no limit. */
	uint32_t max_conns_per_user, max_conns_per_instance;
	uint32_t max_fds_per_user, max_fds_per_instance;
	uint64_t max_queued_per_conn, max_queued_per_user, max_queued_per_instance;
	char iface_dir[4096];        /* "" = none */
	bool repair;
	char default_uplink[16];
	uint32_t default_mtu;
	char default_kind[16];
	uint32_t port_base;          /* [Transport] PortBase: UDP port = PortBase + lane × 4096 + (QPN >> 12) */
	uint32_t lanes;              /* [Transport] Lanes: UDP sockets (paths) per context */
	/* [Transport] Uplinks: lane L leaves by uplinks[L mod nuplinks] (policy
	 * routing, efid/uplinks.c) and the path table publishes their state;
	 * nuplinks 0 = off */
	char uplinks[EFID_UPLINKS_MAX][16];
	uint32_t nuplinks;
	uint32_t cm_port;            /* [ConnectionManager] Port: efid ⇄ efid, in each instance */
	/* [Limits], per instance; 0 = unlimited */
	uint32_t max_qps, max_mrs, max_listeners;
	uint64_t max_registered_bytes;
	/* [CongestionControl] as libefi's spec "key=value,..." (libefi/cc.h),
	 * handed to every context at OPEN_DEVICE; "" = libefi's defaults. */
	char cc_spec[512];
};

#define EFID_CM_PORT_DEFAULT 19999u

/* PortBase must leave room for Lanes × 4096 ports above it (slots 1..4095
 * of each lane). */
#define EFID_PORT_BASE_DEFAULT 20000u
#define EFID_PORT_BASE_MAX (65535u - 4095u)
#define EFID_LANES_DEFAULT 4u
#define EFID_LANES_MAX 8u     /* libefi's EFI_MAX_PATHS */
#define EFID_LANE_STRIDE 4096u
/* The highest wire port of a configuration. */
#define EFID_PORT_TOP(c) ((c)->port_base + ((c)->lanes - 1) * EFID_LANE_STRIDE + 4095u)

/* Fills the embedded defaults. */
void efid_config_defaults(struct efid_config *c);

/*
 * Loads path over the defaults already in *c.  A missing file is not an error
 * when missing_ok (returns 0, *c unchanged).  Returns 0, or -EINVAL with
 * "PATH:LINE: what is wrong" in err for a malformed file (unknown sections
 * or keys are errors too: a typo must not be silently ignored), or -errno
 * when it cannot be read.
 */
int efid_config_load(struct efid_config *c, const char *path, bool missing_ok, char *err,
		     size_t errlen);
/* The same from memory, for tests and the fuzzer. */
int efid_config_parse(struct efid_config *c, const char *name, const char *text, size_t len,
		      char *err, size_t errlen);

#endif
