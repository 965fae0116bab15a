/// `StoreTransaction` over one PostgreSQL connection inside an open transaction.
///
/// Statements are literals or `static let`s, prepared once per connection by `PostgresConnection`
/// and then only executed. Each aggregate's protocol is conformed to in its own file
/// (`PostgresTransaction+Accounts.swift`, `+AppleLinks`, `+UpgradeSessions`, `+Transfers`,
/// `+Notifications`, `+Audit`), as for SQLite; this file holds what their statements share.
struct PostgresTransaction {
    let connection: PostgresConnection
    /// What the store needs to know after the closure: whether a statement failed in a way that
    /// dooms the transaction but lets it run again.
    let state = State()

    final class State {
        /// The first serialization failure, deadlock or lost connection a statement met. PostgreSQL
        /// refuses every later statement of the transaction, so the store runs the closure again
        /// whatever the closure made of the error.
        fileprivate(set) var doomedBy: PostgresError?
    }

    /// Runs one statement and returns its rows.
    @discardableResult
    func rows(_ sql: String, _ arguments: [SQLValue] = []) throws(StorageError) -> [[SQLValue]] {
        do {
            return try connection.query(sql, arguments)
        } catch {
            if state.doomedBy == nil && (error.isRetryable || error.isConnectionLost) { state.doomedBy = error }
            throw PostgresStore.storageError(error)
        }
    }

    /// Rows the last statement changed.
    var changes: Int { connection.changes }

    /// The first column of the first row as an integer (a count), nil without one.
    func scalarInt(_ sql: String, _ arguments: [SQLValue] = []) throws(StorageError) -> Int64? {
        guard case .integer(let value) = try rows(sql, arguments).first?.first else { return nil }
        return value
    }

    /// Runs an UPDATE guarded by `version = expectedVersion`; no row changed means someone else won.
    func versionedUpdate(_ sql: String, _ arguments: [SQLValue], what: String) throws(StorageError) {
        try rows(sql, arguments)
        guard changes == 1 else {
            throw StorageError(.versionConflict, "\(what) was changed by another request; reload and retry")
        }
    }
}

extension PostgresTransaction: StoreTransaction {}
