/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * output.c - how lockctl writes things: JSON (with jansson, never by hand)
 * and the short human forms of durations, TTLs and times.
 *
 * Keys, holders and values are bytes.  JSON carries each twice, as the
 * agent's API does: sanitised UTF-8 for people ("key") and percent-encoded
 * for programs ("key_escaped"), which is also what lockctl --escaped and
 * the HTTP API's key_escaped take back.  A holder that is not text
 * (rslock's and walrus's random bytes) is shown to people as "hex:" and
 * its bytes in hex, the form --holder-hex takes back, rather than as a
 * row of U+FFFD that no two holders tell apart.
 *
 * A --json run that fails still prints one JSON document on stdout, an
 * error object {"error", "hint", "exit"} with the same exit code, so a
 * script that parses stdout never has to scrape stderr (kubectl -o json
 * habits).  The error is the last one lockctl_warnx() printed; lockctl is
 * one short process that runs one command, so that one remembered
 * message is a file-level static rather than a field threaded through
 * every error path.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/lockctl.h"
#include "common/duration.h"
#include "common/keytext.h"

static struct {
    char error[1024];           /* the last error printed */
    char hint[512];             /* what to do about it, when known */
    bool printed;               /* a JSON document went to stdout */
} last;

void
out_error_remember(const char *msg)
{
    snprintf(last.error, sizeof(last.error), "%s", msg);
    last.hint[0] = '\0';
}

void
out_error_hint(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(last.hint, sizeof(last.hint), fmt, ap);
    va_end(ap);
}

/* What to do, by exit code, when the error said nothing more. */
static const char *const default_hints[] = {
    [LOCKCTL_REFUSED] = "nothing was changed; the error says which guard refused",
    [LOCKCTL_USAGE] = "see lockctl --help, or lockctl COMMAND --help",
    [LOCKCTL_REDIS] = "check that Redis answers at the target's address (the error names "
        "it), the target's password_file and ACL, and command_timeout",
};

void
out_json_error(int rc)
{
    const char *hint = last.hint;
    json_t *o;

    if (last.printed || rc <= 0 || rc > LOCKCTL_REDIS)
        return;
    if (hint[0] == '\0')
        hint = default_hints[rc];
    o = json_pack("{s:s, s:s, s:i}", "error", last.error[0] != '\0' ? last.error
                  : rc == LOCKCTL_USAGE ? "bad usage (an unknown option or a missing argument)"
                  : "failed", "hint", hint, "exit", rc);
    if (o == NULL)              /* not UTF-8: the message quoted bytes */
        o = json_pack("{s:s, s:s, s:i}", "error", "failed (the message is not UTF-8; "
                      "see stderr)", "hint", hint, "exit", rc);
    out_json_print(o);
}

void
out_text_hint(int rc)
{
    /* the hint --json's error carries, said in text too: the command's
     * own (deadlocks: start the agent), else the default one only for
     * what session_redis_error() reported ("target NAME: ..."), not an
     * agent's answer or memory that exit 3 covers too */
    if (rc <= 0 || rc > LOCKCTL_REDIS)
        return;
    if (last.hint[0] != '\0')
        table_line(stderr, table_stderr_width(), "hint: %s", last.hint);
    else if (rc == LOCKCTL_REDIS && strncmp(last.error, "target ", 7) == 0)
        table_line(stderr, table_stderr_width(), "hint: %s", default_hints[rc]);
}

int
out_json_print(json_t *root)
{
    char *s;
    int rc = -1;

    if (root == NULL)
        return -1;
    last.printed = true;
    /* ages in seconds print as 349406.222 (lockjson.h) */
    s = json_dumps(root, JSON_INDENT(2) | LOCKJSON_REALS);
    json_decref(root);
    if (s != NULL && fputs(s, stdout) != EOF && fputc('\n', stdout) != EOF)
        rc = 0;
    free(s);
    return rc;
}

void
out_duration(int64_t ms, char *buf, size_t len)
{
    if (ms < 0)
        snprintf(buf, len, "-");
    else
        duration_format(ms, buf, len);
}

void
out_ttl(long long pttl_ms, char *buf, size_t len)
{
    if (pttl_ms == -1)
        snprintf(buf, len, "none");
    else if (pttl_ms < 0)
        snprintf(buf, len, "gone");
    else
        out_duration(pttl_ms, buf, len);
}

void
out_time(int64_t ms, char *buf, size_t len)
{
    time_t sec = (time_t)(ms / 1000);
    struct tm tm;

    if (ms <= 0 || gmtime_r(&sec, &tm) == NULL ||
        strftime(buf, len, "%Y-%m-%d %H:%M:%SZ", &tm) == 0)
        snprintf(buf, len, "-");
}

char *
out_unescape(const char *s, size_t *len)
{
    size_t n = strlen(s);
    char *out = malloc(n + 1);

    if (out == NULL)
        return NULL;
    *len = keytext_unpercent(out, s, n, 0);
    if (*len == (size_t)-1) {
        free(out);
        return NULL;
    }
    out[*len] = '\0';
    return out;
}


/* Is p[0..n) text a terminal shows as it is: valid UTF-8 (what
 * keytext_sanitize leaves unchanged) without control characters? */
static bool
holder_is_text(const char *p, size_t n)
{
    char *clean;
    bool same;

    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] < 0x20 || (unsigned char)p[i] == 0x7f)
            return false;
    clean = malloc(KEYTEXT_SANITIZED_MAX(n));
    if (clean == NULL)
        return true;            /* the table escapes it anyway */
    same = keytext_sanitize(clean, KEYTEXT_SANITIZED_MAX(n), p, n) == n &&
        memcmp(clean, p, n) == 0;
    free(clean);
    return same;
}

size_t
out_holder(const char *id, size_t n, char *buf, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;

    if (cap == 0)
        return 0;
    if (holder_is_text(id, n)) {
        o = n < cap - 1 ? n : cap - 1;
        memcpy(buf, id, o);
    } else {
        o = (size_t)snprintf(buf, cap, "hex:");
        for (size_t i = 0; i < n && o + 2 < cap; i++) {
            buf[o++] = hex[(unsigned char)id[i] >> 4];
            buf[o++] = hex[(unsigned char)id[i] & 15];
        }
    }
    buf[o] = '\0';
    return o;
}

size_t
out_holder_shown(const struct lock_holder *h, char *buf, size_t cap)
{
    size_t o;

    if (cap < 4)
        return out_holder(h->id, h->idlen, buf, cap);
    o = out_holder(h->id, h->idlen, buf, cap - 3);
    if (h->id_truncated) {      /* "…": the read kept only its first bytes */
        memcpy(buf + o, "\xe2\x80\xa6", 4);
        o += 3;
    }
    return o;
}
