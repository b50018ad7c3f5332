/* SPDX-License-Identifier: MIT */
/* efi-cni's input parsers: the JSON reader, the environment and the network
 * configuration, with well-formed and hostile input. */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "cni.h"

static struct jv *parse(const char *s)
{
	char err[200];
	return jv_parse(s, strlen(s), err, sizeof(err));
}

static bool rejects(const char *s)
{
	char err[200] = "";
	struct jv *v = jv_parse(s, strlen(s), err, sizeof(err));
	bool bad = v == NULL && err[0] != '\0';
	jv_free(v);
	return bad;
}

START_TEST(json_values)
{
	struct jv *v = parse(" {\"a\": [1, -2.5e3, true, false, null], \"b\": \"x\\u00e9\\n\","
			     " \"c\": {}, \"d\": [], \"e\": \"\\ud83d\\ude00\\/\"} ");
	int64_t i;

	ck_assert_ptr_nonnull(v);
	ck_assert_int_eq(v->count, 5);
	const struct jv *a = jv_get(v, "a");
	ck_assert_int_eq(a->type, JV_ARRAY);
	ck_assert_int_eq(a->count, 5);
	ck_assert(jv_int(a->child, 0, 10, &i));
	ck_assert_int_eq(i, 1);
	ck_assert(!jv_int(a->child->next, -10000, 10000, &i)); /* not an integer */
	ck_assert(a->child->next->num == -2500.0);
	ck_assert(a->child->next->next->b);
	ck_assert(!a->child->next->next->next->b);
	ck_assert_int_eq(a->child->next->next->next->next->type, JV_NULL);
	ck_assert_str_eq(jv_string(jv_get(v, "b")), "x\xc3\xa9\n");
	ck_assert_str_eq(jv_string(jv_get(v, "e")), "\xf0\x9f\x98\x80/");
	ck_assert_int_eq(jv_get(v, "c")->type, JV_OBJECT);
	ck_assert_ptr_null(jv_get(v, "zz"));
	ck_assert_ptr_null(jv_string(jv_get(v, "a")));
	ck_assert(!jv_int(jv_get(v, "b"), 0, 1, &i));
	jv_free(v);
}
END_TEST

START_TEST(json_hostile)
{
	ck_assert(rejects(""));
	ck_assert(rejects("   "));
	ck_assert(rejects("{"));
	ck_assert(rejects("{\"a\":1,}"));
	ck_assert(rejects("[1,]"));
	ck_assert(rejects("{\"a\":1 \"b\":2}"));
	ck_assert(rejects("{\"a\":1,\"a\":2}"));      /* duplicate member */
	ck_assert(rejects("{a:1}"));
	ck_assert(rejects("\"tab\there\""));          /* raw control character */
	ck_assert(rejects("\"\\u0000\""));
	ck_assert(rejects("\"\\ud800\""));            /* lone high surrogate */
	ck_assert(rejects("\"\\udc00\""));            /* lone low surrogate */
	ck_assert(rejects("\"\\ud800\\u0041\""));
	ck_assert(rejects("\"\\x\""));
	ck_assert(rejects("\"\\u12\""));
	ck_assert(rejects("\"\xc3\x28\""));           /* invalid UTF-8 */
	ck_assert(rejects("\"\xc0\xaf\""));           /* overlong */
	ck_assert(rejects("\"\xed\xa0\x80\""));       /* encoded surrogate */
	ck_assert(rejects("\"abc"));
	ck_assert(rejects("\"abc\\\""));
	ck_assert(rejects("01"));
	ck_assert(rejects("1."));
	ck_assert(rejects("-"));
	ck_assert(rejects("1e"));
	ck_assert(rejects("+1"));
	ck_assert(rejects("tru"));
	ck_assert(rejects("nulls"));
	ck_assert(rejects("{} {}"));
	ck_assert(rejects("[1] x"));
	/* a NUL inside the buffer is data after the document, not its end */
	ck_assert_ptr_null(jv_parse("{}\0{}", 5, (char[64]){ 0 }, 64));

	char deep[200];
	memset(deep, '[', 100);
	memset(deep + 100, ']', 100);
	char *d = strndup(deep, 200);
	ck_assert(rejects(d));
	free(d);
	d = strndup(deep + 100 - JSONR_MAX_DEPTH, 2 * JSONR_MAX_DEPTH);
	struct jv *v = parse(d);
	ck_assert_ptr_nonnull(v);
	jv_free(v);
	free(d);

	/* more members than allowed in one object */
	size_t cap = (JSONR_MAX_MEMBERS + 2) * 16, off = 0;
	char *big = malloc(cap);
	off += (size_t)snprintf(big + off, cap - off, "{");
	for (int i = 0; i <= JSONR_MAX_MEMBERS; i++)
		off += (size_t)snprintf(big + off, cap - off, "%s\"k%d\":%d", i ? "," : "", i, i);
	snprintf(big + off, cap - off, "}");
	ck_assert(rejects(big));
	free(big);
}
END_TEST

static const struct cni_env add_env = {
	.cmd = CMD_ADD, .container_id = "abc", .netns = "/proc/1/ns/net",
	.ifname = "eth1", .path = "/opt/cni/bin",
};

static int conf(const char *json, const struct cni_env *env, struct cni_conf *c,
		struct cni_err *e)
{
	struct jv *v = parse(json);
	int r;

	memset(e, 0, sizeof(*e));
	if (!v)
		return -100;
	r = cni_conf_parse(v, env, c, e);
	jv_free(v);
	return r;
}

#define BASE "\"cniVersion\":\"1.0.0\",\"name\":\"efi-net\",\"type\":\"efi-cni\""

START_TEST(conf_good)
{
	struct cni_conf c;
	struct cni_err e;
	char t[64];

	ck_assert_int_eq(conf("{" BASE ",\"addresses\":[\"10.1.0.5/24\",\"fd00::5/64\"],"
			      "\"uplink\":\"br0\",\"mtu\":1500,\"kind\":\"veth\","
			      "\"dataDir\":\"/tmp/x\",\"efidSocket\":\"/tmp/s\",\"other\":{}}",
			      &add_env, &c, &e), 0);
	ck_assert_int_eq(c.naddrs, 2);
	ck_assert_str_eq(efi_addr_format(&c.addrs[1], t, sizeof(t)), "fd00::5/64");
	ck_assert_str_eq(c.uplink, "br0");
	ck_assert_int_eq(c.mtu, 1500);
	ck_assert_str_eq(c.data_dir, "/tmp/x");
	ck_assert_str_eq(c.socket, "/tmp/s");

	/* per-pod addresses win over the configuration's */
	struct cni_env env = add_env;
	env.args = "K8S_POD_NAME=a;IP=10.2.0.9/16";
	ck_assert_int_eq(conf("{" BASE ",\"addresses\":[\"10.1.0.5/24\"]}", &env, &c, &e), 0);
	ck_assert_int_eq(c.naddrs, 1);
	ck_assert_str_eq(efi_addr_format(&c.addrs[0], t, sizeof(t)), "10.2.0.9/16");
	ck_assert_int_eq(conf("{" BASE ",\"runtimeConfig\":{\"ips\":[\"10.3.0.1/24\"]}}", &env,
			      &c, &e), 0);
	ck_assert_str_eq(efi_addr_format(&c.addrs[0], t, sizeof(t)), "10.3.0.1/24");

	/* a range: defaults leave out network, .1 and broadcast */
	ck_assert_int_eq(conf("{" BASE ",\"range\":{\"subnet\":\"10.9.0.77/24\"}}", &add_env, &c,
			      &e), 0);
	ck_assert(c.has_range);
	ck_assert_uint_eq(c.range.subnet, 0x0a090000u);
	ck_assert_uint_eq(c.range.start, 0x0a090002u);
	ck_assert_uint_eq(c.range.end, 0x0a0900feu);
	ck_assert_int_eq(conf("{" BASE ",\"range\":{\"subnet\":\"10.9.0.0/24\",\"rangeStart\":"
			      "\"10.9.0.10\",\"rangeEnd\":\"10.9.0.11\"}}", &add_env, &c, &e), 0);
	ck_assert_uint_eq(c.range.end - c.range.start, 1);

	/* DEL needs no address */
	env = add_env;
	env.cmd = CMD_DEL;
	ck_assert_int_eq(conf("{" BASE "}", &env, &c, &e), 0);
}
END_TEST

START_TEST(conf_bad)
{
	struct cni_conf c;
	struct cni_err e;
	struct cni_env env = add_env;

	ck_assert_int_eq(conf("[]", &add_env, &c, &e), -1);
	ck_assert_int_eq(e.code, CNI_E_DECODE);
	ck_assert_int_eq(conf("{\"name\":\"n\",\"type\":\"t\"}", &add_env, &c, &e), -1);
	ck_assert_int_eq(e.code, CNI_E_CONFIG);
	ck_assert_int_eq(conf("{\"cniVersion\":\"0.3.1\",\"name\":\"n\",\"type\":\"t\"}", &add_env,
			      &c, &e), -1);
	ck_assert_int_eq(e.code, CNI_E_VERSION);
	ck_assert_int_eq(conf("{" BASE ",\"ipam\":{\"type\":\"host-local\"}}", &add_env, &c, &e),
			 -1);
	ck_assert_int_eq(e.code, CNI_E_FIELD);
	ck_assert_int_eq(conf("{" BASE "}", &add_env, &c, &e), -1); /* no address */
	ck_assert_int_eq(e.code, CNI_E_CONFIG);
	static const char *const bad[] = {
		"{\"cniVersion\":\"1.0.0\",\"name\":\"-x\",\"type\":\"t\",\"addresses\":[\"10.0.0.1/8\"]}",
		"{\"cniVersion\":\"1.0.0\",\"name\":\"a/b\",\"type\":\"t\",\"addresses\":[\"10.0.0.1/8\"]}",
		"{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"addresses\":[\"10.0.0.1/8\"]}",
		"{" BASE ",\"addresses\":\"10.0.0.1/8\"}",
		"{" BASE ",\"addresses\":[\"10.0.0.1\"]}",
		"{" BASE ",\"addresses\":[\"127.0.0.1/8\"]}",
		"{" BASE ",\"addresses\":[1]}",
		"{" BASE ",\"addresses\":[\"10.0.0.1/8\",\"10.0.0.1/16\"]}",
		"{" BASE ",\"addresses\":[\"10.0.0.1/8\"],\"mtu\":100}",
		"{" BASE ",\"addresses\":[\"10.0.0.1/8\"],\"mtu\":1500.5}",
		"{" BASE ",\"addresses\":[\"10.0.0.1/8\"],\"mtu\":\"1500\"}",
		"{" BASE ",\"addresses\":[\"10.0.0.1/8\"],\"kind\":\"ipvlan\"}",
		"{" BASE ",\"addresses\":[\"10.0.0.1/8\"],\"uplink\":\"a/b\"}",
		"{" BASE ",\"addresses\":[\"10.0.0.1/8\"],\"uplink\":\"0123456789abcdefg\"}",
		"{" BASE ",\"addresses\":[\"10.0.0.1/8\"],\"dataDir\":\"relative\"}",
		"{" BASE ",\"addresses\":[\"10.0.0.1/8\"],\"prevResult\":[]}",
		"{" BASE ",\"addresses\":[\"10.0.0.1/8\"],\"runtimeConfig\":[]}",
		"{" BASE ",\"range\":{}}",
		"{" BASE ",\"range\":{\"subnet\":\"10.0.0.0\"}}",
		"{" BASE ",\"range\":{\"subnet\":\"10.0.0.0/31\"}}",
		"{" BASE ",\"range\":{\"subnet\":\"10.0.0.0/x\"}}",
		"{" BASE ",\"range\":{\"subnet\":\"fd00::/64\"}}",
		"{" BASE ",\"range\":{\"subnet\":\"10.0.0.0/24\",\"rangeStart\":\"10.0.1.1\"}}",
		"{" BASE ",\"range\":{\"subnet\":\"10.0.0.0/24\",\"rangeStart\":\"10.0.0.9\",\"rangeEnd\":\"10.0.0.8\"}}",
		"{" BASE ",\"range\":{\"subnet\":\"10.0.0.0/24\",\"rangeEnd\":\"10.0.0.255\"}}",
		"{" BASE ",\"range\":{\"subnet\":\"10.0.0.0/24\",\"rangeStart\":5}}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(conf(bad[i], &add_env, &c, &e) == -1, "accepted %s", bad[i]);
		ck_assert_msg(e.code == CNI_E_CONFIG, "%s: code %d", bad[i], e.code);
	}
	env.args = "IP";
	ck_assert_int_eq(conf("{" BASE "}", &env, &c, &e), -1);
	ck_assert_int_eq(e.code, CNI_E_ENV);
	env.args = "IP=10.0.0.1/8,nonsense";
	ck_assert_int_eq(conf("{" BASE "}", &env, &c, &e), -1);
}
END_TEST

static void set_env(const char *cmd, const char *cid, const char *netns, const char *ifname,
		    const char *path)
{
	const char *names[] = { "CNI_COMMAND", "CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME",
				"CNI_PATH" };
	const char *vals[] = { cmd, cid, netns, ifname, path };
	for (int i = 0; i < 5; i++) {
		if (vals[i])
			setenv(names[i], vals[i], 1);
		else
			unsetenv(names[i]);
	}
}

START_TEST(env_rules)
{
	struct cni_env env;
	struct cni_err e;

#define ENV_RC(...) (set_env(__VA_ARGS__), memset(&e, 0, sizeof(e)), cni_env_read(&env, &e))
	ck_assert_int_eq(ENV_RC("ADD", "c1", "/proc/1/ns/net", "eth1", "/bin"), 0);
	ck_assert_int_eq(env.cmd, CMD_ADD);
	ck_assert_int_eq(ENV_RC("VERSION", NULL, NULL, NULL, NULL), 0);
	ck_assert_int_eq(ENV_RC("DEL", "c1", NULL, "eth1", "/bin"), 0); /* netns may be gone */
	ck_assert_ptr_null(env.netns);
	ck_assert_int_eq(ENV_RC(NULL, "c1", "/n", "eth1", "/bin"), -1);
	ck_assert_int_eq(e.code, CNI_E_ENV);
	ck_assert_int_eq(ENV_RC("FROB", "c1", "/n", "eth1", "/bin"), -1);
	ck_assert_int_eq(ENV_RC("ADD", NULL, "/n", "eth1", "/bin"), -1);
	ck_assert_int_eq(e.code, CNI_E_ENV);
	ck_assert_int_eq(ENV_RC("ADD", "c1", NULL, "eth1", "/bin"), -1);
	ck_assert_int_eq(ENV_RC("CHECK", "c1", NULL, "eth1", "/bin"), -1);
	ck_assert_int_eq(ENV_RC("ADD", "c1", "rel/path", "eth1", "/bin"), -1);
	ck_assert_int_eq(ENV_RC("ADD", "c1", "/n", NULL, "/bin"), -1);
	ck_assert_int_eq(ENV_RC("ADD", "c1", "/n", "a/b", "/bin"), -1);
	ck_assert_int_eq(ENV_RC("ADD", "c1", "/n", "eth1", NULL), -1);
	ck_assert_int_eq(ENV_RC("ADD", "../x", "/n", "eth1", "/bin"), -1);
	ck_assert_int_eq(ENV_RC("ADD", "-x", "/n", "eth1", "/bin"), -1);
	ck_assert_int_eq(ENV_RC("ADD", "a b", "/n", "eth1", "/bin"), -1);
	ck_assert_int_eq(e.code, CNI_E_ENV);
#undef ENV_RC
}
END_TEST

START_TEST(instance_names)
{
	char a[EFI_INSTANCE_MAX + 1], b[EFI_INSTANCE_MAX + 1];
	char long1[CNI_CID_MAX + 1], long2[CNI_CID_MAX + 1];

	cni_instance_name("abc", a, sizeof(a));
	ck_assert_str_eq(a, "efi-abc");
	memset(long1, 'f', CNI_CID_MAX);
	long1[CNI_CID_MAX] = '\0';
	memcpy(long2, long1, sizeof(long1));
	long2[CNI_CID_MAX - 1] = 'e';
	cni_instance_name(long1, a, sizeof(a));
	cni_instance_name(long2, b, sizeof(b));
	ck_assert(efi_instance_name_valid(a));
	ck_assert(efi_instance_name_valid(b));
	ck_assert_str_ne(a, b); /* same prefix, different ids */
	ck_assert_int_eq(strlen(a), EFI_INSTANCE_MAX);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cni_conf");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, json_values);
	tcase_add_test(tc, json_hostile);
	tcase_add_test(tc, conf_good);
	tcase_add_test(tc, conf_bad);
	tcase_add_test(tc, env_rules);
	tcase_add_test(tc, instance_names);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
