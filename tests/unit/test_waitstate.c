/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_waitstate.c - the waiting table written and read back
 * (collectors/waits/waitstate.h): every pair with its bytes (hostile ones
 * too), its state and its time, moved by the time the agent was down;
 * the order kept; a file too old, from the future or of another kind
 * refused whole; a bad line skipped and counted; keep() leaving pairs
 * out; and the file written whole, mode 0600.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "collectors/waits/waiting.h"
#include "collectors/waits/waitstate.h"

#define MONO 9000000            /* a monotonic clock reading, ms */
#define WALL 1767225600000      /* a Unix time, ms */

static const char hostile[] = "lock: \"q\"\n\r%41\0\xff\xfe end";

static struct sample
waiting(const char *key, size_t keylen, const char *owner, const char *holder, bool start)
{
    struct sample s = { .kind = SAMPLE_WAITING, .key = key, .keylen = keylen,
                        .owner = owner, .ownerlen = strlen(owner), .holder = holder,
                        .holderlen = holder != NULL ? strlen(holder) : 0, .start = start,
                        .outcome = SAMPLE_OK };

    return s;
}

struct seen {
    char text[8][128];
    int64_t at[8];
    size_t n;
};

static void
collect(const struct waiting_pair *p, void *arg)
{
    struct seen *s = arg;

    assert_true(s->n < 8);
    snprintf(s->text[s->n], sizeof(s->text[0]), "%.*s|%.*s|%.*s|%s", (int)p->ownerlen,
             p->owner, (int)p->keylen, p->key, (int)p->holderlen, p->holder,
             p->waiting ? "start" : "ok");
    s->at[s->n++] = p->at_ms;
}

/* A table of three pairs, noted at MONO - 5000, - 3000 and - 1000. */
static struct waiting_table *
three(void)
{
    struct waiting_table *t = waiting_new();
    struct sample s;

    assert_non_null(t);
    s = waiting("lock:a", 6, "api-1:7/1", "tok-a", false);
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, MONO - 5000), 0);
    s = waiting(hostile, sizeof(hostile) - 1, "api 2:8/\xc3", NULL, true);
    assert_int_equal(waiting_note(t, &s, 3, MONO - 3000), 0);
    s = waiting("lock:b", 6, "api-1:7/1", NULL, true);
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, MONO - 1000), 0);
    return t;
}

static char *
rendered(const struct waiting_table *t, int64_t mono, int64_t wall, size_t *len)
{
    struct strbuf sb;
    char *text;

    sb_init(&sb, WAITSTATE_FILE_MAX);
    waitstate_render(t, &sb, mono, wall);
    assert_false(sb_failed(&sb));
    text = sb_detach(&sb, len);
    sb_release(&sb);
    return text;
}

static void
test_round_trip(void **state)
{
    struct waiting_table *t = three(), *u = waiting_new();
    struct waitstate_read r;
    struct seen a = { 0 }, b = { 0 };
    char err[256], *text;
    size_t len, i;

    (void)state;
    text = rendered(t, MONO, WALL, &len);
    /* one line each, the bytes a line may not carry escaped */
    assert_non_null(strstr(text, "lockwatch-waiting 1 1767225600000\n5000 lw1 waiting lock:a "
                           "api-1:7/1 tok-a ok\n3000 lw1 waiting lock:%20\"q\"%0A%0D%2541%00"
                           "%FF%FE%20end api%202:8/%C3 - start\n1000 lw1 waiting lock:b "
                           "api-1:7/1 - start\n"));
    /* read back by an agent up 200 s on its monotonic clock, 7 s later
     * on the Unix clock: each pair 7 s older than when it was written */
    assert_int_equal(waitstate_restore(u, text, len, 200000, WALL + 7000, 0, WAITSTATE_MAX_DOWN_MS,
                                       NULL, NULL, &r, err, sizeof(err)), 0);
    assert_int_equal(r.restored, 3);
    assert_int_equal(r.skipped, 0);
    assert_int_equal(r.down_ms, 7000);
    waiting_each(t, collect, &a);
    waiting_each(u, collect, &b);
    assert_int_equal(b.n, 3);
    for (i = 0; i < 3; i++) {
        assert_string_equal(a.text[i], b.text[i]);
        assert_int_equal(MONO - a.at[i], 200000 - b.at[i] - 7000);
    }
    assert_int_equal(waiting_count(u), 3);
    assert_int_equal(waiting_waiting(u), 2);
    free(text);
    waiting_free(t);
    waiting_free(u);
}

static bool
only_lock_b(const char *key, size_t len, void *arg)
{
    (*(int *)arg)++;
    return len == 6 && memcmp(key, "lock:b", 6) == 0;
}

static void
test_keep_and_bad_lines(void **state)
{
    struct waiting_table *t = three(), *u = waiting_new();
    struct waitstate_read r;
    char err[256], *text, *more;
    size_t len;
    int asked = 0;

    (void)state;
    text = rendered(t, MONO, WALL, &len);
    assert_non_null(more = malloc(len + 200));
    /* bad lines: no age, another verb, a hold, a bad escape; a last line
     * without its newline */
    len = (size_t)sprintf(more, "%sx lw1 waiting k o h start\n12 lw1 wait k 5 ok\n"
                          "12 lw1 hold k 5 o h\n12 lw1 waiting k%%G o h start\n\n"
                          "12 lw1 waiting lock:b api-9:1/1 tok-9 ok", text);
    assert_int_equal(waitstate_restore(u, more, len, MONO, WALL, 0, WAITSTATE_MAX_DOWN_MS,
                                       only_lock_b, &asked, &r, err, sizeof(err)), 0);
    assert_int_equal(r.restored, 2);
    assert_int_equal(r.unwatched, 2);
    assert_int_equal(r.skipped, 4);
    assert_int_equal(asked, 4);
    assert_int_equal(waiting_count(u), 2);
    free(text);
    free(more);
    waiting_free(t);
    waiting_free(u);
}

static void
refused(const char *text, int64_t wall, const char *says)
{
    struct waiting_table *u = waiting_new();
    struct waitstate_read r;
    char err[256], *copy = strdup(text);

    assert_int_equal(waitstate_restore(u, copy, strlen(copy), MONO, wall, 0, WAITSTATE_MAX_DOWN_MS,
                                       NULL, NULL, &r, err, sizeof(err)), -1);
    assert_non_null(strstr(err, says));
    assert_int_equal(waiting_count(u), 0);
    free(copy);
    waiting_free(u);
}

static void
test_refused_whole(void **state)
{
    static const char one[] = "lockwatch-waiting 1 1767225600000\n"
                              "10 lw1 waiting lock:a o h start\n";

    (void)state;
    refused(one, WALL + 60001, "written 60 s ago, more than 60 s");
    refused(one, WALL - 60001, "in the future: the clock stepped");
    refused("lockwatch-waiting 2 1767225600000\n", WALL, "not a waiting table of this version");
    refused("", WALL, "not a waiting table");
    refused("lockwatch-waiting 1 \n", WALL, "its header has no time");
    refused("lockwatch-waiting 1 17672256x\n", WALL, "its header has no time");
}

static void
test_within_limits(void **state)
{
    static const char one[] = "lockwatch-waiting 1 1767225600000\n"
                              "10 lw1 waiting lock:a o h start\n";
    struct waiting_table *u = waiting_new();
    struct waitstate_read r;
    char err[256], *copy = strdup(one);

    (void)state;
    /* a minute down exactly; and a clock a little behind the writer's */
    assert_int_equal(waitstate_restore(u, copy, strlen(copy), MONO, WALL + 60000, 0, WAITSTATE_MAX_DOWN_MS, NULL, NULL, &r, err,
                                       sizeof(err)), 0);
    assert_int_equal(r.restored, 1);
    free(copy);
    copy = strdup(one);
    assert_int_equal(waitstate_restore(u, copy, strlen(copy), MONO, WALL - 5000, 0, WAITSTATE_MAX_DOWN_MS, NULL, NULL, &r, err,
                                       sizeof(err)), 0);
    assert_int_equal(r.down_ms, 0);
    free(copy);
    /* written 2 minutes ago, touched (unchanged since) a second ago: read
     * back, its ages moved by the 2 minutes since the write */
    copy = strdup(one);
    waiting_free(u);
    u = waiting_new();
    assert_int_equal(waitstate_restore(u, copy, strlen(copy), MONO, WALL + 120000,
                                       WALL + 119000, WAITSTATE_MAX_DOWN_MS, NULL, NULL, &r,
                                       err, sizeof(err)), 0);
    assert_int_equal(r.restored, 1);
    assert_int_equal(r.down_ms, 120000);
    free(copy);
    waiting_free(u);
}

static void
test_file(void **state)
{
    char dir[] = "/tmp/test_waitstate.XXXXXX", path[256], err[256], *back;
    struct stat st;
    int64_t mtime;
    size_t len;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/waiting", dir);
    assert_null(waitstate_load_file(path, &len, &mtime, err, sizeof(err)));
    assert_int_equal(waitstate_save_file(path, "lockwatch-waiting 1 5\n", 22, err,
                                         sizeof(err)), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_non_null(back = waitstate_load_file(path, &len, &mtime, err, sizeof(err)));
    assert_int_equal(len, 22);
    assert_string_equal(back, "lockwatch-waiting 1 5\n");
    free(back);
    /* a second write replaces it whole, no temporary left */
    assert_int_equal(waitstate_save_file(path, "x", 1, err, sizeof(err)), 0);
    assert_non_null(back = waitstate_load_file(path, &len, &mtime, err, sizeof(err)));
    assert_string_equal(back, "x");
    free(back);
    snprintf(path, sizeof(path), "%s/waiting.tmp", dir);
    assert_int_equal(access(path, F_OK), -1);
    /* a directory that is not there: said with the temporary's path */
    assert_int_equal(waitstate_save_file("/nonexistent-dir/waiting", "x", 1, err, sizeof(err)),
                     -1);
    assert_string_equal(err, "/nonexistent-dir/waiting.tmp: No such file or directory");
    snprintf(path, sizeof(path), "%s/waiting", dir);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_keep_and_bad_lines),
        cmocka_unit_test(test_refused_whole),
        cmocka_unit_test(test_within_limits),
        cmocka_unit_test(test_file),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
