/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tls.c - TLS to a Redis node with OpenSSL and hiredis_ssl (see tls.h).
 *
 * The TLS context is built here rather than by redisCreateSSLContext:
 * hiredis takes file paths and checks no host name, while lockwatch has
 * the PEM texts (read at load time, like password_file) and must check the
 * certificate's name.  hiredis then runs the handshake on the SSL object
 * (redisInitiateSSL) and owns it once that succeeded.  One context per
 * connection: connections are few and long-lived, and nothing is cached
 * that a reload would have to invalidate.
 */
#include "collectors/redis/tls.h"

#include <stdio.h>
#include <string.h>

#ifdef LOCKWATCH_TLS
#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <hiredis_ssl.h>

bool
redisconn_tls_built(void)
{
    return true;
}

/* OpenSSL's newest queued error, or WHAT when there is none. */
static const char *
ossl_reason(const char *what)
{
    unsigned long e = ERR_peek_last_error();
    const char *r = e != 0 ? ERR_reason_error_string(e) : NULL;

    return r != NULL ? r : what;
}

/* Every certificate in PEM into the context's trust store; the count, or
 * -1 when PEM holds none or one does not parse. */
static int
add_cas(SSL_CTX *ctx, const char *pem)
{
    X509_STORE *store = SSL_CTX_get_cert_store(ctx);
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509 *x;
    int n = 0;

    if (b == NULL)
        return -1;
    while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
        if (X509_STORE_add_cert(store, x) != 1) {
            X509_free(x);
            BIO_free(b);
            return -1;
        }
        X509_free(x);
        n++;
    }
    BIO_free(b);
    if (n > 0)
        ERR_clear_error();      /* the end of the text reads as an error */
    return n > 0 ? n : -1;
}

/* The client certificate (then its chain) and its key from their PEM. */
static int
use_client_cert(SSL_CTX *ctx, const char *cert, const char *key, const char **bad)
{
    BIO *b = BIO_new_mem_buf(cert, -1);
    X509 *x = NULL;
    EVP_PKEY *pk = NULL;
    int rc = -1;

    *bad = "tls_cert_file";
    if (b == NULL || (x = PEM_read_bio_X509(b, NULL, NULL, NULL)) == NULL ||
        SSL_CTX_use_certificate(ctx, x) != 1)
        goto out;
    X509_free(x);
    while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL)
        if (SSL_CTX_add0_chain_cert(ctx, x) != 1)     /* owns x on success */
            goto out;
    ERR_clear_error();
    BIO_free(b);
    *bad = "tls_key_file";
    if ((b = BIO_new_mem_buf(key, -1)) == NULL ||
        (pk = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL)) == NULL ||
        SSL_CTX_use_PrivateKey(ctx, pk) != 1)
        goto out;
    if (SSL_CTX_check_private_key(ctx) != 1) {
        *bad = "tls_key_file (not the key of tls_cert_file)";
        goto out;
    }
    rc = 0;
out:
    X509_free(x);
    EVP_PKEY_free(pk);
    BIO_free(b);
    return rc;
}

/* A context from t's settings, or NULL with err. */
static SSL_CTX *
make_ctx(const struct target_conf *t, char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    const char *bad = NULL;

    if (ctx == NULL) {
        snprintf(err, errlen, "cannot create a TLS context: %s", ossl_reason("out of memory"));
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, t->tls_verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    if (t->tls_ca != NULL && add_cas(ctx, t->tls_ca) == -1)
        bad = "tls_ca_file";
    if (bad == NULL && t->tls_ca_dir != NULL &&
        SSL_CTX_load_verify_locations(ctx, NULL, t->tls_ca_dir) != 1)
        bad = "tls_ca_dir";
    if (bad == NULL && t->tls_ca == NULL && t->tls_ca_dir == NULL &&
        SSL_CTX_set_default_verify_paths(ctx) != 1)
        bad = "the system's CA certificates";
    if (bad == NULL && t->tls_cert != NULL && t->tls_key != NULL &&
        use_client_cert(ctx, t->tls_cert, t->tls_key, &bad) == 0)
        bad = NULL;
    if (bad != NULL) {
        snprintf(err, errlen, "TLS settings of target %s: %s: %s", t->name ? t->name : "?",
                 bad, ossl_reason("no usable PEM data"));
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

/* SNI and the name to verify on ssl: a DNS name or an IP address. */
static int
set_name(SSL *ssl, const struct target_conf *t, const char *name)
{
    unsigned char addr[16];
    bool ip = inet_pton(AF_INET, name, addr) == 1 || inet_pton(AF_INET6, name, addr) == 1;

    if (!ip && SSL_set_tlsext_host_name(ssl, name) != 1)
        return -1;
    if (!t->tls_verify)
        return 0;
    if (ip)
        return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) == 1 ? 0 : -1;
    SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    return SSL_set1_host(ssl, name) == 1 ? 0 : -1;
}

int
redisconn_tls(redisContext *c, const struct target_conf *t, const char *host, int port,
              const char *name, char *err, size_t errlen)
{
    SSL_CTX *ctx;
    SSL *ssl;
    long vr;

    if (t->tls_server_name != NULL)
        name = t->tls_server_name;
    /* the reason texts ("wrong version number") for the messages */
    OPENSSL_init_ssl(OPENSSL_INIT_LOAD_SSL_STRINGS | OPENSSL_INIT_LOAD_CRYPTO_STRINGS, NULL);
    ERR_clear_error();
    if ((ctx = make_ctx(t, err, errlen)) == NULL)
        return -1;
    ssl = SSL_new(ctx);
    SSL_CTX_free(ctx);          /* ssl holds its own reference */
    if (ssl == NULL || set_name(ssl, t, name) == -1) {
        snprintf(err, errlen, "TLS to %s:%d: cannot set the server name \"%s\": %s", host,
                 port, name, ossl_reason("out of memory"));
        SSL_free(ssl);
        return -1;
    }
    if (redisInitiateSSL(c, ssl) == REDIS_OK)
        return 0;               /* c owns ssl now */
    /* hiredis quotes OpenSSL's reason, "(null)" when there is none: a
     * plaintext server waits for the end of the "command" the ClientHello
     * began, or answers it with an error, never with a ServerHello */
    if (strstr(c->errstr, "(null)") != NULL)
        snprintf(c->errstr, sizeof(c->errstr), "no TLS answer from the server");
    vr = SSL_get_verify_result(ssl);
    if (vr != X509_V_OK)
        snprintf(err, errlen, "TLS handshake with %s:%d failed: certificate verify failed: "
                 "%s (name checked: %s; check the server's certificate, tls_ca_file and "
                 "tls_server_name)", host, port, X509_verify_cert_error_string(vr), name);
    else
        snprintf(err, errlen, "TLS handshake with %s:%d failed: %s (is it a TLS port? a "
                 "server that requires a client certificate needs tls_cert_file and "
                 "tls_key_file)", host, port, c->errstr[0] ? c->errstr : "connection lost");
    SSL_free(ssl);
    return -1;
}

#else /* no TLS in this build */

bool
redisconn_tls_built(void)
{
    return false;
}

int
redisconn_tls(redisContext *c, const struct target_conf *t, const char *host, int port,
              const char *name, char *err, size_t errlen)
{
    (void)c;
    (void)t;
    (void)name;
    snprintf(err, errlen, "TLS to %s:%d: not supported by this build (built without "
             "hiredis_ssl: build against hiredis 1.x with hiredis_ssl, e.g. make "
             "deps-hiredis-tls)", host, port);
    return -1;
}

#endif
