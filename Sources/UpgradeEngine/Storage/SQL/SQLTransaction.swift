/// What each aggregate's SQL runs on: one open transaction of either backend. `SQLiteTransaction`
/// and `PostgresTransaction` implement it; the aggregates' statements, written once against it, are
/// in `SQLTransaction+Accounts.swift` and one `+X` file for each of the other `UpgradeStore`
/// aggregates, and reach each backend's differences only through `dialect`.
///
/// Statements are literals or `static let`s, never built per call: SQLite's statement cache and
/// PostgreSQL's prepared statements find them again by their text.
protocol SQLTransaction: StoreTransaction {
    var dialect: SQLDialect { get }

    /// Runs one statement and returns its rows.
    @discardableResult
    func rows(_ sql: String, _ arguments: [SQLValue]) throws(StorageError) -> [[SQLValue]]

    /// Runs a write whose answer the caller does not need. PostgreSQL queues it: it travels with the
    /// transaction's next statement that returns something, or with its COMMIT, and its failure is
    /// thrown by that later call (`UpgradeStore` allows it). SQLite runs it at once.
    func send(_ sql: String, _ arguments: [SQLValue]) throws(StorageError)

    /// Runs an UPDATE guarded by `version = expectedVersion`, like `send`; no row changed means
    /// someone else won, and throws `versionConflict` naming `what`.
    func versionedUpdate(_ sql: String, _ arguments: [SQLValue], what: String) throws(StorageError)

    /// Rows the last statement changed.
    var changes: Int { get }
}

extension SQLTransaction {
    @discardableResult
    func rows(_ sql: String) throws(StorageError) -> [[SQLValue]] {
        try rows(sql, [])
    }

    @discardableResult
    func rows(_ sql: DialectSQL, _ arguments: [SQLValue] = []) throws(StorageError) -> [[SQLValue]] {
        try rows(sql[dialect], arguments)
    }

    func versionedUpdate(_ sql: DialectSQL, _ arguments: [SQLValue], what: String) throws(StorageError) {
        try versionedUpdate(sql[dialect], arguments, what: what)
    }

    /// The first column of the first row as an integer (a count), nil without one.
    func scalarInt(_ sql: String, _ arguments: [SQLValue] = []) throws(StorageError) -> Int64? {
        guard case .integer(let value) = try rows(sql, arguments).first?.first else { return nil }
        return value
    }

    /// Sets one indexed column of one row, and only if its value differs, where
    /// `dialect.setsIndexedColumnsApart`: a row whose indexed values stay as they were then costs no
    /// index page. `sql` names the new value `$1` and the row's key `$2`, e.g.
    /// `UPDATE t SET c = $1 WHERE id = $2 AND c IS NOT $1`.
    func setIndexedColumn(_ sql: String, to value: SQLValue, key: String) throws(StorageError) {
        try rows(sql, [value, .text(key)])
    }
}
