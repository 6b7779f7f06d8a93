// libcurl for Swift: curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call, so each argument
// type gets a typed wrapper. Nothing else of libcurl's API needs one (Sources/UsherHTTP uses it).
#ifndef USHER_CCURL_SHIM_H
#define USHER_CCURL_SHIM_H

#include <curl/curl.h>

static inline CURLcode usher_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode usher_curl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode usher_curl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode usher_curl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode usher_curl_setopt_write_function(CURL *handle, CURLoption option, curl_write_callback value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode usher_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

#endif
