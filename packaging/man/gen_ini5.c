/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gen_ini5.c - keep the OPTIONS section of lockwatch.ini(5) in step with
 * the config option table (conf/options.c, config_options[]).
 *
 *   gen_ini5 PAGE        print PAGE with its OPTIONS block regenerated
 *   gen_ini5 -c PAGE     check: exit 0 when PAGE is up to date, 1 when
 *                        the table says something else (first difference
 *                        on stderr)
 *   gen_ini5 -w PAGE     rewrite PAGE in place
 *
 * The page is committed, so `man -l` works on a fresh checkout and the
 * Debian build needs no generation step; the prose around the options is
 * written by hand.  Only the lines between the two marker comments
 *   .\" BEGIN GENERATED OPTIONS ...
 *   .\" END GENERATED OPTIONS
 * belong to this program: one subsection per config section (in the
 * table's section order, [classes] included although it has no rows) and
 * one tagged paragraph per key with its type, default, allowed values and
 * help, all taken from the table.  tests/integration/test_man.py runs the
 * check, so a new or changed option that is not in the page fails the
 * tests instead of drifting.
 *
 * Builds with nothing but the option table, its value types and the
 * bounded buffer (all of which need only libc):
 *   cc -std=c11 -I. -D_DEFAULT_SOURCE packaging/man/gen_ini5.c conf/options.c \
 *      conf/optvalue.c conf/optsyntax.c conf/secretfile.c common/strbuf.c
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "conf/options.h"

#define BEGIN_MARK ".\\\" BEGIN GENERATED OPTIONS"
#define END_MARK   ".\\\" END GENERATED OPTIONS"
#define PAGE_MAX   (1024 * 1024)    /* a man page; anything bigger is the wrong file */
/* The page rewritten: the hand-written text around a generated block of a
 * few kilobytes, so twice the page cap is never reached by a real page. */
#define OUT_MAX    (2 * PAGE_MAX)

/*
 * Text from the table as roff: a backslash becomes \e and a dash that
 * stands for a minus sign stays a hyphen (the table has none).  The text
 * never starts a line here (callers put a font escape or words first), so
 * a leading '.' or '\'' cannot be taken for a request.
 */
static void
add_text(struct strbuf *o, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '\\')
            sb_adds(o, "\\e");
        else
            sb_add(o, s, 1);
    }
}

/* The help line as a sentence: capitalised when it starts like prose (a
 * lower-case word, then another word: "start a full scan ..."), not when
 * it starts with a key name ("mode = sentinel: ..."), a URL or a list of
 * values ("a | b"); ending in a full stop. */
static void
add_sentence(struct strbuf *o, const char *help)
{
    size_t w = strspn(help, "abcdefghijklmnopqrstuvwxyz-");
    size_t n = strlen(help);
    char first[2] = { 0, 0 };

    sb_adds(o, "\\&");
    if (w > 0 && help[w] == ' ' && help[w + 1] != '=' && help[w + 1] != '|') {
        first[0] = (char)toupper((unsigned char)help[0]);
        sb_adds(o, first);
        add_text(o, help + 1);
    } else {
        add_text(o, help);
    }
    if (n > 0 && help[n - 1] != '.')
        sb_adds(o, ".");
    sb_adds(o, "\n");
}

/* True when help only lists the choices ("generic | slack | alertmanager"),
 * which the Values line says already. */
static int
help_is_choices(const struct config_option *opt)
{
    const char *h = opt->help;
    size_t i, n;

    if (opt->names == NULL)
        return 0;
    for (i = 0; opt->names[i] != NULL; i++) {
        n = strlen(opt->names[i]);
        if (i > 0) {
            if (strncmp(h, " | ", 3) != 0)
                return 0;
            h += 3;
        }
        if (strncmp(h, opt->names[i], n) != 0)
            return 0;
        h += n;
    }
    return *h == '\0';
}

static void
gen_option(struct strbuf *o, const struct config_option *opt)
{
    char desc[256];

    option_describe(opt, desc, sizeof(desc));
    sb_adds(o, ".TP\n");
    sb_addf(o, "\\fB%s\\fR = \\fI%s\\fR", opt->key, option_type_name(opt->type));
    if (opt->flags & OPT_REQUIRED) {
        sb_adds(o, " (required)\n");
    } else if (opt->def != NULL) {
        sb_adds(o, " (default \\fB");
        add_text(o, opt->def);
        sb_adds(o, "\\fR)\n");
    } else {
        sb_adds(o, " (not set by default)\n");
    }
    if (!help_is_choices(opt))
        add_sentence(o, opt->help);
    sb_adds(o, ".br\nValues: ");
    add_text(o, desc);
    sb_adds(o, ".\n");
    if (opt->def == NULL && opt->example != NULL) {
        sb_adds(o, ".br\nExample: \\fB");
        sb_addf(o, "%s = ", opt->key);
        add_text(o, opt->example);
        sb_adds(o, "\\fR\n");
    }
}

/* The generated block, markers included. */
static void
gen_options(struct strbuf *o)
{
    size_t i, nrows;
    int s;

    sb_adds(o, BEGIN_MARK ": packaging/man/gen_ini5 from conf/options.c;"
             " edit the table, not these lines\n");
    for (s = 0; s < SECTION_COUNT; s++) {
        const char *name = config_section_name((enum config_section)s);

        if (config_section_named((enum config_section)s))
            sb_addf(o, ".SS \"[%s \\fINAME\\fP]\"\n", name);
        else
            sb_addf(o, ".SS \"[%s]\"\n", name);
        nrows = 0;
        for (i = 0; i < config_noptions; i++) {
            if ((int)config_options[i].section != s)
                continue;
            gen_option(o, &config_options[i]);
            nrows++;
        }
        if (nrows == 0)
            sb_adds(o, "No fixed keys: each line is \\fIGLOB\\fR = \\fICLASS\\fR,"
                     " see\n.B LOCK CLASSES\nbelow.\n");
    }
    sb_adds(o, END_MARK "\n");
}

static char *
read_page(const char *path, size_t *len)
{
    FILE *fp = NULL;
    char *buf = NULL;
    size_t n = 0;

    if ((fp = fopen(path, "rb")) == NULL)
        goto fail;
    if ((buf = malloc(PAGE_MAX + 1)) == NULL)
        goto fail;
    n = fread(buf, 1, PAGE_MAX + 1, fp);
    if (ferror(fp))
        goto fail;
    if (n > PAGE_MAX) {
        fprintf(stderr, "gen_ini5: %s: larger than %d bytes; is it the man page?\n",
                path, PAGE_MAX);
        goto out;
    }
    fclose(fp);
    buf[n] = '\0';
    *len = n;
    return buf;
fail:
    fprintf(stderr, "gen_ini5: %s: %s\n", path, strerror(errno));
out:
    if (fp != NULL)
        fclose(fp);
    free(buf);
    return NULL;
}

/* Start of the line in page that starts with mark, or NULL. */
static const char *
find_line(const char *page, const char *mark)
{
    const char *p = page;
    size_t n = strlen(mark);

    while (p != NULL && *p != '\0') {
        if (strncmp(p, mark, n) == 0)
            return p;
        p = strchr(p, '\n');
        if (p != NULL)
            p++;
    }
    return NULL;
}

/* 1-based line number of the first difference, 0 when equal. */
static size_t
first_difference(const char *a, const char *b)
{
    size_t line = 1;

    for (; *a != '\0' && *a == *b; a++, b++)
        if (*a == '\n')
            line++;
    return *a == *b ? 0 : line;
}

static int
write_page(const char *path, const struct strbuf *o)
{
    char tmp[4096];
    FILE *fp;
    int n;

    n = snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    if (n < 0 || (size_t)n >= sizeof(tmp)) {
        fprintf(stderr, "gen_ini5: %s: path too long\n", path);
        return -1;
    }
    if ((fp = fopen(tmp, "wb")) == NULL) {
        fprintf(stderr, "gen_ini5: %s: %s\n", tmp, strerror(errno));
        return -1;
    }
    if (fwrite(o->buf, 1, o->len, fp) != o->len || fclose(fp) != 0) {
        fprintf(stderr, "gen_ini5: writing %s: %s\n", tmp, strerror(errno));
        remove(tmp);
        return -1;
    }
    if (rename(tmp, path) == -1) {
        fprintf(stderr, "gen_ini5: %s: %s\n", path, strerror(errno));
        remove(tmp);
        return -1;
    }
    return 0;
}

static void
usage(void)
{
    fprintf(stderr, "usage: gen_ini5 [-c | -w] PAGE\n"
            "  print PAGE (lockwatch.ini.5) with its generated OPTIONS block\n"
            "  rebuilt from the option table; -c only checks, -w rewrites PAGE\n");
}

int
main(int argc, char **argv)
{
    struct strbuf o;
    const char *path, *begin, *end, *after;
    char *page = NULL;
    size_t len = 0, diff;
    int check = 0, rewrite = 0, rc = 2;

    if (argc == 3 && strcmp(argv[1], "-c") == 0)
        check = 1;
    else if (argc == 3 && strcmp(argv[1], "-w") == 0)
        rewrite = 1;
    else if (argc != 2 || argv[1][0] == '-') {
        usage();
        return 2;
    }
    path = argv[argc - 1];
    sb_init(&o, OUT_MAX);
    if ((page = read_page(path, &len)) == NULL)
        goto out;
    begin = find_line(page, BEGIN_MARK);
    end = begin != NULL ? find_line(begin, END_MARK) : NULL;
    if (begin == NULL || end == NULL) {
        fprintf(stderr, "gen_ini5: %s: no \"%s\" ... \"%s\" lines to fill in\n",
                path, BEGIN_MARK, END_MARK);
        goto out;
    }
    after = strchr(end, '\n');
    after = after != NULL ? after + 1 : end + strlen(end);

    sb_add(&o, page, (size_t)(begin - page));
    gen_options(&o);
    sb_adds(&o, after);
    if (sb_failed(&o)) {
        fprintf(stderr, "gen_ini5: %s: out of memory, or the page would grow past %d "
                "bytes\n", path, OUT_MAX);
        goto out;
    }
    if (check) {
        diff = first_difference(page, o.buf);
        if (diff != 0) {
            fprintf(stderr, "gen_ini5: %s is out of date with conf/options.c (first"
                    " difference at line %zu); run: gen_ini5 -w %s\n", path, diff, path);
            rc = 1;
            goto out;
        }
    } else if (rewrite) {
        if (strcmp(page, o.buf) != 0 && write_page(path, &o) == -1)
            goto out;
    } else if (fwrite(o.buf, 1, o.len, stdout) != o.len || fflush(stdout) != 0) {
        fprintf(stderr, "gen_ini5: writing stdout: %s\n", strerror(errno));
        goto out;
    }
    rc = 0;
out:
    free(page);
    sb_release(&o);
    return rc;
}
