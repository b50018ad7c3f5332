/* SPDX-License-Identifier: MIT */
/* efid.conf: embedded defaults, then the file over them (see efid_config.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "efid_config.h"
#include "ifacespec.h"
#include "ini.h"
#include "log.h"
#include "libefi/cc.h"

static void set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

void efid_config_defaults(struct efid_config *c)
{
	memset(c, 0, sizeof(*c));
	c->log_level = -1;
	c->group[0] = '\0';
	snprintf(c->iface_dir, sizeof(c->iface_dir), "%s", SYSCONFDIR "/efi/interfaces.d");
	c->repair = true;
	c->default_uplink[0] = '\0';
	c->default_mtu = 0;
	snprintf(c->default_kind, sizeof(c->default_kind), "veth");
	c->port_base = EFID_PORT_BASE_DEFAULT;
	c->lanes = EFID_LANES_DEFAULT;
	c->cm_port = EFID_CM_PORT_DEFAULT;
	/* A libefi process holds one connection per context and per CM
	 * identifier: room for a busy instance, not for one that would fill
	 * efid's descriptor table (CONTROL_MAX_CLIENTS) on its own. */
	c->max_conns_per_user = 2048;
	c->max_conns_per_instance = 4096;
	/* No request takes more than EFI_CTL_MAX_FDS descriptors. */
	c->max_fds_per_user = 256;
	c->max_fds_per_instance = 1024;
	/* The largest reply is 64 KiB: a client that reads them never gets
	 * near these. */
	c->max_queued_per_conn = 1024 * 1024;
	c->max_queued_per_user = 16 * 1024 * 1024;
	c->max_queued_per_instance = 64 * 1024 * 1024;
}

/* Uplinks=NAME...: space-separated interface names, each once, at most
 * EFID_UPLINKS_MAX; empty turns the feature off. */
static int parse_uplinks(struct efid_config *c, const char *value, char *err, size_t errlen)
{
	char buf[EFID_UPLINKS_MAX * 17 + 1], *save = NULL, *tok;
	uint32_t n = 0;

	if (strlen(value) >= sizeof(buf)) {
		set_err(err, errlen, "Uplinks= is too long: at most %u interface names", EFID_UPLINKS_MAX);
		return -EINVAL;
	}
	snprintf(buf, sizeof(buf), "%s", value);
	for (tok = strtok_r(buf, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		if (!efi_ifname_valid(tok)) {
			set_err(err, errlen, "Uplinks: '%.32s' is not a valid interface name", tok);
			return -EINVAL;
		}
		if (n == EFID_UPLINKS_MAX) {
			set_err(err, errlen, "Uplinks: at most %u interfaces", EFID_UPLINKS_MAX);
			return -EINVAL;
		}
		for (uint32_t i = 0; i < n; i++)
			if (strcmp(c->uplinks[i], tok) == 0) {
				set_err(err, errlen, "Uplinks: '%s' is named twice", tok);
				return -EINVAL;
			}
		snprintf(c->uplinks[n++], sizeof(c->uplinks[0]), "%s", tok);
	}
	c->nuplinks = n;
	return 0;
}

/* Group names as useradd accepts them: [A-Za-z0-9_.-], not starting with '-',
 * with an optional trailing '$'.  Resolving the name is efid's job at start. */
static bool group_name_valid(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n == 0 || n > max || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			  (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-' ||
			  (ch == '$' && i == n - 1);
		if (!ok)
			return false;
	}
	return true;
}

static int parse_mtu(const char *v, uint32_t *out)
{
	uint32_t m = 0;
	if (!*v)
		return -EINVAL;
	for (const char *p = v; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		m = m * 10 + (uint32_t)(*p - '0');
		if (m > EFI_MTU_MAX)
			return -EINVAL;
	}
	if (m != 0 && m < EFI_MTU_MIN)
		return -EINVAL;
	*out = m;
	return 0;
}

static int daemon_key(struct efid_config *c, const char *key, const char *value, char *err,
		      size_t errlen)
{
	if (strcasecmp(key, "LogLevel") == 0) {
		int l = log_level_from_string(value);
		if (l < 0) {
			set_err(err, errlen,
				"LogLevel='%.32s' is invalid: use error, warning, notice, info or debug",
				value);
			return -EINVAL;
		}
		c->log_level = l;
		return 0;
	}
	set_err(err, errlen, "unknown key %.64s= in [Daemon]; known keys: LogLevel", key);
	return -EINVAL;
}

/* A count or a size: digits, then for sizes an optional K/M/G/T suffix
 * (powers of 1024).  Returns false on anything else or an overflow. */
static bool parse_amount(const char *value, bool size, uint64_t max, uint64_t *out)
{
	char *end;
	errno = 0;
	if (!*value || *value < '0' || *value > '9')
		return false;
	unsigned long long v = strtoull(value, &end, 10);
	if (errno)
		return false;
	if (size && *end) {
		static const char units[] = "KMGT";
		const char *u = strchr(units, *end >= 'a' ? *end - 32 : *end);
		if (!u || end[1])
			return false;
		for (const char *k = units; k <= u; k++) {
			if (v > (~0ull >> 10))
				return false;
			v <<= 10;
		}
		end++;
	}
	if (*end || v > max)
		return false;
	*out = v;
	return true;
}

static int control_key(struct efid_config *c, const char *key, const char *value, char *err,
		       size_t errlen)
{
	static const char *const counts[] = { "MaxConnectionsPerUser", "MaxConnectionsPerInstance",
					      "MaxDescriptorsPerUser", "MaxDescriptorsPerInstance" };
	uint32_t *cdst[] = { &c->max_conns_per_user, &c->max_conns_per_instance,
			     &c->max_fds_per_user, &c->max_fds_per_instance };
	static const char *const sizes[] = { "MaxQueuedRepliesPerConnection",
					     "MaxQueuedRepliesPerUser", "MaxQueuedRepliesPerInstance" };
	uint64_t *sdst[] = { &c->max_queued_per_conn, &c->max_queued_per_user,
			     &c->max_queued_per_instance };
	uint64_t v;

	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		if (strcasecmp(key, counts[i]) != 0)
			continue;
		if (!parse_amount(value, false, UINT32_MAX, &v)) {
			set_err(err, errlen, "%s='%.32s' is invalid: use a number, 0 for no limit",
				counts[i], value);
			return -EINVAL;
		}
		*cdst[i] = (uint32_t)v;
		return 0;
	}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		if (strcasecmp(key, sizes[i]) != 0)
			continue;
		/* Below one maximal reply a client could not get any answer. */
		if (!parse_amount(value, true, UINT64_MAX, &v) || (v && v < 128 * 1024)) {
			set_err(err, errlen,
				"%s='%.32s' is invalid: use a size of at least 128K (K, M, G or T are powers of 1024), 0 for no limit",
				sizes[i], value);
			return -EINVAL;
		}
		*sdst[i] = v;
		return 0;
	}
	if (strcasecmp(key, "Group") == 0) {
		/* Empty: only root may mutate. */
		if (*value && !group_name_valid(value, sizeof(c->group) - 1)) {
			set_err(err, errlen, "Group='%.64s' is not a valid group name", value);
			return -EINVAL;
		}
		snprintf(c->group, sizeof(c->group), "%s", value);
		return 0;
	}
	set_err(err, errlen,
		"unknown key %.64s= in [Control]; known keys: Group, MaxConnectionsPerUser, "
		"MaxConnectionsPerInstance, MaxDescriptorsPerUser, MaxDescriptorsPerInstance, "
		"MaxQueuedRepliesPerConnection, MaxQueuedRepliesPerUser, MaxQueuedRepliesPerInstance",
		key);
	return -EINVAL;
}

static int interfaces_key(struct efid_config *c, const char *key, const char *value, char *err,
			  size_t errlen)
{
	if (strcasecmp(key, "Directory") == 0) {
		/* Empty: apply no directory at start. */
		if (*value && value[0] != '/') {
			set_err(err, errlen, "Directory='%.64s' must be an absolute path", value);
			return -EINVAL;
		}
		if (strlen(value) >= sizeof(c->iface_dir)) {
			set_err(err, errlen, "Directory= is too long");
			return -EINVAL;
		}
		snprintf(c->iface_dir, sizeof(c->iface_dir), "%s", value);
		return 0;
	}
	if (strcasecmp(key, "Repair") == 0) {
		int b = ini_parse_bool(value);
		if (b < 0) {
			set_err(err, errlen, "Repair='%.32s' is invalid: use yes or no", value);
			return -EINVAL;
		}
		c->repair = b;
		return 0;
	}
	if (strcasecmp(key, "DefaultUplink") == 0) {
		if (*value && !efi_ifname_valid(value)) {
			set_err(err, errlen, "DefaultUplink='%.64s' is not a valid device name",
				value);
			return -EINVAL;
		}
		snprintf(c->default_uplink, sizeof(c->default_uplink), "%s", value);
		return 0;
	}
	if (strcasecmp(key, "DefaultMTU") == 0) {
		if (parse_mtu(value, &c->default_mtu)) {
			set_err(err, errlen,
				"DefaultMTU='%.32s' is invalid: use %d..%d, or 0 for the kernel's default",
				value, EFI_MTU_MIN, EFI_MTU_MAX);
			return -EINVAL;
		}
		return 0;
	}
	if (strcasecmp(key, "DefaultKind") == 0) {
		if (strcmp(value, "veth") != 0 && strcmp(value, "macvlan") != 0) {
			set_err(err, errlen, "DefaultKind='%.32s' is invalid: use veth or macvlan",
				value);
			return -EINVAL;
		}
		snprintf(c->default_kind, sizeof(c->default_kind), "%s", value);
		return 0;
	}
	set_err(err, errlen,
		"unknown key %.64s= in [Interfaces]; known keys: Directory, Repair, "
		"DefaultUplink, DefaultMTU, DefaultKind",
		key);
	return -EINVAL;
}

static int transport_key(struct efid_config *c, const char *key, const char *value, char *err,
			 size_t errlen)
{
	if (strcasecmp(key, "PortBase") == 0) {
		char *end;
		errno = 0;
		unsigned long v = strtoul(value, &end, 10);
		if (!*value || *end || errno || v < 1024 || v > EFID_PORT_BASE_MAX) {
			set_err(err, errlen,
				"PortBase='%.32s' is invalid: use 1024..%u (4095 ports above it are used)",
				value, EFID_PORT_BASE_MAX);
			return -EINVAL;
		}
		c->port_base = (uint32_t)v;
		return 0;
	}
	if (strcasecmp(key, "Lanes") == 0) {
		char *end;
		errno = 0;
		unsigned long v = strtoul(value, &end, 10);
		if (!*value || *end || errno || v < 1 || v > EFID_LANES_MAX) {
			set_err(err, errlen, "Lanes='%.32s' is invalid: use 1..%u (UDP ports, i.e. paths, per context)",
				value, EFID_LANES_MAX);
			return -EINVAL;
		}
		c->lanes = (uint32_t)v;
		return 0;
	}
	if (strcasecmp(key, "Uplinks") == 0)
		return parse_uplinks(c, value, err, errlen);
	set_err(err, errlen, "unknown key %.64s= in [Transport]; known keys: PortBase, Lanes, Uplinks",
		key);
	return -EINVAL;
}

static int cm_key(struct efid_config *c, const char *key, const char *value, char *err,
		  size_t errlen)
{
	if (strcasecmp(key, "Port") == 0) {
		char *end;
		errno = 0;
		unsigned long v = strtoul(value, &end, 10);
		if (!*value || *end || errno || v < 1 || v > 65535) {
			set_err(err, errlen, "Port='%.32s' is invalid: use 1..65535", value);
			return -EINVAL;
		}
		c->cm_port = (uint32_t)v;
		return 0;
	}
	set_err(err, errlen, "unknown key %.64s= in [ConnectionManager]; known keys: Port", key);
	return -EINVAL;
}

static int limits_key(struct efid_config *c, const char *key, const char *value, char *err,
		      size_t errlen)
{
	static const char *const counts[] = { "MaxQPs", "MaxMRs", "MaxListeners" };
	uint32_t *dst[] = { &c->max_qps, &c->max_mrs, &c->max_listeners };
	uint64_t v;

	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		if (strcasecmp(key, counts[i]) != 0)
			continue;
		if (!parse_amount(value, false, UINT32_MAX, &v)) {
			set_err(err, errlen, "%s='%.32s' is invalid: use a number, 0 for no limit",
				counts[i], value);
			return -EINVAL;
		}
		*dst[i] = (uint32_t)v;
		return 0;
	}
	if (strcasecmp(key, "MaxRegisteredBytes") == 0) {
		if (!parse_amount(value, true, UINT64_MAX, &v)) {
			set_err(err, errlen,
				"MaxRegisteredBytes='%.32s' is invalid: use a number with an optional K, M, G or T, 0 for no limit",
				value);
			return -EINVAL;
		}
		c->max_registered_bytes = v;
		return 0;
	}
	set_err(err, errlen,
		"unknown key %.64s= in [Limits]; known keys: MaxQPs, MaxMRs, MaxRegisteredBytes, MaxListeners",
		key);
	return -EINVAL;
}

/* [CongestionControl]: efid.conf's names for libefi's parameters (cc.h). */
static const struct {
	const char *key;	/* in efid.conf */
	const char *spec;	/* in libefi's spec */
	const char *what;
} cc_keys[] = {
	{ "TargetDelayUs", "target_us", "the delay target, in µs (> 0)" },
	{ "AdditiveIncrease", "ai", "packets added to the window per RTT" },
	{ "Beta", "beta", "the decrease per unit of excess delay (0..1)" },
	{ "MaxDecrease", "max_mdf", "the largest decrease at once (0..1, below 1)" },
	{ "LossDecrease", "loss_mdf", "the decrease on heavy loss (0..1, below 1)" },
	{ "LossThreshold", "loss_thresh", "the share of an RTT's packets lost that counts as congestion (0..1)" },
	{ "MinWindow", "min_cwnd", "packets (> 0; below 1 the sender paces)" },
	{ "MaxWindow", "max_cwnd", "packets" },
	{ "InitialWindow", "init_cwnd", "packets, between MinWindow and MaxWindow" },
	{ "MinRtoUs", "min_rto_us", "the floor of the retransmission timeout, in µs" },
	{ "TailProbeMinUs", "tlp_min_us", "the floor of the tail-loss probe timer, in µs" },
	{ "ReorderMinUs", "reo_min_us", "the floor of the reordering window, in µs" },
	{ "SuspectRtts", "suspect_rtts", "silent RTTs before a path is suspected (> 0)" },
	{ "SuspectMinUs", "suspect_min_us", "the earliest a silent path is suspected, in µs" },
	{ "SuspectMaxUs", "suspect_max_us", "the latest a silent path is suspected, in µs" },
	{ "ProbeIntervalUs", "probe_interval_us", "how often a suspected path is probed, in µs" },
};

static int cc_key(struct efid_config *c, const char *key, const char *value, char *err,
		  size_t errlen)
{
	for (size_t i = 0; i < sizeof(cc_keys) / sizeof(cc_keys[0]); i++) {
		if (strcasecmp(key, cc_keys[i].key) != 0)
			continue;
		char one[160];
		struct efi_cc_params p;
		efi_cc_params_default(&p);
		size_t used = strlen(c->cc_spec);
		int n = snprintf(one, sizeof(one), "%s=%s", cc_keys[i].spec, value);
		if (n < 0 || (size_t)n >= sizeof(one) || efi_cc_param_set(&p, cc_keys[i].spec, value)) {
			set_err(err, errlen, "%s='%.32s' is invalid: %s", cc_keys[i].key, value,
				cc_keys[i].what);
			return -EINVAL;
		}
		if (used + (used > 0) + (size_t)n >= sizeof(c->cc_spec)) {
			set_err(err, errlen, "[CongestionControl] is too long");
			return -EINVAL;
		}
		snprintf(c->cc_spec + used, sizeof(c->cc_spec) - used, "%s%s", used ? "," : "", one);
		return 0;
	}
	set_err(err, errlen,
		"unknown key %.64s= in [CongestionControl]; known keys: TargetDelayUs, "
		"AdditiveIncrease, Beta, MaxDecrease, LossDecrease, LossThreshold, MinWindow, "
		"MaxWindow, InitialWindow, MinRtoUs, TailProbeMinUs, ReorderMinUs, SuspectRtts, "
		"SuspectMinUs, SuspectMaxUs, ProbeIntervalUs",
		key);
	return -EINVAL;
}

/* The keys of [CongestionControl] must also agree with each other
 * (MinWindow <= InitialWindow <= MaxWindow, SuspectMinUs <= SuspectMaxUs). */
static int check_cc(const struct efid_config *c, const char *name, char *err, size_t errlen)
{
	struct efi_cc_params p;
	efi_cc_params_default(&p);
	if (c->cc_spec[0] && efi_cc_params_parse(&p, c->cc_spec)) {
		set_err(err, errlen,
			"%s: [CongestionControl] values contradict each other (%.200s): "
			"MinWindow <= InitialWindow <= MaxWindow and SuspectMinUs <= SuspectMaxUs",
			name, c->cc_spec);
		return -EINVAL;
	}
	return 0;
}

/* Every lane's ports must exist, and the CM port must not be one a wire
 * endpoint can be bound to. */
static int check_ports(const struct efid_config *c, const char *name, char *err, size_t errlen)
{
	if (EFID_PORT_TOP(c) > 65535u) {
		set_err(err, errlen,
			"%s: [Transport] PortBase=%u with Lanes=%u needs ports up to %u: lower PortBase to at most %u or use fewer lanes",
			name, c->port_base, c->lanes, EFID_PORT_TOP(c),
			65535u - (c->lanes - 1) * EFID_LANE_STRIDE - 4095u);
		return -EINVAL;
	}
	for (uint32_t lane = 0; lane < c->lanes; lane++) {
		uint32_t lo = c->port_base + lane * EFID_LANE_STRIDE + 1, hi = lo + 4094u;
		if (c->cm_port >= lo && c->cm_port <= hi) {
			set_err(err, errlen,
				"%s: [ConnectionManager] Port=%u lies among the wire ports %u..%u of lane %u ([Transport] PortBase=%u, Lanes=%u): choose another",
				name, c->cm_port, lo, hi, lane, c->port_base, c->lanes);
			return -EINVAL;
		}
	}
	if (c->nuplinks > c->lanes) {
		set_err(err, errlen,
			"%s: [Transport] Uplinks= names %u interfaces but Lanes=%u: lane L leaves by uplink L mod %u, so %s would carry nothing; raise Lanes or name fewer uplinks",
			name, c->nuplinks, c->lanes, c->nuplinks, c->uplinks[c->nuplinks - 1]);
		return -EINVAL;
	}
	return 0;
}

static int config_cb(void *userdata, const char *section, const char *key, const char *value,
		     unsigned line, char *err, size_t errlen)
{
	struct efid_config *c = userdata;

	if (strcasecmp(section, "Daemon") == 0)
		return daemon_key(c, key, value, err, errlen);
	if (strcasecmp(section, "Control") == 0)
		return control_key(c, key, value, err, errlen);
	if (strcasecmp(section, "Interfaces") == 0)
		return interfaces_key(c, key, value, err, errlen);
	if (strcasecmp(section, "Transport") == 0)
		return transport_key(c, key, value, err, errlen);
	if (strcasecmp(section, "ConnectionManager") == 0)
		return cm_key(c, key, value, err, errlen);
	if (strcasecmp(section, "Limits") == 0)
		return limits_key(c, key, value, err, errlen);
	if (strcasecmp(section, "CongestionControl") == 0)
		return cc_key(c, key, value, err, errlen);
	if (section[0])
		set_err(err, errlen,
			"unknown section [%.64s]; known sections: Daemon, Control, Interfaces, Transport, ConnectionManager, Limits, CongestionControl",
			section);
	else
		set_err(err, errlen, "%.64s= outside a section; put it under [Daemon], "
				     "[Control] or [Interfaces]",
			key);
	return -EINVAL;
}

int efid_config_parse(struct efid_config *c, const char *name, const char *text, size_t len,
		      char *err, size_t errlen)
{
	/* Parse into a copy, so that a bad file leaves *c as it was. */
	struct efid_config tmp = *c;
	int r = ini_parse(name, text, len, config_cb, &tmp, err, errlen);
	if (r == 0)
		r = check_ports(&tmp, name, err, errlen);
	if (r == 0)
		r = check_cc(&tmp, name, err, errlen);
	if (r == 0)
		*c = tmp;
	return r;
}

int efid_config_load(struct efid_config *c, const char *path, bool missing_ok, char *err,
		     size_t errlen)
{
	struct efid_config tmp = *c;
	int r = ini_parse_file(path, config_cb, &tmp, err, errlen);
	if (r == -ENOENT && missing_ok) {
		if (err && errlen)
			err[0] = '\0';
		return 0;
	}
	if (r == 0)
		r = check_ports(&tmp, path, err, errlen);
	if (r == 0)
		r = check_cc(&tmp, path, err, errlen);
	if (r == 0)
		*c = tmp;
	return r;
}
