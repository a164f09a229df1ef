/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * releaseargs.c - the command line of lockctl release and expire
 * (release_impl.h): the key, the holder (as text, --escaped, or
 * --holder-hex) and the guards asked for.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/release_impl.h"
#include "common/keytext.h"

/* --holder-hex: the holder's bytes (any, NUL included; none for ""); malloc'd,
 * NULL when not hex. */
static char *
hex_decode(const char *s, size_t *len)
{
    size_t n = strlen(s);
    char *out;

    if (n % 2 != 0 || (out = malloc(n / 2 + 1)) == NULL)
        return NULL;
    for (size_t i = 0; i < n; i += 2) {
        int hi = keytext_hexval((unsigned char)s[i]), lo = keytext_hexval((unsigned char)s[i + 1]);

        if (hi < 0 || lo < 0) {
            free(out);
            return NULL;
        }
        out[i / 2] = (char)(hi << 4 | lo);
    }
    out[n / 2] = '\0';
    *len = n / 2;
    return out;
}

/* KEY and the holder into ch (malloc'd): --escaped percent-decodes both,
 * --holder-hex gives the holder's bytes in hex.  LOCKCTL_DONE, or the exit
 * status with the message printed. */
static int
take_key_holder(struct change *ch, const char *arg, const char *holder, const char *holder_hex)
{
    if (holder_hex != NULL) {
        if ((ch->holder = hex_decode(holder_hex, &ch->holderlen)) == NULL) {
            lockctl_warnx("%s: --holder-hex \"%.64s\" is not an even number of hex digits",
                          ch->cmd, holder_hex);
            return LOCKCTL_USAGE;
        }
        holder = "";            /* taken */
    }
    if (ch->escaped) {
        ch->key = out_unescape(arg, &ch->keylen);
        if (ch->holder == NULL)
            ch->holder = out_unescape(holder, &ch->holderlen);
        if (ch->key == NULL || ch->holder == NULL) {
            lockctl_warnx("%s: KEY and --holder must be percent-encoded with --escaped",
                          ch->cmd);
            return LOCKCTL_USAGE;
        }
    } else {
        ch->key = strdup(arg);
        if (ch->holder == NULL && (ch->holder = strdup(holder)) != NULL)
            ch->holderlen = strlen(ch->holder);
        if (ch->key == NULL || ch->holder == NULL) {
            lockctl_warnx("out of memory");
            return LOCKCTL_REDIS;
        }
        ch->keylen = strlen(ch->key);
    }
    return LOCKCTL_DONE;
}

int
release_parse(struct lockctl *lc, struct change *ch, int argc, char **argv)
{
    static const struct option opts[] = {
        { "holder", required_argument, NULL, 'H' },
        { "holder-hex", required_argument, NULL, 'X' },
        { "if-leaked", no_argument, NULL, 'L' },
        { "if-older-than", required_argument, NULL, 'O' },
        { "ttl", required_argument, NULL, 'T' },
        { "reason", required_argument, NULL, 'r' },
        { "yes", no_argument, NULL, 'y' },
        { "dry-run", no_argument, NULL, 'D' },
        { "escaped", no_argument, NULL, 'e' },
        { "help", no_argument, NULL, 'h' },
        SESSION_LONG_OPTIONS,
        { NULL, 0, NULL, 0 }
    };
    bool expire = ch->action == RELEASE_ACTION_EXPIRE;
    const char *holder = NULL, *holder_hex = NULL;
    int opt, rc;

    optind = 0;
    while ((opt = getopt_long(argc, argv, SESSION_SHORT_OPTIONS "H:r:yeh", opts, NULL)) != -1) {
        {
            int common = session_common_option(lc, opt, optarg);

            if (common < 0)
                return LOCKCTL_USAGE;   /* a bad value: said */
            if (common > 0)
                continue;
        }
        switch (opt) {
        case 'H':
            holder = optarg;
            break;
        case 'X':
            holder_hex = optarg;
            break;
        case 'L':
            if (expire)
                goto bad;
            ch->if_leaked = true;
            break;
        case 'O':
            if (expire)
                goto bad;
            if (config_parse_duration(optarg, &ch->older_ms) == -1 || ch->older_ms <= 0) {
                lockctl_warnx("%s: --if-older-than \"%s\" is not a duration (use a number "
                              "with ms, s, m, h or d, e.g. 10m)", ch->cmd, optarg);
                return LOCKCTL_USAGE;
            }
            break;
        case 'T':
            if (!expire)
                goto bad;
            if (config_parse_duration(optarg, &ch->ttl_ms) == -1 || ch->ttl_ms <= 0) {
                lockctl_warnx("%s: --ttl \"%s\" is not a duration (use a number with ms, "
                              "s, m, h or d, e.g. 30s)", ch->cmd, optarg);
                return LOCKCTL_USAGE;
            }
            break;
        case 'r':
            ch->reason = optarg;
            break;
        case 'y':
            ch->yes = true;
            break;
        case 'D':
            ch->dry_run = true;
            break;
        case 'e':
            ch->escaped = true;
            break;
        case 'h':
            lockctl_command_help(ch->cmd, stdout);
            return -1;
        default:
            goto bad;
        }
    }
    if (argc - optind != 1) {
        lockctl_warnx("%s: give exactly one KEY (see lockctl %s --help)", ch->cmd, ch->cmd);
        return LOCKCTL_USAGE;
    }
    if (holder != NULL && holder_hex != NULL) {
        lockctl_warnx("%s: give --holder or --holder-hex, not both", ch->cmd);
        return LOCKCTL_USAGE;
    }
    /* --holder '' names the empty value of SET key "" (show prints it so) */
    if (holder == NULL && holder_hex == NULL) {
        lockctl_warnx("%s: --holder is required: the token (string lock) or the "
                      "<uuid>:<thread> field (hash lock) you saw with lockctl show", ch->cmd);
        out_error_hint("lockctl show KEY ends with the release command to paste");
        return LOCKCTL_USAGE;
    }
    if (expire && ch->ttl_ms <= 0) {
        lockctl_warnx("expire: --ttl is required (e.g. --ttl 30s)");
        return LOCKCTL_USAGE;
    }
    if ((rc = take_key_holder(ch, argv[optind], holder, holder_hex)) != LOCKCTL_DONE)
        return rc;
    if (ch->reason == NULL)
        ch->reason = "";
    return LOCKCTL_DONE;
bad:
    lockctl_command_help(ch->cmd, stderr);
    return LOCKCTL_USAGE;
}
