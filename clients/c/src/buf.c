/* The JSON we write. Requests are built here rather than with json-c: a login's request holds a password, and json-c
 * would copy it into memory it frees without zeroing. Every byte of this buffer is zeroed when it is freed. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void buf_free(struct buf *b) {
        if (b->p) {
                explicit_bzero(b->p, b->cap);
                free(b->p);
        }
        *b = (struct buf) {0};
}

static bool buf_reserve(struct buf *b, size_t extra) {
        if (b->failed)
                return false;
        if (extra > SIZE_MAX / 2 - b->len) {
                b->failed = true;
                return false;
        }
        if (b->len + extra <= b->cap)
                return true;
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + extra)
                cap *= 2;
        /* Not realloc: the old block may hold a password, and realloc would free it without zeroing. */
        char *p = malloc(cap);
        if (!p) {
                b->failed = true;
                return false;
        }
        if (b->p) {
                memcpy(p, b->p, b->len);
                explicit_bzero(b->p, b->cap);
                free(b->p);
        }
        b->p = p;
        b->cap = cap;
        return true;
}

void buf_add(struct buf *b, const char *s, size_t n) {
        if (!buf_reserve(b, n))
                return;
        memcpy(b->p + b->len, s, n);
        b->len += n;
}

/* A JSON string: quotes, backslashes and control characters escaped, every other byte as it is (the daemon refuses
 * invalid UTF-8 with invalid_params or invalid_request, which the caller then sees). */
void buf_add_json_string(struct buf *b, const char *s, size_t n) {
        static const char hex[] = "0123456789abcdef";
        if (!buf_reserve(b, 2 + 6 * n))
                return;
        char *o = b->p + b->len;
        *o++ = '"';
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) s[i];
                if (c == '"' || c == '\\') {
                        *o++ = '\\';
                        *o++ = (char) c;
                } else if (c < 0x20 || c == 0x7f) {
                        *o++ = '\\';
                        *o++ = 'u';
                        *o++ = '0';
                        *o++ = '0';
                        *o++ = hex[c >> 4];
                        *o++ = hex[c & 0xf];
                } else
                        *o++ = (char) c;
        }
        *o++ = '"';
        b->len = (size_t) (o - b->p);
}

void buf_begin(struct buf *b) {
        buf_add(b, "{", 1);
        b->first = true;
}

void buf_key(struct buf *b, const char *key) {
        if (!b->first)
                buf_add(b, ",", 1);
        b->first = false;
        buf_add_json_string(b, key, strlen(key));
        buf_add(b, ":", 1);
}

void buf_string(struct buf *b, const char *key, const char *value) {
        if (!value)
                return;
        buf_key(b, key);
        buf_add_json_string(b, value, strlen(value));
}

void buf_secret(struct buf *b, const char *key, const void *value, size_t len) {
        buf_key(b, key);
        buf_add_json_string(b, value, len);
}

void buf_uint(struct buf *b, const char *key, uint64_t value) {
        char digits[24];
        size_t i = sizeof(digits);
        do {
                digits[--i] = (char) ('0' + value % 10);
                value /= 10;
        } while (value);
        buf_key(b, key);
        buf_add(b, digits + i, sizeof(digits) - i);
}

void buf_string_list(struct buf *b, const char *key, const char *const *values) {
        if (!values)
                return;
        buf_key(b, key);
        buf_add(b, "[", 1);
        for (size_t i = 0; values[i]; i++) {
                if (i)
                        buf_add(b, ",", 1);
                buf_add_json_string(b, values[i], strlen(values[i]));
        }
        buf_add(b, "]", 1);
}

void buf_end(struct buf *b) {
        buf_add(b, "}", 1);
        b->first = false;
}
