/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * release.c - lockctl release and lockctl expire: the guarded changes.
 *
 * Both hand the whole decision to the script in collectors/release/release.c: the
 * checks lockctl makes here (reading the lock for the prompt) are only
 * there to show the operator what they are about to do, and could be
 * stale by the time they answer.  The script re-checks everything
 * atomically and refuses, with its reason, when the lock changed.
 *
 * A terminal gets a prompt; anything else must say --yes (exit 2
 * otherwise), so a script or a pipe never releases a lock by accident.
 * --dry-run runs every guard in the script and changes nothing: no
 * prompt, no audit entry.  --if-leaked is list --state leaked's
 * definition (refuse_not_leaked()).  For it, for --if-older-than and for
 * the prompt, the agent is asked what only it knows (agent.c): since when
 * the lock has had no TTL, and how long its holder has held it.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/lockctl.h"
#include "collectors/redis/conn.h"
#include "collectors/locks/lockstate.h"
#include "collectors/locks/snapshot.h"
#include "collectors/release/aclhint.h"
#include "collectors/release/release.h"
#include "common/keytext.h"
#include "common/strbuf.h"

#include "cli/release_impl.h"

/* Is holder (n bytes) among the holders read?  One cut at the read's cap
 * (HOLDER_ID_MAX - 1 bytes) is holder when those bytes begin it, as the
 * agent's tracker tells holders apart (verdict_same_holder()): so
 * --if-leaked judges a long holder as list and show do; the script checks
 * the whole holder atomically. */
static bool
holds(const struct cli_lock *l, const char *holder, size_t n)
{
    for (size_t i = 0; i < l->view.nholders; i++) {
        const struct lock_holder *h = &l->view.holders[i];

        if (h->id_truncated ? n > h->idlen && memcmp(h->id, holder, h->idlen) == 0
            : h->idlen == n && memcmp(h->id, holder, n) == 0)
            return true;
    }
    return false;
}

/* Did the read see every holder whole (no holder past the read cap, no
 * id cut short)?  Only then is "not among them" a fact to refuse on. */
static bool
holders_complete(const struct cli_lock *l)
{
    if (l->value_truncated || l->view.holders_total != l->view.nholders)
        return false;
    for (size_t i = 0; i < l->view.nholders; i++)
        if (l->view.holders[i].id_truncated)
            return false;
    return true;
}

/* p[0..n), terminal-safe and whole (prompts, outcomes and refusals are
 * wrapped, never cut); malloc'd ("?" on ENOMEM). */
static char *
shown(const char *p, size_t n)
{
    char *safe = table_safe_text(p, n, NULL);

    return safe != NULL ? safe : strdup("?");
}

/* A holder as shown(): "hex:..." when its bytes are not text (out_holder). */
static char *
holder_shown(const char *p, size_t n)
{
    size_t cap = OUT_HOLDER_MAX(n);
    char *text = malloc(cap), *safe;

    if (text == NULL)
        return strdup("?");
    safe = shown(text, out_holder(p, n, text, cap));
    free(text);
    return safe;
}

#define NEXT_HOLDERS_MAX 3      /* current holders offered a command */

/* What to paste instead: command (release / expire) on the same key for
 * holder h, with extra words (e.g. "--ttl", "30s"). */
static void
next_line(struct pasteline *pl, const struct lockctl *lc, const struct change *ch,
          const char *cmd, const char *holder, size_t holderlen, const char *const *extra)
{
    paste_init(pl, lc, cmd);
    paste_key_holder(pl, ch->key, ch->keylen, holder, holderlen);
    for (; extra != NULL && *extra != NULL; extra++)
        paste_word(pl, *extra);
}

/* next_line() as one string (JSON's hint), malloc'd; NULL when it cannot
 * be pasted (or ENOMEM). */
static char *
next_text(const struct lockctl *lc, const struct change *ch, const char *cmd,
          const char *const *extra)
{
    struct pasteline pl;
    char *line;

    next_line(&pl, lc, ch, cmd, ch->holder, ch->holderlen, extra);
    line = pl.failed ? NULL : paste_text(&pl);
    paste_release(&pl);
    return line;
}

/* next_line(), printed to stderr. */
static void
next_command(const struct lockctl *lc, const struct change *ch, const char *cmd,
             const char *holder, size_t holderlen, const char *const *extra)
{
    struct pasteline pl;

    next_line(&pl, lc, ch, cmd, holder, holderlen, extra);
    if (pl.failed)
        table_line(stderr, lockctl_width(lc), "no %s command: %s", cmd, pl.why);
    else
        paste_print(stderr, &pl, lockctl_width(lc));
    paste_release(&pl);
}

/* The holders l has now, each with the command that releases it: the
 * next step after a --holder that does not hold the lock. */
static void
current_holders(const struct lockctl *lc, const struct change *ch, const struct cli_lock *l)
{
    size_t n = l->view.nholders;

    if (l->type == RAW_HASH && n == 0) {
        table_line(stderr, lockctl_width(lc), "next: nothing lockctl can release; lockctl "
                   "show KEY says how to read its fields, and what is left to do");
        return;
    }
    if (l->type == RAW_NONE || n == 0) {
        table_line(stderr, lockctl_width(lc), "next: nothing to release: the key %s",
                   l->type == RAW_NONE ? "is gone" : "names no holder lockctl can read");
        return;
    }
    for (size_t i = 0; i < n && i < NEXT_HOLDERS_MAX; i++) {
        const struct lock_holder *h = &l->view.holders[i];
        char *who = holder_shown(h->id, h->idlen);

        /* an id longer than the read keeps is shown cut, and has no
         * command: the release needs it whole (an on-call trial) */
        if (h->id_truncated) {
            char cli[600];

            session_redis_cli(lc, cli, sizeof(cli));
            table_line(stderr, lockctl_width(lc), "next: it is held by %s\xe2\x80\xa6 now (an "
                       "id longer than the %d bytes lockctl reads); if that is the one to free, "
                       "read it whole with %s %s KEY, then %s it with --holder and the whole id",
                       who ? who : "?", HOLDER_ID_MAX - 1, cli,
                       l->type == RAW_HASH ? "HKEYS" : l->type == RAW_ZSET ? "ZRANGE" : "GET",
                       ch->cmd);
        } else {
            table_line(stderr, lockctl_width(lc), "next: it is held by %s now; if that is the "
                       "one to free, %s it with:", who ? who : "?", ch->cmd);
        }
        free(who);
        if (!h->id_truncated)
            next_command(lc, ch, ch->cmd, h->id, h->idlen,
                         ch->action == RELEASE_ACTION_EXPIRE ?
                         (const char *const[]){ "--ttl", "30s", NULL } : NULL);
    }
    if (l->view.holders_total > NEXT_HOLDERS_MAX)
        table_line(stderr, lockctl_width(lc), "(%zu holders in all: lockctl show KEY lists "
                   "them)", l->view.holders_total);
}

/*
 * A --holder that does not hold the lock as it was just read: refused
 * before the prompt (asking "release it?" about a holder that is not
 * there, then blaming a change of hands, helps nobody), with the holder
 * it has now and the command for that one.  Nothing ran, so nothing is
 * audited; with --yes or --dry-run the script decides and audits as ever.
 */
static int
refuse_wrong_holder(const struct lockctl *lc, const struct change *ch, const struct cli_lock *l)
{
    char addr[300], *key = shown(ch->key, ch->keylen);
    char *holder = holder_shown(ch->holder, ch->holderlen);

    session_address(lc, addr, sizeof(addr));
    lockctl_warnx("%s %s on target %s (%s): refused before asking: %s does not hold it now; "
                  "nothing was changed [%s]", ch->cmd, key ? key : "?", lc->t->name, addr,
                  holder ? holder : "?", release_outcome_str(RELEASE_REFUSED_HOLDER));
    out_error_hint("lockctl show KEY names the holder it has now and ends with the command "
                   "that releases it");
    current_holders(lc, ch, l);
    free(key);
    free(holder);
    return LOCKCTL_REFUSED;
}

/*
 * The node of the key moved while the prompt waited (a Sentinel or
 * Cluster failover): what was shown and confirmed was another server's,
 * and the old primary may still take writes until it is demoted, then
 * lose them.  Refused before any write; the same command asks the new one.
 */
static int
refuse_moved(const struct lockctl *lc, const struct change *ch, const char *was,
             const char *now)
{
    char *key = shown(ch->key, ch->keylen);

    lockctl_warnx("%s %s on target %s: refused after asking: while you confirmed, the node "
                  "serving it moved from %s to %s (a failover); nothing was changed",
                  ch->cmd, key ? key : "?", lc->t->name, was, now);
    out_error_hint("run the same command again: it reads the lock on %s and asks again", now);
    free(key);
    return LOCKCTL_REFUSED;
}

/* The format-table row of release-table row name (the script names the
 * row it used by its format's name); NULL for none. */
static const struct lock_format *
release_row(const char *name)
{
    return name != NULL && name[0] != '\0' ? formats_by_name(name) : NULL;
}

/* Does a release of row f wake waiters (its release_wakes column)? */
static bool
row_wakes(const struct lock_format *f)
{
    return f != NULL && (f->release_wakes == FMT_RWAKES_ALL ||
                         f->release_wakes == FMT_RWAKES_MODE);
}

/* What a done release did, in one sentence worded for its row: the
 * waiters only where the row has a wake-up. */
static void
released_line(const struct lockctl *lc, const struct release_result *res)
{
    const struct lock_format *f = release_row(res->format);
    const char *woken = row_wakes(f) ? ", and its waiters woken" : "";

    if (f != NULL && f->semaphore != FMT_SEM_NO)
        table_line(stdout, lockctl_width(lc), "released: one permit given back (%s)%s",
                   res->format, woken);
    else if (res->holders_left > 0)
        table_line(stdout, lockctl_width(lc), "released: that holder's hold was removed; "
                   "%lld other holder(s) still hold it (%s)%s", res->holders_left, res->format,
                   f != NULL && f->release_wakes == FMT_RWAKES_MODE ? ", and its waiters woken "
                   "if it turned from write to read" : "");
    else if (res->holders_left == 0)
        table_line(stdout, lockctl_width(lc), "released: the key was deleted, no holder being "
                   "left (%s)%s", res->format, woken);
    else
        table_line(stdout, lockctl_width(lc), "released: that holder's hold was removed (%s)%s",
                   res->format, woken);
}

/* Holders a release of one holder would leave, as the lock was read (the
 * script's guard found that holder there): -1 when not known. */
static long long
would_leave(const struct cli_lock *read)
{
    if (read == NULL || read->type == RAW_NONE || read->view.holders_total == 0)
        return -1;
    return (long long)read->view.holders_total - 1;
}

/* What a dry run's release would do, worded for the lock as read: a
 * permit given back, a hold removed with others left, or the key deleted
 * (an on-call trial: "would delete the lock" of a read lock two readers
 * held, which the release then did not). */
static void
would_line(const struct lockctl *lc, const struct release_result *res,
           const struct cli_lock *read)
{
    const struct lock_format *f = read != NULL ? read->fmt : NULL;
    long long left = would_leave(read);

    if (f != NULL && f->semaphore != FMT_SEM_NO)
        table_line(stdout, lockctl_width(lc), "dry run: every guard holds, a release would give "
                   "one permit back (%s); nothing was changed", f->name);
    else if (left > 0)
        table_line(stdout, lockctl_width(lc), "dry run: every guard holds, a release would "
                   "remove that holder's hold; %lld other holder(s) would still hold it (%s); "
                   "nothing was changed", left, f != NULL ? f->name : "?");
    else
        table_line(stdout, lockctl_width(lc), "%s", release_outcome_message(res->outcome));
}

static bool
ask(const struct lockctl *lc, const struct change *ch, const struct cli_lock *l)
{
    char q[1024], addr[300], ttl[32], age[32], newttl[32], from[96];
    char *key = shown(ch->key, ch->keylen);
    char *holder = holder_shown(ch->holder, ch->holderlen);
    /* the prompt is on stderr: its terminal's width */
    size_t width = lc->wide ? TABLE_WIDE : table_stderr_width();
    bool yes;

    session_address(lc, addr, sizeof(addr));
    out_ttl(l->pttl_ms, ttl, sizeof(ttl));
    out_duration(ch->ttl_ms, newttl, sizeof(newttl));
    verdict_age(l, age, sizeof(age));
    /* the age as show gives it, with where it comes from */
    if (verdict_age_unknown(l))
        snprintf(from, sizeof(from), "no agent times%s", strcmp(l->age_source, "idletime") == 0
                 ? "; OBJECT IDLETIME is under a second" : "");
    else
        snprintf(from, sizeof(from), "from %s", verdict_age_from(l));
    /* the terminal's width, as every other line (the question is short) */
    table_line(stderr, width, "%s %s on target %s (%s)",
               ch->action == RELEASE_ACTION_EXPIRE ? "Expire" : "Release", key ? key : "?",
               lc->t->name, addr);
    /* a holder past what the read saw: the script checks every one */
    table_line(stderr, width, "  holder %s%s", holder ? holder : "?",
               holds(l, ch->holder, ch->holderlen) ? "" : " (not among the holders read; the "
               "release checks them all)");
    table_line(stderr, width, "  format %s, TTL %s, age %s (%s)", l->fmt->name, ttl, age, from);
    /* what show says of it that a release changes (an on-call trial) */
    if (l->renewed)
        table_line(stderr, width, "  its holder renews it, so it is alive: a %s lets another "
                   "client in while it works", ch->cmd);
    for (size_t i = 0; i < l->view.nholders; i++)
        if (l->view.holders[i].idlen == ch->holderlen && l->view.holders[i].count > 1 &&
            memcmp(l->view.holders[i].id, ch->holder, ch->holderlen) == 0 &&
            ch->action == RELEASE_ACTION_RELEASE)
            table_line(stderr, width, "  it holds it %lld times (reentrant): the release "
                       "drops them all", (long long)l->view.holders[i].count);
    if (ch->action == RELEASE_ACTION_EXPIRE) {
        snprintf(q, sizeof(q), "Give it a TTL of %s?", newttl);
    } else {
        table_line(stderr, width, "  the key is deleted when no other holder is left");
        snprintf(q, sizeof(q), "Release that holder%s?",
                 row_wakes(release_row_for(l->fmt->name, l->src.source == FMT_SOURCE_GUESSED))
                 ? " and wake its waiters" : "");
    }
    yes = confirm_ask(q);
    free(key);
    free(holder);
    return yes;
}

/* Ask; the time at the prompt is not the command's, and the connection,
 * idle meanwhile, is made sure of (session_resume()). */
static int
confirm(struct lockctl *lc, const struct change *ch, const struct cli_lock *l)
{
    int64_t left = clock_left(lc->scope.deadline_ms);

    if (!ask(lc, ch, l)) {
        lockctl_warnx("%s: not confirmed; nothing was changed", ch->cmd);
        return LOCKCTL_REFUSED;
    }
    return session_resume(lc, left);
}

/* Ask the operator, then make sure the key's node is still the one the
 * lock was read on (refuse_moved()). */
static int
confirm_here(struct lockctl *lc, const struct change *ch, const struct cli_lock *l)
{
    char was[300], now[300];
    int rc;

    if ((rc = confirm(lc, ch, l)) != LOCKCTL_DONE)
        return rc;
    switch (session_node_moved(lc, ch->key, ch->keylen, was, now, sizeof(was))) {
    case -1:
        return LOCKCTL_REDIS;
    case 1:
        return refuse_moved(lc, ch, was, now);
    }
    return LOCKCTL_DONE;
}

/*
 * The next step after too_young, as one sentence into buf: how old the
 * holder is known to be and from where (the larger of the age lockctl
 * passed and the script's own IDLETIME, as the script judged), why the
 * agent's age did not count when it did not, and what to do.
 */
static void
too_young_next(const struct change *ch, const struct release_request *rq,
               const struct release_result *res, const struct agent_view *av,
               char *buf, size_t len)
{
    int64_t age = rq->known_age_ms, idle = res->idle_s > 1 ? (res->idle_s - 1) * 1000 : 0;
    const char *from = ch->age_from;
    char known[512], agent[832], d[32], want[32];
    /* the script took the lease's part only with the lease as read */
    bool kept = rq->lease_pttl < 0 ? res->pttl_ms == -1
        : res->pttl_ms >= 0 && res->pttl_ms <= rq->lease_pttl + rq->lease_slack_ms &&
          res->pttl_ms >= rq->lease_pttl - rq->lease_slack_ms;

    if (!kept && from != NULL && (strcmp(from, "agent") == 0 || strcmp(from, "idletime") == 0))
        from = age > 0 ? "acquired" : NULL;
    if (kept && rq->lease_age_ms > age)
        age = rq->lease_age_ms;
    if (idle > age) {
        age = idle;
        from = "idletime";
    }
    out_duration(age, d, sizeof(d));
    out_duration(ch->older_ms, want, sizeof(want));
    if (from == NULL || age <= 0)
        snprintf(known, sizeof(known), "the holder's age is not known");
    else
        snprintf(known, sizeof(known), "the holder is known to be %s%s old (from %s%s)",
                 strcmp(from, "idletime") == 0 ? "at least " : "", d,
                 strcmp(from, "agent") == 0 ? "the agent, since it first saw the holding or "
                 "last saw its lease set again, at " :
                 strcmp(from, "acquired") == 0 ? "the acquisition time in the value" :
                 "OBJECT IDLETIME, which any read resets",
                 strcmp(from, "agent") == 0 ? av->url : "");
    if ((ch->agent_ms > 0 && !kept) || ch->agent_lease_moved)
        snprintf(agent, sizeof(agent), "; the agent's age does not count: the lease was set "
                 "again since it read the lock (a renewal and the same holder id taking the "
                 "lock again look alike%s)", ch->agent_renewed ? "; its holder renews it, so "
                 "only the time since its last renewal is proven: a stuck holder's renewed "
                 "lock is released without --if-older-than" : "");
    else if (ch->agent_ms > 0)
        agent[0] = '\0';       /* counted */
    else if (av->answered)
        snprintf(agent, sizeof(agent), "; the agent at %s gave no first-seen age for this "
                 "holder (lockctl show KEY says what it knows)", av->url);
    else if (av->asked)
        snprintf(agent, sizeof(agent), "; the agent at %s did not answer (%s), and only it "
                 "knows how long a holder has held the lock (start lockwatchd, or give "
                 "--agent URL)", av->url, av->err);
    else
        snprintf(agent, sizeof(agent), "; with --agent off, the agent's first-seen age was "
                 "not asked");
    snprintf(buf, len, "%s%s; retry once the holder is %s old, or release it now without "
             "--if-older-than (you are asked to confirm)", known, agent, want);
}

/*
 * The next step after the script's not_leaked: the lock has a TTL (a lock
 * without one is refused before the script, refuse_not_leaked()).  It
 * goes on its own when that runs out unless its holder renews it, and
 * expire refuses a lock with a TTL (has_ttl), so what is left is the
 * release without --if-leaked, for a holder known to be gone.  malloc'd
 * (NULL: ENOMEM); with the command to paste when cmd (JSON's hint, one
 * string: the command may be as long as a key).
 */
static char *
has_ttl_next(const struct lockctl *lc, const struct change *ch,
             const struct release_result *res, bool cmd)
{
    struct strbuf sb;
    char ttl[32], *line = NULL, *out;

    out_duration(res->pttl_ms, ttl, sizeof(ttl));
    if (cmd)
        line = next_text(lc, ch, "release", NULL);
    sb_init(&sb, 1024 * 1024);
    sb_addf(&sb, "the lock has a TTL (%s left), so it is not leaked: it expires on its own "
            "unless its holder renews it (a holder that renews is alive); if its holder is "
            "known to be gone, release it now without --if-leaked (you are asked to confirm)",
            ttl);
    if (line != NULL) {
        sb_adds(&sb, ": ");
        sb_adds(&sb, line);
    }
    out = sb_failed(&sb) ? NULL : sb_detach(&sb, NULL);
    sb_release(&sb);
    free(line);
    return out;
}

/* After the script refused a --holder that no longer holds the lock: the
 * holders it has now (read again: the lock as first read may be the very
 * holding that changed hands during the prompt), or as first read when
 * it cannot be read again. */
static void
holders_now(struct lockctl *lc, const struct change *ch, const struct cli_lock *read)
{
    struct cli_lock now;
    const char *kp = ch->key;
    size_t kl = ch->keylen;
    char err[512];

    memset(&now, 0, sizeof(now));
    if (inspect_keys(lc, &kp, &kl, 1, clock_now_ms(), &now, err, sizeof(err)) == 0)
        current_holders(lc, ch, &now);
    else if (read != NULL)
        current_holders(lc, ch, read);
    cli_lock_release(&now);
}

static int
report(struct lockctl *lc, const struct change *ch, const struct release_request *rq,
       const struct release_result *res, const struct cli_lock *read,
       const struct agent_view *av)
{
    char addr[300], buf[1600], *next = NULL, *key;
    int rc;

    if (release_outcome_done(res->outcome) || res->outcome == RELEASE_WOULD_RELEASE ||
        res->outcome == RELEASE_WOULD_EXPIRE)
        rc = res->audit_failed ? LOCKCTL_REDIS : LOCKCTL_DONE;
    else if (release_outcome_refused(res->outcome))
        rc = LOCKCTL_REFUSED;
    else
        rc = LOCKCTL_REDIS;

    if (res->outcome == RELEASE_REFUSED_TOO_YOUNG) {
        too_young_next(ch, rq, res, av, buf, sizeof(buf));
        next = strdup(buf);
    } else if (res->outcome == RELEASE_REFUSED_NOT_LEAKED && res->pttl_ms > 0) {
        next = has_ttl_next(lc, ch, res, lc->json);
    } else if (ch->action == RELEASE_ACTION_EXPIRE &&
               (res->outcome == RELEASE_REFUSED_HAS_TTL ||
                res->outcome == RELEASE_REFUSED_WRONGTYPE)) {
        /* every refusal ends with the next step (an on-call trial) */
        next = strdup(res->outcome == RELEASE_REFUSED_HAS_TTL
                      ? "it expires on its own; to free it now, release that holder"
                      : "expire gives no TTL to a semaphore, nor to a bare number that may "
                        "be one's count (the TTL would take it away whole); if it is a lock "
                        "whose holder is gone (a PID as its token), release it: the key is "
                        "deleted (a Redisson semaphore gets a permit back instead only when "
                        "its key is in semaphore_patterns)");
    }
    if (lc->json) {
        json_t *o = release_result_json(lc->t->name, rq, res);

        if (o != NULL && next != NULL)
            json_object_set_new(o, "hint", json_string(next));
        if (o != NULL && res->outcome == RELEASE_WOULD_RELEASE && would_leave(read) >= 0)
            json_object_set_new(o, "holders_left", json_integer(would_leave(read)));
        free(next);
        if (out_json_print(o) == -1)
            rc = LOCKCTL_REDIS;
        if (rc == LOCKCTL_REDIS && res->err[0] != '\0')
            session_redis_error(lc, res->err);
        return rc;
    }
    session_address(lc, addr, sizeof(addr));
    key = shown(ch->key, ch->keylen);
    if (rc == LOCKCTL_REDIS && !res->audit_failed) {
        session_redis_error(lc, res->err);
    } else if (rc == LOCKCTL_REFUSED) {
        /* a refusal without Redis says why in err (naming the lock) */
        /* not "a mistyped holder, or it changed hands": none can match
         * (an on-call trial) */
        bool nameless = res->outcome == RELEASE_REFUSED_HOLDER && read != NULL &&
            read->type == RAW_HASH && read->view.nholders == 0;

        lockctl_warnx("%s %s on target %s (%s): %s [%s]", ch->cmd, key ? key : "?",
                      lc->t->name, addr, res->err[0] != '\0' ? res->err
                      : nameless ? "refused: this hash's fields name no holder lockctl knows "
                      "(a client's <uuid>:<thread>), so no --holder matches: lockctl releases "
                      "only a holder it can name; nothing was changed"
                      : release_outcome_message(res->outcome),
                      release_outcome_str(res->outcome));
        if (res->outcome == RELEASE_REFUSED_HOLDER)
            holders_now(lc, ch, read);
        if (next != NULL) {
            table_line(stderr, lockctl_width(lc), "next: %s:", next);
            next_command(lc, ch, "release", ch->holder, ch->holderlen, NULL);
        }
    } else {
        table_line(stdout, lockctl_width(lc), "%s: %s on target %s (%s)",
                   release_outcome_str(res->outcome), key ? key : "?", lc->t->name, addr);
        if (res->outcome == RELEASE_RELEASED)
            released_line(lc, res);
        else if (res->outcome == RELEASE_WOULD_RELEASE)
            would_line(lc, res, read);
        else
            table_line(stdout, lockctl_width(lc), "%s", release_outcome_message(res->outcome));
        if (res->purged > 0)
            table_line(stdout, lockctl_width(lc), "%lld dead waiter(s) dropped from the fair "
                       "queue (their turn had timed out)", res->purged);
        if (res->audit_id[0] != '\0')
            table_line(stdout, lockctl_width(lc), "audit entry %s", res->audit_id);
        if (res->wake_errors > 0)
            lockctl_warnx("%lld wake-up(s) failed (the Redis user may lack +publish "
                          "+spublish or the wake channel: release_user, %s): waiters retry "
                          "when their own wait times out", res->wake_errors, ACLHINT_DOC);
        if (res->audit_failed)
            session_redis_error(lc, res->err);
    }
    free(next);
    free(key);
    return rc;
}

/*
 * The holder's age lockctl knows, for --if-older-than, in two parts.  *age
 * counts whatever the lease does: the acquisition time the format encodes
 * (a claim, taken only when the agent does not date the holder), and, for
 * a key without a TTL, OBJECT IDLETIME.  *lease_age counts only while the
 * key's lease is as lockctl read it (release_request.lease_age_ms; a lease
 * set since, longer or shorter, is a renewal or the same holder id taking
 * the lock again, and they look alike): the agent's age of that holding
 * (ch->agent_ms, verdict_agent_age(), checked against the lease lockctl
 * read), and, for a key with a TTL, OBJECT IDLETIME.  IDLETIME is the one
 * the read saw before touching the key (a read resets it on servers
 * without CLIENT NO-TOUCH, as the agent's own scans do).  After a prompt
 * it is read again (OBJECT does not touch) and, if no one but us touched
 * the key meanwhile, the two spans add up; if someone did, only the new
 * span counts.  Its clock ticks in whole seconds, so "no one" is only
 * within a second: enough where the lease check follows, but a key without
 * a TTL taken again in that second would pass, so there no second of slack
 * is given.  The script takes the larger of these and its own IDLETIME,
 * after checking the holder atomically; ch->age_from says which was largest.
 */
static int
known_age(struct lockctl *lc, struct change *ch, const struct cli_lock *l, bool asked,
          int64_t read_ms, int64_t *age, int64_t *lease_age)
{
    /* IDLETIME's clock ticks in whole seconds: a second less is sure */
    int64_t now = clock_now_ms(), idle_ms = l->idle_s > 1 ? (l->idle_s - 1) * 1000 : 0;
    int64_t *to = l->pttl_ms >= 0 ? lease_age : age;
    char err[512];

    *age = 0;
    *lease_age = ch->agent_ms > 0 ? ch->agent_ms : 0;
    ch->age_from = NULL;
    /* the time the value claims, only when the agent does not answer: it
     * believes a claim only as far as its own sight allows (a host whose
     * clock runs behind claims an old hold for a lock taken just now), and
     * a holder it has not seen yet came after its last scan */
    if (l->view.acquired_ms > 0 && l->view.acquired_ms < now && !ch->agent_answered) {
        *age = now - l->view.acquired_ms;
        ch->age_from = "acquired";
    }
    if (*lease_age > *age)
        ch->age_from = "agent";
    if (ch->older_ms <= 0 || l->idle_s < 0)
        return LOCKCTL_DONE;
    if (asked) {
        const char *argv[3] = { "OBJECT", "IDLETIME", ch->key };
        size_t lens[3] = { 6, 8, ch->keylen };
        redisReply *r = redisconn_command(lc->c, lc->t, "OBJECT IDLETIME", 3, argv, lens,
                                          err, sizeof(err));
        int64_t since, slack = l->pttl_ms >= 0 ? 1000 : 0;

        if (r == NULL)
            return session_redis_error(lc, err);
        since = r->type == REDIS_REPLY_INTEGER ? r->integer * 1000 : 0;
        freeReplyObject(r);
        idle_ms = since + slack >= now - read_ms ? idle_ms + (now - read_ms)
                  : since > 1000 ? since - 1000 : 0;
    }
    if (idle_ms > *to) {
        *to = idle_ms;
        if (idle_ms >= (*age > *lease_age ? *age : *lease_age))
            ch->age_from = "idletime";
    }
    return LOCKCTL_DONE;
}

/* The ages the script's guard takes (known_age()), the agent's checked
 * against the lease read here (rq->now_ms: the read's time). */
static int
guard_ages(struct lockctl *lc, struct change *ch, const struct cli_lock *l,
           const struct agent_view *av, bool asked, struct release_request *rq)
{
    int64_t since;
    int rc;

    ch->agent_answered = av->answered;
    if (av->answered) {
        const struct agent_lock *al = agent_find(av, ch->key, ch->keylen);

        ch->agent_ms = verdict_agent_age(al, ch->holder, ch->holderlen);
        ch->agent_dated = al != NULL && !al->stale && al->first_seen_ms > 0 &&
            verdict_same_holder(l, al);
        ch->agent_renewed = ch->agent_dated && al->renewed;
        /* the agent's age is of the lease it read: is it the one read here? */
        if (ch->agent_ms > 0 && !verdict_agent_lease_is(al, l->pttl_ms, clock_mono_ms() -
                                                        (clock_now_ms() - rq->now_ms))) {
            ch->agent_ms = 0;
            ch->agent_lease_moved = true;
        }
    }
    if ((rc = known_age(lc, ch, l, asked, rq->now_ms, &rq->known_age_ms,
                        &rq->lease_age_ms)) != LOCKCTL_DONE)
        return rc;
    /* that part holds while the lease is as read here, within a quarter second */
    since = clock_now_ms() - rq->now_ms;
    rq->lease_pttl = l->pttl_ms < 0 ? -1 : l->pttl_ms > since ? l->pttl_ms - since : 0;
    rq->lease_slack_ms = LOCKCTL_LEASE_SLACK_MS;
    return LOCKCTL_DONE;
}

/* A refusal made before the script, on stderr: "CMD KEY on target T
 * (ADDR): msg [outcome]", as report() words the script's. */
static void
say_refused(const struct lockctl *lc, const struct change *ch, const char *msg,
            enum release_outcome o)
{
    char addr[300], *key = shown(ch->key, ch->keylen);

    session_address(lc, addr, sizeof(addr));
    lockctl_warnx("%s %s on target %s (%s): %s [%s]", ch->cmd, key ? key : "?", lc->t->name,
                  addr, msg, release_outcome_str(o));
    free(key);
}

/*
 * --if-leaked means what list --state leaked means: no TTL, and without
 * one for at least leak_grace, judged by the one judge with the agent's
 * no-TTL-since time when it answers.  The script checks the no-TTL half
 * atomically; the time half is checked here, before it, since only the
 * agent knows it.  A lock without a TTL that is not leaked yet, or whose
 * time without a TTL is unknown (leaked? in list), is refused here with
 * not_leaked: nothing ran, so nothing is audited.
 */
static int
refuse_not_leaked(const struct lockctl *lc, const struct change *ch,
                  const struct release_request *rq, const struct cli_lock *l)
{
    struct release_result res;
    char msg[400], age[40], grace[32];
    /* expire leaves a bare number alone (a count as likely as a token):
     * no expire command to paste for it (an on-call trial) */
    bool count = l->type == RAW_STRING && ch->holderlen > 0 &&
        strspn(ch->holder + (ch->holder[0] == '-'), "0123456789") ==
        ch->holderlen - (ch->holder[0] == '-') && ch->holderlen > (size_t)(ch->holder[0] == '-');

    out_duration(lc->cfg->rules.judge.leak_grace_ms, grace, sizeof(grace));
    verdict_age(l, age, sizeof(age));
    if (l->leak_unknown)
        snprintf(msg, sizeof(msg), "refused: --if-leaked, but how long the lock has had no TTL "
                 "is unknown (no agent times; its age is %s, from %s, only a lower bound; "
                 "leak_grace is %s); nothing was changed", age, l->age_source, grace);
    else
        snprintf(msg, sizeof(msg), "refused: --if-leaked, but the lock has had no TTL for "
                 "less than leak_grace (%s; its age is %s, from %s); nothing was changed",
                 grace, age, l->age_source);
    if (lc->json) {
        json_t *o;

        memset(&res, 0, sizeof(res));
        res.outcome = RELEASE_REFUSED_NOT_LEAKED;
        res.pttl_ms = l->pttl_ms;
        res.idle_s = l->idle_s;
        snprintf(res.type, sizeof(res.type), "%s", l->type == RAW_HASH ? "hash" : "string");
        if ((o = release_result_json(lc->t->name, rq, &res)) != NULL) {
            char *exp = count ? NULL : next_text(lc, ch, "expire",
                                                 (const char *const[]){ "--ttl", "30s", NULL });
            char *rel = next_text(lc, ch, "release", NULL);
            struct strbuf sb;

            sb_init(&sb, 1024 * 1024);
            sb_addf(&sb, "%s", l->leak_unknown ? "retry once the agent has seen the lock "
                    "without a TTL (start it, or wait for its next scan)" : "wait until it has "
                    "had no TTL for leak_grace and retry");
            if (exp != NULL)
                sb_addf(&sb, ", or give the lock a TTL: %s", exp);
            sb_addf(&sb, ", or release it without --if-leaked%s%s", rel ? ": " : "",
                    rel ? rel : "");
            json_object_set_new(o, "message", json_string(msg));
            if (!sb_failed(&sb))
                json_object_set_new(o, "hint", json_stringn(sb.buf, sb.len));
            sb_release(&sb);
            free(exp);
            free(rel);
        }
        return out_json_print(o) == 0 ? LOCKCTL_REFUSED : LOCKCTL_REDIS;
    }
    say_refused(lc, ch, msg, RELEASE_REFUSED_NOT_LEAKED);
    table_line(stderr, lockctl_width(lc), "next: %s%s", l->leak_unknown ? "retry once the "
               "agent has seen the lock without a TTL (start lockwatchd if it is down, or wait "
               "for its next scan if it just started: it records since when a lock has had no "
               "TTL)" : "wait until it has had no TTL for leak_grace and retry", count ? "" :
               "; or, having checked the holder (lockctl show KEY), give the lock a TTL so "
               "that it expires on its own unless its holder renews it:");
    if (!count)
        next_command(lc, ch, "expire", ch->holder, ch->holderlen,
                     (const char *const[]){ "--ttl", "30s", NULL });
    table_line(stderr, lockctl_width(lc), "or release it now without --if-leaked (you are "
               "asked to confirm):");
    next_command(lc, ch, "release", ch->holder, ch->holderlen, NULL);
    return LOCKCTL_REFUSED;
}

/*
 * A key outside the target's patterns is no lock of this target: refused
 * here, before any Redis call (lockctl knows the patterns), as the
 * exclude_patterns and helper-key refusals are.  Before, the script
 * refused it, but only when the Redis user may name the key at all: an
 * ACL without it answered NOPERM (exit 3) with advice to widen the ACL.
 * Nothing ran, so nothing is audited.
 */
static int
refuse_outside_patterns(const struct lockctl *lc, const struct change *ch)
{
    struct release_request rq;
    struct release_result res;
    char msg[400], pats[256];
    const char *next = "lockctl changes only the keys of the target's patterns: for a lock of "
        "another target give -t that target; for a lock of this one, add its pattern to the "
        "target's patterns in the config";

    session_patterns(lc, pats, sizeof(pats));
    snprintf(msg, sizeof(msg), "refused: the key matches none of the target's patterns (%s); "
             "nothing was changed", pats);
    if (lc->json) {
        json_t *o;

        memset(&rq, 0, sizeof(rq));
        rq.action = ch->action;
        rq.key = ch->key;
        rq.keylen = ch->keylen;
        rq.holder = ch->holder;
        rq.holderlen = ch->holderlen;
        rq.dry_run = ch->dry_run;
        rq.ttl_ms = ch->ttl_ms;
        memset(&res, 0, sizeof(res));
        res.outcome = RELEASE_REFUSED_PATTERN;
        res.pttl_ms = -2;
        res.idle_s = -1;
        res.holders_left = -1;
        if ((o = release_result_json(lc->t->name, &rq, &res)) != NULL) {
            json_object_set_new(o, "message", json_string(msg));
            json_object_set_new(o, "hint", json_string(next));
        }
        return out_json_print(o) == 0 ? LOCKCTL_REFUSED : LOCKCTL_REDIS;
    }
    say_refused(lc, ch, msg, RELEASE_REFUSED_PATTERN);
    table_line(stderr, lockctl_width(lc), "next: %s", next);
    return LOCKCTL_REFUSED;
}

/* What the script is asked to do, from the command line and the lock as
 * read (rq->now_ms is the caller's). */
static void
request_of(struct release_request *rq, const struct change *ch, const struct cli_lock *l)
{
    rq->action = ch->action;
    rq->key = ch->key;
    rq->keylen = ch->keylen;
    rq->holder = ch->holder;
    rq->holderlen = ch->holderlen;
    /* release it as what it was read as; the script refuses when its
     * shape changed since */
    rq->format = l->type != RAW_NONE && l->fmt != NULL ? l->fmt->name : NULL;
    rq->format_guessed = rq->format != NULL && l->src.source == FMT_SOURCE_GUESSED;
    rq->if_leaked = ch->if_leaked;
    rq->if_older_than_ms = ch->older_ms;
    rq->ttl_ms = ch->ttl_ms;
    rq->dry_run = ch->dry_run;
}

static int
run(struct lockctl *lc, enum release_action action, const char *cmd, int argc, char **argv)
{
    struct change ch;
    struct cli_lock l;
    struct agent_view av;
    struct release_request rq;
    struct release_result res;
    struct target_conf wt;
    redisContext *wc;
    char op[256], reason[REASON_MAX + 1], err[512];
    const char *kp;
    int rc;
    bool read = false, asked = false;

    memset(&ch, 0, sizeof(ch));
    memset(&l, 0, sizeof(l));
    memset(&av, 0, sizeof(av));
    ch.action = action;
    ch.cmd = cmd;
    rc = release_parse(lc, &ch, argc, argv);
    if (rc == -1) {             /* --help */
        rc = LOCKCTL_DONE;
        goto out;
    }
    if (rc != LOCKCTL_DONE)
        goto out;
    if (!ch.yes && !ch.dry_run && !confirm_possible()) {
        lockctl_warnx("%s: stdin is not a terminal, so there is no one to confirm: pass "
                      "--yes to %s without asking (or --dry-run to only check)", cmd, cmd);
        rc = LOCKCTL_USAGE;
        goto out;
    }
    /* the agent knows what Redis cannot say: since when the lock has had
     * no TTL (--if-leaked), how long its holder has held it
     * (--if-older-than, the prompt's age) */
    if ((rc = session_load(lc)) != LOCKCTL_DONE)
        goto out;
    if (!lockstate_in_patterns(lc->t, ch.key, ch.keylen)) {
        rc = refuse_outside_patterns(lc, &ch);
        goto out;
    }
    if ((ch.if_leaked || ch.older_ms > 0 || (!ch.yes && !ch.dry_run)) &&
        (rc = agent_consult(lc, &av, ch.key, ch.keylen)) != LOCKCTL_DONE)
        goto out;
    /* an agent of another server (--url, another address): its ages are
     * not this lock's, and a release never acts on them.  Judged on the
     * target's address, before lc->t names the node of the key (a cluster
     * key on another primary than the url's is still the agent's) */
    agent_drop_elsewhere(lc, &av);
    /* an alert's label of a key it cannot show: that key, in the patterns */
    if ((rc = agent_resolve_label(lc, &av, &ch.key, &ch.keylen)) != LOCKCTL_DONE)
        goto out;
    if (!lockstate_in_patterns(lc->t, ch.key, ch.keylen)) {
        rc = refuse_outside_patterns(lc, &ch);
        goto out;
    }
    agent_known_nodes(lc, &av);  /* a cluster: where the agent reads it */
    if ((rc = session_connect_key(lc, ch.key, ch.keylen)) != LOCKCTL_DONE)
        goto out;

    memset(&rq, 0, sizeof(rq));
    rq.now_ms = clock_now_ms();
    /* Read the lock for the prompt and for the holder age its format
     * encodes, which OBJECT IDLETIME cannot see once a watchdog has
     * renewed the lock (a key outside the patterns was refused above). */
    kp = ch.key;
    if (inspect_keys(lc, &kp, &ch.keylen, 1, rq.now_ms, &l, err, sizeof(err)) == -1) {
        rc = session_redis_error(lc, err);
        goto out;
    }
    read = true;
    if (l.type != RAW_NONE && av.answered)
        verdict_judge(&lc->cfg->rules.judge, &l, agent_find(&av, ch.key, ch.keylen),
                      rq.now_ms);
    request_of(&rq, &ch, &l);
    /* a TTL, a gone key or another holder: the script refuses, audited */
    if (ch.if_leaked && read && l.type != RAW_NONE && l.pttl_ms == -1 &&
        holds(&l, ch.holder, ch.holderlen) && !(l.states & LOCK_LEAKED)) {
        rc = refuse_not_leaked(lc, &ch, &rq, &l);
        goto out;
    }
    if (!ch.yes && !ch.dry_run && read && l.type != RAW_NONE && holders_complete(&l) &&
        !holds(&l, ch.holder, ch.holderlen)) {
        rc = refuse_wrong_holder(lc, &ch, &l);
        goto out;
    }
    /* nothing to ask about when the key is gone: the script refuses it */
    if (!ch.yes && !ch.dry_run && read && l.type != RAW_NONE) {
        asked = true;
        if ((rc = confirm_here(lc, &ch, &l)) != LOCKCTL_DONE)
            goto out;
    }
    if (read && holds(&l, ch.holder, ch.holderlen) &&
        (rc = guard_ages(lc, &ch, &l, &av, asked, &rq)) != LOCKCTL_DONE)
        goto out;
    rq.now_ms = clock_now_ms();

    session_operator(op, sizeof(op));
    snprintf(reason, sizeof(reason), "%s", ch.reason);
    rq.operator_name = op;
    rq.reason = reason;
    /* read as the target's user, written as its release_user */
    if ((rc = session_writer(lc, &wt, &wc)) != LOCKCTL_DONE)
        goto out;
    release_run(wc, &wt, lc->cfg->audit_stream, &rq, &res);
    if (wc != lc->c)
        redisFree(wc);
    rc = report(lc, &ch, &rq, &res, read ? &l : NULL, &av);
out:
    cli_lock_release(&l);
    agent_view_release(&av);
    free(ch.key);
    free(ch.holder);
    return rc;
}

int
cmd_release(struct lockctl *lc, int argc, char **argv)
{
    return run(lc, RELEASE_ACTION_RELEASE, "release", argc, argv);
}

int
cmd_expire(struct lockctl *lc, int argc, char **argv)
{
    return run(lc, RELEASE_ACTION_EXPIRE, "expire", argc, argv);
}
