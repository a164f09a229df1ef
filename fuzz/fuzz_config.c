/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_config.c - libFuzzer harness for the config loader (conf/): the
 * fuzzer's bytes are a lockwatch.ini, loaded through config_load() from a
 * memfd (so each run opens a real file, as the agent does).
 *
 * Invariants, beyond not crashing or leaking:
 *  - a refused file gets a message: non-empty, one line, terminated;
 *  - an accepted file has at least one target, each with a pattern;
 *  - the -n dump round-trips: what config_print() writes loads again, and
 *    prints the same (the header line, which names the file, aside), as
 *    config.h promises.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "conf/config.h"
#include "fuzz/fuzz.h"

static int fd_in = -1, fd_out = -1;

static void
put_file(int fd, const char *p, size_t n)
{
    FUZZ_CHECK(ftruncate(fd, 0) == 0);
    FUZZ_CHECK(pwrite(fd, p, n, 0) == (ssize_t)n);
}

static char *
printed(const struct config *cfg, size_t *len)
{
    char *text = NULL;
    FILE *fp = open_memstream(&text, len);

    FUZZ_CHECK(fp != NULL);
    config_print(cfg, fp);
    FUZZ_CHECK(fclose(fp) == 0);
    return text;
}

/* The dump without its first line ("; ... from PATH"). */
static const char *
body_of(const char *text)
{
    const char *nl = strchr(text, '\n');

    FUZZ_CHECK(nl != NULL);
    return nl + 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path_in[64], path_out[64], err[CONFIG_ERR_LEN];
    struct config *cfg = NULL, *again = NULL;
    char *t1 = NULL, *t2 = NULL;
    size_t l1 = 0, l2 = 0, i;

    if (fd_in == -1) {
        fd_in = memfd_create("fuzz-config", MFD_CLOEXEC);
        fd_out = memfd_create("fuzz-config-dump", MFD_CLOEXEC);
        FUZZ_CHECK(fd_in != -1 && fd_out != -1);
    }
    snprintf(path_in, sizeof(path_in), "/proc/self/fd/%d", fd_in);
    snprintf(path_out, sizeof(path_out), "/proc/self/fd/%d", fd_out);
    put_file(fd_in, (const char *)data, size);

    memset(err, 'x', sizeof(err));
    if (config_load(path_in, &cfg, err, sizeof(err)) == -1) {
        FUZZ_CHECK(cfg == NULL);
        FUZZ_CHECK(memchr(err, '\0', sizeof(err)) != NULL && err[0] != '\0');
        FUZZ_CHECK(strchr(err, '\n') == NULL);
        return 0;
    }
    FUZZ_CHECK(cfg != NULL && cfg->ntargets >= 1);
    for (i = 0; i < cfg->ntargets; i++)
        FUZZ_CHECK(cfg->targets[i].npatterns >= 1);

    t1 = printed(cfg, &l1);
    put_file(fd_out, t1, l1);
    if (config_load(path_out, &again, err, sizeof(err)) == -1) {
        fprintf(stderr, "the -n dump does not load: %s\n---\n%s---\n", err, t1);
        FUZZ_CHECK(!"the -n dump loads back");
    }
    t2 = printed(again, &l2);
    if (strcmp(body_of(t1), body_of(t2)) != 0)
        fprintf(stderr, "first dump:\n%s---\nits reload:\n%s---\n", t1, t2);
    FUZZ_CHECK(strcmp(body_of(t1), body_of(t2)) == 0);

    config_free(cfg);
    config_free(again);
    free(t1);
    free(t2);
    return 0;
}
