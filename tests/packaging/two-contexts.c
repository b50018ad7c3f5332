/* SPDX-License-Identifier: MIT */
/*
 * two-contexts SECONDS: opens the first EFI device of its instance twice
 * (two libefi contexts in one process), prints "ready PID", holds them for
 * SECONDS and closes them.  t-stats.sh uses it to check that efictl stats
 * --prometheus gives each context series of its own when their pids are
 * the same.  Exits 0, or 1 with a message.
 */
#include <efi/efi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n = 0;
	unsigned secs = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 5;
	struct efi_device **list = efi_get_device_list(&n);
	struct efi_context *a, *b;

	if (!list || n < 1) {
		perror("two-contexts: efi_get_device_list");
		return 1;
	}
	a = efi_open_device(list[0]);
	b = a ? efi_open_device(list[0]) : NULL;
	if (!a || !b) {
		perror("two-contexts: efi_open_device");
		return 1;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	sleep(secs);
	efi_close_device(b);
	efi_close_device(a);
	efi_free_device_list(list);
	return 0;
}
