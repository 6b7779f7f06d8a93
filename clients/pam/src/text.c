/* Request parameters as JSON text, built in a buffer that is zeroed before it is given back: they may hold a
 * password, which must not linger in freed memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pam_usher.h"

void text_add(struct text *t, const char *p, size_t n) {
        if (t->failed)
                return;
        if (t->len + n + 1 > t->cap) {
                size_t cap = t->cap ? t->cap : 256;
                while (cap < t->len + n + 1)
                        cap *= 2;
                /* Not realloc(): it would leave the old bytes behind unzeroed. */
                char *p2 = malloc(cap);
                if (!p2) {
                        t->failed = true;
                        return;
                }
                if (t->p) {
                        memcpy(p2, t->p, t->len);
                        explicit_bzero(t->p, t->cap);
                        free(t->p);
                }
                t->p = p2;
                t->cap = cap;
        }
        memcpy(t->p + t->len, p, n);
        t->len += n;
        t->p[t->len] = '\0';
}

/* A JSON string of n bytes of s (UTF-8 as it is; control characters, quotes and backslashes escaped). */
void text_json_string(struct text *t, const char *s, size_t n) {
        text_add(t, "\"", 1);
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) s[i];
                if (c == '"' || c == '\\') {
                        char e[2] = {'\\', (char) c};
                        text_add(t, e, 2);
                } else if (c < 0x20 || c == 0x7f) {
                        char e[7];
                        snprintf(e, sizeof(e), "\\u%04x", c);
                        text_add(t, e, 6);
                        explicit_bzero(e, sizeof(e));
                } else
                        text_add(t, s + i, 1);
        }
        text_add(t, "\"", 1);
}

/* `"key":"value",` (nothing when value is NULL); the caller closes the object. */
void text_member(struct text *t, const char *key, const char *value) {
        if (!value)
                return;
        text_json_string(t, key, strlen(key));
        text_add(t, ":", 1);
        text_json_string(t, value, strlen(value));
        text_add(t, ",", 1);
}

void text_free(struct text *t) {
        if (t->p) {
                explicit_bzero(t->p, t->cap);
                free(t->p);
        }
        *t = (struct text) {0};
}

/* Ends the object begun with "{": the last member's ',' becomes '}'. */
void text_close(struct text *t) {
        if (!t->failed && t->len && t->p[t->len - 1] == ',')
                t->p[t->len - 1] = '}';
        else
                text_add(t, "}", 1);
}
