/* SPDX-License-Identifier: MIT */
/* efid's per-user and per-instance control limits (efid/control_limits.c). */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <string.h>

#include "auth.h"
#include "control_limits.h"
#include "efid_config.h"

static struct peer mk(bool host, uid_t uid, const char *instance)
{
	struct peer p;
	memset(&p, 0, sizeof(p));
	p.host = host;
	p.uid = uid;
	p.pid = 42;
	snprintf(p.instance, sizeof(p.instance), "%s", instance);
	return p;
}

START_TEST(connections_per_user_and_instance)
{
	struct efid_config c;
	struct ctl_limits *L = ctl_limits_new();
	struct ctl_quota q[8];
	char why[256];

	efid_config_defaults(&c);
	c.max_conns_per_user = 2;
	c.max_conns_per_instance = 3;
	struct peer a1 = mk(false, 1000, "vm1"), a2 = mk(false, 1001, "vm1"),
		    b1 = mk(false, 1000, "vm2"), root = mk(true, 0, ""), hu = mk(true, 1000, "");

	ck_assert_int_eq(ctl_quota_admit(L, &c, &a1, &q[0], why, sizeof(why)), 0);
	ck_assert_int_eq(ctl_quota_admit(L, &c, &a1, &q[1], why, sizeof(why)), 0);
	ck_assert_int_eq(ctl_quota_admit(L, &c, &a1, &q[2], why, sizeof(why)), -EUSERS);
	ck_assert_ptr_nonnull(strstr(why, "MaxConnectionsPerUser"));
	ck_assert_ptr_nonnull(strstr(why, "vm1"));
	ck_assert_ptr_null(q[2].user);
	/* another user of vm1 meets the instance's limit after one */
	ck_assert_int_eq(ctl_quota_admit(L, &c, &a2, &q[2], why, sizeof(why)), 0);
	ck_assert_int_eq(ctl_quota_admit(L, &c, &a2, &q[3], why, sizeof(why)), -EUSERS);
	ck_assert_ptr_nonnull(strstr(why, "MaxConnectionsPerInstance"));
	/* the same uid in another instance is another user */
	ck_assert_int_eq(ctl_quota_admit(L, &c, &b1, &q[3], why, sizeof(why)), 0);
	/* host root is exempt; a host user has no instance limit */
	for (int i = 4; i < 8; i++)
		ck_assert_int_eq(ctl_quota_admit(L, &c, &root, &q[i], why, sizeof(why)), 0);
	ck_assert_ptr_null(q[4].user);
	ck_assert_int_eq(ctl_quota_admit(L, &c, &hu, &q[4], why, sizeof(why)), 0);
	ck_assert_ptr_null(q[4].inst);
	/* released, a connection may come again */
	ctl_quota_release(L, &q[0]);
	ck_assert_int_eq(ctl_quota_admit(L, &c, &a1, &q[0], why, sizeof(why)), 0);
	for (int i = 0; i < 5; i++)
		ctl_quota_release(L, &q[i]);
	ctl_limits_free(L);
}
END_TEST

START_TEST(descriptors_and_queued_bytes)
{
	struct efid_config c;
	struct ctl_limits *L = ctl_limits_new();
	struct ctl_quota q1, q2;
	char why[256];

	efid_config_defaults(&c);
	c.max_fds_per_user = 20;
	c.max_fds_per_instance = 30;
	c.max_queued_per_user = 1000;
	c.max_queued_per_instance = 0; /* no limit */
	struct peer a1 = mk(false, 7, "vm1"), a2 = mk(false, 8, "vm1");
	ck_assert_int_eq(ctl_quota_admit(L, &c, &a1, &q1, why, sizeof(why)), 0);
	ck_assert_int_eq(ctl_quota_admit(L, &c, &a2, &q2, why, sizeof(why)), 0);

	ck_assert_int_eq(ctl_quota_fds(&c, &q1, 16, why, sizeof(why)), 0);
	ck_assert_int_eq(ctl_quota_fds(&c, &q1, 5, why, sizeof(why)), -EMFILE);
	ck_assert_ptr_nonnull(strstr(why, "MaxDescriptorsPerUser"));
	ck_assert_int_eq(ctl_quota_fds(&c, &q1, 4, why, sizeof(why)), 0);
	ck_assert_int_eq(ctl_quota_fds(&c, &q2, 10, why, sizeof(why)), 0);
	ck_assert_int_eq(ctl_quota_fds(&c, &q2, 1, why, sizeof(why)), -EMFILE);
	ck_assert_ptr_nonnull(strstr(why, "MaxDescriptorsPerInstance"));
	/* giving back more than held never wraps */
	ck_assert_int_eq(ctl_quota_fds(&c, &q1, -1000, NULL, 0), 0);
	ck_assert_int_eq(ctl_quota_fds(&c, &q2, 1, why, sizeof(why)), 0);

	ck_assert_int_eq(ctl_quota_queued(&c, &q1, 600, why, sizeof(why)), 0);
	ck_assert_int_eq(ctl_quota_queued(&c, &q1, 401, why, sizeof(why)), -ENOBUFS);
	ck_assert_ptr_nonnull(strstr(why, "MaxQueuedRepliesPerUser"));
	ck_assert_int_eq(ctl_quota_queued(&c, &q2, 1000, why, sizeof(why)), 0);
	ck_assert_int_eq(ctl_quota_queued(&c, &q1, -600, NULL, 0), 0);
	ck_assert_int_eq(ctl_quota_queued(&c, &q1, 1000, why, sizeof(why)), 0);

	ctl_quota_fds(&c, &q1, -100, NULL, 0);
	ctl_quota_fds(&c, &q2, -100, NULL, 0);
	ctl_quota_queued(&c, &q1, -5000, NULL, 0);
	ctl_quota_queued(&c, &q2, -5000, NULL, 0);
	ctl_quota_release(L, &q1);
	ctl_quota_release(L, &q2);
	ctl_limits_free(L);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("control_limits");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, connections_per_user_and_instance);
	tcase_add_test(tc, descriptors_and_queued_bytes);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
