/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * configfree.c - config_free: every option of every section through its
 * value type's clear (the option table says which), then the names, the
 * [classes] entries and the arrays.  A config half built by a failed load
 * is freed the same way: grow() counts an element before anything in it
 * can fail.
 */
#include <stdlib.h>

#include "conf/config.h"
#include "conf/options.h"

static void
clear_section(enum config_section sec, void *base)
{
    size_t i;

    for (i = 0; i < config_noptions; i++)
        if (config_options[i].section == sec)
            option_clear(&config_options[i], base);
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
    /* what conf/shard.c's split moved away from this shard */
    for (i = 0; i < cfg->naway; i++) {
        clear_section(SECTION_TARGET, &cfg->away[i]);
        free(cfg->away[i].name);
    }
    for (i = 0; i < cfg->naway_redlocks; i++) {
        clear_section(SECTION_REDLOCK, &cfg->away_redlocks[i]);
        free(cfg->away_redlocks[i].name);
    }
    free(cfg->away);
    free(cfg->away_shard);
    free(cfg->away_redlocks);
    for (i = 0; i < cfg->nwebhooks; i++) {
        clear_section(SECTION_WEBHOOK, &cfg->webhooks[i]);
        free(cfg->webhooks[i].name);
    }
    for (i = 0; i < cfg->nclasses; i++) {
        free(cfg->classes[i].glob);
        free(cfg->classes[i].name);
    }
    for (i = 0; i < SECTION_COUNT; i++)
        if (!config_section_named(i))
            clear_section(i, cfg);
    free(cfg->targets);
    free(cfg->redlocks);
    free(cfg->webhooks);
    free(cfg->classes);
    for (i = 0; i < cfg->nkeylines; i++) {
        free(cfg->keylines[i].label);
        free(cfg->keylines[i].key);
    }
    free(cfg->keylines);
    free(cfg->path);
    free(cfg);
}
