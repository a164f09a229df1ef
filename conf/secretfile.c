/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * secretfile.c - read a password or token from its file (see secretfile.h).
 *
 * The file is read whole at load time, not at use, so a missing or
 * unreadable file fails -n and a reload instead of the first AUTH at
 * 3 a.m.  Trailing newlines are dropped (editors add one); anything else
 * is the secret, byte for byte.  Every copy of the bytes is wiped before
 * it is freed, and the path, never the contents, goes into messages.
 */
#include "conf/secretfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A secret file holds one password or token; anything bigger is the wrong
 * file, and a hard cap keeps a mistaken path (/dev/zero) from eating memory. */
#define SECRET_MAX 4096

void
secret_free(char *s)
{
    if (s != NULL) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

int
secret_file_read(const char *path, const char *holds, const char *example,
                 char **secret, char *why, size_t len)
{
    char *buf = NULL;
    struct stat st;
    size_t n = 0;
    int fd = -1, rc = -1;

    if (path[0] != '/') {
        snprintf(why, len, "\"%s\" is not an absolute path (give the full path of the file "
                 "holding %s, e.g. %s)", path, holds, example);
        goto out;
    }
    /* O_NONBLOCK: a FIFO given by mistake must not hang the load. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd == -1 || fstat(fd, &st) == -1) {
        int e = errno;

        if (e == EACCES)
            snprintf(why, len, "cannot read \"%s\": %s (make it readable by the user "
                     "lockwatch runs as, e.g. 0640 root:lockwatch)", path, strerror(e));
        else
            snprintf(why, len, "cannot read \"%s\": %s (create it with %s alone on one "
                     "line, readable by lockwatchd only)", path, strerror(e), holds);
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, len, "\"%s\" is not a regular file (it should hold %s alone on one "
                 "line)", path, holds);
        goto out;
    }
    buf = malloc(SECRET_MAX + 1);
    if (buf == NULL)
        goto oom;
    while (n < SECRET_MAX + 1) {
        ssize_t r = read(fd, buf + n, SECRET_MAX + 1 - n);

        if (r == -1 && errno == EINTR)
            continue;
        if (r == -1) {
            snprintf(why, len, "cannot read \"%s\": %s (it should hold %s alone on one "
                     "line)", path, strerror(errno), holds);
            goto out;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (n > SECRET_MAX) {
        snprintf(why, len, "\"%s\" is larger than %d bytes (it should hold %s alone on "
                 "one line)", path, SECRET_MAX, holds);
        goto out;
    }
    if (memchr(buf, '\0', n) != NULL) {
        snprintf(why, len, "\"%s\" contains a NUL byte (it should hold %s alone on one "
                 "line)", path, holds);
        goto out;
    }
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        n--;
    if (n == 0) {
        snprintf(why, len, "\"%s\" is empty (put %s in it, alone on one line)", path, holds);
        goto out;
    }
    *secret = strndup(buf, n);
    if (*secret == NULL)
        goto oom;
    rc = 0;
    goto out;
oom:
    snprintf(why, len, "out of memory");
out:
    if (buf != NULL) {
        explicit_bzero(buf, SECRET_MAX + 1);
        free(buf);
    }
    if (fd != -1)
        close(fd);
    return rc;
}
