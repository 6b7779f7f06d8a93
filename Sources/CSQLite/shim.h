// SQLite's C API, from the system's libsqlite3 (Debian: libsqlite3-dev to build, libsqlite3-0 to run).
#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast of -1 to a function pointer, which Swift cannot import: these bind a copy of the caller's
// bytes, so the caller's buffer may go away as soon as the call returns.
static inline int csqlite_bind_text_copy(sqlite3_stmt *statement, int index, const char *text, int bytes) {
    return sqlite3_bind_text(statement, index, text, bytes, SQLITE_TRANSIENT);
}

static inline int csqlite_bind_blob_copy(sqlite3_stmt *statement, int index, const void *bytes, int count) {
    return sqlite3_bind_blob(statement, index, bytes, count, SQLITE_TRANSIENT);
}
