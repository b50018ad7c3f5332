/* SPDX-License-Identifier: MIT */
/* efi-cni's inputs: the CNI_* environment and the network configuration. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cni.h"

int cni_fail(struct cni_err *e, int code, const char *details, const char *fmt, ...)
{
	va_list ap;

	if (e->code)
		return -1;
	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	snprintf(e->details, sizeof(e->details), "%s", details ? details : "");
	return -1;
}

/* The spec's container id: letters, digits, '_', '.', '-', starting with a
 * letter or digit.  Bounded, since it names files. */
static bool container_id_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > CNI_CID_MAX ||
	    !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') ||
	      (s[0] >= '0' && s[0] <= '9')))
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

static const char *env_get(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

int cni_env_read(struct cni_env *env, struct cni_err *e)
{
	const char *cmd = env_get("CNI_COMMAND");

	memset(env, 0, sizeof(*env));
	if (!cmd)
		return cni_fail(e, CNI_E_ENV, NULL, "CNI_COMMAND is not set");
	if (strcmp(cmd, "ADD") == 0)
		env->cmd = CMD_ADD;
	else if (strcmp(cmd, "DEL") == 0)
		env->cmd = CMD_DEL;
	else if (strcmp(cmd, "CHECK") == 0)
		env->cmd = CMD_CHECK;
	else if (strcmp(cmd, "VERSION") == 0)
		env->cmd = CMD_VERSION;
	else
		return cni_fail(e, CNI_E_ENV, cmd,
				"CNI_COMMAND must be ADD, DEL, CHECK or VERSION");
	if (env->cmd == CMD_VERSION)
		return 0;

	env->container_id = env_get("CNI_CONTAINERID");
	env->netns = env_get("CNI_NETNS");
	env->ifname = env_get("CNI_IFNAME");
	env->args = env_get("CNI_ARGS");
	env->path = env_get("CNI_PATH");
	/* What the spec makes the runtime pass for each command: DEL may come
	 * without a namespace (it may be gone already). */
	if (!env->container_id)
		return cni_fail(e, CNI_E_ENV, NULL, "CNI_CONTAINERID is not set");
	if (!container_id_valid(env->container_id))
		return cni_fail(e, CNI_E_ENV, env->container_id,
				"CNI_CONTAINERID must be 1-%d letters, digits, '_', '.' or '-', "
				"starting with a letter or digit", CNI_CID_MAX);
	if (!env->ifname)
		return cni_fail(e, CNI_E_ENV, NULL, "CNI_IFNAME is not set");
	if (!efi_ifname_valid(env->ifname))
		return cni_fail(e, CNI_E_ENV, env->ifname,
				"CNI_IFNAME is not a valid interface name (1-15 characters, no "
				"'/', ':' or white space)");
	if (!env->path)
		return cni_fail(e, CNI_E_ENV, NULL, "CNI_PATH is not set");
	if (env->cmd != CMD_DEL && !env->netns)
		return cni_fail(e, CNI_E_ENV, NULL, "CNI_NETNS is not set");
	if (env->netns && env->netns[0] != '/')
		return cni_fail(e, CNI_E_ENV, env->netns, "CNI_NETNS must be an absolute path");
	return 0;
}

void cni_instance_name(const char *cid, char *name, size_t len)
{
	size_t n = strlen(cid);

	if (n <= EFI_INSTANCE_MAX - 4) {
		snprintf(name, len, "efi-%s", cid);
		return;
	}
	/* FNV-1a over the whole id keeps ids that share a long prefix apart. */
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)cid[i]) * 16777619u;
	snprintf(name, len, "efi-%.50s-%08x", cid, h);
}

static bool network_name_valid(const char *s)
{
	return container_id_valid(s) && strlen(s) < 128;
}

static int add_addr(struct cni_conf *c, const char *text, const char *where, struct cni_err *e)
{
	char why[128] = "";

	if (c->naddrs == EFI_MAX_ADDRS)
		return cni_fail(e, CNI_E_CONFIG, where, "more than %d addresses", EFI_MAX_ADDRS);
	if (efi_addr_parse(text, &c->addrs[c->naddrs], why, sizeof(why)) < 0)
		return cni_fail(e, CNI_E_CONFIG, why, "invalid address '%s' in %s", text, where);
	c->naddrs++;
	return 0;
}

/* A JSON array of "ADDR/PREFIX" strings. */
static int add_addr_list(struct cni_conf *c, const struct jv *list, const char *where,
			 struct cni_err *e)
{
	if (list->type != JV_ARRAY)
		return cni_fail(e, CNI_E_CONFIG, NULL, "%s must be an array of strings", where);
	for (const struct jv *a = list->child; a; a = a->next) {
		if (!jv_string(a))
			return cni_fail(e, CNI_E_CONFIG, NULL, "%s must be an array of strings",
					where);
		if (add_addr(c, a->str, where, e) < 0)
			return -1;
	}
	return 0;
}

/* CNI_ARGS is "K=V;K=V"; IP=ADDR/PREFIX[,ADDR/PREFIX] gives addresses (the
 * convention of the reference static IPAM).  Other keys are not ours. */
static int args_addrs(struct cni_conf *c, const char *args, struct cni_err *e)
{
	char buf[1024], *save = NULL;

	if (strlen(args) >= sizeof(buf))
		return cni_fail(e, CNI_E_ENV, NULL, "CNI_ARGS is longer than %zu bytes",
				sizeof(buf) - 1);
	snprintf(buf, sizeof(buf), "%s", args);
	for (char *kv = strtok_r(buf, ";", &save); kv; kv = strtok_r(NULL, ";", &save)) {
		char *eq = strchr(kv, '='), *save2 = NULL;

		if (!eq)
			return cni_fail(e, CNI_E_ENV, kv, "CNI_ARGS must be KEY=VALUE pairs "
					"separated by ';'");
		*eq = '\0';
		if (strcmp(kv, "IP") != 0)
			continue;
		for (char *a = strtok_r(eq + 1, ",", &save2); a; a = strtok_r(NULL, ",", &save2))
			if (add_addr(c, a, "CNI_ARGS IP=", e) < 0)
				return -1;
	}
	return 0;
}

static int parse_v4(const char *s, uint32_t *out)
{
	struct in_addr a;

	if (!s || inet_pton(AF_INET, s, &a) != 1)
		return -1;
	*out = ntohl(a.s_addr);
	return 0;
}

static int parse_range(struct cni_conf *c, const struct jv *r, struct cni_err *e)
{
	struct cni_range *g = &c->range;
	const char *s;

	if (r->type != JV_OBJECT)
		return cni_fail(e, CNI_E_CONFIG, NULL, "\"range\" must be an object");
	s = jv_string(jv_get(r, "subnet"));
	if (!s)
		return cni_fail(e, CNI_E_CONFIG, NULL, "\"range\" needs \"subnet\", e.g. "
				"\"10.1.0.0/24\"");
	/* efi_addr_parse refuses a network address as an interface's own, so
	 * read the prefix by hand. */
	char net[64];
	const char *slash = strchr(s, '/');
	char *end;
	if (!slash || (size_t)(slash - s) >= sizeof(net))
		return cni_fail(e, CNI_E_CONFIG, s, "\"range\".\"subnet\" must be ADDR/PREFIX");
	memcpy(net, s, (size_t)(slash - s));
	net[slash - s] = '\0';
	unsigned long plen = strtoul(slash + 1, &end, 10);
	if (parse_v4(net, &g->subnet) < 0 || *end || slash[1] < '0' || slash[1] > '9' ||
	    plen < 8 || plen > 30)
		return cni_fail(e, CNI_E_CONFIG, s, "\"range\".\"subnet\" must be an IPv4 "
				"ADDR/PREFIX with a prefix of 8 to 30 (use \"addresses\" for IPv6)");
	g->prefixlen = (uint8_t)plen;
	uint32_t mask = ~0u << (32 - plen);
	g->subnet &= mask;
	/* By default the range is the subnet without its network, first
	 * (kept for a gateway, as host-local does) and broadcast addresses. */
	g->start = g->subnet + 2;
	g->end = (g->subnet | ~mask) - 1;
	if (jv_get(r, "rangeStart") && parse_v4(jv_string(jv_get(r, "rangeStart")), &g->start))
		return cni_fail(e, CNI_E_CONFIG, NULL, "\"range\".\"rangeStart\" must be an IPv4 address");
	if (jv_get(r, "rangeEnd") && parse_v4(jv_string(jv_get(r, "rangeEnd")), &g->end))
		return cni_fail(e, CNI_E_CONFIG, NULL, "\"range\".\"rangeEnd\" must be an IPv4 address");
	if ((g->start & mask) != g->subnet || (g->end & mask) != g->subnet || g->start > g->end ||
	    g->start == g->subnet || g->end == (g->subnet | ~mask))
		return cni_fail(e, CNI_E_CONFIG, NULL, "\"range\": rangeStart..rangeEnd must lie "
				"inside the subnet, without its network and broadcast addresses");
	c->has_range = true;
	return 0;
}

static int opt_string(const struct jv *root, const char *key, char *out, size_t len,
		      struct cni_err *e)
{
	const struct jv *v = jv_get(root, key);

	if (!v)
		return 0;
	if (!jv_string(v))
		return cni_fail(e, CNI_E_CONFIG, NULL, "\"%s\" must be a string, not %s", key,
				jv_type_name(v));
	if (strlen(v->str) >= len)
		return cni_fail(e, CNI_E_CONFIG, NULL, "\"%s\" is too long", key);
	snprintf(out, len, "%s", v->str);
	return 0;
}

int cni_conf_parse(const struct jv *root, const struct cni_env *env, struct cni_conf *c,
		   struct cni_err *e)
{
	const struct jv *v;
	const char *ver;

	memset(c, 0, sizeof(*c));
	snprintf(c->data_dir, sizeof(c->data_dir), "%s", CNI_DEFAULT_DATA_DIR);
	if (!root || root->type != JV_OBJECT)
		return cni_fail(e, CNI_E_DECODE, NULL, "the network configuration must be a JSON "
				"object");
	ver = jv_string(jv_get(root, "cniVersion"));
	if (!ver)
		return cni_fail(e, CNI_E_CONFIG, NULL, "\"cniVersion\" is missing");
	if (strcmp(ver, CNI_VERSION) != 0)
		return cni_fail(e, CNI_E_VERSION, ver, "efi-cni supports CNI version "
				CNI_VERSION " only");
	if (opt_string(root, "name", c->name, sizeof(c->name), e) < 0)
		return -1;
	if (!network_name_valid(c->name))
		return cni_fail(e, CNI_E_CONFIG, c->name, "\"name\" is missing or invalid: "
				"letters, digits, '_', '.', '-', starting with a letter or digit");
	if (!jv_string(jv_get(root, "type")))
		return cni_fail(e, CNI_E_CONFIG, NULL, "\"type\" is missing");
	if (opt_string(root, "efidSocket", c->socket, sizeof(c->socket), e) < 0 ||
	    opt_string(root, "dataDir", c->data_dir, sizeof(c->data_dir), e) < 0 ||
	    opt_string(root, "uplink", c->uplink, sizeof(c->uplink), e) < 0 ||
	    opt_string(root, "kind", c->kind, sizeof(c->kind), e) < 0)
		return -1;
	if (c->data_dir[0] != '/')
		return cni_fail(e, CNI_E_CONFIG, c->data_dir, "\"dataDir\" must be an absolute path");
	if (c->uplink[0] && !efi_ifname_valid(c->uplink))
		return cni_fail(e, CNI_E_CONFIG, c->uplink, "\"uplink\" is not an interface name");
	if (c->kind[0] && strcmp(c->kind, "veth") != 0 && strcmp(c->kind, "macvlan") != 0)
		return cni_fail(e, CNI_E_CONFIG, c->kind, "\"kind\" must be \"veth\" or \"macvlan\"");
	if ((v = jv_get(root, "mtu"))) {
		int64_t mtu;
		if (!jv_int(v, EFI_MTU_MIN, EFI_MTU_MAX, &mtu))
			return cni_fail(e, CNI_E_CONFIG, NULL, "\"mtu\" must be an integer from %d "
					"to %d", EFI_MTU_MIN, EFI_MTU_MAX);
		c->mtu = (uint32_t)mtu;
	}
	if ((v = jv_get(root, "ipam")))
		return cni_fail(e, CNI_E_FIELD, NULL, "\"ipam\" is not supported: efi-cni "
				"takes \"addresses\" or \"range\" itself");

	/* Addresses, most specific first: the runtime's per-pod "ips"
	 * capability, CNI_ARGS IP=, then the configuration's. */
	const struct jv *rc = jv_get(root, "runtimeConfig");
	if (rc && rc->type != JV_OBJECT)
		return cni_fail(e, CNI_E_CONFIG, NULL, "\"runtimeConfig\" must be an object");
	if ((v = jv_get(rc, "ips")) && add_addr_list(c, v, "runtimeConfig.ips", e) < 0)
		return -1;
	if (!c->naddrs && env->args && args_addrs(c, env->args, e) < 0)
		return -1;
	if (!c->naddrs && (v = jv_get(root, "addresses")) &&
	    add_addr_list(c, v, "\"addresses\"", e) < 0)
		return -1;
	if ((v = jv_get(root, "range")) && parse_range(c, v, e) < 0)
		return -1;
	if (!c->naddrs && !c->has_range && env->cmd == CMD_ADD)
		return cni_fail(e, CNI_E_CONFIG, NULL, "no address: give \"addresses\", a "
				"\"range\", runtimeConfig \"ips\" or CNI_ARGS IP=");
	for (size_t i = 0; i < c->naddrs; i++)
		for (size_t j = 0; j < i; j++)
			if (efi_addr_same_ip(&c->addrs[i], &c->addrs[j]))
				return cni_fail(e, CNI_E_CONFIG, NULL, "an address is given twice");

	c->prev_result = jv_get(root, "prevResult");
	if (c->prev_result && c->prev_result->type != JV_OBJECT)
		return cni_fail(e, CNI_E_CONFIG, NULL, "\"prevResult\" must be an object");
	return 0;
}
