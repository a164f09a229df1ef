/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * state.c - [samples] state_file (state.h).
 */
#include "agent/state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collectors/locks/lockclass.h"
#include "collectors/locks/lockstate.h"
#include "collectors/waits/waitstate.h"
#include "collectors/waits/waitstats.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/strbuf.h"

static bool
takes(const struct target_conf *t, const char *key, size_t len)
{
    return lockstate_in_patterns(t, key, len) && !lock_key_excluded(t, key, len);
}

/* A key some target of this agent takes, and no other shard's: its scans
 * will vouch for a holding that ended while the agent was down.  A pair of
 * a key only lines know of (or another shard's scans, which this agent
 * does not see) is not read back: if it ended unseen, nothing would ever
 * say so (a false deadlock that would outlive every restart). */
static bool
watched(const char *key, size_t len, void *arg)
{
    const struct config *cfg = arg;
    bool here = false;
    size_t i;

    for (i = 0; i < cfg->ntargets && !here; i++)
        here = takes(&cfg->targets[i], key, len);
    for (i = 0; i < cfg->naway && here; i++)
        if (takes(&cfg->away[i], key, len))
            return false;
    return here;
}

void
agent_state_load(struct agent *a)
{
    const char *path = a->cfg->samples_state_file;
    struct waitstate_read r;
    char err[512], *text;
    int64_t touched;
    size_t len;

    if (path != NULL && a->waits == NULL)
        log_warnx("[samples] state_file is set, but samples = off: there is no waiting "
                  "table to keep");
    if (a->waits == NULL || path == NULL)
        return;
    if ((text = waitstate_load_file(path, &len, &touched, err, sizeof(err))) == NULL) {
        if (errno != ENOENT)
            log_warnx("[samples] state_file %s; the waiting table starts empty", err);
        return;
    }
    if (waitstats_waiting_restore(a->waits, text, len, clock_mono_ms(), clock_now_ms(), touched,
                                  watched, a->cfg, &r, err, sizeof(err)) == -1)
        log_warnx("[samples] state_file %s: %s; the waiting table starts empty", path, err);
    else
        log_info("[samples] state_file %s: %zu waiting pair(s) read back, written %lld s "
                 "before; %zu of keys no target watches left out%s", path, r.restored,
                 (long long)(r.down_ms / 1000), r.unwatched,
                 r.skipped > 0 ? " (some lines did not parse and were skipped)" : "");
    free(text);
}

/* Before the first write to path: a file there must be a waiting table
 * (or empty), or it is never written (a state_file pointed at another
 * file must not destroy it). */
static bool
may_write(struct agent *a, const char *path)
{
    char head[sizeof(WAITSTATE_MAGIC) - 1];
    const char *why = NULL;
    struct stat st;
    ssize_t n = 0;
    int fd;

    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        why = S_ISLNK(st.st_mode) ? "is a symbolic link" : "is not a regular file";
    } else if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)) != -1) {
        n = read(fd, head, sizeof(head));
        (void)close(fd);
        if (n > 0 && ((size_t)n < sizeof(head) ||
                      memcmp(head, WAITSTATE_MAGIC, sizeof(head)) != 0))
            why = "holds something other than a waiting table";
    }
    /* said once per path and refusal, checked at every write: a file
     * removed or replaced is written again */
    if (why != NULL && (!a->state_refused || a->state_path == NULL ||
                        strcmp(a->state_path, path) != 0))
        log_warnx("[samples] state_file %s %s; it is not written (point state_file at a "
                  "file of its own)", path, why);
    if (a->state_path == NULL || strcmp(a->state_path, path) != 0) {
        free(a->state_path);
        a->state_path = strdup(path);
        a->state_written = false;       /* another file (a reload): written, not touched */
    }
    a->state_refused = why != NULL;
    return !a->state_refused;
}

void
agent_state_save(struct agent *a)
{
    const char *path = a->cfg->samples_state_file;
    struct strbuf sb;
    uint64_t changes;
    char err[512];
    int rc;

    if (a->waits == NULL || path == NULL || !may_write(a, path))
        return;
    changes = waitstats_waiting_changes(a->waits);
    if (!a->state_failing && changes == a->state_changes && a->state_written &&
        waitstate_touch_file(path, err, sizeof(err)) == 0)
        return;         /* unchanged: the file is still current, said by its time */
    sb_init(&sb, WAITSTATE_FILE_MAX);
    waitstats_waiting_render(a->waits, &sb, clock_mono_ms(), clock_now_ms());
    if (sb_failed(&sb)) {
        (void)snprintf(err, sizeof(err), "%s: out of memory", path);
        rc = -1;
    } else {
        rc = waitstate_save_file(path, sb.buf, sb.len, err, sizeof(err));
    }
    sb_release(&sb);
    if (rc == -1 && !a->state_failing)
        log_warnx("[samples] state_file: cannot write %s; a restart now forgets who waits for "
                  "and holds what (said once, until a write works)", err);
    else if (rc == 0 && a->state_failing)
        log_info("[samples] state_file %s: written again", path);
    a->state_failing = rc == -1;
    a->state_written = rc == 0;
    a->state_changes = changes;
}

void
agent_state_free(struct agent *a)
{
    free(a->state_path);
    a->state_path = NULL;
}
