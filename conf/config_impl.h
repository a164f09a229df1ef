/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config_impl.h - what the parts of the config loader share (conf/config.c,
 * configread.c, configcheck.c, configprint.c, configfree.c): the state of
 * one load, the sections as the file gave them, and the helpers every part
 * calls.  Only conf/ includes it; the public side is config.h.
 *
 * The helpers keep the short names they had when the loader was one file
 * (fail, grow, ...): they are called on most lines of the loader, and no
 * file outside conf/ sees this header (tests/static/test_layering.sh).
 */
#ifndef LOCKWATCH_CONFIG_IMPL_H
#define LOCKWATCH_CONFIG_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <ini.h>

#include "conf/config.h"
#include "conf/options.h"

/* Characters of one line, line ending not counted.  inih reads lines into
 * an INI_MAX_LINE buffer; keeping two bytes spare leaves room for a "\r"
 * and the NUL, so a CRLF file has the same limit as an LF one. */
#define LINE_MAX_CHARS (INI_MAX_LINE - 2)

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

/*
 * Record the first error; later ones are consequences of it and would
 * only bury it.  label and key may be NULL.  (config.c)
 */
void fail(struct load *ld, int line, const char *label, const char *key,
          const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* The row of config_options[] of key in section sec, or -1.  (config.c) */
int find_option(enum config_section sec, const char *key);

/* The struct an instance's options are fields of: cfg itself, or the
 * idx-th target, redlock or webhook.  (config.c) */
void *instance_base(struct config *cfg, enum config_section sec, size_t idx);

/* Grow one of the config's arrays by a zeroed element; NULL on ENOMEM.
 * (config.c) */
void *grow(void *arrp, size_t *n, size_t size);

/* Create the struct a named section fills, with its defaults; its index
 * in *idx.  0, or -1 with the error recorded.  (config.c) */
int new_named(struct load *ld, enum config_section sec, const char *name, size_t nlen,
              size_t *idx);

/* Read ld->path through inih into ld->cfg.  0, or -1 with the error
 * recorded.  (configread.c) */
int parse_file(struct load *ld);

/* The checks across keys, after the parse.  0, or -1 with the first
 * error recorded.  (configcheck.c) */
int validate(struct load *ld);

#endif
