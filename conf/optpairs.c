/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * optpairs.c - the FORMAT_PATTERNS value type: "glob=format" pairs split
 * by blanks or commas, e.g. "lock:orders:*=node-redlock lock:jobs:*=redis-py"
 * (a target's format_patterns).
 *
 * The glob is what comes before the last '=' (format names hold none); the
 * format must be one of o->names, the rows of the format table a key may
 * be declared (conf/options.c lists them: conf/ may not include the
 * table), so a misspelt name fails -n with the names allowed rather than
 * silently declaring nothing.  Stored as two parallel arrays, so the
 * scanner matches each glob as written.
 */
#include "conf/optpairs.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "conf/options.h"
#include "conf/optsyntax.h"
#include "conf/optvalue_impl.h"

static void
free_pairs(char **globs, char **names, size_t n)
{
    free_list(globs, n);
    free_list(names, n);
}

static bool
pair_sep(char c)
{
    return c == ' ' || c == '\t' || c == ',';
}

int
optpairs_set(const struct config_option *o, void *base, const char *v, char *why, size_t len)
{
    char **globs = NULL, **names = NULL, allowed[512];
    size_t n = 0, cap = 0, i;
    const char *p = v;
    int rc = -1;

    while (*p != '\0') {
        const char *start, *eq = NULL;
        size_t tlen;

        while (pair_sep(*p))
            p++;
        if (*p == '\0')
            break;
        start = p;
        while (*p != '\0' && !pair_sep(*p)) {
            if (*p == '=')
                eq = p;
            p++;
        }
        tlen = (size_t)(p - start);
        if (eq == NULL || eq == start || eq + 1 == p || start[0] == ';') {
            optvalue_whyf(why, len, "\"%.*s\" is not glob=format (e.g. %s)", (int)(tlen > 200 ? 200 : tlen),
                 start, o->example);
            goto out;
        }
        for (i = 0; o->names[i] != NULL; i++)
            if (strlen(o->names[i]) == (size_t)(p - eq - 1) &&
                memcmp(o->names[i], eq + 1, (size_t)(p - eq - 1)) == 0)
                break;
        if (o->names[i] == NULL) {
            optvalue_join_names(o->names, allowed, sizeof(allowed));
            optvalue_whyf(why, len, "\"%.*s\": \"%.*s\" is not a format a key may be declared (use %s)",
                 (int)(tlen > 200 ? 200 : tlen), start, (int)(p - eq - 1 > 64 ? 64 : p - eq - 1),
                 eq + 1, allowed);
            goto out;
        }
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 4;
            char **g = realloc(globs, ncap * sizeof(*g)), **m;

            if (g == NULL)
                goto oom;
            globs = g;
            if ((m = realloc(names, ncap * sizeof(*m))) == NULL)
                goto oom;
            names = m;
            cap = ncap;
        }
        globs[n] = strndup(start, (size_t)(eq - start));
        names[n] = strdup(o->names[i]);
        if (globs[n] == NULL || names[n] == NULL) {
            free(globs[n]);
            free(names[n]);
            goto oom;
        }
        n++;
    }
    free_pairs(*(char ***)optvalue_field(base, o->off), *(char ***)optvalue_field(base, o->off3),
               *(size_t *)optvalue_field(base, o->off2));
    *(char ***)optvalue_field(base, o->off) = globs;
    *(char ***)optvalue_field(base, o->off3) = names;
    *(size_t *)optvalue_field(base, o->off2) = n;
    globs = names = NULL;
    n = 0;
    rc = 0;
    goto out;
oom:
    optvalue_whyf(why, len, "out of memory");
out:
    free_pairs(globs, names, n);
    return rc;
}

void
optpairs_clear(const struct config_option *o, void *base)
{
    free_pairs(*(char ***)optvalue_field(base, o->off), *(char ***)optvalue_field(base, o->off3),
               *(size_t *)optvalue_field(base, o->off2));
    *(char ***)optvalue_field(base, o->off) = NULL;
    *(char ***)optvalue_field(base, o->off3) = NULL;
    *(size_t *)optvalue_field(base, o->off2) = 0;
}

int
optpairs_format(const struct config_option *o, const void *base, const char *sep,
             struct strbuf *sb)
{
    char *const *globs = *(char **const *)optvalue_cfield(base, o->off);
    char *const *names = *(char **const *)optvalue_cfield(base, o->off3);
    size_t n = *(const size_t *)optvalue_cfield(base, o->off2), i;

    (void)sep;                  /* blank-separated: a glob may hold ',' */
    if (n == 0)
        return 0;
    for (i = 0; i < n; i++)
        sb_addf(sb, "%s%s=%s", i > 0 ? " " : "", globs[i], names[i]);
    return 1;
}

void
optpairs_describe(const struct config_option *o, char *buf, size_t len)
{
    char names[512];

    optvalue_join_names(o->names, names, sizeof(names));
    snprintf(buf, len, "blank separated glob=format pairs, the format one of %s", names);
}
