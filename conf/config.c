/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config.c - load, validate, print and free the lockwatch configuration.
 *
 * What a key means is not written here: every key is a row of the option
 * table (options.c) and its value type (optvalue.c) parses, prints and
 * frees it.  This file walks the table: for the built-in defaults, for
 * each key line of the file, for the keys every named section must have,
 * for -n (config_print writes every option of every section, so its
 * output loads back to the same values, but for the webhook URLs' user
 * info and query, which may be tokens and are masked) and for
 * config_free.  The only
 * per-key knowledge here is in the checks that span keys (below) and the
 * free-form [classes]; config_target finds a [target] by name for the
 * agent and lockctl.
 *
 * The file is INI, read with inih (Debian's libinih 55).  inih hands the
 * handler a section, a key and a value but no line number
 * (INI_HANDLER_LINENO is 0 in the packaged build), so we feed it through
 * ini_parse_stream() with our own line reader: the reader counts lines,
 * keeps a copy of the current line, and checks what inih would otherwise
 * report only as a bare line number or get silently wrong:
 *   - lines longer than inih's buffer (inih would split them in two);
 *   - section headers: inih calls nothing for a section with no keys, cuts
 *     section names at 50 bytes and reports a missing "]" as a number, so
 *     the reader parses "[kind NAME]" itself and opens the section;
 *   - indented lines after a key, which inih joins to that key as a
 *     continuation (an indented "samples = x" would silently become part
 *     of the value of "listen");
 *   - lines that are neither a comment, a header nor key = value.
 * The handler then sees only well-formed key lines.  [classes] lines are
 * re-split from the copy, because inih also splits on ':' and glob keys
 * like lock:order:* are full of colons.
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

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ini.h>

#include "common/strbuf.h"
#include "conf/options.h"

#define BUILTIN_PATH "(built-in defaults)"

/* Characters of one line, line ending not counted.  inih reads lines into
 * an INI_MAX_LINE buffer; keeping two bytes spare leaves room for a "\r"
 * and the NUL, so a CRLF file has the same limit as an LF one. */
#define LINE_MAX_CHARS (INI_MAX_LINE - 2)

/* Widest key in the table, for lining up -n output. */
#define PRINT_KEY_WIDTH 19

/* One section as it appears in the file. */
struct instance {
    enum config_section sec;
    size_t idx;                 /* into cfg->targets/redlocks/webhooks */
    int line;                   /* of its [header]; 0 when built in */
    char label[CONFIG_NAME_MAX + 16];   /* "[target main]", for messages */
    int *key_line;              /* per config_options[] row: line set on, 0 = default */
};

struct load {
    struct config *cfg;
    const char *path;
    FILE *fp;
    char *err;
    size_t errlen;
    bool failed;
    int lineno;
    int read_errno;
    char raw[INI_MAX_LINE];     /* the current line as read, before inih cuts it */
    const char *raw_start;      /* first non-blank character in raw */
    const char *line_start;     /* the same position in inih's buffer */
    bool have_prev_key;         /* inih would join an indented line to it */
    char prev_key[64];
    struct instance *inst;
    size_t ninst;
    bool has_cur;
    size_t cur;                 /* index into inst of the open section */
    int *class_line;            /* line of each [classes] entry */
};

static void fail(struct load *ld, int line, const char *label, const char *key,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/*
 * Record the first error; later ones are consequences of it and would
 * only bury it.  label and key may be NULL.
 */
static void
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

static int
find_option(enum config_section sec, const char *key)
{
    size_t i;

    for (i = 0; i < config_noptions; i++)
        if (config_options[i].section == sec && strcmp(config_options[i].key, key) == 0)
            return (int)i;
    return -1;
}

static void *
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

static void
clear_section(enum config_section sec, void *base)
{
    size_t i;

    for (i = 0; i < config_noptions; i++)
        if (config_options[i].section == sec)
            option_clear(&config_options[i], base);
}

/* Grow one of the config's arrays by a zeroed element.  The count goes up
 * before anything can fail, so config_free always sees the element. */
static void *
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

/* ---- sections ------------------------------------------------------------- */

static bool
valid_name(const char *s, size_t n)
{
    size_t i;

    if (n == 0 || n > CONFIG_NAME_MAX)
        return false;
    for (i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && strchr("_.-", s[i]) == NULL)
            return false;
    return true;
}

/* Create the struct a named section fills, with its defaults. */
static int
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

static int
open_section(struct load *ld, const char *kind, size_t klen, const char *name, size_t nlen)
{
    struct instance *in;
    enum config_section sec = SECTION_COUNT;
    char label[sizeof(in->label)];
    size_t i, idx = 0;

    if (nlen > 0)
        snprintf(label, sizeof(label), "[%.*s %.*s]", (int)klen, kind, (int)nlen, name);
    else
        snprintf(label, sizeof(label), "[%.*s]", (int)klen, kind);
    for (i = 0; i < SECTION_COUNT; i++) {
        const char *s = config_section_name((enum config_section)i);

        if (strlen(s) == klen && memcmp(s, kind, klen) == 0)
            sec = (enum config_section)i;
    }
    if (sec == SECTION_COUNT) {
        struct strbuf names;

        sb_init(&names, CONFIG_ERR_LEN);
        for (i = 0; i < SECTION_COUNT; i++)
            sb_addf(&names, "%s[%s%s]", i > 0 ? ", " : "",
                    config_section_name((enum config_section)i),
                    config_section_named((enum config_section)i) ? " NAME" : "");
        fail(ld, ld->lineno, label, NULL, "unknown section (allowed: %s)",
             sb_failed(&names) || names.buf == NULL ? "see lockwatch.ini(5)" : names.buf);
        sb_release(&names);
        return -1;
    }
    if (config_section_named(sec) && nlen == 0) {
        fail(ld, ld->lineno, label, NULL, "needs a name (write [%s NAME], NAME of "
             "letters, digits, '_', '.' and '-')", config_section_name(sec));
        return -1;
    }
    if (!config_section_named(sec) && nlen > 0) {
        fail(ld, ld->lineno, label, NULL, "takes no name (write [%s])",
             config_section_name(sec));
        return -1;
    }
    if (nlen > 0 && !valid_name(name, nlen)) {
        fail(ld, ld->lineno, label, NULL, "\"%.*s\" is not a valid name (use letters, "
             "digits, '_', '.' and '-', at most %d of them)", (int)nlen, name,
             CONFIG_NAME_MAX);
        return -1;
    }
    for (i = 0; i < ld->ninst; i++) {
        if (ld->inst[i].sec != sec || strcmp(ld->inst[i].label, label) != 0)
            continue;
        if (nlen > 0)
            fail(ld, ld->lineno, label, NULL, "defined twice (first at line %d; give each "
                 "[%s] its own name)", ld->inst[i].line, config_section_name(sec));
        else
            fail(ld, ld->lineno, label, NULL, "given twice (first at line %d; merge the "
                 "two into one section)", ld->inst[i].line);
        return -1;
    }
    if (nlen > 0 && new_named(ld, sec, name, nlen, &idx) == -1)
        return -1;

    in = grow(&ld->inst, &ld->ninst, sizeof(*ld->inst));
    if (in == NULL || (in->key_line = calloc(config_noptions, sizeof(int))) == NULL) {
        fail(ld, ld->lineno, NULL, NULL, "out of memory");
        return -1;
    }
    in->sec = sec;
    in->idx = idx;
    in->line = ld->lineno;
    memcpy(in->label, label, sizeof(label));
    ld->has_cur = true;
    ld->cur = ld->ninst - 1;
    return 0;
}

/* inih's rule for where a value ends: at any of chars, or at a ';' that
 * follows whitespace (an inline comment). */
static const char *
find_chars_or_comment(const char *s, const char *chars)
{
    bool was_space = false;

    while (*s != '\0' && (chars == NULL || strchr(chars, *s) == NULL) &&
           !(was_space && *s == ';')) {
        was_space = isspace((unsigned char)*s);
        s++;
    }
    return s;
}

/* "[kind NAME]", p at the '['. */
static int
on_header(struct load *ld, const char *p)
{
    const char *end = find_chars_or_comment(p + 1, "]");
    const char *q, *kind, *kend, *name, *nend;

    if (*end != ']') {
        fail(ld, ld->lineno, NULL, NULL, "section header without a closing \"]\" (write "
             "e.g. [agent] or [target main])");
        return -1;
    }
    for (q = end + 1; isspace((unsigned char)*q); q++)
        ;
    if (*q != '\0' && *q != ';' && *q != '#') {
        fail(ld, ld->lineno, NULL, NULL, "text after the section header (put a key on its "
             "own line, and start a comment with ;)");
        return -1;
    }
    for (kind = p + 1; kind < end && isspace((unsigned char)*kind); kind++)
        ;
    for (kend = kind; kend < end && !isspace((unsigned char)*kend); kend++)
        ;
    for (name = kend; name < end && isspace((unsigned char)*name); name++)
        ;
    for (nend = end; nend > name && isspace((unsigned char)nend[-1]); nend--)
        ;
    if (kend == kind) {
        fail(ld, ld->lineno, "[]", NULL, "empty section header (write e.g. [agent] or "
             "[target main])");
        return -1;
    }
    return open_section(ld, kind, (size_t)(kend - kind), name, (size_t)(nend - name));
}

/*
 * inih's line reader, fgets-shaped.  Reads one line into str without its
 * line ending (inih strips trailing blanks anyway), counts it, keeps a copy
 * and checks it (see the top of the file).  Returning NULL ends the parse:
 * at EOF, on a read error, and on the first error found.
 */
static char *
read_line(char *str, int num, void *stream)
{
    struct load *ld = stream;
    size_t n = 0, cap = num > 1 ? (size_t)num - 1 : 0, content;
    const char *p, *e;
    int c = EOF;

    if (ld->failed)
        return NULL;
    for (;;) {
        c = getc(ld->fp);
        if (c == EOF || c == '\n')
            break;
        if (c == '\0') {
            fail(ld, ld->lineno + 1, NULL, NULL, "contains a NUL byte (the config must be "
                 "a text file)");
            return NULL;
        }
        if (n == cap) {
            fail(ld, ld->lineno + 1, NULL, NULL, "line is longer than %d characters "
                 "(shorten it, or move a trailing comment to a line of its own)",
                 LINE_MAX_CHARS);
            return NULL;
        }
        str[n++] = (char)c;
    }
    if (c == EOF && n == 0) {
        if (ferror(ld->fp))
            ld->read_errno = errno != 0 ? errno : EIO;
        return NULL;
    }
    str[n] = '\0';
    ld->lineno++;
    content = n > 0 && str[n - 1] == '\r' ? n - 1 : n;
    if (content > LINE_MAX_CHARS) {
        fail(ld, ld->lineno, NULL, NULL, "line is longer than %d characters (shorten it, "
             "or move a trailing comment to a line of its own)", LINE_MAX_CHARS);
        return NULL;
    }
    memcpy(ld->raw, str, n + 1);

    p = ld->raw;
    if (ld->lineno == 1 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)     /* as inih does */
        p += 3;
    while (isspace((unsigned char)*p))
        p++;
    ld->raw_start = p;
    ld->line_start = str + (p - ld->raw);
    if (*p == '\0' || *p == ';' || *p == '#')
        return str;
    if (ld->have_prev_key && p > ld->raw) {
        const char *label = ld->has_cur ? ld->inst[ld->cur].label : NULL;

        fail(ld, ld->lineno, label, ld->prev_key, "this indented line would be read as "
             "more of the value of %s above (values are one line; remove the "
             "indentation)", ld->prev_key);
        return NULL;
    }
    if (*p == '[') {
        ld->have_prev_key = false;
        return on_header(ld, p) == 0 ? str : NULL;
    }
    e = find_chars_or_comment(p, "=:");
    if (*e != '=' && *e != ':') {
        fail(ld, ld->lineno, ld->has_cur ? ld->inst[ld->cur].label : NULL, NULL,
             "not a key = value line, a [section] header or a comment (comments start "
             "with ; or #)");
        return NULL;
    }
    while (e > p && isspace((unsigned char)e[-1]))
        e--;
    snprintf(ld->prev_key, sizeof(ld->prev_key), "%.*s", (int)(e - p), p);
    ld->have_prev_key = true;
    return str;
}

/* ---- keys ----------------------------------------------------------------- */

/*
 * A [classes] line, "GLOB = NAME", re-split from the raw line: inih splits
 * at the first ':' or '=', and globs contain colons.  The split is at the
 * last '=' so a glob may contain '=' (a class name cannot).
 */
static int
on_class(struct load *ld, const struct instance *in)
{
    struct config *cfg = ld->cfg;
    struct class_rule *rule;
    char line[INI_MAX_LINE], *eq, *glob, *name, *end;
    size_t i;

    snprintf(line, sizeof(line), "%s", ld->raw_start);
    line[find_chars_or_comment(line, NULL) - line] = '\0';
    eq = strrchr(line, '=');
    if (eq != NULL)
        *eq = '\0';
    for (end = line + strlen(line); end > line && isspace((unsigned char)end[-1]); end--)
        ;
    *end = '\0';
    glob = line;
    if (eq == NULL) {
        fail(ld, ld->lineno, in->label, glob, "no class name (write GLOB = CLASS, e.g. "
             "lock:order:* = order)");
        return -1;
    }
    for (name = eq + 1; isspace((unsigned char)*name); name++)
        ;
    for (end = name + strlen(name); end > name && isspace((unsigned char)end[-1]); end--)
        ;
    *end = '\0';
    if (glob[0] == '\0') {
        fail(ld, ld->lineno, in->label, NULL, "empty glob (write GLOB = CLASS, e.g. "
             "lock:order:* = order)");
        return -1;
    }
    if (name[0] == ';') {
        fail(ld, ld->lineno, in->label, glob, "a class name may not begin with ';' (-n "
             "would print it as a comment; e.g. lock:order:* = order)");
        return -1;
    }
    if (name[0] == '\0' || strlen(name) > CONFIG_CLASS_NAME_MAX) {
        fail(ld, ld->lineno, in->label, glob, "%s class name (write GLOB = CLASS, CLASS "
             "of 1 to %d bytes, e.g. lock:order:* = order)",
             name[0] == '\0' ? "empty" : "too long a", CONFIG_CLASS_NAME_MAX);
        return -1;
    }
    for (i = 0; i < cfg->nclasses; i++) {
        if (strcmp(cfg->classes[i].glob, glob) == 0) {
            fail(ld, ld->lineno, in->label, glob, "given twice (first at line %d; the "
                 "first match wins, so this one would never apply)", ld->class_line[i]);
            return -1;
        }
    }
    if (cfg->nclasses >= CONFIG_MAX_CLASSES) {
        fail(ld, ld->lineno, in->label, glob, "too many classes (at most %d)",
             CONFIG_MAX_CLASSES);
        return -1;
    }
    {
        size_t nlines = cfg->nclasses;
        int *lines = grow(&ld->class_line, &nlines, sizeof(int));

        if (lines == NULL || (rule = grow(&cfg->classes, &cfg->nclasses,
                                          sizeof(*rule))) == NULL)
            goto oom;
        *lines = ld->lineno;
    }
    rule->glob = strdup(glob);
    rule->name = strdup(name);
    if (rule->glob == NULL || rule->name == NULL)
        goto oom;
    return 0;
oom:
    fail(ld, ld->lineno, NULL, NULL, "out of memory");
    return -1;
}

static int
on_key(void *user, const char *section, const char *name, const char *value)
{
    struct load *ld = user;
    const struct config_option *o;
    struct instance *in;
    char why[CONFIG_ERR_LEN];
    int i;

    (void)section;              /* ours is ld->cur: inih's is cut at 50 bytes */
    if (ld->failed)
        return 0;
    if (name != ld->line_start) {
        /* read_line refuses continuation lines, so inih calls us only for
         * the key line it just read; anything else is a bug to report. */
        fail(ld, ld->lineno, NULL, NULL, "internal error: unexpected line from inih");
        return 0;
    }
    if (!ld->has_cur) {
        fail(ld, ld->lineno, NULL, name, "set before any [section] (move it under the "
             "section it belongs to, e.g. [agent])");
        return 0;
    }
    in = &ld->inst[ld->cur];
    if (in->sec == SECTION_CLASSES)
        return on_class(ld, in) == 0;

    i = find_option(in->sec, name);
    if (i < 0) {
        char allowed[CONFIG_ERR_LEN] = "";
        size_t j, used = 0;

        for (j = 0; j < config_noptions; j++) {
            int w;

            if (config_options[j].section != in->sec)
                continue;
            w = snprintf(allowed + used, sizeof(allowed) - used, "%s%s",
                         used > 0 ? ", " : "", config_options[j].key);
            if (w < 0 || (size_t)w >= sizeof(allowed) - used)
                break;
            used += (size_t)w;
        }
        fail(ld, ld->lineno, in->label, name, "unknown key (allowed: %s)", allowed);
        return 0;
    }
    o = &config_options[i];
    /* inih keeps "key =;x" as ";x", but -n writes "key = ;x", a comment */
    if (value[0] == ';') {
        fail(ld, ld->lineno, in->label, name, "a value may not begin with ';' (it would "
             "read back as a comment)");
        return 0;
    }
    if (in->key_line[i] != 0) {
        fail(ld, ld->lineno, in->label, name, "given twice (first at line %d; keep one)",
             in->key_line[i]);
        return 0;
    }
    if (option_set(o, instance_base(ld->cfg, in->sec, in->idx), value, why,
                   sizeof(why)) == -1) {
        fail(ld, ld->lineno, in->label, name, "%s", why);
        return 0;
    }
    in->key_line[i] = ld->lineno;
    return 1;
}

/* ---- checks across keys ------------------------------------------------- */

/* Where to point at for KEY: its line, or the section header's when the
 * value is a default. */
static int
line_of(const struct instance *in, const char *key)
{
    int i = find_option(in->sec, key);

    return i >= 0 && in->key_line[i] != 0 ? in->key_line[i] : in->line;
}

static bool
given(const struct instance *in, const char *key)
{
    int i = find_option(in->sec, key);

    return i >= 0 && in->key_line[i] != 0;
}

/* The tls_ keys: only with rediss://, a client certificate with its key,
 * a CA directory that is one. */
static void
check_tls(struct load *ld, const struct instance *in, const struct target_conf *t)
{
    static const char *const keys[] = { "tls_ca_file", "tls_ca_dir", "tls_cert_file",
                                         "tls_key_file", "tls_server_name", "tls_verify" };
    struct stat st;

    if (!t->tls) {
        /* tls_verify = on is the default, which -n writes for every
         * target: only off is a setting without effect */
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
            if (given(in, keys[i]) && (strcmp(keys[i], "tls_verify") != 0 || !t->tls_verify))
                fail(ld, line_of(in, keys[i]), in->label, keys[i], "only used with TLS "
                     "(write the url as rediss://..., or remove it)");
        return;
    }
    if ((t->tls_cert_file == NULL) != (t->tls_key_file == NULL))
        fail(ld, line_of(in, t->tls_cert_file ? "tls_cert_file" : "tls_key_file"), in->label,
             t->tls_cert_file ? "tls_key_file" : "tls_cert_file", "missing (a client "
             "certificate needs both tls_cert_file and tls_key_file)");
    if (t->tls_ca_dir != NULL && (stat(t->tls_ca_dir, &st) == -1 || !S_ISDIR(st.st_mode)))
        fail(ld, line_of(in, "tls_ca_dir"), in->label, "tls_ca_dir", "\"%s\" is not a "
             "directory (give a directory of hashed CA certificates, e.g. /etc/ssl/certs)",
             t->tls_ca_dir);
}

static void
check_target(struct load *ld, const struct instance *in, const struct target_conf *t)
{
    if (t->npatterns == 0)
        fail(ld, line_of(in, "patterns"), in->label, "patterns", "no pattern given (list "
             "at least one glob of lock keys, e.g. lock:*)");
    if (t->mode == TARGET_SENTINEL) {
        if (t->nsentinels == 0)
            fail(ld, line_of(in, "mode"), in->label, "sentinels", "missing (mode = "
                 "sentinel needs the sentinels as host:port, comma separated, e.g. "
                 "127.0.0.1:26379)");
        if (t->master_name == NULL)
            fail(ld, line_of(in, "mode"), in->label, "master_name", "missing (mode = "
                 "sentinel needs the name the sentinels monitor, e.g. mymaster)");
    } else {
        /* A key that is silently ignored is worse than a refusal: whoever
         * wrote it believes it does something. */
        if (given(in, "sentinels"))
            fail(ld, line_of(in, "sentinels"), in->label, "sentinels", "only used with "
                 "mode = sentinel (set mode = sentinel, or remove it)");
        if (given(in, "master_name"))
            fail(ld, line_of(in, "master_name"), in->label, "master_name", "only used "
                 "with mode = sentinel (set mode = sentinel, or remove it)");
    }
    if (t->scan_replicas && t->mode != TARGET_CLUSTER)
        fail(ld, line_of(in, "scan_replicas"), in->label, "scan_replicas", "only used "
             "with mode = cluster (set mode = cluster, or scan_replicas = no)");
    if (t->mode == TARGET_CLUSTER && t->db != 0)
        fail(ld, line_of(in, "url"), in->label, "url", "Redis Cluster has only database "
             "0 (remove \"/%d\" from the URL)", t->db);
    check_tls(ld, in, t);
}

static void
check_redlock(struct load *ld, const struct instance *in, const struct redlock_conf *r)
{
    int line = line_of(in, "targets");
    size_t i, j;

    if (r->ntargets < 2) {
        fail(ld, line, in->label, "targets", "names %zu target%s (a Redlock group needs "
             "at least 2, e.g. r1, r2, r3)", r->ntargets, r->ntargets == 1 ? "" : "s");
        return;
    }
    for (i = 0; i < r->ntargets; i++) {
        if (config_target(ld->cfg, r->targets[i]) == NULL) {
            fail(ld, line, in->label, "targets", "\"%s\" is not a defined target (add a "
                 "[target %s] section, or remove it from the list)", r->targets[i],
                 r->targets[i]);
            return;
        }
        for (j = 0; j < i; j++) {
            if (strcmp(r->targets[i], r->targets[j]) == 0) {
                fail(ld, line, in->label, "targets", "names \"%s\" twice (list each "
                     "target once)", r->targets[i]);
                return;
            }
        }
    }
}

static int
validate(struct load *ld)
{
    struct config *cfg = ld->cfg;
    size_t i, k;

    for (i = 0; i < ld->ninst && !ld->failed; i++) {
        const struct instance *in = &ld->inst[i];
        void *base = instance_base(cfg, in->sec, in->idx);

        for (k = 0; k < config_noptions; k++) {
            const struct config_option *o = &config_options[k];

            if (o->section == in->sec && (o->flags & OPT_REQUIRED) && in->key_line[k] == 0)
                fail(ld, in->line, in->label, o->key, "missing (every [%s NAME] needs "
                     "%s, e.g. %s = %s)", config_section_name(in->sec), o->key, o->key,
                     o->example);
        }
        switch (in->sec) {
        case SECTION_TARGET:
            check_target(ld, in, base);
            break;
        case SECTION_REDLOCK:
            check_redlock(ld, in, base);
            break;
        case SECTION_WEBHOOK: {
            const struct webhook_conf *w = base;

            if (w->secret_file != NULL && w->format != SINK_GENERIC)
                fail(ld, line_of(in, "secret_file"), in->label, "secret_file", "only "
                     "used with format = generic (remove it; %s messages are not "
                     "signed)", config_sink_format_str(w->format));
            break;
        }
        case SECTION_UNLOCK:
            if (cfg->unlock_http && cfg->unlock_token == NULL)
                fail(ld, line_of(in, "http"), in->label, "http", "on needs token_file "
                     "(set token_file to a file holding the bearer token, readable only by lockwatchd)");
            break;
        default:
            break;
        }
    }
    return ld->failed ? -1 : 0;
}

/* ---- load ----------------------------------------------------------------- */

static int
parse_file(struct load *ld)
{
    int rc;

    ld->fp = fopen(ld->path, "re");
    if (ld->fp == NULL) {
        if (ld->errlen > 0)
            snprintf(ld->err, ld->errlen, "cannot open config \"%s\": %s", ld->path,
                     strerror(errno));
        ld->failed = true;
        return -1;
    }
    rc = ini_parse_stream(read_line, ld, on_key, ld);
    if (ld->failed)
        return -1;
    if (ld->read_errno != 0) {
        if (ld->errlen > 0)
            snprintf(ld->err, ld->errlen, "cannot read config \"%s\": %s", ld->path,
                     strerror(ld->read_errno));
        ld->failed = true;
        return -1;
    }
    if (rc == -2)
        fail(ld, 0, NULL, NULL, "out of memory");
    else if (rc != 0)
        /* read_line checks every line inih could refuse; this is the net
         * under it, and still names the line. */
        fail(ld, rc, NULL, NULL, "cannot parse this line (expected [section], "
             "key = value, or a comment starting with ;)");
    return ld->failed ? -1 : 0;
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
    if (apply_defaults(&ld, SECTION_AGENT, cfg) == -1 ||
        apply_defaults(&ld, SECTION_RULES, cfg) == -1 ||
        apply_defaults(&ld, SECTION_UNLOCK, cfg) == -1)
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

void
config_free(struct config *cfg)
{
    size_t i;

    if (cfg == NULL)
        return;
    for (i = 0; i < cfg->ntargets; i++) {
        clear_section(SECTION_TARGET, &cfg->targets[i]);
        free(cfg->targets[i].name);
    }
    for (i = 0; i < cfg->nredlocks; i++) {
        clear_section(SECTION_REDLOCK, &cfg->redlocks[i]);
        free(cfg->redlocks[i].name);
    }
    for (i = 0; i < cfg->nwebhooks; i++) {
        clear_section(SECTION_WEBHOOK, &cfg->webhooks[i]);
        free(cfg->webhooks[i].name);
    }
    for (i = 0; i < cfg->nclasses; i++) {
        free(cfg->classes[i].glob);
        free(cfg->classes[i].name);
    }
    clear_section(SECTION_AGENT, cfg);
    clear_section(SECTION_RULES, cfg);
    clear_section(SECTION_UNLOCK, cfg);
    free(cfg->targets);
    free(cfg->redlocks);
    free(cfg->webhooks);
    free(cfg->classes);
    free(cfg->path);
    free(cfg);
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

/* ---- print ---------------------------------------------------------------- */

/*
 * One section, every option of it, as the file would say it.  An option
 * with no value (an optional file, sentinels outside sentinel mode) is
 * shown as a comment so the output still loads.  Lines are kept within
 * what read_line accepts: padding is dropped, and lists lose the space
 * after their commas, before a line would grow too long.
 */
static void
print_section(FILE *fp, const char *label, enum config_section sec, const void *base)
{
    char val[4 * INI_MAX_LINE];
    size_t i;

    fprintf(fp, "\n%s\n", label);
    for (i = 0; i < config_noptions; i++) {
        const struct config_option *o = &config_options[i];
        int r, width = PRINT_KEY_WIDTH;

        if (o->section != sec)
            continue;
        r = option_format(o, base, false, val, sizeof(val));
        if (r == 1 && (size_t)width + 3 + strlen(val) > LINE_MAX_CHARS) {
            width = 0;
            r = option_format(o, base, true, val, sizeof(val));
        }
        if (r == 1)
            fprintf(fp, "%-*s = %s\n", width, o->key, val);
        else if (r == 0)
            fprintf(fp, "; %s is not set\n", o->key);
        else
            fprintf(fp, "; %s: value too long to show\n", o->key);
    }
}

void
config_print(const struct config *cfg, FILE *fp)
{
    char label[CONFIG_NAME_MAX + 16];
    size_t i;

    fprintf(fp, "; lockwatch effective configuration, from %s\n"
            "; every option is shown; secret files are shown by path, never by "
            "contents;\n; webhook URLs without their user info and query (***)\n", cfg->path);
    print_section(fp, "[agent]", SECTION_AGENT, cfg);
    for (i = 0; i < cfg->ntargets; i++) {
        snprintf(label, sizeof(label), "[target %s]", cfg->targets[i].name);
        print_section(fp, label, SECTION_TARGET, &cfg->targets[i]);
    }
    for (i = 0; i < cfg->nredlocks; i++) {
        snprintf(label, sizeof(label), "[redlock %s]", cfg->redlocks[i].name);
        print_section(fp, label, SECTION_REDLOCK, &cfg->redlocks[i]);
    }
    print_section(fp, "[rules]", SECTION_RULES, cfg);
    fprintf(fp, "\n[classes]\n");
    if (cfg->nclasses == 0)
        fprintf(fp, "; none: every key's class is derived from the key\n");
    for (i = 0; i < cfg->nclasses; i++) {
        const char *g = cfg->classes[i].glob, *n = cfg->classes[i].name;

        /* within what read_line accepts, as print_section keeps options */
        fprintf(fp, strlen(g) + 3 + strlen(n) > LINE_MAX_CHARS ? "%s=%s\n" : "%s = %s\n", g, n);
    }
    for (i = 0; i < cfg->nwebhooks; i++) {
        snprintf(label, sizeof(label), "[webhook %s]", cfg->webhooks[i].name);
        print_section(fp, label, SECTION_WEBHOOK, &cfg->webhooks[i]);
    }
    print_section(fp, "[unlock]", SECTION_UNLOCK, cfg);
}
