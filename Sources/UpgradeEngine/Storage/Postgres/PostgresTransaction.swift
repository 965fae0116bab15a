/// `SQLTransaction` over one PostgreSQL connection inside an open transaction. The store protocols'
/// statements are `SQLTransaction`'s (`SQL/SQLTransaction+Accounts.swift` and the other `+X` files),
/// each sent by `PostgresConnection` as the unnamed statement (or prepared once per connection with
/// `prepared_statements=on`).
struct PostgresTransaction {
    let connection: PostgresConnection
    /// A read transaction sends a write at once, so that the call making it is refused, rather than
    /// queueing it for a COMMIT that never comes.
    var readOnly = false
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
    func rows(_ sql: String, _ arguments: [SQLValue]) throws(StorageError) -> [[SQLValue]] {
        do {
            return try connection.query(sql, arguments)
        } catch {
            if state.doomedBy == nil && (error.isRetryable || error.isConnectionLost) { state.doomedBy = error }
            throw PostgresStore.storageError(error)
        }
    }

    /// Rows the last statement changed.
    var changes: Int { connection.changes }

    /// Queues the write, so a run of writes costs no round trip of its own.
    func send(_ sql: String, _ arguments: [SQLValue]) throws(StorageError) {
        if readOnly {
            try rows(sql, arguments)
            return
        }
        do {
            try connection.enqueue(sql, arguments)
        } catch {
            throw PostgresStore.storageError(error)
        }
    }

    /// Queues the UPDATE, like `send`. The server itself must refuse a stale version, since the
    /// COMMIT may already be on its way behind the update: the statement divides by the number of
    /// rows it changed, and that division by zero is reported as the version conflict.
    func versionedUpdate(_ sql: String, _ arguments: [SQLValue], what: String) throws(StorageError) {
        if readOnly {
            try rows(sql, arguments)
            return
        }
        do {
            try connection.enqueue(
                "WITH changed AS (\(sql) RETURNING 1) SELECT 1 / count(*) FROM changed",
                arguments
            ) { error in
                guard error.sqlstate == PostgresError.SQLState.divisionByZero else { return error }
                return PostgresError(.versionConflict, "\(what) was changed by another request; reload and retry")
            }
        } catch {
            throw PostgresStore.storageError(error)
        }
    }
}

extension PostgresTransaction: SQLTransaction {
    var dialect: SQLDialect { .postgres }
}
