/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by test_store.c and test_store_faults.c.  Every test gets
 * its own directory (store_test_dir, made by make_tmpdir as a checked
 * fixture) under one base directory that store_test_run removes after all
 * tests: a failing check test exits its forked process at once, without
 * running teardown.
 */
#ifndef EFI_TESTS_STORE_TESTUTIL_H
#define EFI_TESTS_STORE_TESTUTIL_H

#include <check.h>
#include <stddef.h>

#include "efid/store.h"

extern char store_test_basedir[128];
extern char store_test_dir[256];

void make_tmpdir(void);
void remove_tmpdir(void);
void remove_tree(const char *dir);
/* store_test_dir/name, in one of 16 rotating buffers. */
const char *tmp_path(const char *name);

/* Whole-file bytes (malloc'ed), writing, and comparing. */
char *slurp(const char *path, size_t *len);
void spit(const char *path, const void *data, size_t len);
void assert_same_bytes(const char *path, const char *before, size_t before_len);
void copy_file(const char *from, const char *to);
/* $FIXTURES/name (set by make check), else the source tree's fixtures. */
const char *fixture(const char *name);

/* On a connection of their own: the first column of the first row as an
 * integer (-1 when there is no row), and statements without results. */
long long raw_int(const char *path, const char *sql);
void raw_exec(const char *path, const char *sql);

struct efi_addr addr(const char *text, int prefixlen);
/* A veth on br0, MTU 1500, with up to two addresses (NULL for none). */
struct store_iface iface(const char *instance, const char *name, const char *host,
			 const char *a1, int p1, const char *a2, int p2);
void assert_addr(const struct efi_addr *a, const char *text, int prefixlen);
struct store *open_ok(const char *path);
union efi_gid gid_of(const char *text);

/* Runs the suite in a fresh base directory; returns the exit status. */
int store_test_run(Suite *suite);

#endif
