/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * waitstate.c - the waiting table written to a file and read back
 * (waitstate.h).
 */
#include "collectors/waits/waitstate.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collectors/waits/samples.h"
#include "common/keytext.h"

#define HEADER WAITSTATE_MAGIC "1 "
#define CLOCK_STEP_MS 60000     /* a write this far in the future: a clock stepped */

struct render {
    struct strbuf *sb;
    int64_t mono_ms;
};

/* One field percent-encoded into sb ("-" when empty). */
static void
add_field(struct strbuf *sb, const char *p, size_t len)
{
    char one[3 * 256 + 1];
    size_t i, n;

    if (len == 0) {
        sb_add(sb, "-", 1);
        return;
    }
    for (i = 0; i < len; i += n) {
        n = len - i < 256 ? len - i : 256;
        sb_add(sb, one, keytext_percent(one, sizeof(one), p + i, n));
    }
}

static void
render_pair(const struct waiting_pair *p, void *arg)
{
    struct render *r = arg;
    int64_t age = r->mono_ms - p->at_ms;

    sb_addf(r->sb, "%" PRId64 " lw1 waiting ", age > 0 ? age : 0);
    add_field(r->sb, p->key, p->keylen);
    sb_add(r->sb, " ", 1);
    add_field(r->sb, p->owner, p->ownerlen);
    sb_add(r->sb, " ", 1);
    add_field(r->sb, p->holder, p->holderlen);
    sb_adds(r->sb, p->waiting ? " start\n" : " ok\n");
}

void
waitstate_render(const struct waiting_table *t, struct strbuf *sb, int64_t mono_ms,
                 int64_t wall_ms)
{
    struct render r = { sb, mono_ms };

    sb_addf(sb, HEADER "%" PRId64 "\n", wall_ms);
    waiting_each(t, render_pair, &r);
}

/* A decimal of at most 18 digits at *p, which moves past it; -1 when none. */
static int64_t
number(char **p, char *end)
{
    int64_t v = 0;
    char *s = *p;

    while (s < end && *s >= '0' && *s <= '9' && s - *p < 18)
        v = v * 10 + (*s++ - '0');
    if (s == *p)
        return -1;
    *p = s;
    return v;
}

/* The header's write time, or -1 with err. */
static int64_t
header(char **p, char *end, char *err, size_t errlen)
{
    size_t n = sizeof(HEADER) - 1;
    int64_t written;

    if ((size_t)(end - *p) < n || memcmp(*p, HEADER, n) != 0) {
        snprintf(err, errlen, "not a waiting table of this version (no \"%.*s\" header)",
                 (int)n - 1, HEADER);
        return -1;
    }
    *p += n;
    if ((written = number(p, end)) < 0 || *p == end || **p != '\n') {
        snprintf(err, errlen, "its header has no time");
        return -1;
    }
    (*p)++;
    return written;
}

/* One pair line (its terminator replaced by NUL, len bytes): 1 set, 0
 * left out (keep), -1 not a pair. */
static int
restore_line(struct waiting_table *t, char *line, size_t len, int64_t mono_ms, int64_t down_ms,
             waitstate_keep_fn keep, void *arg)
{
    char *p = line, *end = line + len;
    int64_t age = number(&p, end);
    struct sample s;

    if (age < 0 || p == end || *p != ' ')
        return -1;
    p++;
    if (samples_parse_line(p, (size_t)(end - p), &s) == -1 || s.kind != SAMPLE_WAITING)
        return -1;
    if (keep != NULL && !keep(s.key, s.keylen, arg))
        return 0;
    return waiting_restore(t, &s, mono_ms - age - down_ms) == 0 ? 1 : -1;
}

int
waitstate_restore(struct waiting_table *t, char *text, size_t len, int64_t mono_ms,
                  int64_t wall_ms, int64_t touched_ms, int64_t max_down_ms,
                  waitstate_keep_fn keep, void *arg, struct waitstate_read *r, char *err,
                  size_t errlen)
{
    char *p = text, *end = text + len, *nl;
    int64_t written, since;

    memset(r, 0, sizeof(*r));
    if ((written = header(&p, end, err, errlen)) < 0)
        return -1;
    /* current until it was last touched, its ages as of the write */
    since = wall_ms - (touched_ms > written ? touched_ms : written);
    r->down_ms = wall_ms - written;
    if (since > max_down_ms) {
        snprintf(err, errlen, "written %" PRId64 " s ago, more than %" PRId64 " s: the waits "
                 "and holdings it knew may have ended unseen", since / 1000,
                 max_down_ms / 1000);
        return -1;
    }
    if (r->down_ms < -CLOCK_STEP_MS) {
        snprintf(err, errlen, "written %" PRId64 " s in the future: the clock stepped",
                 -r->down_ms / 1000);
        return -1;
    }
    if (r->down_ms < 0)
        r->down_ms = 0;
    for (; p < end; p = nl + 1) {
        if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
            nl = end;   /* a last line cut short: it may still parse */
        *nl = '\0';
        if (nl == p)
            continue;
        switch (restore_line(t, p, (size_t)(nl - p), mono_ms, r->down_ms, keep, arg)) {
        case 1:
            r->restored++;
            break;
        case 0:
            r->unwatched++;
            break;
        default:
            r->skipped++;
        }
    }
    return 0;
}

int
waitstate_save_file(const char *path, const char *buf, size_t len, char *err, size_t errlen)
{
    char tmp[4096];
    size_t off = 0;
    int fd, e;

    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp)) {
        snprintf(err, errlen, "%s: the path is too long", path);
        return -1;
    }
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK,
                   0600)) == -1) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        return -1;
    }
    while (off < len) {
        ssize_t n = write(fd, buf + off, len - off);

        if (n == -1 && errno == EINTR)
            continue;
        if (n <= 0)
            goto fail;
        off += (size_t)n;
    }
    if (fsync(fd) == -1)
        goto fail;
    if (close(fd) == -1) {
        fd = -1;
        goto fail;
    }
    if (rename(tmp, path) == -1) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        (void)unlink(tmp);
        return -1;
    }
    return 0;
fail:
    e = errno != 0 ? errno : EIO;
    if (fd != -1)
        (void)close(fd);
    (void)unlink(tmp);
    snprintf(err, errlen, "%s: %s", tmp, strerror(e));
    return -1;
}

int
waitstate_touch_file(const char *path, char *err, size_t errlen)
{
    if (utimensat(AT_FDCWD, path, NULL, AT_SYMLINK_NOFOLLOW) == -1) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

char *
waitstate_load_file(const char *path, size_t *len, int64_t *mtime_ms, char *err,
                    size_t errlen)
{
    struct stat st;
    char *buf;
    size_t off = 0;
    int fd, e;

    /* O_NONBLOCK: a FIFO there must not hang the agent's start */
    if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)) == -1) {
        e = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        errno = e;
        return NULL;
    }
    errno = 0;
    if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) || st.st_size > WAITSTATE_FILE_MAX) {
        e = errno;
        snprintf(err, errlen, "%s: %s", path, e != 0 ? strerror(e) : !S_ISREG(st.st_mode)
                 ? "not a regular file" : "larger than any waiting table");
        (void)close(fd);
        errno = EINVAL;
        return NULL;
    }
    if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
        snprintf(err, errlen, "%s: out of memory", path);
        (void)close(fd);
        return NULL;
    }
    while (off < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + off, (size_t)st.st_size - off);

        if (n == -1 && errno == EINTR)
            continue;
        if (n == -1) {
            e = errno;
            snprintf(err, errlen, "%s: %s", path, strerror(e));
            free(buf);
            (void)close(fd);
            errno = e;
            return NULL;
        }
        if (n == 0)
            break;      /* shorter than it was: what was read */
        off += (size_t)n;
    }
    (void)close(fd);
    buf[off] = '\0';
    *len = off;
    *mtime_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
    return buf;
}
