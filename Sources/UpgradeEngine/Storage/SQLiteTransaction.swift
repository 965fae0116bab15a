/// `StoreTransaction` over one SQLite connection inside an open transaction.
///
/// Statements are written once, as literals or `static let`s, never built per call: the
/// connection's statement cache finds them again by their text. Each aggregate's protocol is
/// conformed to in its own file (`SQLiteTransaction+Accounts.swift` for `AccountStore`, and one
/// `+X` file for each of the other twelve); this file holds what their queries share.
struct SQLiteTransaction {
    let connection: SQLiteConnection

    @discardableResult
    func rows(_ sql: String, _ arguments: [SQLValue] = []) throws(StorageError) -> [[SQLValue]] {
        try connection.query(sql, arguments)
    }

    /// Runs an UPDATE guarded by `version = expectedVersion`; no row changed means someone else won.
    func versionedUpdate(_ sql: String, _ arguments: [SQLValue], what: String) throws(StorageError) {
        try connection.query(sql, arguments)
        guard connection.changes == 1 else {
            throw StorageError(.versionConflict, "\(what) was changed by another request; reload and retry")
        }
    }

    /// Sets one indexed column of one row, and only if its value differs. SQLite deletes and
    /// reinserts the index entry of every column an UPDATE names, even one set to its own value, so
    /// the versioned updates leave indexed columns out and set each through this, and a row whose
    /// indexed values stay as they were costs no index page. `sql` names the new value `?1` and the
    /// row's key `?2`, e.g. `UPDATE t SET c = ?1 WHERE id = ?2 AND c IS NOT ?1`.
    func setIndexedColumn(_ sql: String, to value: SQLValue, key: String) throws(StorageError) {
        try rows(sql, [value, .text(key)])
    }
}

extension SQLiteTransaction: StoreTransaction {}
