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
 * Builds with nothing but conf/options.c (which needs only libc):
 *   cc -std=c11 -I. -D_DEFAULT_SOURCE packaging/man/gen_ini5.c conf/options.c
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/options.h"

#define BEGIN_MARK ".\\\" BEGIN GENERATED OPTIONS"
#define END_MARK   ".\\\" END GENERATED OPTIONS"
#define PAGE_MAX   (1024 * 1024)    /* a man page; anything bigger is the wrong file */

/* A growing output buffer; on allocation failure `failed` is set and
 * further writes are ignored, so callers check once at the end. */
struct out {
    char *buf;
    size_t len, cap;
    int failed;
};

static void
out_add(struct out *o, const char *s, size_t n)
{
    char *nb;
    size_t ncap;

    if (o->failed)
        return;
    if (o->len + n + 1 > o->cap) {
        ncap = o->cap ? o->cap : 4096;
        while (ncap < o->len + n + 1)
            ncap *= 2;
        if ((nb = realloc(o->buf, ncap)) == NULL) {
            o->failed = 1;
            return;
        }
        o->buf = nb;
        o->cap = ncap;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    o->buf[o->len] = '\0';
}

static void
out_puts(struct out *o, const char *s)
{
    out_add(o, s, strlen(s));
}

static void out_printf(struct out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
out_printf(struct out *o, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(line)) {
        o->failed = 1;
        return;
    }
    out_add(o, line, (size_t)n);
}

/*
 * Text from the table as roff: a backslash becomes \e and a dash that
 * stands for a minus sign stays a hyphen (the table has none).  The text
 * never starts a line here (callers put a font escape or words first), so
 * a leading '.' or '\'' cannot be taken for a request.
 */
static void
out_text(struct out *o, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '\\')
            out_puts(o, "\\e");
        else
            out_add(o, s, 1);
    }
}

/* The help line as a sentence: capitalised when it starts like prose (a
 * lower-case word, then another word: "start a full scan ..."), not when
 * it starts with a key name ("mode = sentinel: ..."), a URL or a list of
 * values ("a | b"); ending in a full stop. */
static void
out_sentence(struct out *o, const char *help)
{
    size_t w = strspn(help, "abcdefghijklmnopqrstuvwxyz-");
    size_t n = strlen(help);
    char first[2] = { 0, 0 };

    out_puts(o, "\\&");
    if (w > 0 && help[w] == ' ' && help[w + 1] != '=' && help[w + 1] != '|') {
        first[0] = (char)toupper((unsigned char)help[0]);
        out_puts(o, first);
        out_text(o, help + 1);
    } else {
        out_text(o, help);
    }
    if (n > 0 && help[n - 1] != '.')
        out_puts(o, ".");
    out_puts(o, "\n");
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
gen_option(struct out *o, const struct config_option *opt)
{
    char desc[256];

    option_describe(opt, desc, sizeof(desc));
    out_puts(o, ".TP\n");
    out_printf(o, "\\fB%s\\fR = \\fI%s\\fR", opt->key, option_type_name(opt->type));
    if (opt->flags & OPT_REQUIRED) {
        out_puts(o, " (required)\n");
    } else if (opt->def != NULL) {
        out_puts(o, " (default \\fB");
        out_text(o, opt->def);
        out_puts(o, "\\fR)\n");
    } else {
        out_puts(o, " (not set by default)\n");
    }
    if (!help_is_choices(opt))
        out_sentence(o, opt->help);
    out_puts(o, ".br\nValues: ");
    out_text(o, desc);
    out_puts(o, ".\n");
    if (opt->def == NULL && opt->example != NULL) {
        out_puts(o, ".br\nExample: \\fB");
        out_printf(o, "%s = ", opt->key);
        out_text(o, opt->example);
        out_puts(o, "\\fR\n");
    }
}

/* The generated block, markers included. */
static void
gen_options(struct out *o)
{
    size_t i, nrows;
    int s;

    out_puts(o, BEGIN_MARK ": packaging/man/gen_ini5 from conf/options.c;"
             " edit the table, not these lines\n");
    for (s = 0; s < SECTION_COUNT; s++) {
        const char *name = config_section_name((enum config_section)s);

        if (config_section_named((enum config_section)s))
            out_printf(o, ".SS \"[%s \\fINAME\\fP]\"\n", name);
        else
            out_printf(o, ".SS \"[%s]\"\n", name);
        nrows = 0;
        for (i = 0; i < config_noptions; i++) {
            if ((int)config_options[i].section != s)
                continue;
            gen_option(o, &config_options[i]);
            nrows++;
        }
        if (nrows == 0)
            out_puts(o, "No fixed keys: each line is \\fIGLOB\\fR = \\fICLASS\\fR,"
                     " see\n.B LOCK CLASSES\nbelow.\n");
    }
    out_puts(o, END_MARK "\n");
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
write_page(const char *path, const struct out *o)
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
    struct out o = { NULL, 0, 0, 0 };
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

    out_add(&o, page, (size_t)(begin - page));
    gen_options(&o);
    out_puts(&o, after);
    if (o.failed) {
        fprintf(stderr, "gen_ini5: out of memory\n");
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
    free(o.buf);
    return rc;
}
