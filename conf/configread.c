/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * configread.c - the config file, read: its lines, section headers, key
 * lines and [classes] entries, into the struct config of a load.
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
 * Each key line's value goes through its option's value type
 * (option_set); the first error stops the parse (config.c's fail).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>

#include "common/strbuf.h"
#include "conf/config_impl.h"
#include "conf/options.h"

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
    for (size_t i = 0; i < content; i++) {
        unsigned char b = (unsigned char)str[i];
        char key[64] = "";
        const char *eq;
        size_t k0 = 0, k1;

        if ((b >= 0x20 || b == '\t') && b != 0x7f)
            continue;
        /* in a value: name its key (and section), as every error does; a
         * key ends at its first '=' or ':', as inih reads it */
        eq = NULL;
        for (size_t j = 0; j < i && eq == NULL; j++)
            if (str[j] == '=' || str[j] == ':')
                eq = str + j;
        if (eq != NULL) {
            while (k0 < (size_t)(eq - str) && isspace((unsigned char)str[k0]))
                k0++;
            for (k1 = (size_t)(eq - str); k1 > k0 && isspace((unsigned char)str[k1 - 1]); k1--)
                ;
            if (k1 > k0 && k1 - k0 < sizeof(key))
                memcpy(key, str + k0, k1 - k0);
        }
        fail(ld, ld->lineno, key[0] && ld->has_cur ? ld->inst[ld->cur].label : NULL,
             key[0] ? key : NULL, "contains a control character (byte 0x%02x) at column %zu "
             "(the config must be plain text; a pattern matches any one byte of a key with ?)",
             b, i + 1);
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

/* Note that key of label was set on this line (struct config_keyline). */
static int
note_key(struct load *ld, const char *label, const char *key)
{
    struct config_keyline *kl = grow(&ld->cfg->keylines, &ld->cfg->nkeylines, sizeof(*kl));

    if (kl == NULL || (kl->label = strdup(label)) == NULL || (kl->key = strdup(key)) == NULL) {
        fail(ld, ld->lineno, NULL, NULL, "out of memory");
        return -1;
    }
    kl->line = ld->lineno;
    return 0;
}

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
    return note_key(ld, in->label, glob);
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
    if (i < 0 && strpbrk(name, " \t") != NULL && strchr(ld->raw_start, '=') == NULL) {
        /* inih splits a line without '=' at its first ':' */
        fail(ld, ld->lineno, in->label, NULL, "\"%.120s\" has no '=' (write key = value; "
             "a line without '=' is split at its first ':')", ld->raw_start);
        return 0;
    }
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
    return note_key(ld, in->label, name) == 0;
}

/* ---- load ----------------------------------------------------------------- */

int
parse_file(struct load *ld)
{
    int rc;

    ld->fp = fopen(ld->path, "re");
    if (ld->fp == NULL) {
        int e = errno;

        /* the packaged file is root:lockwatch 0640 (secrets' paths in it) */
        if (ld->errlen > 0)
            snprintf(ld->err, ld->errlen, "cannot open config \"%s\": %s%s", ld->path,
                     strerror(e), e == EACCES ? " (run as a member of its group, lockwatch "
                     "where the package installed it, or with sudo)" : "");
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
