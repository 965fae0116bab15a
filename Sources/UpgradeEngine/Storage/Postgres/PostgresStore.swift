import Foundation

/// The shared backend: PostgreSQL, for several stateless instances on one database.
///
/// Every `write` runs in a SERIALIZABLE transaction, so each decision a closure makes from what it
/// read still holds when it commits, exactly as with SQLite's one writer at a time
/// (docs/architecture.md §8.4 says why per write path). A serialization failure (`40001`) or a
/// deadlock (`40P01`) rolls the transaction back and runs the whole closure again, after a jittered
/// pause, at most `Limits.maxAttempts` times; then it is `busy`. A closure must therefore do database
/// work only: it may run more than once, and only its last run commits. `read` runs in a read-only
/// REPEATABLE READ transaction: one snapshot, writes refused.
///
/// Waits are bounded by settings made in every transaction (behind its BEGIN, so that a transaction
/// pooler needs to carry nothing between transactions): `lock_timeout`, `statement_timeout` and
/// `idle_in_transaction_session_timeout`; a lock or statement timeout is `busy`. Connections come
/// from a bounded `PostgresPool`, whose checkout wait also ends in `busy`.
public final class PostgresStore: UpgradeStore, Sendable {
    /// Bounds on waits and retries. The defaults suit a request path: each wait ends well within a
    /// request's deadline instead of hanging a worker.
    public struct Limits: Sendable, Equatable {
        /// Pooled connections, opened on demand.
        public var maxConnections = 8
        /// Seconds a transaction waits for a free pooled connection.
        public var checkoutTimeout: Double = 5
        /// Milliseconds a statement waits for a row or table lock (`lock_timeout`).
        public var lockTimeoutMilliseconds = 5000
        /// Milliseconds a statement may run (`statement_timeout`).
        public var statementTimeoutMilliseconds = 30000
        /// Milliseconds a transaction may sit idle before the server ends its session
        /// (`idle_in_transaction_session_timeout`): a stuck worker cannot hold locks forever.
        public var idleInTransactionTimeoutMilliseconds = 60000
        /// Runs of a write closure, the first included, while serialization failures or deadlocks
        /// roll it back.
        public var maxAttempts = 10
        /// Milliseconds a migration waits for another process's migration to finish.
        public var migrationLockTimeoutMilliseconds = 600_000
        /// Seconds a transaction keeps trying while the server cannot be reached (connecting fails,
        /// or the connection breaks before COMMIT), pausing between tries, before it is
        /// `unavailable`. Zero for a request path, which answers 503 at once; batch jobs wait out a
        /// failover with it (docs/architecture.md, "Failover"). A connection lost during COMMIT is
        /// never tried again: whether it committed is unknown.
        public var outageWaitSeconds: Double = 0

        public init() {}
    }

    public let configuration: PostgresConfiguration
    public let limits: Limits
    let pool: PostgresPool

    /// Connects once, so an unreachable host or a refused login fails here, at start-up, in one line
    /// naming the host and the cause (never the password). The schema is not touched: call `migrate`.
    public convenience init(configuration: PostgresConfiguration, limits: Limits = Limits()) throws(StorageError) {
        try self.init(configuration: configuration, limits: limits, extraSettings: [])
    }

    /// `extraSettings` are further settings for every transaction; tests give each store a schema of
    /// its own through `search_path`.
    init(
        configuration: PostgresConfiguration,
        limits: Limits,
        extraSettings: [(name: String, value: String)]
    ) throws(StorageError) {
        self.configuration = configuration
        self.limits = limits
        pool = PostgresPool(
            configuration: configuration,
            maxConnections: limits.maxConnections,
            checkoutTimeout: limits.checkoutTimeout,
            settings: [
                ("lock_timeout", "\(limits.lockTimeoutMilliseconds)ms"),
                ("statement_timeout", "\(limits.statementTimeoutMilliseconds)ms"),
                ("idle_in_transaction_session_timeout", "\(limits.idleInTransactionTimeoutMilliseconds)ms"),
            ] + extraSettings
        )
        do {
            pool.release(try pool.lease())
        } catch {
            throw Self.storageError(error)
        }
    }

    /// What the store's connections sent since it opened (round trips, statements, commits).
    public var traffic: PostgresTraffic { pool.counters.traffic }

    // MARK: Transactions

    public func write<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        try run(isolation: .serializable, readOnly: false, body)
    }

    public func read<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        try run(isolation: .repeatableRead, readOnly: true, body)
    }

    private enum Attempt<T> {
        case finished(T)
        /// Rolled back, nothing committed: the closure may run again.
        case again(PostgresError)
        /// No connection could be had: nothing ran.
        case unreachable(StorageError)
    }

    /// Runs `body` until one run commits. A serialization failure or deadlock is retried up to
    /// `maxAttempts` runs in all; a connection lost before COMMIT was sent is retried once, on a
    /// fresh connection (a pooled connection may predate a server restart). A connection lost during
    /// COMMIT is not retried: whether that transaction committed is unknown.
    private func run<T>(
        isolation: PostgresConnection.IsolationLevel,
        readOnly: Bool,
        _ body: (any StoreTransaction) throws -> T
    ) throws -> T {
        var attempts = 0
        var reconnected = false
        var outage = OutageWait(seconds: limits.outageWaitSeconds)
        while true {
            attempts += 1
            switch try attempt(isolation: isolation, readOnly: readOnly, body) {
            case .finished(let value):
                return value
            case .unreachable(let error):
                guard outage.pause() else { throw error }
            case .again(let cause) where cause.isConnectionLost:
                if !reconnected {
                    reconnected = true
                } else if !outage.pause() {
                    throw Self.storageError(cause)
                }
            case .again(let cause):
                guard attempts < limits.maxAttempts else {
                    throw StorageError(
                        .busy,
                        "the transaction was rolled back \(attempts) times by conflicting transactions "
                            + "(last: \(cause.description)); retry later"
                    )
                }
                Self.pause(beforeAttempt: attempts + 1)
            }
        }
    }

    private func attempt<T>(
        isolation: PostgresConnection.IsolationLevel,
        readOnly: Bool,
        _ body: (any StoreTransaction) throws -> T
    ) throws -> Attempt<T> {
        let connection: PostgresConnection
        do {
            connection = try pool.lease()
        } catch {
            let storageError = Self.storageError(error)
            if storageError.code == .unavailable { return .unreachable(storageError) }
            throw storageError
        }
        var failure: (any Error)?
        defer { pool.release(connection, after: failure) }
        do {
            try connection.begin(isolation, readOnly: readOnly)
        } catch {
            failure = error
            if error.isRetryable || error.isConnectionLost { return .again(error) }
            throw Self.storageError(error)
        }
        let transaction = PostgresTransaction(connection: connection, readOnly: readOnly)
        let value: T
        do {
            value = try body(transaction)
        } catch {
            failure = error
            try? connection.rollback()
            // The closure's own error is not news when the transaction was doomed by a conflict:
            // whatever it threw came from that.
            if let doomed = transaction.state.doomedBy { return .again(doomed) }
            throw error
        }
        if let doomed = transaction.state.doomedBy {
            // The closure caught the failure and returned; the transaction cannot commit anyway.
            failure = doomed
            try? connection.rollback()
            return .again(doomed)
        }
        do {
            if readOnly {
                try connection.rollback()
            } else {
                try connection.commit()
            }
        } catch {
            failure = error
            // A write queued before the COMMIT failed (the transaction is then aborted, not ended),
            // or COMMIT itself did.
            try? connection.rollback()
            // A serialization failure found at COMMIT rolled everything back. A connection lost
            // here may or may not have committed: that is not retried.
            if error.isRetryable { return .again(error) }
            throw Self.storageError(error)
        }
        return .finished(value)
    }

    /// The pauses of one transaction while the server cannot be reached: 100 ms, doubling up to
    /// 2 s, until `seconds` have passed since the first.
    struct OutageWait {
        let seconds: Double
        private var started: ContinuousClock.Instant?
        private var pauseMilliseconds = 100

        init(seconds: Double) { self.seconds = seconds }

        /// Sleeps and returns true while the wait lasts; false once it is over (or was zero).
        mutating func pause() -> Bool {
            guard seconds > 0 else { return false }
            let now = ContinuousClock.now
            let first = started ?? now
            started = first
            let left = Duration.milliseconds(Int64(seconds * 1000)) - (now - first)
            guard left > .zero else { return false }
            let pause = min(Duration.milliseconds(pauseMilliseconds), left)
            pauseMilliseconds = min(pauseMilliseconds * 2, 2000)
            let (whole, fraction) = pause.components
            usleep(UInt32(whole * 1_000_000 + fraction / 1_000_000_000_000))
            return true
        }
    }

    /// Full jitter over an exponential ceiling (2 ms, 4 ms, ... up to 100 ms), so transactions that
    /// collided once do not collide again in step.
    private static func pause(beforeAttempt attempt: Int) {
        let ceiling = min(100_000, 1_000 << min(attempt - 1, 10))
        usleep(UInt32(Int.random(in: ceiling / 2...ceiling)))
    }

    /// `/readyz`: the server answers and takes writes. A hot standby not yet promoted (or
    /// `default_transaction_read_only`) answers too, but every write would fail there: unavailable,
    /// and the connection is dropped, so the next ping walks the host list again.
    public func ping() throws(StorageError) {
        try withConnection { connection in
            let rows = try connection.query("SELECT current_setting('transaction_read_only')")
            if rows.first?.first == .text("on") {
                throw connection.readOnlyServer("no write can succeed, so it is not ready")
            }
        }
    }

    /// Leases a connection outside any transaction of the store's (migrations, status, ping).
    private func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws(StorageError) -> T {
        let connection: PostgresConnection
        do {
            connection = try pool.lease()
        } catch {
            throw Self.storageError(error)
        }
        do {
            let value = try body(connection)
            pool.release(connection)
            return value
        } catch {
            pool.release(connection, after: error)
            if let error = error as? PostgresError { throw Self.storageError(error) }
            throw error as? StorageError ?? StorageError(.io, "\(error)")
        }
    }

    /// `PostgresError.storageError`, with the read-only refusal worded as for every backend.
    static func storageError(_ error: PostgresError) -> StorageError {
        if error.sqlstate == PostgresError.SQLState.readOnlySQLTransaction {
            return StorageError(.io, "a statement that writes was run in a read transaction (PostgreSQL error 25006)")
        }
        return error.storageError
    }

    // MARK: Migrations

    public func migrate(now: Int64) throws(StorageError) -> [MigrationStatus] {
        try migrate(now: now, through: nil)
    }

    /// Applies pending migrations up to and including `version` (all of them when nil), in one
    /// transaction that holds `schema_migrations` in EXCLUSIVE mode: a second process migrating at
    /// the same time waits for it (up to `migrationLockTimeoutMilliseconds`), then reads what was
    /// applied and finds nothing left to do. Readers of `schema_migrations` (`migrationStatus`) are
    /// not blocked: they see the state before the migration until it commits.
    func migrate(now: Int64, through version: Int? = nil) throws(StorageError) -> [MigrationStatus] {
        let lockTimeout = limits.migrationLockTimeoutMilliseconds
        do throws(StorageError) {
            return try withConnection { connection in
                try Self.createMigrationTable(connection)
                try connection.begin(.readCommitted)
                do {
                    // A migration's DDL may take longer than a request's statement limit on a large table.
                    try connection.execute("SET LOCAL statement_timeout = 0")
                    try connection.execute("SET LOCAL lock_timeout = '\(lockTimeout)ms'")
                    try connection.execute("LOCK TABLE schema_migrations IN EXCLUSIVE MODE")
                    let applied = try SchemaMigrator.postgres.migrate(
                        PostgresTransaction(connection: connection),
                        through: version,
                        now: now
                    ) { try connection.execute($0) }
                    try connection.commit()
                    return applied
                } catch {
                    try? connection.rollback()
                    throw error
                }
            }
        } catch let error where error.code == .migration {
            throw error
        } catch {
            throw StorageError(.migration, error.message)
        }
    }

    public func migrationStatus() throws(StorageError) -> [MigrationStatus] {
        do throws(StorageError) {
            // In a transaction, like everything the store sends: its settings (a test's search_path
            // among them) exist only there.
            return try withConnection { connection in
                try connection.transaction(.repeatableRead, readOnly: true) {
                    try SchemaMigrator.postgres.status(PostgresTransaction(connection: connection, readOnly: true))
                }
            }
        } catch {
            throw StorageError(.migration, error.message)
        }
    }

    /// Creates the bookkeeping table in a transaction of its own. Two processes creating it at once
    /// may see the loser fail on the catalog's own unique index (`23505`), on the table's name
    /// (`42P07`) or on its row type's name (`42710`): the table exists either way, and the loser goes on.
    private static func createMigrationTable(_ connection: PostgresConnection) throws(PostgresError) {
        do {
            try connection.begin()
            try connection.enqueue(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version BIGINT PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at BIGINT NOT NULL)
                """
            )
            try connection.commit()
        } catch let error
            where error.sqlstate == PostgresError.SQLState.uniqueViolation || error.sqlstate == "42P07"
            || error.sqlstate == "42710"
        {
            try? connection.rollback()
            return
        } catch {
            try? connection.rollback()
            throw error
        }
    }
}
