/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for efi-cni's input: a container runtime's network
 * configuration (stdin).  The bytes go through the JSON reader and, when
 * they parse, through the configuration checks for ADD and for DEL.  What
 * the checks accept must be usable as it is: bounded strings, addresses the
 * interface parser accepts, a range inside its subnet.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cni.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_conf(const struct jv *root, enum cni_cmd cmd)
{
	struct cni_env env = {
		.cmd = cmd, .container_id = "fuzz", .netns = "/proc/1/ns/net",
		.ifname = "eth1", .path = "/bin", .args = "IP=10.0.0.9/24",
	};
	struct cni_conf c;
	struct cni_err e = { .code = 0 };

	if (cni_conf_parse(root, &env, &c, &e) < 0) {
		if (e.code <= 0 || !memchr(e.msg, '\0', sizeof(e.msg)))
			abort();
		return;
	}
	if (!memchr(c.name, '\0', sizeof(c.name)) || !memchr(c.socket, '\0', sizeof(c.socket)) ||
	    c.data_dir[0] != '/' || c.naddrs > EFI_MAX_ADDRS ||
	    (cmd == CMD_ADD && !c.naddrs && !c.has_range))
		abort();
	if (c.has_range && (c.range.start > c.range.end || c.range.start <= c.range.subnet ||
			    c.range.prefixlen < 8 || c.range.prefixlen > 30))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[200];
	struct jv *root = jv_parse((const char *)data, size, err, sizeof(err));

	if (!root)
		return 0;
	check_conf(root, CMD_ADD);
	check_conf(root, CMD_DEL);
	jv_free(root);
	return 0;
}
