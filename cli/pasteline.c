/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pasteline.c - the commands lockctl prints for an operator to paste.
 *
 * show ends with the release command for the lock it showed, and a
 * refusal names the command to run instead.  Pasted into a shell as it
 * stands, such a line must do what it says (issue 24): so it starts with
 * lockctl as it was run (argv[0] when it names a path, so build/bin/lockctl
 * pastes where lockctl is not on PATH), then every option that chose the
 * Redis this run talked to (-c, -t, --url, --tls-*), then the command's
 * words.  A relative path (argv[0], -c, the --tls-* files) is made
 * absolute from the working directory, so the line pastes in another
 * terminal, whatever directory that one is in.  Every word is one shell word in single quotes ('\'' for a quote);
 * a key that is not printable ASCII goes percent-encoded with --escaped,
 * a holder that is not (rslock's and walrus's random bytes) as
 * --holder-hex, since neither a terminal nor a shell argument carries
 * every byte (NUL, escape sequences); a key that starts with '-' goes
 * last, after "--", so that getopt does not take it for options.
 *
 * A line wider than the terminal is continued with " \" at word
 * boundaries (the next line indented), never between an option and its
 * value when the two fit on a line; a word wider than a line is split
 * inside, closing and reopening its quotes around the backslash-newline,
 * which sh removes (POSIX 2.2.1), so the pieces join into the one word.
 * A key whose word would be over PASTE_WORD_MAX gets no line, and the
 * reason printed is that one (the status page's words), not another.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/lockctl.h"
#include "common/keytext.h"
#include "common/strbuf.h"

#define PASTE_INDENT 4          /* continuation lines between words */
#define PASTE_TLS_PATHS 4       /* tls_opts[0..3] name files and a directory */

/* Can c stand in a word lockctl writes without quotes? */
static bool
bare(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
        strchr("-_./:=@%+,", c) != NULL;
}

static bool
printable(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
            return false;
    return true;
}

/* No line to paste, for the first reason found. */
static void __attribute__((format(printf, 2, 3)))
fail(struct pasteline *pl, const char *fmt, ...)
{
    va_list ap;

    if (pl->failed)
        return;
    pl->failed = true;
    va_start(ap, fmt);
    vsnprintf(pl->why, sizeof(pl->why), fmt, ap);
    va_end(ap);
}

/* The length of s as word() writes it, quotes included. */
static size_t
word_len(const char *s, size_t n)
{
    size_t len = n;
    bool quote = n == 0;

    for (size_t i = 0; i < n; i++) {
        quote |= !bare((unsigned char)s[i]);
        if (s[i] == '\'')
            len += 3;
    }
    return quote ? len + 2 : len;
}

/* Add s as one word: bare when it can be, else single-quoted. */
static void
word(struct pasteline *pl, const char *s, size_t n)
{
    struct strbuf sb;
    bool quote = n == 0;

    if (pl->n == PASTE_WORDS_MAX) {
        fail(pl, "too many words");
        return;
    }
    if (word_len(s, n) > PASTE_WORD_MAX) {
        fail(pl, "a word over %d KiB", PASTE_WORD_MAX / 1024);
        return;
    }
    for (size_t i = 0; i < n; i++)
        quote |= !bare((unsigned char)s[i]);
    sb_init(&sb, PASTE_WORD_MAX + 1);   /* and the NUL */
    if (quote)
        sb_add(&sb, "'", 1);
    for (size_t i = 0; i < n; i++)
        sb_add(&sb, s[i] == '\'' ? "'\\''" : s + i, s[i] == '\'' ? 4 : 1);
    if (quote)
        sb_add(&sb, "'", 1);
    pl->quoted[pl->n] = quote;
    if (sb_failed(&sb) || (pl->words[pl->n] = sb_detach(&sb, NULL)) == NULL)
        fail(pl, "out of memory");
    else
        pl->n++;
    sb_release(&sb);
}

void
paste_word(struct pasteline *pl, const char *s)
{
    if (!printable(s, strlen(s)))
        fail(pl, "an option holds a control character");
    else
        word(pl, s, strlen(s));
}

/* Add path as one word, absolute: prefixed with the working directory
 * when relative (its leading "./" dropped); as given if that is unknown. */
static void
path_word(struct pasteline *pl, const char *path)
{
    char cwd[4096];
    struct strbuf sb;
    char *abs;

    if (path[0] == '/' || getcwd(cwd, sizeof(cwd)) == NULL) {
        paste_word(pl, path);
        return;
    }
    while (path[0] == '.' && path[1] == '/')
        path += 2 + strspn(path + 2, "/");
    sb_init(&sb, sizeof(cwd) + strlen(path) + 2);
    sb_adds(&sb, cwd);
    if (strcmp(cwd, "/") != 0)
        sb_add(&sb, "/", 1);
    sb_adds(&sb, path);
    if (sb_failed(&sb) || (abs = sb_detach(&sb, NULL)) == NULL) {
        sb_release(&sb);
        paste_word(pl, path);
        return;
    }
    sb_release(&sb);
    paste_word(pl, abs);
    free(abs);
}

void
paste_init(struct pasteline *pl, const struct lockctl *lc, const char *command)
{
    paste_init_target(pl, lc, NULL, command);
}

void
paste_init_target(struct pasteline *pl, const struct lockctl *lc, const char *target,
                  const char *command)
{
    static const char *const tls_opts[SESSION_TLS_OPTIONS] = {
        "--tls-ca-file", "--tls-ca-dir", "--tls-cert-file", "--tls-key-file",
        "--tls-server-name", "--tls-verify"
    };
    const char *own = lc->t != NULL ? lc->t->name : lc->target_name;

    memset(pl, 0, sizeof(*pl));
    if (lc->argv0 != NULL && strchr(lc->argv0, '/') != NULL)
        path_word(pl, lc->argv0);
    else
        paste_word(pl, "lockctl");
    if (lc->config_path != NULL) {
        paste_word(pl, "-c");
        path_word(pl, lc->config_path);
    }
    /* the target by name, whichever node it resolved to */
    paste_word(pl, "-t");
    if (target != NULL && (own == NULL || strcmp(target, own) != 0)) {
        /* another target: --url and --tls-* chose this run's Redis, not its */
        paste_word(pl, target);
        paste_word(pl, command);
        return;
    }
    paste_word(pl, own);
    if (lc->url != NULL) {
        paste_word(pl, "--url");
        paste_word(pl, lc->url);
    }
    for (size_t i = 0; i < SESSION_TLS_OPTIONS; i++)
        if (lc->tls[i] != NULL) {
            paste_word(pl, tls_opts[i]);
            if (i < PASTE_TLS_PATHS)
                path_word(pl, lc->tls[i]);
            else
                paste_word(pl, lc->tls[i]);
        }
    paste_word(pl, command);
}

void
paste_key_holder(struct pasteline *pl, const char *key, size_t keylen, const char *holder,
                 size_t holderlen)
{
    bool escaped = !printable(key, keylen), dashed = keylen > 0 && key[0] == '-';
    char *enc = malloc(escaped ? KEYTEXT_PERCENT_MAX(keylen) : 1);
    char *hex = malloc(2 * holderlen + 1);

    if (enc == NULL || hex == NULL) {
        fail(pl, "out of memory");
        goto out;
    }
    if (escaped)
        keytext_percent(enc, KEYTEXT_PERCENT_MAX(keylen), key, keylen);
    if (word_len(escaped ? enc : key, escaped ? strlen(enc) : keylen) > PASTE_WORD_MAX) {
        fail(pl, KEYTEXT_TOO_LONG_FOR_COMMAND " (%zu bytes; lockctl pastes up to %d KiB)",
             keylen, PASTE_WORD_MAX / 1024);
        goto out;
    }
    /* a key that looks like an option goes last, after "--" */
    if (!dashed)
        word(pl, escaped ? enc : key, escaped ? strlen(enc) : keylen);
    if (!printable(holder, holderlen) || escaped) {
        /* hex is the same under --escaped, which decodes only --holder */
        for (size_t i = 0; i < holderlen; i++) {
            hex[2 * i] = "0123456789abcdef"[(unsigned char)holder[i] >> 4];
            hex[2 * i + 1] = "0123456789abcdef"[(unsigned char)holder[i] & 0xf];
        }
        hex[2 * holderlen] = '\0';
        paste_word(pl, "--holder-hex");
        word(pl, hex, 2 * holderlen);
    } else {
        paste_word(pl, "--holder");
        word(pl, holder, holderlen);
    }
    if (escaped)
        paste_word(pl, "--escaped");
    if (dashed) {
        paste_word(pl, "--");
        word(pl, escaped ? enc : key, escaped ? strlen(enc) : keylen);
    }
out:
    free(enc);
    free(hex);
}

/* Split word w over lines of at most width columns, the first piece
 * starting at column col: returns the column after the last piece. */
static size_t
split_word(FILE *fp, const char *w, bool quoted, size_t col, size_t width)
{
    size_t len = strlen(w), i = 0, close = quoted ? 2 : 1;     /* "'\" or "\" */

    while (i < len) {
        size_t room = width > col + close ? width - col - close : 1, take = 0;

        /* whole characters, and never inside a '\'' */
        while (i + take < len && take < room) {
            size_t step = strncmp(w + i + take, "'\\''", 4) == 0 && i + take > 0 ? 4 : 1;

            if (take + step > room && take > 0)
                break;
            take += step;
        }
        if (i + take >= len || len - i - take <= (quoted ? 1u : 0u)) {
            fwrite(w + i, 1, len - i, fp);      /* the rest, its closing quote too */
            return col + (len - i);
        }
        fwrite(w + i, 1, take, fp);
        fputs(quoted ? "'\\\n'" : "\\\n", fp);
        i += take;
        col = quoted ? 1 : 0;
    }
    return col;
}

void
paste_show(FILE *fp, const struct pasteline *pl, size_t width, const char *heading)
{
    if (pl->failed) {
        table_line(fp, width, "no release command: %s", pl->why);
        return;
    }
    table_line(fp, width, "%s", heading);
    paste_print(fp, pl, width);
}

void
paste_print(FILE *fp, const struct pasteline *pl, size_t width)
{
    size_t col = 0;

    for (size_t i = 0; i < pl->n; i++) {
        size_t wl = strlen(pl->words[i]), keep = wl;

        /* an option stays on one line with its value (--holder tok) */
        if (pl->words[i][0] == '-' && i + 1 < pl->n && pl->words[i + 1][0] != '-')
            keep += 1 + strlen(pl->words[i + 1]);
        if (i > 0 && col + 1 + keep + 2 > width && col > PASTE_INDENT) {
            fprintf(fp, " \\\n%*s", PASTE_INDENT, "");
            col = PASTE_INDENT;
        } else if (i > 0) {
            fputc(' ', fp);
            col++;
        }
        if (col + wl + 2 > width)
            col = split_word(fp, pl->words[i], pl->quoted[i], col, width);
        else {
            fputs(pl->words[i], fp);
            col += wl;
        }
    }
    fputc('\n', fp);
}

char *
paste_text(const struct pasteline *pl)
{
    struct strbuf sb;
    char *s;

    sb_init(&sb, 1024 * 1024);
    for (size_t i = 0; i < pl->n; i++) {
        if (i > 0)
            sb_add(&sb, " ", 1);
        sb_adds(&sb, pl->words[i]);
    }
    s = sb_failed(&sb) ? NULL : sb_detach(&sb, NULL);
    sb_release(&sb);
    return s;
}

void
paste_release(struct pasteline *pl)
{
    for (size_t i = 0; i < pl->n; i++)
        free(pl->words[i]);
    memset(pl, 0, sizeof(*pl));
}
