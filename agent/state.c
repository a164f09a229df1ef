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
#include <unistd.h>

#include "collectors/locks/lockclass.h"
#include "collectors/locks/lockstate.h"
#include "collectors/waits/waitstate.h"
#include "collectors/waits/waitstats.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/strbuf.h"

/* A key some target's patterns take: its scans will vouch for a holding
 * that ended while the agent was down.  A pair of a key only lines know
 * of is not read back: if it ended unseen, nothing would ever say so (a
 * false deadlock that would outlive every restart). */
static bool
watched(const char *key, size_t len, void *arg)
{
    const struct config *cfg = arg;
    size_t i;

    for (i = 0; i < cfg->ntargets; i++)
        if (lockstate_in_patterns(&cfg->targets[i], key, len) &&
            !lock_key_excluded(&cfg->targets[i], key, len))
            return true;
    return false;
}

void
agent_state_load(struct agent *a)
{
    const char *path = a->cfg->samples_state_file;
    struct waitstate_read r;
    char err[512], *text;
    size_t len;

    if (a->waits == NULL || path == NULL)
        return;
    if ((text = waitstate_load_file(path, &len, err, sizeof(err))) == NULL) {
        if (errno != ENOENT)
            log_warnx("[samples] state_file %s; the waiting table starts empty", err);
        return;
    }
    if (waitstats_waiting_restore(a->waits, text, len, clock_mono_ms(), clock_now_ms(),
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
    ssize_t n = 0;
    int fd;

    if (a->state_path != NULL && strcmp(a->state_path, path) == 0)
        return !a->state_refused;
    free(a->state_path);
    a->state_path = strdup(path);
    a->state_refused = false;
    if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)) != -1) {
        n = read(fd, head, sizeof(head));
        (void)close(fd);
    }
    if (n > 0 && ((size_t)n < sizeof(head) || memcmp(head, WAITSTATE_MAGIC, sizeof(head)) != 0)) {
        log_warnx("[samples] state_file %s holds something other than a waiting table; it is "
                  "not written (point state_file at a file of its own)", path);
        a->state_refused = true;
    }
    if (a->state_path == NULL)
        a->state_refused = false;       /* ENOMEM: checked again next time */
    return !a->state_refused;
}

void
agent_state_save(struct agent *a)
{
    const char *path = a->cfg->samples_state_file;
    struct strbuf sb;
    char err[512];
    int rc;

    if (a->waits == NULL || path == NULL || !may_write(a, path))
        return;
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
}

void
agent_state_free(struct agent *a)
{
    free(a->state_path);
    a->state_path = NULL;
}
