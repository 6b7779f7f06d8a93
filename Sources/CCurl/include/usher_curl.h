// libcurl, loaded when the daemon first makes a request to an identity provider (Sources/UsherHTTP).
//
// usherd does not link libcurl: libcurl and the libraries it loads (OpenSSL, GnuTLS, Kerberos, LDAP, ...) map about
// 8 MiB into the process, which a daemon that only ever uses the local provider should not carry. usher_curl_load()
// opens libcurl.so.4 with dlopen() once, as systemd opens its optional libraries, and every function below calls
// through the pointer it found. curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call, so
// each argument type has a typed wrapper.
#ifndef USHER_CURL_H
#define USHER_CURL_H

#include <curl/curl.h>

// Loads libcurl and calls curl_global_init, once per process (later calls return the first call's result): 0, or
// -1 with a description of what failed in usher_curl_load_error(). Thread-safe.
int usher_curl_load(void);
const char *usher_curl_load_error(void);

// libcurl's functions of the same names without the usher_ prefix; only after usher_curl_load() returned 0.
CURL *usher_curl_easy_init(void);
void usher_curl_easy_cleanup(CURL *handle);
const char *usher_curl_easy_strerror(CURLcode code);
CURLcode usher_curl_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode usher_curl_setopt_string(CURL *handle, CURLoption option, const char *value);
CURLcode usher_curl_setopt_pointer(CURL *handle, CURLoption option, void *value);
CURLcode usher_curl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value);
CURLcode usher_curl_setopt_write_function(CURL *handle, CURLoption option, curl_write_callback value);
CURLcode usher_curl_getinfo_long(CURL *handle, CURLINFO info, long *value);
struct curl_slist *usher_curl_slist_append(struct curl_slist *list, const char *string);
void usher_curl_slist_free_all(struct curl_slist *list);
CURLM *usher_curl_multi_init(void);
CURLMcode usher_curl_multi_cleanup(CURLM *multi);
CURLMcode usher_curl_multi_add_handle(CURLM *multi, CURL *handle);
CURLMcode usher_curl_multi_remove_handle(CURLM *multi, CURL *handle);
CURLMcode usher_curl_multi_perform(CURLM *multi, int *running);
CURLMsg *usher_curl_multi_info_read(CURLM *multi, int *left);
CURLMcode usher_curl_multi_poll(CURLM *multi, int timeout_ms);
CURLMcode usher_curl_multi_wakeup(CURLM *multi);

#endif
