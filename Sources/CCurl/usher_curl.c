// See include/usher_curl.h.
#include "usher_curl.h"

#include <stdio.h>

#include "usher_loader.h"

// The soname of libcurl 7.16 and later (Debian's libcurl4 and libcurl3-gnutls both provide it; the package depends on
// libcurl4). CURLOPT_PROTOCOLS_STR needs 7.85.
#define USHER_CURL_SONAME "libcurl.so.4"

static struct {
	CURLcode (*global_init)(long flags);
	curl_version_info_data *(*version_info)(CURLversion age);
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *handle);
	const char *(*easy_strerror)(CURLcode code);
	CURLcode (*easy_setopt)(CURL *handle, CURLoption option, ...);
	CURLcode (*easy_getinfo)(CURL *handle, CURLINFO info, ...);
	struct curl_slist *(*slist_append)(struct curl_slist *list, const char *string);
	void (*slist_free_all)(struct curl_slist *list);
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_cleanup)(CURLM *multi);
	CURLMcode (*multi_add_handle)(CURLM *multi, CURL *handle);
	CURLMcode (*multi_remove_handle)(CURLM *multi, CURL *handle);
	CURLMcode (*multi_perform)(CURLM *multi, int *running);
	CURLMsg *(*multi_info_read)(CURLM *multi, int *left);
	CURLMcode (*multi_poll)(CURLM *multi, struct curl_waitfd *extra, unsigned extra_count, int timeout_ms, int *ready);
	CURLMcode (*multi_wakeup)(CURLM *multi);
} curl;

// Every function usher calls, and where its address goes.
static const struct usher_symbol symbols[] = {
	{"curl_global_init", (void **)&curl.global_init},
	{"curl_version_info", (void **)&curl.version_info},
	{"curl_easy_init", (void **)&curl.easy_init},
	{"curl_easy_cleanup", (void **)&curl.easy_cleanup},
	{"curl_easy_strerror", (void **)&curl.easy_strerror},
	{"curl_easy_setopt", (void **)&curl.easy_setopt},
	{"curl_easy_getinfo", (void **)&curl.easy_getinfo},
	{"curl_slist_append", (void **)&curl.slist_append},
	{"curl_slist_free_all", (void **)&curl.slist_free_all},
	{"curl_multi_init", (void **)&curl.multi_init},
	{"curl_multi_cleanup", (void **)&curl.multi_cleanup},
	{"curl_multi_add_handle", (void **)&curl.multi_add_handle},
	{"curl_multi_remove_handle", (void **)&curl.multi_remove_handle},
	{"curl_multi_perform", (void **)&curl.multi_perform},
	{"curl_multi_info_read", (void **)&curl.multi_info_read},
	{"curl_multi_poll", (void **)&curl.multi_poll},
	{"curl_multi_wakeup", (void **)&curl.multi_wakeup},
};

// A libcurl new enough, and curl_global_init once.
static int initialize(char *error, size_t error_size) {
	const curl_version_info_data *version = curl.version_info(CURLVERSION_NOW);
	if (!version || version->version_num < 0x075500) {
		snprintf(error, error_size, "%s is libcurl %s; usherd needs 7.85 or later", USHER_CURL_SONAME,
			 version && version->version ? version->version : "?");
		return -1;
	}
	CURLcode code = curl.global_init(CURL_GLOBAL_DEFAULT);
	if (code != CURLE_OK) {
		snprintf(error, error_size, "curl_global_init failed: %s", curl.easy_strerror(code));
		return -1;
	}
	return 0;
}

static struct usher_library library = USHER_LIBRARY(USHER_CURL_SONAME, symbols, initialize);

int usher_curl_load(void) { return usher_library_ready(&library) ? 0 : -1; }

const char *usher_curl_load_error(void) {
	usher_library_ready(&library);
	return library.error;
}

CURL *usher_curl_easy_init(void) { return curl.easy_init(); }
void usher_curl_easy_cleanup(CURL *handle) { curl.easy_cleanup(handle); }
const char *usher_curl_easy_strerror(CURLcode code) { return curl.easy_strerror(code); }

CURLcode usher_curl_setopt_long(CURL *handle, CURLoption option, long value) {
	return curl.easy_setopt(handle, option, value);
}

CURLcode usher_curl_setopt_string(CURL *handle, CURLoption option, const char *value) {
	return curl.easy_setopt(handle, option, value);
}

CURLcode usher_curl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
	return curl.easy_setopt(handle, option, value);
}

CURLcode usher_curl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
	return curl.easy_setopt(handle, option, value);
}

CURLcode usher_curl_setopt_write_function(CURL *handle, CURLoption option, curl_write_callback value) {
	return curl.easy_setopt(handle, option, value);
}

CURLcode usher_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
	return curl.easy_getinfo(handle, info, value);
}

struct curl_slist *usher_curl_slist_append(struct curl_slist *list, const char *string) {
	return curl.slist_append(list, string);
}

void usher_curl_slist_free_all(struct curl_slist *list) {
	if (list) curl.slist_free_all(list);
}

CURLM *usher_curl_multi_init(void) { return curl.multi_init(); }
CURLMcode usher_curl_multi_cleanup(CURLM *multi) { return curl.multi_cleanup(multi); }
CURLMcode usher_curl_multi_add_handle(CURLM *multi, CURL *handle) { return curl.multi_add_handle(multi, handle); }

CURLMcode usher_curl_multi_remove_handle(CURLM *multi, CURL *handle) {
	return curl.multi_remove_handle(multi, handle);
}

CURLMcode usher_curl_multi_perform(CURLM *multi, int *running) { return curl.multi_perform(multi, running); }
CURLMsg *usher_curl_multi_info_read(CURLM *multi, int *left) { return curl.multi_info_read(multi, left); }

CURLMcode usher_curl_multi_poll(CURLM *multi, int timeout_ms) {
	return curl.multi_poll(multi, NULL, 0, timeout_ms, NULL);
}

CURLMcode usher_curl_multi_wakeup(CURLM *multi) { return curl.multi_wakeup(multi); }
