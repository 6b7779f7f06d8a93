/* Access tokens. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A token or a proof goes into an HTTP header: visible ASCII only ('!' to '~', as RFC 6750's tokens and JWTs are), and
 * not empty. A line break, a space, a control or non-ASCII byte would cut the header short or add another one after
 * it; a NUL never gets this far (json_dup_string refuses it). */
static int take_token(json_object *result, const char *key, char **ret) {
        int r = json_dup_string(result, key, true, ret);
        if (r < 0)
                return r;
        const unsigned char *p = (const unsigned char *) *ret;
        bool visible = *p != 0;
        for (; *p && visible; p++)
                visible = *p >= '!' && *p <= '~';
        if (!visible) {
                usher_secret_free(*ret);
                *ret = NULL;
                return -EBADMSG;
        }
        return 0;
}

_public_ void usher_secret_free(char *secret) {
        if (!secret)
                return;
        explicit_bzero(secret, strlen(secret));
        free(secret);
}

/* The seat's active user's access token, valid for at least min_valid seconds (the daemon refreshes it first when it
 * would not be); *ret_expires is its expiry in microseconds since the epoch (CLOCK_REALTIME). */
_public_ int usher_access_token(usher_t *u, const char *seat, uint64_t min_valid, char **ret_token,
                                uint64_t *ret_expires) {
        return usher_access_token_narrowed(u, seat, NULL, NULL, min_valid, ret_token, ret_expires);
}

/* The same, narrowed: a token for audience with no more than scopes (a NULL-terminated array); both NULL: the
 * session's own token, or what the caller's access rule narrows it to (docs/least-privilege.md). */
_public_ int usher_access_token_narrowed(usher_t *u, const char *seat, const char *audience,
                                         const char *const *scopes, uint64_t min_valid, char **ret_token,
                                         uint64_t *ret_expires) {
        CHECK_HANDLE(u);
        if (!ret_token || (scopes && !scopes[0]))
                return -EINVAL;
        struct buf params = {0};
        buf_begin(&params);
        buf_string(&params, "seat", seat);
        buf_uint(&params, "min_valid", min_valid);
        buf_string(&params, "audience", audience);
        buf_string_list(&params, "scopes", scopes);
        buf_end(&params);
        struct message m;
        int r = call_method(u, METHOD_ACCESS_TOKEN, &params, &m);
        buf_free(&params);
        if (r < 0)
                return r;
        char *token = NULL, *expires_at = NULL;
        uint64_t expires = 0;
        r = take_token(m.result, "access_token", &token);
        if (r >= 0)
                r = json_dup_string(m.result, "expires_at", true, &expires_at);
        if (r >= 0)
                r = parse_rfc3339_usec(expires_at, &expires);
        free(expires_at);
        message_done(&m);
        if (r < 0) {
                usher_secret_free(token);
                return r;
        }
        *ret_token = token;
        if (ret_expires)
                *ret_expires = expires;
        return 0;
}

/* A DPoP proof (RFC 9449) for one request (method, url; nonce: the server's DPoP-Nonce, or NULL), signed by the
 * daemon with the key the session's tokens are bound to, for the token usher_access_token_narrowed() gives with the
 * same seat, audience and scopes. The key never leaves the daemon. */
_public_ int usher_dpop_proof(usher_t *u, const char *seat, const char *audience, const char *const *scopes,
                              const char *method, const char *url, const char *nonce, char **ret_proof) {
        CHECK_HANDLE(u);
        if (!method || !url || !ret_proof || (scopes && !scopes[0]))
                return -EINVAL;
        struct buf params = {0};
        buf_begin(&params);
        buf_string(&params, "htm", method);
        buf_string(&params, "htu", url);
        buf_string(&params, "nonce", nonce);
        buf_string(&params, "seat", seat);
        buf_string(&params, "audience", audience);
        buf_string_list(&params, "scopes", scopes);
        buf_end(&params);
        struct message m;
        int r = call_method(u, METHOD_DPOP_PROOF, &params, &m);
        buf_free(&params);
        if (r < 0)
                return r;
        char *proof = NULL;
        r = take_token(m.result, "proof", &proof);
        message_done(&m);
        if (r < 0)
                return r;
        *ret_proof = proof;
        return 0;
}
