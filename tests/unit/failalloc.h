/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * failalloc.h - allocation failures on demand, for the unit tests of
 * out-of-memory paths (test_agent, test_alerts).
 *
 * A binary that links failalloc.o is linked with
 * --wrap=malloc,calloc,realloc,strdup (the Makefile's FAILALLOC_TESTS), so
 * every such call from the project's objects goes through the wrappers in
 * failalloc.c, which fail the one chosen and pass the rest to the C
 * library.  The production code is tested as built, with no allocator hook
 * in it; libraries' own allocations (libcurl, jansson) are not wrapped.
 * Arming is per thread: only the test's thread counts, so threads the code
 * under test starts never shift the count.
 */
#ifndef LOCKWATCH_FAILALLOC_H
#define LOCKWATCH_FAILALLOC_H

#include <stdbool.h>

/* Fail the nth allocation from now on this thread (from 1; 0: none), and
 * every strdup of a string equal to strdup_of (NULL: none).  The failed
 * call sets errno to ENOMEM. */
void failalloc_arm(unsigned long nth, const char *strdup_of);

/* Stop failing; true when a failure was injected since failalloc_arm(). */
bool failalloc_disarm(void);

#endif
