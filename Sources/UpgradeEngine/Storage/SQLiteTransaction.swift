/// `SQLTransaction` over one SQLite connection inside an open transaction. The store protocols'
/// statements are `SQLTransaction`'s (`SQL/SQLTransaction+Accounts.swift` and the other `+X` files);
/// the connection's statement cache finds each again by its text.
struct SQLiteTransaction {
    let connection: SQLiteConnection
}

extension SQLiteTransaction: SQLTransaction {
    var dialect: SQLDialect { .sqlite }

    @discardableResult
    func rows(_ sql: String, _ arguments: [SQLValue]) throws(StorageError) -> [[SQLValue]] {
        try connection.query(sql, arguments)
    }

    /// Writers are serialised (BEGIN IMMEDIATE) and the database is local: nothing to gain by waiting.
    func send(_ sql: String, _ arguments: [SQLValue]) throws(StorageError) {
        try connection.query(sql, arguments)
    }

    func versionedUpdate(_ sql: String, _ arguments: [SQLValue], what: String) throws(StorageError) {
        try connection.query(sql, arguments)
        guard connection.changes == 1 else {
            throw StorageError(.versionConflict, "\(what) was changed by another request; reload and retry")
        }
    }

    var changes: Int { connection.changes }
}
