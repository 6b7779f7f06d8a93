// See include/usher_sqlite.h.
#include "usher_sqlite.h"

#include "usher_loader.h"

// The soname of SQLite 3 (Debian's libsqlite3-0); sqlite3_changes64 needs 3.37.
#define USHER_SQLITE_SONAME "libsqlite3.so.0"

static struct {
	int (*open_v2)(const char *filename, sqlite3 **db, int flags, const char *vfs);
	const char *(*errstr)(int code);
	int (*close_v2)(sqlite3 *db);
	const char *(*errmsg)(sqlite3 *db);
	int (*exec)(sqlite3 *db, const char *sql, int (*callback)(void *, int, char **, char **), void *argument,
		    char **error);
	int (*busy_timeout)(sqlite3 *db, int milliseconds);
	int (*get_autocommit)(sqlite3 *db);
	sqlite3_int64 (*changes64)(sqlite3 *db);
	int (*prepare_v3)(sqlite3 *db, const char *sql, int bytes, unsigned int flags, sqlite3_stmt **statement,
			  const char **tail);
	int (*step)(sqlite3_stmt *statement);
	int (*reset)(sqlite3_stmt *statement);
	int (*finalize)(sqlite3_stmt *statement);
	int (*stmt_busy)(sqlite3_stmt *statement);
	int (*clear_bindings)(sqlite3_stmt *statement);
	int (*bind_parameter_index)(sqlite3_stmt *statement, const char *name);
	int (*bind_null)(sqlite3_stmt *statement, int index);
	int (*bind_int64)(sqlite3_stmt *statement, int index, sqlite3_int64 value);
	int (*bind_double)(sqlite3_stmt *statement, int index, double value);
	int (*bind_zeroblob)(sqlite3_stmt *statement, int index, int bytes);
	int (*bind_text)(sqlite3_stmt *statement, int index, const char *text, int bytes, void (*destructor)(void *));
	int (*bind_blob)(sqlite3_stmt *statement, int index, const void *bytes, int count, void (*destructor)(void *));
	int (*column_count)(sqlite3_stmt *statement);
	const char *(*column_name)(sqlite3_stmt *statement, int column);
	int (*column_type)(sqlite3_stmt *statement, int column);
	sqlite3_int64 (*column_int64)(sqlite3_stmt *statement, int column);
	double (*column_double)(sqlite3_stmt *statement, int column);
	const unsigned char *(*column_text)(sqlite3_stmt *statement, int column);
	const void *(*column_blob)(sqlite3_stmt *statement, int column);
	int (*column_bytes)(sqlite3_stmt *statement, int column);
} sqlite;

// Every function usher calls, and where its address goes.
static const struct usher_symbol symbols[] = {
	{"sqlite3_open_v2", (void **)&sqlite.open_v2},
	{"sqlite3_errstr", (void **)&sqlite.errstr},
	{"sqlite3_close_v2", (void **)&sqlite.close_v2},
	{"sqlite3_errmsg", (void **)&sqlite.errmsg},
	{"sqlite3_exec", (void **)&sqlite.exec},
	{"sqlite3_busy_timeout", (void **)&sqlite.busy_timeout},
	{"sqlite3_get_autocommit", (void **)&sqlite.get_autocommit},
	{"sqlite3_changes64", (void **)&sqlite.changes64},
	{"sqlite3_prepare_v3", (void **)&sqlite.prepare_v3},
	{"sqlite3_step", (void **)&sqlite.step},
	{"sqlite3_reset", (void **)&sqlite.reset},
	{"sqlite3_finalize", (void **)&sqlite.finalize},
	{"sqlite3_stmt_busy", (void **)&sqlite.stmt_busy},
	{"sqlite3_clear_bindings", (void **)&sqlite.clear_bindings},
	{"sqlite3_bind_parameter_index", (void **)&sqlite.bind_parameter_index},
	{"sqlite3_bind_null", (void **)&sqlite.bind_null},
	{"sqlite3_bind_int64", (void **)&sqlite.bind_int64},
	{"sqlite3_bind_double", (void **)&sqlite.bind_double},
	{"sqlite3_bind_zeroblob", (void **)&sqlite.bind_zeroblob},
	{"sqlite3_bind_text", (void **)&sqlite.bind_text},
	{"sqlite3_bind_blob", (void **)&sqlite.bind_blob},
	{"sqlite3_column_count", (void **)&sqlite.column_count},
	{"sqlite3_column_name", (void **)&sqlite.column_name},
	{"sqlite3_column_type", (void **)&sqlite.column_type},
	{"sqlite3_column_int64", (void **)&sqlite.column_int64},
	{"sqlite3_column_double", (void **)&sqlite.column_double},
	{"sqlite3_column_text", (void **)&sqlite.column_text},
	{"sqlite3_column_blob", (void **)&sqlite.column_blob},
	{"sqlite3_column_bytes", (void **)&sqlite.column_bytes},
};

// Every function fails alike when one is missing, never some of them.
static struct usher_library library = USHER_LIBRARY(USHER_SQLITE_SONAME, symbols, NULL);

static int ready(void) { return usher_library_ready(&library); }

int usher_sqlite3_open_v2(const char *filename, sqlite3 **db, int flags, const char *vfs) {
	if (!ready()) {
		*db = NULL;
		return SQLITE_CANTOPEN;
	}
	return sqlite.open_v2(filename, db, flags, vfs);
}

const char *usher_sqlite3_errstr(int code) { return ready() ? sqlite.errstr(code) : library.error; }

// Also called on the NULL of an open that could not load the library.
int usher_sqlite3_close_v2(sqlite3 *db) { return ready() ? sqlite.close_v2(db) : SQLITE_OK; }
const char *usher_sqlite3_errmsg(sqlite3 *db) { return ready() ? sqlite.errmsg(db) : library.error; }
int usher_sqlite3_exec(
	sqlite3 *db, const char *sql, int (*callback)(void *, int, char **, char **), void *argument, char **error) {
	return sqlite.exec(db, sql, callback, argument, error);
}
int usher_sqlite3_busy_timeout(sqlite3 *db, int milliseconds) { return sqlite.busy_timeout(db, milliseconds); }
int usher_sqlite3_get_autocommit(sqlite3 *db) { return sqlite.get_autocommit(db); }
sqlite3_int64 usher_sqlite3_changes64(sqlite3 *db) { return sqlite.changes64(db); }
int usher_sqlite3_prepare_v3(
	sqlite3 *db, const char *sql, int bytes, unsigned int flags, sqlite3_stmt **statement, const char **tail) {
	return sqlite.prepare_v3(db, sql, bytes, flags, statement, tail);
}
int usher_sqlite3_step(sqlite3_stmt *statement) { return sqlite.step(statement); }
int usher_sqlite3_reset(sqlite3_stmt *statement) { return sqlite.reset(statement); }
int usher_sqlite3_finalize(sqlite3_stmt *statement) { return ready() ? sqlite.finalize(statement) : SQLITE_OK; }
int usher_sqlite3_stmt_busy(sqlite3_stmt *statement) { return sqlite.stmt_busy(statement); }
int usher_sqlite3_clear_bindings(sqlite3_stmt *statement) { return sqlite.clear_bindings(statement); }
int usher_sqlite3_bind_parameter_index(sqlite3_stmt *statement, const char *name) {
	return sqlite.bind_parameter_index(statement, name);
}
int usher_sqlite3_bind_null(sqlite3_stmt *statement, int index) { return sqlite.bind_null(statement, index); }
int usher_sqlite3_bind_int64(sqlite3_stmt *statement, int index, sqlite3_int64 value) {
	return sqlite.bind_int64(statement, index, value);
}
int usher_sqlite3_bind_double(sqlite3_stmt *statement, int index, double value) {
	return sqlite.bind_double(statement, index, value);
}
int usher_sqlite3_bind_zeroblob(sqlite3_stmt *statement, int index, int bytes) {
	return sqlite.bind_zeroblob(statement, index, bytes);
}
int usher_sqlite3_column_count(sqlite3_stmt *statement) { return sqlite.column_count(statement); }
const char *usher_sqlite3_column_name(sqlite3_stmt *statement, int column) {
	return sqlite.column_name(statement, column);
}
int usher_sqlite3_column_type(sqlite3_stmt *statement, int column) { return sqlite.column_type(statement, column); }
sqlite3_int64 usher_sqlite3_column_int64(sqlite3_stmt *statement, int column) {
	return sqlite.column_int64(statement, column);
}
double usher_sqlite3_column_double(sqlite3_stmt *statement, int column) {
	return sqlite.column_double(statement, column);
}
const unsigned char *usher_sqlite3_column_text(sqlite3_stmt *statement, int column) {
	return sqlite.column_text(statement, column);
}
const void *usher_sqlite3_column_blob(sqlite3_stmt *statement, int column) {
	return sqlite.column_blob(statement, column);
}
int usher_sqlite3_column_bytes(sqlite3_stmt *statement, int column) { return sqlite.column_bytes(statement, column); }

int usher_sqlite3_bind_text_copy(sqlite3_stmt *statement, int index, const char *text, int bytes) {
	return sqlite.bind_text(statement, index, text, bytes, SQLITE_TRANSIENT);
}

int usher_sqlite3_bind_blob_copy(sqlite3_stmt *statement, int index, const void *bytes, int count) {
	return sqlite.bind_blob(statement, index, bytes, count, SQLITE_TRANSIENT);
}
