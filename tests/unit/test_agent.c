/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_agent.c - the agent's --once path (agent_scan_once) when memory
 * runs out: every allocation it makes on the calling thread is failed in
 * turn, and each run must end in a clean -1 with errno ENOMEM and an
 * empty view, or in a whole view, with nothing leaked (LSan checks that
 * under SANITIZE=address).
 *
 * The failures are injected by the linker (tests/unit/failalloc.h).  Only
 * the thread that armed the injection is counted: the scans run on
 * threads of their own, and whether those fail is the scanner's business.
 *
 * The targets are two ports on 127.0.0.1 that refuse connections, in one
 * [redlock] group, so each scan fails at once and the group comparison
 * runs too; no Redis is needed.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/agent.h"
#include "tests/unit/failalloc.h"

#define TARGET_A "once-a"

static int
setup(void **state)
{
    static const char text[] =
        "[agent]\n"
        "samples = off\n"
        "[target " TARGET_A "]\n"
        "url = redis://127.0.0.1:1\n"
        "patterns = lock:*\n"
        "connect_timeout = 1s\n"
        "[target once-b]\n"
        "url = redis://127.0.0.1:9\n"
        "patterns = lock:*\n"
        "connect_timeout = 1s\n"
        "[redlock pair]\n"
        "targets = " TARGET_A ", once-b\n";
    char path[] = "/tmp/lw-test-agent-XXXXXX", err[512];
    struct config *cfg = NULL;
    int fd, rc;

    fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)(sizeof(text) - 1));
    assert_int_equal(close(fd), 0);
    rc = config_load(path, &cfg, err, sizeof(err));
    unlink(path);
    if (rc == -1)
        fail_msg("config: %s", err);
    *state = cfg;
    return 0;
}

static int
teardown(void **state)
{
    config_free(*state);
    return 0;
}

static void
assert_empty(const struct view *v)
{
    assert_null(v->targets);
    assert_int_equal(v->ntargets, 0);
    assert_null(v->groups);
    assert_int_equal(v->ngroups, 0);
}

/* The crash this guards against: the copy of a target's name in the view
 * failed, and the group comparison then gave NULL to strcmp. */
static void
once_reports_enomem_when_a_target_name_cannot_be_copied(void **state)
{
    const struct config *cfg = *state;
    struct view v;
    int rc;

    failalloc_arm(0, TARGET_A);
    errno = 0;
    rc = agent_scan_once(cfg, &v);
    assert_true(failalloc_disarm());
    assert_int_equal(rc, -1);
    assert_int_equal(errno, ENOMEM);
    assert_empty(&v);
}

static void
once_without_a_failure_scans_every_target(void **state)
{
    const struct config *cfg = *state;
    struct view v;
    size_t i;

    assert_int_equal(agent_scan_once(cfg, &v), 2);     /* both ports refuse */
    assert_int_equal(v.ntargets, 2);
    for (i = 0; i < v.ntargets; i++) {
        assert_non_null(v.targets[i].name);
        assert_non_null(v.targets[i].snap);
        assert_false(v.targets[i].snap->ok);
    }
    assert_int_equal(v.ngroups, 1);
    assert_string_equal(v.groups[0].name, "pair");
    assert_non_null(v.groups[0].report);
    view_release(&v);
}

static void
once_survives_every_allocation_failing_in_turn(void **state)
{
    const struct config *cfg = *state;
    struct view v;
    long nth;
    int rc;

    for (nth = 1; nth < 100000; nth++) {
        failalloc_arm((unsigned long)nth, NULL);
        errno = 0;
        rc = agent_scan_once(cfg, &v);
        if (!failalloc_disarm()) {                  /* past the last allocation */
            assert_int_equal(rc, 2);
            view_release(&v);
            break;
        }
        if (rc == -1) {
            assert_int_equal(errno, ENOMEM);
            assert_empty(&v);
        } else {
            /* a failure the scan absorbs: a target with no snapshot */
            assert_int_equal(rc, 2);
            assert_int_equal(v.ntargets, 2);
            assert_non_null(v.targets[0].name);
            assert_non_null(v.targets[1].name);
            view_release(&v);
        }
    }
    assert_true(nth > 3);       /* the sweep did fail allocations */
    assert_true(nth < 100000);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(once_without_a_failure_scans_every_target),
        cmocka_unit_test(once_reports_enomem_when_a_target_name_cannot_be_copied),
        cmocka_unit_test(once_survives_every_allocation_failing_in_turn),
    };

    return cmocka_run_group_tests_name("agent", tests, setup, teardown);
}
