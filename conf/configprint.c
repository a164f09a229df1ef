/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * configprint.c - -n: config_print writes every option of every section,
 * as the file would say it, so its output loads back to the same values,
 * but for the webhook URLs' user info and query, which may be tokens and
 * are masked (each value type's format says how it is written).  Secret
 * files are shown by path, never by contents.
 */
#include <stdio.h>
#include <string.h>

#include "conf/config_impl.h"
#include "conf/options.h"

#define PRINT_KEY_WIDTH 19


/*
 * One section, every option of it, as the file would say it.  An option
 * with no value (an optional file, sentinels outside sentinel mode) is
 * shown as a comment so the output still loads.  Lines are kept within
 * what read_line accepts: padding is dropped, and lists lose the space
 * after their commas, then the blanks around '=', before a line would
 * grow too long.
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
        if (r == 1 && width == 0 && strlen(o->key) + 3 + strlen(val) > LINE_MAX_CHARS)
            fprintf(fp, "%s=%s\n", o->key, val);   /* as it came: "url=" at the limit */
        else if (r == 1)
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
            "contents;\n; webhook URLs show scheme, host, port and first path segment, the rest "
            "as ***\n", cfg->path);
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
    print_section(fp, "[samples]", SECTION_SAMPLES, cfg);
}
