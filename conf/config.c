/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config.c - config_load: the built-in defaults, then the file, then the
 * checks across keys; config_target, which finds a [target] by name for
 * the agent and lockctl; and config_target_writer, the credentials the
 * writes use.
 *
 * What a key means is not written here: every key is a row of the option
 * table (options.c) and its value type (optvalue.c) parses, prints and
 * frees it.  The loader walks the table, and is split by concern: this
 * file runs a load and holds what every part uses (the first error, the
 * look-ups of options and sections, defaults, new named sections);
 * configread.c reads the file (lines, headers, keys, [classes]);
 * configcheck.c checks what spans keys; configprint.c writes -n;
 * configfree.c frees.  What they share is config_impl.h.
 *
 * Every error is one line "FILE:LINE: [section] key: what is wrong (what
 * is allowed)".  The first error stops the parse (the reader returns EOF),
 * config_load frees everything and returns -1.  After the parse, checks
 * that span keys (sentinel mode needs sentinels, redlock members exist,
 * ...) run with the line numbers kept per key.
 *
 * Nothing here is global: the parse state lives in struct load on the
 * caller's stack, so two loads (a SIGHUP reload racing a lockctl in the
 * same process) cannot interfere.
 */
#include "conf/config.h"

#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/addrmatch.h"
#include "conf/config_impl.h"
#include "conf/options.h"

#define BUILTIN_PATH "(built-in defaults)"

/*
 * Record the first error; later ones are consequences of it and would
 * only bury it.  label and key may be NULL.
 */
void
fail(struct load *ld, int line, const char *label, const char *key, const char *fmt, ...)
{
    char msg[CONFIG_ERR_LEN], where[CONFIG_ERR_LEN];
    va_list ap;

    if (ld->failed)
        return;
    ld->failed = true;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (line > 0)
        snprintf(where, sizeof(where), "%s:%d", ld->path, line);
    else
        snprintf(where, sizeof(where), "%s", ld->path);
    if (ld->errlen == 0)
        return;
    if (label != NULL && key != NULL)
        snprintf(ld->err, ld->errlen, "%s: %s %s: %s", where, label, key, msg);
    else if (label != NULL)
        snprintf(ld->err, ld->errlen, "%s: %s: %s", where, label, msg);
    else if (key != NULL)
        snprintf(ld->err, ld->errlen, "%s: %s: %s", where, key, msg);
    else
        snprintf(ld->err, ld->errlen, "%s: %s", where, msg);
}

int
find_option(enum config_section sec, const char *key)
{
    size_t i;

    for (i = 0; i < config_noptions; i++)
        if (config_options[i].section == sec && strcmp(config_options[i].key, key) == 0)
            return (int)i;
    return -1;
}

void *
instance_base(struct config *cfg, enum config_section sec, size_t idx)
{
    switch (sec) {
    case SECTION_TARGET:  return &cfg->targets[idx];
    case SECTION_REDLOCK: return &cfg->redlocks[idx];
    case SECTION_WEBHOOK: return &cfg->webhooks[idx];
    default:              return cfg;
    }
}

/* Defaults go through option_set like file values: one parser, and a
 * default that does not parse is caught by config_load(NULL) in the tests. */
static int
apply_defaults(struct load *ld, enum config_section sec, void *base)
{
    char why[CONFIG_ERR_LEN];
    size_t i;

    for (i = 0; i < config_noptions; i++) {
        const struct config_option *o = &config_options[i];

        if (o->section != sec || o->def == NULL)
            continue;
        if (option_set(o, base, o->def, why, sizeof(why)) == -1) {
            fail(ld, 0, NULL, o->key, "built-in default does not parse: %s", why);
            return -1;
        }
    }
    return 0;
}

/* Grow one of the config's arrays by a zeroed element.  The count goes up
 * before anything can fail, so config_free always sees the element. */
void *
grow(void *arrp, size_t *n, size_t size)
{
    void **arr = arrp;
    char *p = realloc(*arr, (*n + 1) * size);

    if (p == NULL)
        return NULL;
    *arr = p;
    memset(p + *n * size, 0, size);
    return p + (*n)++ * size;
}

/* Create the struct a named section fills, with its defaults. */
int
new_named(struct load *ld, enum config_section sec, const char *name, size_t nlen,
          size_t *idx)
{
    struct config *cfg = ld->cfg;
    char **namep = NULL;
    void *base = NULL;
    size_t n = 0, max = 0;

    switch (sec) {
    case SECTION_TARGET:
        n = cfg->ntargets;
        max = CONFIG_MAX_TARGETS;
        break;
    case SECTION_REDLOCK:
        n = cfg->nredlocks;
        max = CONFIG_MAX_REDLOCKS;
        break;
    case SECTION_WEBHOOK:
        n = cfg->nwebhooks;
        max = CONFIG_MAX_WEBHOOKS;
        break;
    default:
        break;
    }
    if (n >= max) {
        fail(ld, ld->lineno, NULL, NULL, "too many [%s] sections (at most %zu)",
             config_section_name(sec), max);
        return -1;
    }
    switch (sec) {
    case SECTION_TARGET: {
        struct target_conf *t = grow(&cfg->targets, &cfg->ntargets, sizeof(*t));

        if (t != NULL)
            namep = &t->name;
        base = t;
        break;
    }
    case SECTION_REDLOCK: {
        struct redlock_conf *r = grow(&cfg->redlocks, &cfg->nredlocks, sizeof(*r));

        if (r != NULL)
            namep = &r->name;
        base = r;
        break;
    }
    case SECTION_WEBHOOK: {
        struct webhook_conf *w = grow(&cfg->webhooks, &cfg->nwebhooks, sizeof(*w));

        if (w != NULL)
            namep = &w->name;
        base = w;
        break;
    }
    default:
        break;
    }
    if (base == NULL || (*namep = strndup(name, nlen)) == NULL) {
        fail(ld, ld->lineno, NULL, NULL, "out of memory");
        return -1;
    }
    *idx = n;
    return apply_defaults(ld, sec, base);
}

int
config_load(const char *path, struct config **out, char *err, size_t errlen)
{
    struct load ld;
    struct config *cfg = NULL;
    size_t i, idx;
    int rc = -1;

    memset(&ld, 0, sizeof(ld));
    ld.path = path != NULL ? path : BUILTIN_PATH;
    ld.err = err;
    ld.errlen = err != NULL ? errlen : 0;
    if (ld.errlen > 0)
        err[0] = '\0';
    if (out == NULL) {
        fail(&ld, 0, NULL, NULL, "internal error: config_load without a result pointer");
        return -1;
    }
    *out = NULL;

    cfg = calloc(1, sizeof(*cfg));
    if (cfg == NULL || (cfg->path = strdup(ld.path)) == NULL) {
        fail(&ld, 0, NULL, NULL, "out of memory");
        goto out;
    }
    ld.cfg = cfg;
    /* the unnamed sections live in struct config itself */
    for (i = 0; i < SECTION_COUNT; i++)
        if (!config_section_named(i) && apply_defaults(&ld, i, cfg) == -1)
            goto out;
    if (path != NULL && parse_file(&ld) == -1)
        goto out;
    /* SPEC: with no [target] at all, watch the local Redis. */
    if (cfg->ntargets == 0) {
        if (new_named(&ld, SECTION_TARGET, "default", 7, &idx) == -1)
            goto out;
        cfg->default_target = true;
    }
    if (validate(&ld) == -1)
        goto out;
    *out = cfg;
    cfg = NULL;
    rc = 0;
out:
    if (ld.fp != NULL)
        fclose(ld.fp);
    for (i = 0; i < ld.ninst; i++)
        free(ld.inst[i].key_line);
    free(ld.inst);
    free(ld.class_line);
    config_free(cfg);
    return rc;
}

const struct target_conf *
config_target(const struct config *cfg, const char *name)
{
    size_t i;

    for (i = 0; cfg != NULL && name != NULL && i < cfg->ntargets; i++)
        if (strcmp(cfg->targets[i].name, name) == 0)
            return &cfg->targets[i];
    return NULL;
}

void
config_target_writer(const struct target_conf *t, struct target_conf *out)
{
    *out = *t;
    if (t->release_user != NULL) {
        out->user = t->release_user;
        out->password = t->release_password;
    }
}

/* qsort order of sentinels: host text, then port. */
static int
hostport_cmp(const void *a, const void *b)
{
    const struct hostport *x = *(const struct hostport *const *)a;
    const struct hostport *y = *(const struct hostport *const *)b;
    int c = strcmp(x->host, y->host);

    if (c != 0)
        return c;
    return (x->port > y->port) - (x->port < y->port);
}

/* The sentinels sorted (the same set listed in another order is the same
 * address); in the config's order when there is no memory to sort. */
void
config_target_address(const struct target_conf *t, char *buf, size_t len)
{
    const struct hostport **order = NULL;
    size_t n, i;

    if (t->mode != TARGET_SENTINEL) {
        snprintf(buf, len, "%s:%d/%d", t->host, t->port, t->db);
        return;
    }
    if (t->nsentinels > 1 && (order = calloc(t->nsentinels, sizeof(*order))) != NULL) {
        for (i = 0; i < t->nsentinels; i++)
            order[i] = &t->sentinels[i];
        qsort(order, t->nsentinels, sizeof(*order), hostport_cmp);
    }
    snprintf(buf, len, "sentinel %s via ", t->master_name ? t->master_name : "?");
    for (i = 0; i < t->nsentinels && (n = strlen(buf)) < len; i++) {
        const struct hostport *s = order != NULL ? order[i] : &t->sentinels[i];

        snprintf(buf + n, len - n, "%s%s:%d", i ? "," : "", s->host, s->port);
    }
    if ((n = strlen(buf)) < len)
        snprintf(buf + n, len - n, "/%d", t->db);
    free(order);
}

/* Do two host names share an address (the same text does; "localhost" and
 * "127.0.0.1" do)?  Looked up, so a name resolves as the connection would. */
static bool
same_host(const char *a, const char *b)
{
    struct addrinfo hints, *ra = NULL, *rb = NULL;
    bool same = false;

    if (strcmp(a, b) == 0)
        return true;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(a, NULL, &hints, &ra) == 0 && getaddrinfo(b, NULL, &hints, &rb) == 0)
        same = addrinfo_meet(ra, rb);
    if (ra != NULL)
        freeaddrinfo(ra);
    if (rb != NULL)
        freeaddrinfo(rb);
    return same;
}

bool
config_same_server(const struct target_conf *a, const struct target_conf *b)
{
    size_t i, j;

    if (a->mode != b->mode || a->db != b->db)
        return false;
    if (a->mode != TARGET_SENTINEL)
        return a->port == b->port && same_host(a->host, b->host);
    if (a->master_name == NULL || b->master_name == NULL ||
        strcmp(a->master_name, b->master_name) != 0)
        return false;
    /* the same primary when one sentinel is in both lists */
    for (i = 0; i < a->nsentinels; i++)
        for (j = 0; j < b->nsentinels; j++)
            if (a->sentinels[i].port == b->sentinels[j].port &&
                same_host(a->sentinels[i].host, b->sentinels[j].host))
                return true;
    return false;
}
