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
 * definition (refuse_not_leaked()).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/lockctl.h"
#include "collectors/redis/conn.h"
#include "collectors/locks/lockstate.h"
#include "collectors/locks/snapshot.h"
#include "collectors/release/release.h"

#define REASON_MAX 512          /* bytes of --reason kept in the audit */

struct change {
    enum release_action action;
    const char *cmd;            /* "release" / "expire" */
    char *key, *holder;
    size_t keylen, holderlen;
    bool escaped, yes, dry_run, if_leaked;
    int64_t older_ms, ttl_ms;
    const char *reason;
};

static bool
holds(const struct cli_lock *l, const char *holder, size_t n)
{
    for (size_t i = 0; i < l->view.nholders; i++) {
        const struct lock_holder *h = &l->view.holders[i];

        if (h->id_truncated)
            continue;
        if (h->idlen == n && memcmp(h->id, holder, n) == 0)
            return true;
    }
    return false;
}

/* s, terminal-safe and cut to width columns; malloc'd ("?" on ENOMEM). */
static char *
shown(const char *p, size_t n, size_t width)
{
    char *safe = table_safe_text(p, n, NULL), *cut;

    if (safe == NULL)
        return strdup("?");
    cut = table_cut(safe, width, true);
    free(safe);
    return cut ? cut : strdup("?");
}

static bool
ask(const struct lockctl *lc, const struct change *ch, const struct cli_lock *l)
{
    char q[1024], addr[300], ttl[32], age[32], newttl[32];
    char *key = shown(ch->key, ch->keylen, 60), *holder = shown(ch->holder, ch->holderlen, 48);
    bool yes;

    session_address(lc, addr, sizeof(addr));
    out_ttl(l->pttl_ms, ttl, sizeof(ttl));
    out_duration(l->age_ms, age, sizeof(age));
    out_duration(ch->ttl_ms, newttl, sizeof(newttl));
    fprintf(stderr, "%s %s on target %s (%s)\n  holder %s\n  format %s, TTL %s, age %s%s\n",
            ch->action == RELEASE_ACTION_EXPIRE ? "Expire" : "Release", key ? key : "?",
            lc->t->name, addr, holder ? holder : "?", l->fmt->name, ttl, age,
            l->type == RAW_NONE ? " (the key does not exist now)"
            : holds(l, ch->holder, ch->holderlen) ? ""
            : " (NOT held by that holder now)");
    if (ch->action == RELEASE_ACTION_EXPIRE)
        snprintf(q, sizeof(q), "Give it a TTL of %s?", newttl);
    else
        snprintf(q, sizeof(q), "Release that holder (the key is deleted when no other "
                 "holder is left) and wake its waiters?");
    yes = confirm_ask(q);
    free(key);
    free(holder);
    return yes;
}

static int
report(const struct lockctl *lc, const struct change *ch, const struct release_request *rq,
       const struct release_result *res)
{
    char addr[300], *key;
    int rc;

    if (release_outcome_done(res->outcome) || res->outcome == RELEASE_WOULD_RELEASE ||
        res->outcome == RELEASE_WOULD_EXPIRE)
        rc = res->audit_failed ? LOCKCTL_REDIS : LOCKCTL_DONE;
    else if (release_outcome_refused(res->outcome))
        rc = LOCKCTL_REFUSED;
    else
        rc = LOCKCTL_REDIS;

    if (lc->json) {
        json_t *o = release_result_json(lc->t->name, rq, res);

        if (out_json_print(o) == -1)
            rc = LOCKCTL_REDIS;
        if (rc == LOCKCTL_REDIS && res->err[0] != '\0')
            session_redis_error(lc, res->err);
        return rc;
    }
    session_address(lc, addr, sizeof(addr));
    key = shown(ch->key, ch->keylen, 60);
    if (rc == LOCKCTL_REDIS && !res->audit_failed) {
        session_redis_error(lc, res->err);
    } else if (rc == LOCKCTL_REFUSED) {
        /* a refusal without Redis says why in err (naming the lock) */
        lockctl_warnx("%s %s on target %s (%s): %s [%s]", ch->cmd, key ? key : "?",
                      lc->t->name, addr, res->err[0] != '\0' ? res->err
                      : release_outcome_message(res->outcome),
                      release_outcome_str(res->outcome));
    } else {
        table_line(stdout, TABLE_WIDTH, "%s: %s on target %s (%s)",
                   release_outcome_str(res->outcome), key ? key : "?", lc->t->name, addr);
        table_line(stdout, TABLE_WIDTH, "%s", release_outcome_message(res->outcome));
        if (res->outcome == RELEASE_RELEASED && res->holders_left > 0)
            table_line(stdout, TABLE_WIDTH, "kept: %lld other holder(s) still hold it (%s)",
                       res->holders_left, res->format);
        else if (res->outcome == RELEASE_RELEASED && res->holders_left == 0)
            table_line(stdout, TABLE_WIDTH, "the key was deleted: no holder was left (%s)",
                       res->format);
        if (res->purged > 0)
            table_line(stdout, TABLE_WIDTH, "%lld dead waiter(s) dropped from the fair "
                       "queue (their turn had timed out)", res->purged);
        if (res->audit_id[0] != '\0')
            table_line(stdout, TABLE_WIDTH, "audit entry %s", res->audit_id);
        if (res->wake_errors > 0)
            lockctl_warnx("%lld wake-up(s) failed (an ACL without the channel?): waiters "
                          "retry when their own wait times out", res->wake_errors);
        if (res->audit_failed)
            session_redis_error(lc, res->err);
    }
    free(key);
    return rc;
}

/*
 * The holder's age lockctl knows, for --if-older-than: the acquisition
 * time the format encodes (tied to the holder's exact value, so it cannot
 * go stale), and OBJECT IDLETIME as the read saw it before touching the
 * key.  That read resets IDLETIME on servers without CLIENT NO-TOUCH, so
 * the script alone would see the key as just used.  After a prompt, time
 * has passed: IDLETIME is read again (OBJECT does not touch) and, if no
 * one but us touched the key meanwhile, the two spans add up; if someone
 * did, only the new span counts.  The script still takes the larger of
 * this and its own IDLETIME, after checking the holder atomically.
 */
static int
known_age(struct lockctl *lc, const struct change *ch, const struct cli_lock *l,
          bool asked, int64_t read_ms, int64_t *age)
{
    int64_t now = clock_now_ms(), idle_ms = l->idle_s > 0 ? l->idle_s * 1000 : 0;
    char err[512];

    *age = 0;
    if (l->view.acquired_ms > 0 && l->view.acquired_ms < now)
        *age = now - l->view.acquired_ms;
    if (ch->older_ms <= 0 || l->idle_s < 0)
        return LOCKCTL_DONE;
    if (asked) {
        const char *argv[3] = { "OBJECT", "IDLETIME", ch->key };
        size_t lens[3] = { 6, 8, ch->keylen };
        redisReply *r = redisconn_command(lc->c, lc->t, "OBJECT IDLETIME", 3, argv, lens,
                                          err, sizeof(err));
        int64_t since;

        if (r == NULL)
            return session_redis_error(lc, err);
        since = r->type == REDIS_REPLY_INTEGER ? r->integer * 1000 : 0;
        freeReplyObject(r);
        /* IDLETIME counts whole seconds: allow one of slack */
        idle_ms = since + 1000 >= now - read_ms ? idle_ms + since : since;
    }
    if (idle_ms > *age)
        *age = idle_ms;
    return LOCKCTL_DONE;
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
    char msg[400], age[40], grace[32], addr[300], *key;

    out_duration(lc->cfg->rules.judge.leak_grace_ms, grace, sizeof(grace));
    verdict_age(l, age, sizeof(age));
    if (l->leak_unknown)
        snprintf(msg, sizeof(msg), "refused: --if-leaked, but how long the lock has had no TTL "
                 "is unknown (its age is %s, from %s; leak_grace is %s); nothing was changed",
                 age, l->age_source, grace);
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
        if ((o = release_result_json(lc->t->name, rq, &res)) != NULL)
            json_object_set_new(o, "message", json_string(msg));
        return out_json_print(o) == 0 ? LOCKCTL_REFUSED : LOCKCTL_REDIS;
    }
    session_address(lc, addr, sizeof(addr));
    key = shown(ch->key, ch->keylen, 60);
    lockctl_warnx("%s %s on target %s (%s): %s [%s]", ch->cmd, key ? key : "?", lc->t->name,
                  addr, msg, release_outcome_str(RELEASE_REFUSED_NOT_LEAKED));
    free(key);
    return LOCKCTL_REFUSED;
}

static int
parse(struct lockctl *lc, struct change *ch, int argc, char **argv)
{
    static const struct option opts[] = {
        { "holder", required_argument, NULL, 'H' },
        { "if-leaked", no_argument, NULL, 'L' },
        { "if-older-than", required_argument, NULL, 'O' },
        { "ttl", required_argument, NULL, 'T' },
        { "reason", required_argument, NULL, 'r' },
        { "yes", no_argument, NULL, 'y' },
        { "dry-run", no_argument, NULL, 'D' },
        { "escaped", no_argument, NULL, 'e' },
        { "help", no_argument, NULL, 'h' },
        SESSION_LONG_OPTIONS,
        { NULL, 0, NULL, 0 }
    };
    bool expire = ch->action == RELEASE_ACTION_EXPIRE;
    const char *holder = NULL;
    int opt;

    optind = 0;
    while ((opt = getopt_long(argc, argv, SESSION_SHORT_OPTIONS "H:r:yeh", opts, NULL)) != -1) {
        if (session_common_option(lc, opt, optarg))
            continue;
        switch (opt) {
        case 'H':
            holder = optarg;
            break;
        case 'L':
            if (expire)
                goto bad;
            ch->if_leaked = true;
            break;
        case 'O':
            if (expire)
                goto bad;
            if (config_parse_duration(optarg, &ch->older_ms) == -1 || ch->older_ms <= 0) {
                lockctl_warnx("%s: --if-older-than \"%s\" is not a duration (use a number "
                              "with ms, s, m, h or d, e.g. 10m)", ch->cmd, optarg);
                return LOCKCTL_USAGE;
            }
            break;
        case 'T':
            if (!expire)
                goto bad;
            if (config_parse_duration(optarg, &ch->ttl_ms) == -1 || ch->ttl_ms <= 0) {
                lockctl_warnx("%s: --ttl \"%s\" is not a duration (use a number with ms, "
                              "s, m, h or d, e.g. 30s)", ch->cmd, optarg);
                return LOCKCTL_USAGE;
            }
            break;
        case 'r':
            ch->reason = optarg;
            break;
        case 'y':
            ch->yes = true;
            break;
        case 'D':
            ch->dry_run = true;
            break;
        case 'e':
            ch->escaped = true;
            break;
        case 'h':
            lockctl_command_help(ch->cmd, stdout);
            return -1;
        default:
            goto bad;
        }
    }
    if (argc - optind != 1) {
        lockctl_warnx("%s: give exactly one KEY (see lockctl %s --help)", ch->cmd, ch->cmd);
        return LOCKCTL_USAGE;
    }
    if (holder == NULL || holder[0] == '\0') {
        lockctl_warnx("%s: --holder is required: the token (string lock) or the "
                      "<uuid>:<thread> field (hash lock) you saw with lockctl show", ch->cmd);
        return LOCKCTL_USAGE;
    }
    if (expire && ch->ttl_ms <= 0) {
        lockctl_warnx("expire: --ttl is required (e.g. --ttl 30s)");
        return LOCKCTL_USAGE;
    }
    if (ch->escaped) {
        ch->key = out_unescape(argv[optind], &ch->keylen);
        ch->holder = out_unescape(holder, &ch->holderlen);
        if (ch->key == NULL || ch->holder == NULL) {
            lockctl_warnx("%s: KEY and --holder must be percent-encoded with --escaped",
                          ch->cmd);
            return LOCKCTL_USAGE;
        }
    } else {
        ch->key = strdup(argv[optind]);
        ch->holder = strdup(holder);
        if (ch->key == NULL || ch->holder == NULL) {
            lockctl_warnx("out of memory");
            return LOCKCTL_REDIS;
        }
        ch->keylen = strlen(ch->key);
        ch->holderlen = strlen(ch->holder);
    }
    if (ch->holderlen == 0) {
        lockctl_warnx("%s: --holder must not be empty", ch->cmd);
        return LOCKCTL_USAGE;
    }
    if (ch->reason == NULL)
        ch->reason = "";
    return LOCKCTL_DONE;
bad:
    lockctl_command_help(ch->cmd, stderr);
    return LOCKCTL_USAGE;
}

static int
run(struct lockctl *lc, enum release_action action, const char *cmd, int argc, char **argv)
{
    struct change ch;
    struct cli_lock l;
    struct agent_view av;
    struct release_request rq;
    struct release_result res;
    char op[256], reason[REASON_MAX + 1], err[512];
    const char *kp;
    int rc;
    bool read = false, asked = false;

    memset(&ch, 0, sizeof(ch));
    memset(&l, 0, sizeof(l));
    memset(&av, 0, sizeof(av));
    ch.action = action;
    ch.cmd = cmd;
    rc = parse(lc, &ch, argc, argv);
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
    if ((rc = session_load(lc)) != LOCKCTL_DONE ||
        (ch.if_leaked && (rc = agent_consult(lc, &av, ch.key, ch.keylen)) != LOCKCTL_DONE) ||
        (rc = session_connect_key(lc, ch.key, ch.keylen)) != LOCKCTL_DONE)
        goto out;

    memset(&rq, 0, sizeof(rq));
    rq.now_ms = clock_now_ms();
    /* Read the lock (a key outside the patterns is not read: the script
     * refuses it without touching it) for the prompt and for the holder
     * age its format encodes, which OBJECT IDLETIME cannot see once a
     * watchdog has renewed the lock. */
    if (lockstate_in_patterns(lc->t, ch.key, ch.keylen)) {
        kp = ch.key;
        if (inspect_keys(lc, &kp, &ch.keylen, 1, rq.now_ms, &l, err, sizeof(err)) == -1) {
            rc = session_redis_error(lc, err);
            goto out;
        }
        read = true;
        if (l.type != RAW_NONE && av.answered)
            verdict_judge(&lc->cfg->rules.judge, &l, agent_find(&av, ch.key, ch.keylen),
                          rq.now_ms);
    }
    rq.action = action;
    rq.key = ch.key;
    rq.keylen = ch.keylen;
    rq.holder = ch.holder;
    rq.holderlen = ch.holderlen;
    /* release it as what it was read as; the script refuses when its
     * shape changed since */
    rq.format = read && l.type != RAW_NONE && l.fmt != NULL ? l.fmt->name : NULL;
    rq.format_guessed = rq.format != NULL && l.src.source == FMT_SOURCE_GUESSED;
    rq.if_leaked = ch.if_leaked;
    rq.if_older_than_ms = ch.older_ms;
    rq.ttl_ms = ch.ttl_ms;
    rq.dry_run = ch.dry_run;
    /* a TTL, a gone key or another holder: the script refuses, audited */
    if (ch.if_leaked && read && l.type != RAW_NONE && l.pttl_ms == -1 &&
        holds(&l, ch.holder, ch.holderlen) && !(l.states & LOCK_LEAKED)) {
        rc = refuse_not_leaked(lc, &ch, &rq, &l);
        goto out;
    }
    /* nothing to ask about when the key is gone: the script refuses it */
    if (!ch.yes && !ch.dry_run && read && l.type != RAW_NONE) {
        if (!ask(lc, &ch, &l)) {
            lockctl_warnx("%s: not confirmed; nothing was changed", cmd);
            rc = LOCKCTL_REFUSED;
            goto out;
        }
        asked = true;
    }
    if (read && holds(&l, ch.holder, ch.holderlen) &&
        (rc = known_age(lc, &ch, &l, asked, rq.now_ms, &rq.known_age_ms)) != LOCKCTL_DONE)
        goto out;
    rq.now_ms = clock_now_ms();

    session_operator(op, sizeof(op));
    snprintf(reason, sizeof(reason), "%s", ch.reason);
    rq.operator_name = op;
    rq.reason = reason;
    release_run(lc->c, lc->t, lc->cfg->audit_stream, &rq, &res);
    rc = report(lc, &ch, &rq, &res);
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
