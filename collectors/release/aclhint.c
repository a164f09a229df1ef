/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * aclhint.c - a write's permission error for people (see aclhint.h): the
 * Redis words of a refusal mapped to the permission it lacks by a table,
 * then one sentence naming the user, that permission and the config key
 * that gives the writes a user of their own.
 */
#include "collectors/release/aclhint.h"

#include <stdio.h>
#include <string.h>

/* What Redis says (a substring of its reply), what the user lacks. */
static const struct {
    const char *says;
    const char *lacks;
} refusals[] = {
    { "permissions to run the 'evalsha' command", "+evalsha and +eval" },
    { "permissions to run the 'eval' command", "+eval and +evalsha" },
    { "permissions to run the '", NULL },       /* another command: named from the reply */
    { "permissions to access one of the keys", "a key pattern (~...) of the lock, its "
      "companions or the audit stream" },
    { "can't access at least one of the keys", "a key pattern (~...) of the lock, its "
      "companions or the audit stream" },
    { "permissions to access one of the channels", "a channel pattern (&...) of the lock's "
      "wake channel" },
    { "can't publish to the channel", "a channel pattern (&...) of the lock's wake channel" },
    { "can't run this command or subcommand", "a command the release script runs "
      "(+del +hdel +hset +pexpire +xadd +xrevrange +publish ... as the ACL there lists)" },
};

#define NREFUSALS (sizeof(refusals) / sizeof(refusals[0]))

/* The reply as a C string (cut), for the look-ups. */
static void
reply_text(const char *err, size_t n, char *text, size_t cap)
{
    size_t k = n < cap - 1 ? n : cap - 1;

    memcpy(text, err, k);
    text[k] = '\0';
}

/* The row of the reply (NREFUSALS: another NOPERM), or -1. */
static int
refusal_of(const char *text)
{
    for (size_t i = 0; i < NREFUSALS; i++)
        if (strstr(text, refusals[i].says) != NULL)
            return (int)i;
    return strstr(text, "NOPERM") != NULL ? (int)NREFUSALS : -1;
}

bool
aclhint_refused(const char *err, size_t n)
{
    char text[512];

    if (err == NULL)
        return false;
    reply_text(err, n, text, sizeof(text));
    return refusal_of(text) >= 0;
}

void
aclhint_explain(const struct target_conf *t, const char *what, const char *err, size_t n,
                char *buf, size_t len)
{
    char text[512], lacks[160], who[512];
    const char *q, *end;
    int i;

    reply_text(err, n, text, sizeof(text));
    i = refusal_of(text);
    if (i >= 0 && (size_t)i < NREFUSALS && refusals[i].lacks != NULL)
        snprintf(lacks, sizeof(lacks), "%s", refusals[i].lacks);
    else if (i >= 0 && (size_t)i < NREFUSALS && (q = strchr(text, '\'')) != NULL &&
             (end = strchr(q + 1, '\'')) != NULL)
        snprintf(lacks, sizeof(lacks), "+%.*s", (int)(end - q - 1 < 64 ? end - q - 1 : 64),
                 q + 1);
    else
        snprintf(lacks, sizeof(lacks), "a permission");
    if (t->release_user != NULL)
        snprintf(who, sizeof(who), "the Redis user %.64s (release_user of [target %.64s]) lacks "
                 "%s, which %s needs: give it that permission", t->release_user, t->name, lacks, what);
    else
        snprintf(who, sizeof(who), "the Redis user %.64s (the url's; [target %.64s] has no "
                 "release_user) lacks %s, which %s needs: set release_user and "
                 "release_password_file to a user with that permission", t->user != NULL ? t->user
                 : "default", t->name, lacks, what);
    snprintf(buf, len, "%s (%s)", who, ACLHINT_DOC);
}

void
aclhint_add(const struct target_conf *t, const char *what, const char *err, size_t n,
            char *buf, size_t len)
{
    size_t used = strnlen(buf, len);

    if (!aclhint_refused(err, n) || used + 3 >= len)
        return;
    snprintf(buf + used, len - used, "; ");
    aclhint_explain(t, what, err, n, buf + used + 2, len - used - 2);
}
