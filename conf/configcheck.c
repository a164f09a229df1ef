/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * configcheck.c - the checks that span keys, run once the whole file is
 * read (config_load): every named section has its required keys; a target
 * in sentinel mode names its sentinels and master; a key that only matters
 * with another (the tls_ keys, sentinels, master_name, scan_replicas,
 * secret_file) is refused without it, as is release_user without
 * release_password_file or the reverse; a Redlock group names at least two
 * defined targets, each once; [unlock] http = on has its token.
 *
 * Each error points at the key's line, or at the section header's when
 * the value is a default (struct instance keeps the line of every key).
 * A new rule between keys goes in check_target() or validate().
 */
#include <ctype.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "conf/config_impl.h"
#include "conf/options.h"

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
    /* AUTH needs both: a user alone would connect as the default user */
    if ((t->release_user == NULL) != (t->release_password_file == NULL))
        fail(ld, line_of(in, t->release_user ? "release_user" : "release_password_file"),
             in->label, t->release_user ? "release_password_file" : "release_user",
             "missing (the writes' ACL user needs both release_user and "
             "release_password_file)");
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

/* replica: a name for labels and annotations; shard_peers: one http(s)
 * base URL per shard. */
static void
check_agent(struct load *ld, const struct instance *in, const struct config *cfg)
{
    size_t i;

    if (cfg->replica != NULL &&
        (strlen(cfg->replica) > CONFIG_NAME_MAX ||
         strspn(cfg->replica, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                "0123456789_.-") != strlen(cfg->replica)))
        fail(ld, line_of(in, "replica"), in->label, "replica", "\"%.80s\" is not a name "
             "(letters, digits, '_', '.', '-'; at most %d bytes)", cfg->replica,
             CONFIG_NAME_MAX);
    if (cfg->nshard_peers != 0 && cfg->nshard_peers != (size_t)cfg->shard_total)
        fail(ld, line_of(in, "shard_peers"), in->label, "shard_peers", "%zu URL(s) for %d "
             "shards (shard = %d/%d): give one base URL per shard, shard 0's first",
             cfg->nshard_peers, cfg->shard_total, cfg->shard_index, cfg->shard_total);
    if (cfg->leader_group != NULL && (strlen(cfg->leader_group) > CONFIG_NAME_MAX ||
        strspn(cfg->leader_group, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
               "0123456789_.-") != strlen(cfg->leader_group)))
        fail(ld, line_of(in, "leader_group"), in->label, "leader_group", "\"%.80s\" is not a "
             "name (letters, digits, '_', '.', '-')", cfg->leader_group);
    if (cfg->leader_target != NULL) {
        const struct target_conf *t = config_target(cfg, cfg->leader_target);

        if (t == NULL)
            fail(ld, line_of(in, "leader_target"), in->label, "leader_target", "no [target %.80s] "
                 "(name one of the [target] sections: the Redis that holds the leader lock)",
                 cfg->leader_target);
        else if (t->mode != TARGET_STANDALONE)
            fail(ld, line_of(in, "leader_target"), in->label, "leader_target", "[target %s] "
                 "is mode = %s; the leader lock needs a standalone target",
                 t->name, t->mode == TARGET_CLUSTER ? "cluster" : "sentinel");
        else if (cfg->replica == NULL)
            fail(ld, line_of(in, "leader_target"), in->label, "leader_target", "set [agent] "
                 "replica = NAME too, each replica its own (e.g. a and b): the election says "
                 "which replica leads");
    }
    for (i = 0; i < cfg->nshard_peers && !ld->failed; i++)
        if (strncmp(cfg->shard_peers[i], "http://", 7) != 0 &&
            strncmp(cfg->shard_peers[i], "https://", 8) != 0)
            fail(ld, line_of(in, "shard_peers"), in->label, "shard_peers", "\"%.200s\" is "
                 "not an http:// or https:// base URL", cfg->shard_peers[i]);
}

/* runbook_url: an http(s) URL of printable ASCII that goes into JSON,
 * Slack's text and a browser as is; {alertname} its only placeholder. */
static void
check_rules(struct load *ld, const struct instance *in, const struct config *cfg)
{
    const char *u = cfg->runbook_url, *p;

    if (u == NULL)
        return;
    p = strncasecmp(u, "http://", 7) == 0 ? u + 7 : strncasecmp(u, "https://", 8) == 0 ? u + 8 :
        NULL;
    if (p == NULL || *p == '\0' || *p == '/' || *p == '?' || *p == '#') {
        fail(ld, line_of(in, "runbook_url"), in->label, "runbook_url", "\"%.80s\" is not an "
             "http:// or https:// URL with a host", u);
        return;
    }
    for (p = u; *p != '\0'; p++) {
        if (*p == '{' && strncmp(p, "{alertname}", 11) == 0) {
            p += 10;
        } else if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f ||
                   strchr("\"<>\\^`|{}", *p) != NULL ||
                   (*p == '%' && (!isxdigit((unsigned char)p[1]) ||
                                  !isxdigit((unsigned char)p[2])))) {
            fail(ld, line_of(in, "runbook_url"), in->label, "runbook_url", "byte %zu of \"%.80s\" "
                 "is not allowed in the URL (percent-encode it; {alertname} is the one "
                 "placeholder)", (size_t)(p - u) + 1, u);
            return;
        }
    }
}

int
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
        case SECTION_AGENT:
            check_agent(ld, in, cfg);
            break;
        case SECTION_TARGET:
            check_target(ld, in, base);
            break;
        case SECTION_REDLOCK:
            check_redlock(ld, in, base);
            break;
        case SECTION_RULES:
            check_rules(ld, in, cfg);
            break;
        case SECTION_WEBHOOK: {
            const struct webhook_conf *w = base;

            if (w->secret_file != NULL && w->format != SINK_GENERIC)
                fail(ld, line_of(in, "secret_file"), in->label, "secret_file", "only "
                     "used with format = generic (remove it; %s messages are not "
                     "signed)", config_sink_format_str(w->format));
            if (w->watchdog && w->format != SINK_ALERTMANAGER)
                fail(ld, line_of(in, "watchdog"), in->label, "watchdog", "only with format = "
                     "alertmanager (a dead man's switch hangs off an Alertmanager route; "
                     "remove it here)");
            break;
        }
        case SECTION_SAMPLES:
            if (cfg->samples_state_file != NULL && cfg->samples_state_file[0] != '/')
                fail(ld, line_of(in, "state_file"), in->label, "state_file", "must be an "
                     "absolute path, e.g. /var/lib/lockwatch/waiting (the agent runs from /)");
            break;
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
