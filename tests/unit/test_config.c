/* SPDX-License-Identifier: MIT */
/* efid.conf: defaults, every key, and hostile files. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "efid_config.h"

static int parse(struct efid_config *c, const char *t, char *err, size_t errlen)
{
	return efid_config_parse(c, "efid.conf", t, strlen(t), err, errlen);
}

START_TEST(defaults)
{
	struct efid_config c;
	memset(&c, 0x77, sizeof(c));
	efid_config_defaults(&c);
	ck_assert_int_eq(c.log_level, -1);
	ck_assert_str_eq(c.group, "");
	ck_assert_str_eq(c.iface_dir, SYSCONFDIR "/efi/interfaces.d");
	ck_assert(c.repair);
	ck_assert_str_eq(c.default_uplink, "");
	ck_assert_uint_eq(c.default_mtu, 0);
	ck_assert_str_eq(c.default_kind, "veth");
	ck_assert_uint_eq(c.port_base, EFID_PORT_BASE_DEFAULT);
	/* Per-client limits are on by default (issue 22). */
	ck_assert_uint_eq(c.max_conns_per_user, 2048);
	ck_assert_uint_eq(c.max_conns_per_instance, 4096);
	ck_assert_uint_eq(c.max_fds_per_user, 256);
	ck_assert_uint_eq(c.max_fds_per_instance, 1024);
	ck_assert_uint_eq(c.max_queued_per_conn, 1024 * 1024);
	ck_assert_uint_eq(c.max_queued_per_user, 16 * 1024 * 1024);
	ck_assert_uint_eq(c.max_queued_per_instance, 64 * 1024 * 1024);
}
END_TEST

START_TEST(control_limits)
{
	struct efid_config c;
	char err[256];
	efid_config_defaults(&c);
	ck_assert_int_eq(parse(&c, "[Control]\nMaxConnectionsPerUser=10\nMaxConnectionsPerInstance=0\n"
				   "MaxDescriptorsPerUser=3\nMaxDescriptorsPerInstance=7\n"
				   "MaxQueuedRepliesPerConnection=128K\nMaxQueuedRepliesPerUser=2M\n"
				   "MaxQueuedRepliesPerInstance=0\n",
			       err, sizeof(err)),
			 0);
	ck_assert_uint_eq(c.max_conns_per_user, 10);
	ck_assert_uint_eq(c.max_conns_per_instance, 0);
	ck_assert_uint_eq(c.max_fds_per_user, 3);
	ck_assert_uint_eq(c.max_fds_per_instance, 7);
	ck_assert_uint_eq(c.max_queued_per_conn, 128 * 1024);
	ck_assert_uint_eq(c.max_queued_per_user, 2 * 1024 * 1024);
	ck_assert_uint_eq(c.max_queued_per_instance, 0);

	/* Hostile or mistaken values: an error naming the key, nothing changed. */
	static const char *const bad[] = {
		"[Control]\nMaxConnectionsPerUser=-1\n",
		"[Control]\nMaxConnectionsPerUser=4294967296\n",
		"[Control]\nMaxConnectionsPerInstance=1k\n",
		"[Control]\nMaxDescriptorsPerUser=\n",
		"[Control]\nMaxQueuedRepliesPerConnection=1000\n", /* below one reply */
		"[Control]\nMaxQueuedRepliesPerUser=2X\n",
		"[Control]\nMaxQueuedRepliesPerInstance=99999999999999999999\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		ck_assert_int_eq(parse(&c, bad[i], err, sizeof(err)), -EINVAL);
		ck_assert_msg(strstr(err, "Max") != NULL, "%s: %s", bad[i], err);
	}
	ck_assert_uint_eq(c.max_conns_per_user, 10);
	ck_assert_uint_eq(c.max_queued_per_conn, 128 * 1024);
}
END_TEST

START_TEST(every_key)
{
	struct efid_config c;
	char err[256];
	efid_config_defaults(&c);
	const char *t = "# efid.conf\n"
			"[Daemon]\n"
			"LogLevel=debug\n"
			"[control]\n"
			"group=efi   # who may attach\n"
			"[INTERFACES]\n"
			"Directory=/srv/efi/ifaces\n"
			"Repair=no\n"
			"DefaultUplink=br-efi\n"
			"DefaultMTU=9000\n"
			"DefaultKind=macvlan\n";
	ck_assert_int_eq(parse(&c, t, err, sizeof(err)), 0);
	ck_assert_int_eq(c.log_level, LOG_DEBUG);
	ck_assert_str_eq(c.group, "efi");
	ck_assert_str_eq(c.iface_dir, "/srv/efi/ifaces");
	ck_assert(!c.repair);
	ck_assert_str_eq(c.default_uplink, "br-efi");
	ck_assert_uint_eq(c.default_mtu, 9000);
	ck_assert_str_eq(c.default_kind, "macvlan");

	/* Later keys win; empty values reset where that means something. */
	ck_assert_int_eq(parse(&c, "[Control]\nGroup=\n[Interfaces]\nDirectory=\nRepair=on\n"
				   "DefaultMTU=0\nDefaultUplink=\nLogLevel=x\n",
			       err, sizeof(err)),
			 -EINVAL);
	ck_assert_str_eq(c.group, "efi"); /* untouched after an error */
	ck_assert_int_eq(parse(&c, "[Control]\nGroup=\n[Interfaces]\nDirectory=\nRepair=on\n"
				   "DefaultMTU=0\nDefaultUplink=\nRepair=0\n",
			       err, sizeof(err)),
			 0);
	ck_assert_str_eq(c.group, "");
	ck_assert_str_eq(c.iface_dir, "");
	ck_assert(!c.repair);
	ck_assert_uint_eq(c.default_mtu, 0);
	ck_assert_str_eq(c.default_uplink, "");
}
END_TEST

START_TEST(empty_text)
{
	struct efid_config c, d;
	char err[64];
	efid_config_defaults(&c);
	efid_config_defaults(&d);
	ck_assert_int_eq(parse(&c, "", err, sizeof(err)), 0);
	ck_assert_int_eq(parse(&c, "\n# only comments\n\n", err, sizeof(err)), 0);
	ck_assert_int_eq(memcmp(&c, &d, sizeof(c)), 0);
}
END_TEST

static void expect_bad(const char *t, const char *want)
{
	struct efid_config c, before;
	char err[512];
	efid_config_defaults(&c);
	before = c;
	err[0] = '\0';
	ck_assert_msg(parse(&c, t, err, sizeof(err)) == -EINVAL, "accepted: %s", t);
	ck_assert_msg(strstr(err, want) != NULL, "message '%s' lacks '%s'", err, want);
	ck_assert_msg(memcmp(&c, &before, sizeof(c)) == 0, "config changed on error");
}

START_TEST(hostile)
{
	char t[8192];
	expect_bad("LogLevel=info\n", "efid.conf:1: LogLevel= outside a section");
	expect_bad("[Deamon]\nLogLevel=info\n", "efid.conf:2: unknown section [Deamon]");
	expect_bad("[Daemon]\nLogLevl=info\n", "efid.conf:2: unknown key LogLevl=");
	expect_bad("[Daemon]\nLogLevel=loud\n", "LogLevel='loud' is invalid");
	expect_bad("[Daemon]\nLogLevel=\n", "is invalid");
	expect_bad("[Control]\nGroup=wheel staff\n", "not a valid group name");
	expect_bad("[Control]\nGroup=../x\n", "not a valid group name");
	expect_bad("[Control]\nGroup=-x\n", "not a valid group name");
	expect_bad("[Control]\nGroup=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
		   "not a valid group name");
	expect_bad("[Control]\nUser=root\n", "unknown key User=");
	expect_bad("[Interfaces]\nRepair=maybe\n", "efid.conf:2: Repair='maybe' is invalid");
	expect_bad("[Interfaces]\nRepair=\n", "is invalid");
	expect_bad("[Interfaces]\nDefaultMTU=100\n", "DefaultMTU='100' is invalid");
	expect_bad("[Interfaces]\nDefaultMTU=70000\n", "is invalid");
	expect_bad("[Interfaces]\nDefaultMTU=1500x\n", "is invalid");
	expect_bad("[Interfaces]\nDefaultMTU=\n", "is invalid");
	expect_bad("[Interfaces]\nDefaultMTU=99999999999999999999999999\n", "is invalid");
	expect_bad("[Interfaces]\nDefaultKind=VETH\n", "DefaultKind='VETH' is invalid");
	expect_bad("[Interfaces]\nDefaultKind=\n", "is invalid");
	expect_bad("[Interfaces]\nDefaultUplink=br/0\n", "not a valid device name");
	expect_bad("[Interfaces]\nDefaultUplink=averyveryverylongname\n", "not a valid device name");
	expect_bad("[Interfaces]\nDirectory=relative/dir\n", "must be an absolute path");
	expect_bad("[Interfaces\nRepair=yes\n", "efid.conf:1: section header");
	expect_bad("[Interfaces]\nRepair yes\n", "efid.conf:2: expected");
	expect_bad("[Transport]\nPortBase=80\n", "PortBase='80' is invalid");
	expect_bad("[Transport]\nPortBase=65000\n", "is invalid");
	expect_bad("[Transport]\nPortBase=2e4\n", "is invalid");
	expect_bad("[Transport]\nPortBase=\n", "is invalid");
	expect_bad("[Transport]\nPorts=1\n", "unknown key Ports=");

	/* Overlong line. */
	size_t off = (size_t)snprintf(t, sizeof(t), "[Daemon]\n# ");
	memset(t + off, 'x', sizeof(t) - off - 1);
	t[sizeof(t) - 1] = '\0';
	expect_bad(t, "efid.conf:2: line longer than");
}
END_TEST

START_TEST(port_base)
{
	struct efid_config c;
	char err[256];
	const char *text = "[Transport]\nPortBase=30000\n";
	efid_config_defaults(&c);
	ck_assert_int_eq(efid_config_parse(&c, "efid.conf", text, strlen(text), err, sizeof(err)), 0);
	ck_assert_uint_eq(c.port_base, 30000);
	ck_assert_uint_eq(c.lanes, EFID_LANES_DEFAULT);
}
END_TEST

/* Lanes: 1..8; every lane's ports must exist and miss the CM port. */
START_TEST(lanes)
{
	struct efid_config c;
	char err[256];
	const char *text = "[Transport]\nLanes=2\n";
	efid_config_defaults(&c);
	ck_assert_int_eq(efid_config_parse(&c, "efid.conf", text, strlen(text), err, sizeof(err)), 0);
	ck_assert_uint_eq(c.lanes, 2);
	expect_bad("[Transport]\nLanes=0\n", "Lanes='0' is invalid");
	expect_bad("[Transport]\nLanes=9\n", "Lanes='9' is invalid");
	expect_bad("[Transport]\nLanes=two\n", "Lanes='two' is invalid");
	expect_bad("[Transport]\nPortBase=60000\nLanes=2\n", "needs ports up to");
	expect_bad("[Transport]\nPortBase=20000\nLanes=3\n[ConnectionManager]\nPort=28200\n",
		   "of lane 2");
}
END_TEST

/* Uplinks: interface names, each once, no more than lanes; empty is off. */
START_TEST(uplinks)
{
	struct efid_config c;
	char err[256];
	const char *text = "[Transport]\nUplinks= up0\tup1  \n";
	efid_config_defaults(&c);
	ck_assert_uint_eq(c.nuplinks, 0);
	ck_assert_int_eq(efid_config_parse(&c, "efid.conf", text, strlen(text), err, sizeof(err)), 0);
	ck_assert_uint_eq(c.nuplinks, 2);
	ck_assert_str_eq(c.uplinks[0], "up0");
	ck_assert_str_eq(c.uplinks[1], "up1");
	text = "[Transport]\nUplinks=up0\nUplinks=\n";
	efid_config_defaults(&c);
	ck_assert_int_eq(efid_config_parse(&c, "efid.conf", text, strlen(text), err, sizeof(err)), 0);
	ck_assert_uint_eq(c.nuplinks, 0);
	expect_bad("[Transport]\nUplinks=up0 up0\n", "named twice");
	expect_bad("[Transport]\nUplinks=up/0\n", "not a valid interface name");
	expect_bad("[Transport]\nUplinks=a234567890123456\n", "not a valid interface name");
	expect_bad("[Transport]\nUplinks=a b c d e f g h i\n", "at most 8");
	expect_bad("[Transport]\nLanes=2\nUplinks=a b c\n", "raise Lanes or name fewer uplinks");
	expect_bad("[Transport]\nUplinks=a b c d e\n", "but Lanes=4");
}
END_TEST

/* [CongestionControl] becomes libefi's spec; bad values, unknown keys and
 * contradicting values are refused with the key's name and change nothing. */
START_TEST(congestion_control)
{
	struct efid_config c;
	char err[256];
	efid_config_defaults(&c);
	ck_assert_str_eq(c.cc_spec, "");
	ck_assert_int_eq(parse(&c, "[CongestionControl]\nTargetDelayUs=300\nMaxWindow=16\n"
				   "InitialWindow=8\nbeta=0.5\n",
			       err, sizeof(err)),
			 0);
	ck_assert_str_eq(c.cc_spec, "target_us=300,max_cwnd=16,init_cwnd=8,beta=0.5");

	ck_assert_int_eq(parse(&c, "[CongestionControl]\nTargetDelayUs=abc\n", err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "TargetDelayUs='abc' is invalid"));
	ck_assert_int_eq(parse(&c, "[CongestionControl]\nBeta=1,ai=9\n", err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(parse(&c, "[CongestionControl]\nAi=-1\n", err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(parse(&c, "[CongestionControl]\nWindow=4\n", err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "unknown key Window= in [CongestionControl]"));
	/* Each value alone is fine; together they contradict. */
	ck_assert_int_eq(parse(&c, "[CongestionControl]\nMaxWindow=4\nMinWindow=8\n", err,
			       sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "contradict"));
	ck_assert_str_eq(c.cc_spec, "target_us=300,max_cwnd=16,init_cwnd=8,beta=0.5");
}
END_TEST

START_TEST(nul_byte)
{
	struct efid_config c;
	char err[256];
	const char t[] = "[Daemon]\nLogLevel=info\0debug\n";
	efid_config_defaults(&c);
	ck_assert_int_eq(efid_config_parse(&c, "efid.conf", t, sizeof(t) - 1, err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "efid.conf:2: NUL byte"));
	ck_assert_int_eq(c.log_level, -1);
}
END_TEST

START_TEST(load_files)
{
	struct efid_config c;
	char err[512];
	char dir[] = "/tmp/test_config.XXXXXX";
	char path[600], notdir[700];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/efid.conf", dir);

	/* Missing: fine when missing_ok, -ENOENT with a message otherwise. */
	efid_config_defaults(&c);
	ck_assert_int_eq(efid_config_load(&c, path, true, err, sizeof(err)), 0);
	ck_assert_int_eq(c.log_level, -1);
	ck_assert_int_eq(efid_config_load(&c, path, false, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, path));
	ck_assert_ptr_nonnull(strstr(err, "No such file"));

	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("[Daemon]\nLogLevel=warning\n[Control]\nGroup=efi\n", f);
	fclose(f);
	ck_assert_int_eq(efid_config_load(&c, path, false, err, sizeof(err)), 0);
	ck_assert_int_eq(c.log_level, LOG_WARNING);
	ck_assert_str_eq(c.group, "efi");

	/* A malformed file is an error even when a missing one would be fine. */
	f = fopen(path, "w");
	fputs("[Daemon]\nLogLevel=warning\nbogus\n", f);
	fclose(f);
	efid_config_defaults(&c);
	ck_assert_int_eq(efid_config_load(&c, path, true, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(c.log_level, -1);
	char want[700];
	snprintf(want, sizeof(want), "%s:3:", path);
	ck_assert_ptr_nonnull(strstr(err, want));

	/* Unreadable paths: a directory, and a path through a regular file. */
	ck_assert_int_eq(efid_config_load(&c, dir, true, err, sizeof(err)), -EISDIR);
	ck_assert_ptr_nonnull(strstr(err, dir));
	snprintf(notdir, sizeof(notdir), "%s/efid.conf", path);
	ck_assert_int_eq(efid_config_load(&c, notdir, true, err, sizeof(err)), -ENOTDIR);
	ck_assert_ptr_nonnull(strstr(err, notdir));

	unlink(path);
	rmdir(dir);
}
END_TEST

static Suite *config_suite(void)
{
	Suite *s = suite_create("efid_config");
	TCase *tc = tcase_create("config");
	tcase_add_test(tc, defaults);
	tcase_add_test(tc, uplinks);
	tcase_add_test(tc, every_key);
	tcase_add_test(tc, control_limits);
	tcase_add_test(tc, empty_text);
	tcase_add_test(tc, hostile);
	tcase_add_test(tc, nul_byte);
	tcase_add_test(tc, port_base);
	tcase_add_test(tc, lanes);
	tcase_add_test(tc, congestion_control);
	tcase_add_test(tc, load_files);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(config_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
