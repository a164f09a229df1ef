/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_options.c - libFuzzer harness for the value grammars of the option
 * table (conf/options.c, optvalue.c, optsyntax.c): durations, integers,
 * percentages, booleans, host:port and lists of them, Redis and webhook
 * URLs, lists and choices.  The first byte picks a row of the table (secret
 * file rows aside: they read files), the rest, up to a NUL or line end, is the value.
 *
 * Invariants, beyond not crashing or leaking:
 *  - a refused value says why (non-empty, one line) and leaves the
 *    section's struct as it was (zero here);
 *  - an accepted value round-trips: option_format() writes it (or, for an
 *    empty list, reports it unset), option_set() of that text is accepted
 *    and formats the same, in both the padded and the compact form;
 *  - config_parse_duration(), lockctl's parser, agrees with the table on
 *    any text and round-trips through option_format_duration().
 */
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "conf/options.h"
#include "fuzz/fuzz.h"

#define VALUE_MAX 2048

union section_struct {
    struct config agent;
    struct target_conf target;
    struct redlock_conf redlock;
    struct webhook_conf webhook;
};

static bool
is_zero(const void *p, size_t n)
{
    const unsigned char *u = p;
    size_t i;

    for (i = 0; i < n; i++)
        if (u[i] != 0)
            return false;
    return true;
}

static void
round_trip(const struct config_option *o, const char *value)
{
    union section_struct *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
    char why[512], f1[4 * VALUE_MAX], f2[4 * VALUE_MAX];
    int compact, r;

    FUZZ_CHECK(a != NULL && b != NULL);
    if (option_set(o, a, value, why, sizeof(why)) == -1) {
        FUZZ_CHECK(why[0] != '\0' && strchr(why, '\n') == NULL);
        FUZZ_CHECK(is_zero(a, sizeof(*a)));
        free(a);
        free(b);
        return;
    }
    for (compact = 0; compact <= 1; compact++) {
        r = option_format(o, a, compact, f1, sizeof(f1));
        FUZZ_CHECK(r == 1 || r == 0);
        if (r == 0)             /* an empty list: written as "not set" */
            break;
        if (option_set(o, b, f1, why, sizeof(why)) == -1) {
            fprintf(stderr, "[%s] %s: \"%s\" was accepted, its form \"%s\" is not: %s\n",
                    config_section_name(o->section), o->key, value, f1, why);
            FUZZ_CHECK(!"the formatted value is accepted");
        }
        FUZZ_CHECK(option_format(o, b, compact, f2, sizeof(f2)) == 1);
        FUZZ_CHECK(strcmp(f1, f2) == 0);
        option_clear(o, b);
    }
    option_clear(o, a);
    free(a);
    free(b);
}

static void
duration(const char *value)
{
    char buf[64];
    int64_t ms, back;

    if (config_parse_duration(value, &ms) == -1)
        return;
    FUZZ_CHECK(ms >= 0);
    option_format_duration(ms, buf, sizeof(buf));
    FUZZ_CHECK(config_parse_duration(buf, &back) == 0 && back == ms);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char value[VALUE_MAX + 1];
    const struct config_option *o;
    size_t n;

    if (size == 0)
        return 0;
    o = &config_options[data[0] % config_noptions];
    n = size - 1 < VALUE_MAX ? size - 1 : VALUE_MAX;
    memcpy(value, data + 1, n);
    value[n] = '\0';
    value[strcspn(value, "\r\n")] = '\0';   /* a value is one line of the file */
    duration(value);
    if (o->type != OPT_FILE)
        round_trip(o, value);
    return 0;
}
