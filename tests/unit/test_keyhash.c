/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_keyhash.c - the keyed key hash: SipHash-2-4 against the reference
 * vectors of its paper, and a key that differs per process.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/keyhash.h"

/* The hash of "lock:order:1" in a new child process. */
static uint64_t
hash_in_child(void)
{
    uint64_t h = 0;
    int fd[2], status;
    pid_t pid;

    assert_int_equal(pipe(fd), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        h = keyhash("lock:order:1", 12);
        _exit(write(fd[1], &h, sizeof(h)) == (ssize_t)sizeof(h) ? 0 : 1);
    }
    close(fd[1]);
    assert_int_equal(read(fd[0], &h, sizeof(h)), (ssize_t)sizeof(h));
    close(fd[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return h;
}

/* Runs first, before this process draws its own key: each child draws
 * one of its own, so a key crafted against one run misses the next. */
static void
key_differs_per_process(void **state)
{
    uint64_t a, b;

    (void)state;
    a = hash_in_child();
    b = hash_in_child();
    assert_true(a != 0 && b != 0);
    assert_true(a != b);
}

static void
siphash_reference_vectors(void **state)
{
    /* key 00..0f, message 00..(n-1): vectors_sip64 of the reference code */
    static const struct {
        size_t n;
        uint64_t h;
    } v[] = {
        { 0, 0x726fdb47dd0e0e31ULL },
        { 1, 0x74f839c593dc67fdULL },
        { 8, 0x93f5f5799a932462ULL },
        { 15, 0xa129ca6149be45e5ULL },
    };
    uint8_t key[16], msg[64];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(key); i++)
        key[i] = (uint8_t)i;
    for (i = 0; i < sizeof(msg); i++)
        msg[i] = (uint8_t)i;
    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        assert_true(keyhash_siphash(key, msg, v[i].n) == v[i].h);
}

static void
keyhash_is_stable_within_a_process_and_never_zero(void **state)
{
    char buf[32];
    uint64_t a = keyhash("lock:1", 6);
    int i, n;

    (void)state;
    assert_true(a == keyhash("lock:1", 6));
    assert_true(a != keyhash("lock:2", 6));
    assert_true(keyhash("", 0) != 0);
    /* every length up to two blocks and a tail: one byte more, another hash */
    for (i = 0; i < 20; i++) {
        memset(buf, 'k', sizeof(buf));
        n = i;
        assert_true(keyhash(buf, (size_t)n) != keyhash(buf, (size_t)n + 1));
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(key_differs_per_process),
        cmocka_unit_test(siphash_reference_vectors),
        cmocka_unit_test(keyhash_is_stable_within_a_process_and_never_zero),
    };

    return cmocka_run_group_tests_name("keyhash", tests, NULL, NULL);
}
