/* SPDX-License-Identifier: MIT */
/*
 * Crash points for tests: with EFID_FAULT=OP:STEP in its environment, efid
 * kills itself (SIGKILL, nothing flushed or cleaned up) when operation OP
 * ("attach" or "detach") reaches step STEP, so that a test can show that a
 * restart after a crash at any step leaves kernel and records agreeing
 * (tests/integration/t-crash.sh).  Without the variable it costs a branch.
 *
 *   attach: 1 intent committed, 2 kernel side made, 3 recorded (not
 *           committed), 4 committed
 *   detach: 1 intent committed, 2 kernel side removed, 3 record deleted
 *           (committed)
 */
#ifndef EFID_FAULT_H
#define EFID_FAULT_H

#include <stdbool.h>

void fault_point(const char *op, int step);
/* True when EFID_FAULT names this failure ("detach-write": the write that
 * records a finished detach fails as on a full disk). */
bool fault_fails(const char *what);

#endif
