/* SPDX-License-Identifier: MIT */
/*
 * rdma-core's private provider ABI (version node IBVERBS_PRIVATE_34), so
 * that libibverbs.so.1 can be libefi-verbs.so itself.
 *
 * efi-run puts a directory on LD_LIBRARY_PATH whose libibverbs.so.1 is this
 * library, for the programs that dlopen("libibverbs.so.1") and dlsym each
 * function on that handle (TensorPipe and others), which LD_PRELOAD alone
 * does not reach.  Programs linked with -libverbs then load us under that
 * name too and the real libibverbs is never loaded, so the provider
 * libraries some of them link directly (perftest: libmlx5, libefa, all
 * linked with BIND_NOW) must find every symbol they import from it here,
 * or the program fails to start.
 *
 * None of these is ever called: a provider's code runs only for a device
 * of its own, which only the real libibverbs' sysfs scan would find.
 * Should one be called anyway, it fails with EOPNOTSUPP and changes
 * nothing.  The arguments are left out (the real prototypes are in
 * rdma-core's <infiniband/driver.h>, which Debian does not install): each
 * stub reads none, which the x86-64 and AArch64 calling conventions allow
 * for any caller.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "verbs_int.h"

/* int ibv_cmd_*(...): 0 or an errno, like the kernel commands they marshal */
#define EFIV_CMD_STUB(name)                    \
	EFIV_EXPORT int name(void);            \
	int name(void)                         \
	{                                      \
		errno = EOPNOTSUPP;            \
		return EOPNOTSUPP;             \
	}

EFIV_CMD_STUB(ibv_cmd_advise_mr)
EFIV_CMD_STUB(ibv_cmd_alloc_dm)
EFIV_CMD_STUB(ibv_cmd_alloc_mw)
EFIV_CMD_STUB(ibv_cmd_alloc_pd)
EFIV_CMD_STUB(ibv_cmd_attach_mcast)
EFIV_CMD_STUB(ibv_cmd_close_xrcd)
EFIV_CMD_STUB(ibv_cmd_create_ah)
EFIV_CMD_STUB(ibv_cmd_create_counters)
EFIV_CMD_STUB(ibv_cmd_create_cq)
EFIV_CMD_STUB(ibv_cmd_create_cq_ex)
EFIV_CMD_STUB(ibv_cmd_create_flow)
EFIV_CMD_STUB(ibv_cmd_create_flow_action_esp)
EFIV_CMD_STUB(ibv_cmd_create_qp)
EFIV_CMD_STUB(ibv_cmd_create_qp_ex)
EFIV_CMD_STUB(ibv_cmd_create_qp_ex2)
EFIV_CMD_STUB(ibv_cmd_create_rwq_ind_table)
EFIV_CMD_STUB(ibv_cmd_create_srq)
EFIV_CMD_STUB(ibv_cmd_create_srq_ex)
EFIV_CMD_STUB(ibv_cmd_create_wq)
EFIV_CMD_STUB(ibv_cmd_dealloc_mw)
EFIV_CMD_STUB(ibv_cmd_dealloc_pd)
EFIV_CMD_STUB(ibv_cmd_dereg_mr)
EFIV_CMD_STUB(ibv_cmd_destroy_ah)
EFIV_CMD_STUB(ibv_cmd_destroy_counters)
EFIV_CMD_STUB(ibv_cmd_destroy_cq)
EFIV_CMD_STUB(ibv_cmd_destroy_flow)
EFIV_CMD_STUB(ibv_cmd_destroy_flow_action)
EFIV_CMD_STUB(ibv_cmd_destroy_qp)
EFIV_CMD_STUB(ibv_cmd_destroy_rwq_ind_table)
EFIV_CMD_STUB(ibv_cmd_destroy_srq)
EFIV_CMD_STUB(ibv_cmd_destroy_wq)
EFIV_CMD_STUB(ibv_cmd_detach_mcast)
EFIV_CMD_STUB(ibv_cmd_free_dm)
EFIV_CMD_STUB(ibv_cmd_get_context)
EFIV_CMD_STUB(ibv_cmd_modify_cq)
EFIV_CMD_STUB(ibv_cmd_modify_flow_action_esp)
EFIV_CMD_STUB(ibv_cmd_modify_qp)
EFIV_CMD_STUB(ibv_cmd_modify_qp_ex)
EFIV_CMD_STUB(ibv_cmd_modify_srq)
EFIV_CMD_STUB(ibv_cmd_modify_wq)
EFIV_CMD_STUB(ibv_cmd_open_qp)
EFIV_CMD_STUB(ibv_cmd_open_xrcd)
EFIV_CMD_STUB(ibv_cmd_poll_cq)
EFIV_CMD_STUB(ibv_cmd_post_recv)
EFIV_CMD_STUB(ibv_cmd_post_send)
EFIV_CMD_STUB(ibv_cmd_post_srq_recv)
EFIV_CMD_STUB(ibv_cmd_query_context)
EFIV_CMD_STUB(ibv_cmd_query_device_any)
EFIV_CMD_STUB(ibv_cmd_query_mr)
EFIV_CMD_STUB(ibv_cmd_query_port)
EFIV_CMD_STUB(ibv_cmd_query_qp)
EFIV_CMD_STUB(ibv_cmd_query_srq)
EFIV_CMD_STUB(ibv_cmd_read_counters)
EFIV_CMD_STUB(ibv_cmd_reg_dm_mr)
EFIV_CMD_STUB(ibv_cmd_reg_dmabuf_mr)
EFIV_CMD_STUB(ibv_cmd_reg_mr)
EFIV_CMD_STUB(ibv_cmd_req_notify_cq)
EFIV_CMD_STUB(ibv_cmd_rereg_mr)
EFIV_CMD_STUB(ibv_cmd_resize_cq)
EFIV_CMD_STUB(execute_ioctl)
EFIV_CMD_STUB(verbs_open_device)

/* Set by a provider that can destroy objects of a hot-unplugged device;
 * read by nobody here. */
EFIV_EXPORT bool verbs_allow_disassociate_destroy;

/* unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, link): the
 * attribute count of an ioctl buffer being built; no buffer is ever sent. */
EFIV_EXPORT unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, const void *link);
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, const void *link)
{
	(void)link;
	return num_attrs;
}

/* A provider's context constructor: no context of a provider exists. */
EFIV_EXPORT void *_verbs_init_and_alloc_context(void);
void *_verbs_init_and_alloc_context(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

/* int ibv_read_ibdev_sysfs_file(buf, size, ibdev, fmt, ...): EFI devices
 * have no sysfs directory */
EFIV_EXPORT int ibv_read_ibdev_sysfs_file(void);
int ibv_read_ibdev_sysfs_file(void)
{
	errno = ENOENT;
	return -1;
}

/* Provider logging and context/CQ setup: nothing to log or set up. */
EFIV_EXPORT void __verbs_log(void);
void __verbs_log(void)
{
}

EFIV_EXPORT void verbs_set_ops(void);
void verbs_set_ops(void)
{
}

EFIV_EXPORT void verbs_uninit_context(void);
void verbs_uninit_context(void)
{
}

EFIV_EXPORT void verbs_init_cq(void);
void verbs_init_cq(void)
{
}
