/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * secretfile.c - the FILE and PEM value types: a password or token, or a
 * PEM file (a TLS certificate, CA bundle or private key), read from the
 * file a config key names (see secretfile.h).
 *
 * The file is read whole at load time, not at use, so a missing or
 * unreadable file fails -n and a reload instead of the first AUTH at
 * 3 a.m., and a reload (SIGHUP) reads renewed certificates.  For a
 * password, trailing newlines are dropped (editors add one); anything else
 * is the secret, byte for byte, and a newline before its end (a second
 * line) is refused.  A PEM file is kept whole.  Every copy of
 * the bytes is wiped before it is freed, and the path, never the contents,
 * goes into messages.
 */
#include "conf/secretfile.h"

#include "conf/options.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A secret file holds one password or token; anything bigger is the wrong
 * file, and a hard cap keeps a mistaken path (/dev/zero) from eating memory. */
#define SECRET_MAX 4096
/* A PEM file: a certificate chain or CA bundle (Debian's whole
 * ca-certificates bundle is about 220 KB). */
#define PEM_MAX (1024 * 1024)

void
secret_free(char *s)
{
    if (s != NULL) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

/* What a kind of file holds, for the reader and its messages. */
struct file_kind {
    size_t max;
    bool pem;                   /* keep newlines; must hold a PEM block */
    const char *shape;          /* "alone on one line", "in PEM form" */
};

static const struct file_kind secret_kind = { SECRET_MAX, false, "alone on one line" };
static const struct file_kind pem_kind = { PEM_MAX, true, "in PEM form (-----BEGIN ...)" };

static int
file_read(const struct file_kind *k, const char *path, const char *holds,
          const char *example, char **secret, char *why, size_t len)
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
            snprintf(why, len, "cannot read \"%s\": %s (create it with %s %s, readable "
                     "by lockwatchd only)", path, strerror(e), holds, k->shape);
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, len, "\"%s\" is not a regular file (it should hold %s %s)", path,
                 holds, k->shape);
        goto out;
    }
    buf = malloc(k->max + 1);
    if (buf == NULL)
        goto oom;
    while (n < k->max + 1) {
        ssize_t r = read(fd, buf + n, k->max + 1 - n);

        if (r == -1 && errno == EINTR)
            continue;
        if (r == -1) {
            snprintf(why, len, "cannot read \"%s\": %s (it should hold %s %s)", path,
                     strerror(errno), holds, k->shape);
            goto out;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (n > k->max) {
        snprintf(why, len, "\"%s\" is larger than %zu bytes (it should hold %s %s)",
                 path, k->max, holds, k->shape);
        goto out;
    }
    if (memchr(buf, '\0', n) != NULL) {
        snprintf(why, len, "\"%s\" contains a NUL byte (it should hold %s %s)", path,
                 holds, k->shape);
        goto out;
    }
    while (!k->pem && n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        n--;
    if (k->pem && n > 0 && memmem(buf, n, "-----BEGIN ", 11) == NULL) {
        snprintf(why, len, "\"%s\" is not a PEM file (it should hold %s %s)", path,
                 holds, k->shape);
        goto out;
    }
    if (n == 0) {
        snprintf(why, len, "\"%s\" is empty (put %s in it, %s)", path, holds, k->shape);
        goto out;
    }
    /* A second line is a mistake the file's other readers would not share
     * (reporters sign with the first line of a samples key file). */
    if (!k->pem && (memchr(buf, '\n', n) != NULL || memchr(buf, '\r', n) != NULL)) {
        snprintf(why, len, "\"%s\" holds more than one line (it should hold %s %s)", path,
                 holds, k->shape);
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
        explicit_bzero(buf, k->max + 1);
        free(buf);
    }
    if (fd != -1)
        close(fd);
    return rc;
}

/* The group may read a secret when it is the agent's own group or the
 * packaged "lockwatch" one (0640 root:lockwatch, as the messages above
 * suggest); any other group, or everyone, is more than the agent. */
static bool
trusted_group(gid_t gid)
{
    struct group gr, *res = NULL;
    char buf[1024];

    if (gid == getegid() || gid == 0)
        return true;
    if (getgrgid_r(gid, &gr, buf, sizeof(buf), &res) != 0 || res == NULL)
        return false;
    return strcmp(gr.gr_name, "lockwatch") == 0;
}

/* The user the service will run as, when this run only checks the config
 * as root (secretfile_service_user()); NULL: this run is the service. */
static const char *service_user;

void
secretfile_service_user(const char *name)
{
    service_user = name;
}

/* May a user of uid and groups (n) do what bits (S_IRUSR, S_IXUSR) say
 * with st's file?  Its owner's bits for its owner, else its group's for a
 * member, else everyone's. */
static bool
user_may(const struct stat *st, uid_t uid, const gid_t *groups, int n, mode_t bits)
{
    int i;

    if (st->st_uid == uid)
        return (st->st_mode & bits) != 0;
    for (i = 0; i < n; i++)
        if (groups[i] == st->st_gid)
            return (st->st_mode & (bits >> 3)) != 0;
    return (st->st_mode & (bits >> 6)) != 0;
}

/* Run as root (lockwatchd -n before a start, as docs/deploying.md has it),
 * every file reads; the packaged service runs as user "lockwatch" (the
 * systemd unit's User=).  May that user read the file at path (st), and
 * reach it through its folders?  true when no service user is set, there
 * is no such user, or this is not root: nothing to say. */
static bool
service_user_reads(const char *path, const struct stat *st)
{
    struct passwd pw, *res = NULL;
    struct stat dst;
    gid_t groups[64];
    int ngroups = 64;
    char buf[1024], dir[4096];
    char *slash;

    if (service_user == NULL || geteuid() != 0 ||
        getpwnam_r(service_user, &pw, buf, sizeof(buf), &res) != 0 ||
        res == NULL || pw.pw_uid == 0)
        return true;
    if (getgrouplist(service_user, pw.pw_gid, groups, &ngroups) == -1)
        return true;            /* in too many groups to tell: say nothing */
    if (!user_may(st, pw.pw_uid, groups, ngroups, S_IRUSR))
        return false;
    if (path[0] != '/' || strlen(path) >= sizeof(dir))
        return true;
    memcpy(dir, path, strlen(path) + 1);
    while ((slash = strrchr(dir, '/')) != NULL) {
        slash[slash == dir ? 1 : 0] = '\0';
        if (stat(dir, &dst) == 0 && !user_may(&dst, pw.pw_uid, groups, ngroups, S_IXUSR))
            return false;
        if (slash == dir)
            break;
    }
    return true;
}

int
secretfile_exposure(const char *path, char *why, size_t len)
{
    struct stat st;

    if (path == NULL || stat(path, &st) == -1)
        return -1;
    if (st.st_mode & S_IROTH) {
        snprintf(why, len, "\"%s\" is readable by every user (mode %04o): chmod 0640 it, "
                 "owned by root:lockwatch", path, (unsigned)(st.st_mode & 07777));
        return 1;
    }
    if ((st.st_mode & S_IRGRP) && !trusted_group(st.st_gid)) {
        snprintf(why, len, "\"%s\" is readable by group %u (mode %04o), not only by "
                 "lockwatchd: chgrp lockwatch it (mode 0640), or chmod 0600 it if lockwatchd's "
                 "user owns it", path, (unsigned)st.st_gid, (unsigned)(st.st_mode & 07777));
        return 1;
    }
    if (!service_user_reads(path, &st)) {
        snprintf(why, len, "\"%s\" (owner %u, group %u, mode %04o) is read here as root, but "
                 "the service runs as user %s, which cannot read it (or a folder on its way) "
                 "and would exit 2 at start: chown root:%s and chmod 0640 it, in a folder %s "
                 "may enter", path, (unsigned)st.st_uid, (unsigned)st.st_gid,
                 (unsigned)(st.st_mode & 07777), service_user, service_user, service_user);
        return 1;
    }
    return 0;
}

/* ---- the FILE and PEM value types (optvalue.c's table) -------------------- */

static char **
path_field(void *base, size_t off)
{
    return (char **)(void *)((char *)base + off);
}

/* The path at off, what the file holds at off2; nothing changes on -1. */
static int
set_from(const struct file_kind *k, const struct config_option *o, void *base,
         const char *v, char *why, size_t len)
{
    char *contents = NULL, *path = NULL;

    if (file_read(k, v, o->holds, o->example, &contents, why, len) == -1)
        return -1;
    /* a row's min is the shortest secret it takes (a MAC key: 16 bytes) */
    if (o->min > 0 && strlen(contents) < (size_t)o->min) {
        snprintf(why, len, "%s in \"%s\" is shorter than %lld bytes (write a longer one, "
                 "e.g. openssl rand -hex 32 > %s)", o->holds, v, (long long)o->min, v);
        secret_free(contents);
        return -1;
    }
    path = strdup(v);
    if (path == NULL) {
        secret_free(contents);
        snprintf(why, len, "out of memory");
        return -1;
    }
    optfile_clear(o, base);
    *path_field(base, o->off) = path;
    *path_field(base, o->off2) = contents;
    return 0;
}

int
optfile_set_secret(const struct config_option *o, void *base, const char *v, char *why,
                   size_t len)
{
    return set_from(&secret_kind, o, base, v, why, len);
}

/* A PEM file is read at load time too, so a reload reads a renewed
 * certificate; its text is wiped when freed (a private key is a secret,
 * and the others are treated alike). */
int
optfile_set_pem(const struct config_option *o, void *base, const char *v, char *why,
                size_t len)
{
    return set_from(&pem_kind, o, base, v, why, len);
}

void
optfile_clear(const struct config_option *o, void *base)
{
    free(*path_field(base, o->off));
    secret_free(*path_field(base, o->off2));
    *path_field(base, o->off) = NULL;
    *path_field(base, o->off2) = NULL;
}

void
optfile_describe_secret(const struct config_option *o, char *buf, size_t len)
{
    snprintf(buf, len, "the absolute path of a file holding %s", o->holds);
}

void
optfile_describe_pem(const struct config_option *o, char *buf, size_t len)
{
    snprintf(buf, len, "the absolute path of a PEM file holding %s", o->holds);
}
