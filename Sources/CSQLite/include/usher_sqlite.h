// SQLite's C API, from the system's libsqlite3 (Debian: libsqlite3-dev to build, libsqlite3-0 to run), opened with
// dlopen when the store first opens a database (Sources/UsherStore/SQLite).
//
// usherd is the CLI too (Sources/usherd/Usherd.swift), and linked, libsqlite3 would be mapped and relocated by every
// `usher` the shell or git runs, which never opens a database: about 0.25 ms of each run. As with libsystemd
// (Sources/CSystemd), the library is opened once per process, thread-safe, and the package depends on libsqlite3-0
// itself, since dpkg-shlibdeps does not see a library opened so.
//
// Each usher_sqlite3_X is SQLite's sqlite3_X. usher_sqlite3_open_v2 loads the library first; when it cannot be loaded
// it returns SQLITE_CANTOPEN with *db set to NULL, and usher_sqlite3_errstr() says why. Every other function takes a
// handle that a successful open made (a database, or a statement prepared on one), so the library is loaded by then.
#ifndef USHER_SQLITE_H
#define USHER_SQLITE_H

// For the types and constants; the functions of this header are not linked, and calling one fails the link.
#include <sqlite3.h>

int usher_sqlite3_open_v2(const char *filename, sqlite3 **db, int flags, const char *vfs);
// Before the library is loaded (an open that failed to load it), the reason it could not be.
const char *usher_sqlite3_errstr(int code);
int usher_sqlite3_close_v2(sqlite3 *db);
const char *usher_sqlite3_errmsg(sqlite3 *db);
int usher_sqlite3_exec(sqlite3 *db, const char *sql, int (*callback)(void *, int, char **, char **), void *argument,
		       char **error);
int usher_sqlite3_busy_timeout(sqlite3 *db, int milliseconds);
int usher_sqlite3_get_autocommit(sqlite3 *db);
sqlite3_int64 usher_sqlite3_changes64(sqlite3 *db);
int usher_sqlite3_prepare_v3(sqlite3 *db, const char *sql, int bytes, unsigned int flags, sqlite3_stmt **statement,
			     const char **tail);
int usher_sqlite3_step(sqlite3_stmt *statement);
int usher_sqlite3_reset(sqlite3_stmt *statement);
int usher_sqlite3_finalize(sqlite3_stmt *statement);
int usher_sqlite3_stmt_busy(sqlite3_stmt *statement);
int usher_sqlite3_clear_bindings(sqlite3_stmt *statement);
int usher_sqlite3_bind_parameter_index(sqlite3_stmt *statement, const char *name);
int usher_sqlite3_bind_null(sqlite3_stmt *statement, int index);
int usher_sqlite3_bind_int64(sqlite3_stmt *statement, int index, sqlite3_int64 value);
int usher_sqlite3_bind_double(sqlite3_stmt *statement, int index, double value);
int usher_sqlite3_bind_zeroblob(sqlite3_stmt *statement, int index, int bytes);
int usher_sqlite3_column_count(sqlite3_stmt *statement);
const char *usher_sqlite3_column_name(sqlite3_stmt *statement, int column);
int usher_sqlite3_column_type(sqlite3_stmt *statement, int column);
sqlite3_int64 usher_sqlite3_column_int64(sqlite3_stmt *statement, int column);
double usher_sqlite3_column_double(sqlite3_stmt *statement, int column);
const unsigned char *usher_sqlite3_column_text(sqlite3_stmt *statement, int column);
const void *usher_sqlite3_column_blob(sqlite3_stmt *statement, int column);
int usher_sqlite3_column_bytes(sqlite3_stmt *statement, int column);

// SQLITE_TRANSIENT is a cast of -1 to a function pointer, which Swift cannot import: these bind a copy of the caller's
// bytes, so the caller's buffer may go away as soon as the call returns.
int usher_sqlite3_bind_text_copy(sqlite3_stmt *statement, int index, const char *text, int bytes);
int usher_sqlite3_bind_blob_copy(sqlite3_stmt *statement, int index, const void *bytes, int count);

#endif
