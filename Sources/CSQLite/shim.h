#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H
#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast macro that Swift cannot import.
static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }

// Bind bytes with an explicit length so embedded NULs survive and empty values stay non-NULL.
static inline int csqlite_bind_text(sqlite3_stmt *stmt, int index, const void *bytes, int length) {
    static const char empty[1] = {0};
    return sqlite3_bind_text(stmt, index, bytes ? (const char *)bytes : empty, length, SQLITE_TRANSIENT);
}
static inline int csqlite_bind_blob(sqlite3_stmt *stmt, int index, const void *bytes, int length) {
    if (length == 0) return sqlite3_bind_zeroblob(stmt, index, 0);
    return sqlite3_bind_blob(stmt, index, bytes, length, SQLITE_TRANSIENT);
}

// sqlite3_config is variadic too. Memory statistics (on by default) take a process-wide mutex around
// every allocation SQLite makes (about 200 per upgrade) to keep counters nothing here reads. Only
// possible before SQLite initialises; afterwards SQLite answers SQLITE_MISUSE and changes nothing.
static inline int csqlite_disable_memory_statistics(void) { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }

// sqlite3_db_config is variadic; wrap the options we use.
static inline int csqlite_enable_defensive(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)0);
}
// Extended result codes are composite macros Swift cannot import.
static const int csqlite_constraint_unique = SQLITE_CONSTRAINT_UNIQUE;
static const int csqlite_constraint_primarykey = SQLITE_CONSTRAINT_PRIMARYKEY;
#endif
