/* SPDX-License-Identifier: MIT */
/*
 * efi-cni: ADD, DEL, CHECK and VERSION as the CNI 1.0 specification has a
 * container runtime call them.  Results and errors go to stdout as the
 * spec's JSON; nothing else is printed there.  See docs/cni.md.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cni.h"
#include "json.h"

static int print_error(const struct cni_err *e)
{
	struct json j;

	json_init(&j, stdout);
	json_obj_begin(&j);
	json_member_str(&j, "cniVersion", CNI_VERSION);
	json_member_u64(&j, "code", (uint64_t)e->code);
	json_member_str(&j, "msg", e->msg);
	if (e->details[0])
		json_member_str(&j, "details", e->details);
	json_obj_end(&j);
	json_finish(&j);
	return EXIT_FAILURE;
}

static int cmd_version(void)
{
	struct json j;

	json_init(&j, stdout);
	json_obj_begin(&j);
	json_member_str(&j, "cniVersion", CNI_VERSION);
	json_key(&j, "supportedVersions");
	json_arr_begin(&j);
	json_str(&j, CNI_VERSION);
	json_arr_end(&j);
	json_obj_end(&j);
	return json_finish(&j) ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* Reads all of stdin (at most CNI_MAX_INPUT bytes) and parses it. */
static struct jv *read_config(struct cni_err *e)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap), err[200];
	struct jv *root;

	if (!buf) {
		cni_fail(e, CNI_E_IO, NULL, "out of memory");
		return NULL;
	}
	for (;;) {
		if (len == cap) {
			char *p = cap < CNI_MAX_INPUT ? realloc(buf, cap * 2) : NULL;
			if (!p) {
				free(buf);
				cni_fail(e, CNI_E_DECODE, NULL, "the network configuration is larger "
					 "than %d bytes", CNI_MAX_INPUT);
				return NULL;
			}
			buf = p;
			cap *= 2;
		}
		ssize_t n = read(STDIN_FILENO, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			cni_fail(e, CNI_E_IO, strerror(errno), "cannot read the network "
				 "configuration from stdin");
			return NULL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	root = jv_parse(buf, len, err, sizeof(err));
	free(buf);
	if (!root)
		cni_fail(e, CNI_E_DECODE, err, "the network configuration is not valid JSON");
	return root;
}

static void print_result(const struct cni_env *env, const char *mac,
			 const struct cni_record *r)
{
	char t[INET6_ADDRSTRLEN + 8];
	struct json j;

	json_init(&j, stdout);
	json_obj_begin(&j);
	json_member_str(&j, "cniVersion", CNI_VERSION);
	json_key(&j, "interfaces");
	json_arr_begin(&j);
	json_obj_begin(&j);
	json_member_str(&j, "name", env->ifname);
	if (mac[0])
		json_member_str(&j, "mac", mac);
	json_member_str(&j, "sandbox", env->netns);
	json_obj_end(&j);
	json_arr_end(&j);
	json_key(&j, "ips");
	json_arr_begin(&j);
	for (size_t i = 0; i < r->naddrs; i++) {
		json_obj_begin(&j);
		json_member_str(&j, "address", efi_addr_format(&r->addrs[i], t, sizeof(t)));
		json_member_u64(&j, "interface", 0);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_obj_end(&j);
	json_finish(&j);
}

static int cmd_add(const struct cni_env *env, const struct cni_conf *c, struct cni_err *e)
{
	struct cni_state *s = cni_state_open(c, e);
	struct cni_record r = { .naddrs = 0 }, old;
	char mac[18] = "";
	int had, rc = -1;

	if (!s)
		return -1;
	had = cni_record_get(s, env, &old, e);
	if (had < 0)
		goto out;
	memcpy(r.addrs, c->addrs, c->naddrs * sizeof(c->addrs[0]));
	r.naddrs = c->naddrs;
	if (!r.naddrs && cni_range_take(s, c, env, &r.addrs[r.naddrs++], e) < 0)
		goto out;
	/* Written before efid is asked, so that a DEL after a crash here
	 * still finds what to undo. */
	cni_instance_name(env->container_id, r.instance, sizeof(r.instance));
	if (cni_record_put(s, env, &r, e) < 0)
		goto undo;
	char got[EFI_INSTANCE_MAX + 1];
	if (cni_efid_attach(c, env, r.instance, r.addrs, r.naddrs, got, sizeof(got), e) < 0)
		goto undo;
	/* The namespace already had a name (`ip netns add`, an earlier
	 * network of the same pod): efid used that one. */
	if (strcmp(got, r.instance) != 0) {
		snprintf(r.instance, sizeof(r.instance), "%s", got);
		if (cni_record_put(s, env, &r, e) < 0)
			goto out;
	}
	if (cni_ns_mac(env->netns, env->ifname, mac, e) < 0)
		goto out;
	print_result(env, mac, &r);
	rc = 0;
	goto out;
undo:
	if (had == 1) {
		cni_range_release(s, env);
		cni_record_drop(s, env);
	}
out:
	cni_state_close(s);
	return rc;
}

static int cmd_del(const struct cni_env *env, const struct cni_conf *c, struct cni_err *e)
{
	struct cni_state *s = cni_state_open(c, e);
	struct cni_record r;
	bool gone;
	int had, rc = -1;

	if (!s)
		return -1;
	had = cni_record_get(s, env, &r, e);
	if (had < 0)
		goto out;
	/* Without a record (DEL repeated, or ADD never got far) the name ADD
	 * would have asked for is still worth a try: efid answers "no such
	 * interface", which is success here. */
	if (had == 1)
		cni_instance_name(env->container_id, r.instance, sizeof(r.instance));
	if (cni_efid_detach(c, r.instance, env->ifname, &gone, e) < 0)
		goto out;
	cni_range_release(s, env);
	cni_record_drop(s, env);
	rc = 0;
out:
	cni_state_close(s);
	return rc;
}

/* prevResult (what ADD answered, as the runtime kept it) must describe what
 * is there: our interface, and no address we do not hold. */
static int check_prev_result(const struct cni_env *env, const struct cni_conf *c,
			     const struct cni_record *r, struct cni_err *e)
{
	const struct jv *ifs = jv_get(c->prev_result, "interfaces");
	const struct jv *ips = jv_get(c->prev_result, "ips");
	bool found = false;

	if (!c->prev_result)
		return 0;
	for (const struct jv *i = ifs ? ifs->child : NULL; i; i = i->next)
		if (jv_string(jv_get(i, "name")) && strcmp(jv_get(i, "name")->str, env->ifname) == 0)
			found = true;
	if (!found)
		return cni_fail(e, CNI_E_CHECK, NULL, "prevResult has no interface %s", env->ifname);
	for (const struct jv *i = ips ? ips->child : NULL; i; i = i->next) {
		const char *a = jv_string(jv_get(i, "address"));
		struct efi_addr want;
		char why[128];
		bool held = false;

		if (!a || efi_addr_parse(a, &want, why, sizeof(why)) < 0)
			return cni_fail(e, CNI_E_CONFIG, why, "prevResult has an invalid address");
		for (size_t k = 0; k < r->naddrs; k++)
			held = held || efi_addr_same_ip(&want, &r->addrs[k]);
		if (!held)
			return cni_fail(e, CNI_E_CHECK, a, "prevResult's address %s is not the "
					"interface's", a);
	}
	return 0;
}

static int cmd_check(const struct cni_env *env, const struct cni_conf *c, struct cni_err *e)
{
	struct cni_state *s = cni_state_open(c, e);
	struct cni_record r;
	int had, rc = -1;

	if (!s)
		return -1;
	had = cni_record_get(s, env, &r, e);
	if (had == 1)
		cni_fail(e, CNI_E_CHECK, NULL, "efi-cni added no interface %s to container %s",
			 env->ifname, env->container_id);
	if (had == 0 && check_prev_result(env, c, &r, e) == 0 &&
	    cni_efid_check(c, &r, env->ifname, e) == 0 &&
	    cni_ns_check(env->netns, env->ifname, &r, e) == 0)
		rc = 0;
	cni_state_close(s);
	return rc;
}

int main(void)
{
	struct cni_err e = { .code = 0 };
	struct cni_env env;
	struct cni_conf *c;
	struct jv *root;
	int rc;

	if (cni_env_read(&env, &e) < 0)
		return print_error(&e);
	if (env.cmd == CMD_VERSION)
		return cmd_version();
	root = read_config(&e);
	if (!root)
		return print_error(&e);
	c = malloc(sizeof(*c));
	if (!c) {
		jv_free(root);
		cni_fail(&e, CNI_E_IO, NULL, "out of memory");
		return print_error(&e);
	}
	rc = cni_conf_parse(root, &env, c, &e);
	if (rc == 0) {
		switch (env.cmd) {
		case CMD_ADD: rc = cmd_add(&env, c, &e); break;
		case CMD_DEL: rc = cmd_del(&env, c, &e); break;
		case CMD_CHECK: rc = cmd_check(&env, c, &e); break;
		case CMD_VERSION: break;
		}
	}
	free(c);
	jv_free(root);
	if (rc < 0)
		return print_error(&e);
	return EXIT_SUCCESS;
}
