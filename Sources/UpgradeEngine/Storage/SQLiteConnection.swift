import CSQLite
import Foundation

/// A value bound to or read from a SQL statement.
public enum SQLValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case text(String)
    case blob([UInt8])
}

/// One SQLite connection. Not Sendable: it is reached only by the thread that checked it out of
/// `SQLiteStore`'s pool, which is what makes `SQLITE_OPEN_NOMUTEX` safe.
final class SQLiteConnection {
    private let handle: OpaquePointer
    private var statementCache: [StatementKey: SQLiteStatement] = [:]
    /// Set for the length of a read transaction: a statement that would write is then refused
    /// before it runs. (Checked per statement rather than with `PRAGMA query_only`, because
    /// changing that pragma expires every cached statement and each would be compiled again.)
    var readOnly = false
    /// Frames in the write-ahead log after this connection's last commit, as SQLite's WAL hook
    /// reports them (`SQLiteStore.write` checkpoints from it).
    var walFrames: Int32 = 0

    /// Process-wide settings that must precede SQLite's initialisation, which the first open does.
    /// If something else in the process opened a database first, they are simply not applied.
    private static let processSettings: Void = {
        _ = csqlite_disable_memory_statistics()
    }()

    init(
        path: String,
        busyTimeoutMilliseconds: Int32 = 5000,
        durability: SQLiteDurability = .full
    ) throws(StorageError) {
        Self.processSettings
        try Self.createPrivately(path)
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let db { sqlite3_close_v2(db) }
            throw StorageError(.io, "cannot open SQLite database at \(path): \(message)")
        }
        handle = db
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
        // A WAL hook of our own turns off SQLite's checkpoint at the end of a COMMIT.
        sqlite3_wal_hook(
            db,
            { context, _, _, frames in
                if let context {
                    Unmanaged<SQLiteConnection>.fromOpaque(context).takeUnretainedValue().walFrames = frames
                }
                return SQLITE_OK
            },
            Unmanaged.passUnretained(self).toOpaque()
        )
        _ = csqlite_enable_defensive(db)
        try execute("PRAGMA foreign_keys = ON")
        try execute("PRAGMA journal_mode = WAL")
        // FULL: a commit returns once the log is synced, so what a client was told survives a power
        // loss; NORMAL syncs only at checkpoints (SQLiteDurability).
        try execute("PRAGMA synchronous = \(durability.pragma)")
        guard try scalarInt("PRAGMA foreign_keys") == 1 else {
            throw StorageError(.configuration, "SQLite refused to enable foreign keys")
        }
    }

    /// Creates a missing database file empty (a valid empty database) with mode 0600 whatever the
    /// umask, before SQLite would create it 0644: it holds password hashes and sealed secrets.
    /// SQLite's Unix VFS gives the `-wal`, `-shm` and `-journal` files it creates the database
    /// file's mode, so they are 0600 too. An existing file keeps its mode.
    static func createPrivately(_ path: String) throws(StorageError) {
        guard path != ":memory:", !path.hasPrefix("file:") else { return }
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            // Another process created it first, or it exists: SQLite opens it as it is.
            if errno == EEXIST { return }
            throw StorageError(.io, "cannot create SQLite database at \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        guard fchmod(fd, 0o600) == 0 else {
            throw StorageError(.io, "cannot make \(path) private (mode 0600): \(String(cString: strerror(errno)))")
        }
    }

    deinit {
        sqlite3_wal_hook(handle, nil, nil)
        statementCache.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Copies what it can of the write-ahead log into the database without waiting for readers or
    /// writers (`PASSIVE`, as SQLite's own checkpoint after a commit); a checkpoint that cannot run
    /// now leaves it to the next. Returns the log's length in frames.
    @discardableResult
    func checkpoint() -> Int32 {
        var length: Int32 = 0
        var copied: Int32 = 0
        _ = sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, &length, &copied)
        return length
    }

    /// Runs one or more statements with no parameters and no results (DDL, pragmas, transaction control).
    func execute(_ sql: String) throws(StorageError) {
        var errorMessage: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &errorMessage)
        if rc != SQLITE_OK {
            let message = errorMessage.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(errorMessage)
            throw Self.error(code: rc, message: message, handle: handle)
        }
    }

    /// Runs a statement, returning every row. Statements are prepared once and cached.
    @discardableResult
    func query(_ sql: String, _ arguments: [SQLValue] = []) throws(StorageError) -> [[SQLValue]] {
        let statement = try prepared(sql)
        if readOnly, !statement.isReadOnly {
            throw StorageError(.io, "a statement that writes was run in a read transaction")
        }
        return try statement.run(arguments)
    }

    /// Transaction control (`BEGIN`, `COMMIT`, `ROLLBACK`), through the statement cache.
    func control(_ sql: String) throws(StorageError) {
        _ = try prepared(sql).run([])
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    var changes: Int { Int(sqlite3_changes(handle)) }

    func scalarInt(_ sql: String, _ arguments: [SQLValue] = []) throws(StorageError) -> Int64? {
        guard let first = try query(sql, arguments).first?.first, case .integer(let value) = first else { return nil }
        return value
    }

    private func prepared(_ sql: String) throws(StorageError) -> SQLiteStatement {
        let key = StatementKey(sql)
        if let cached = statementCache[key] { return cached }
        var raw: OpaquePointer?
        let text = SQLDialect.sqlite.placeholders(in: sql)
        let rc = sqlite3_prepare_v3(handle, text, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        guard rc == SQLITE_OK, let raw else {
            throw Self.error(code: rc, message: String(cString: sqlite3_errmsg(handle)), handle: handle)
        }
        let statement = SQLiteStatement(raw, connection: handle)
        statementCache[key] = statement
        return statement
    }

    /// A statement's text as a cache key. Hashing all of it (SipHash over a few hundred bytes) cost
    /// more than running the statement's lookup: the length and a few bytes from each end tell the
    /// statements apart, and equality still compares the whole text (by identity first, since the
    /// same literal or `static let` is the same string).
    private struct StatementKey: Hashable {
        let sql: String

        init(_ sql: String) { self.sql = sql }

        func hash(into hasher: inout Hasher) {
            var sql = sql
            sql.withUTF8 { bytes in
                hasher.combine(bytes.count)
                guard bytes.count >= 16 else {
                    hasher.combine(bytes: UnsafeRawBufferPointer(bytes))
                    return
                }
                let raw = UnsafeRawBufferPointer(bytes)
                hasher.combine(raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
                hasher.combine(raw.loadUnaligned(fromByteOffset: bytes.count / 2 - 4, as: UInt64.self))
                hasher.combine(raw.loadUnaligned(fromByteOffset: bytes.count - 8, as: UInt64.self))
            }
        }
    }

    /// Each UNIQUE and PRIMARY KEY constraint of `Schema/sqlite`, by the columns SQLite's message names.
    static let uniqueConstraints: [String: StorageError.Constraint] = [
        "accounts.id": .accountsID,
        "accounts.username": .accountsUsername,
        "accounts.username_skeleton": .accountsUsernameSkeleton,
        "password_credentials.account_id": .passwordCredentialsAccount,
        "totp_enrollments.account_id": .totpEnrollmentsAccount,
        "recovery_codes.account_id, recovery_codes.code_hash": .recoveryCodesCode,
        "login_throttle.username_key": .loginThrottleUsernameKey,
        "apple_links.account_id": .appleLinksAccount,
        "apple_links.sub": .appleLinksSub,
        "upgrade_sessions.id": .upgradeSessionsID,
        "transfer_records.account_id": .transferRecordsAccount,
        "transfer_records.old_sub": .transferRecordsOldSub,
        "transfer_records.transfer_sub": .transferRecordsTransferSub,
        "audit_events.id": .auditEventsID,
        "apple_notifications.jti": .appleNotificationsJTI,
        "used_sign_in_nonces.nonce_hash": .usedSignInNoncesHash,
        "job_leases.job": .jobLeasesJob,
        "client_throttle.client_key": .clientThrottleClientKey,
        "upgrade_tickets.ticket_hash": .upgradeTicketsHash,
        "apple_revocations.id": .appleRevocationsID,
        "password_changes.id": .passwordChangesID,
        "account_profiles.account_id": .accountProfilesAccount,
        "import_runs.id": .importRunsID,
        "webhook_outbox.id": .webhookOutboxID,
        "username_skeleton_source.id": .usernameSkeletonSourceID,
        "hash_parameter_sets.id": .hashParameterSetsID,
        "admin_token_uses.name, admin_token_uses.created_at": .adminTokenUsesToken,
        "console_sessions.session_hash": .consoleSessionsHash,
        "key_checks.key_id": .keyChecksKeyID,
        "retired_transfer_records.id": .retiredTransferRecordsID,
        "serve_instances.instance_id": .serveInstancesID,
    ]

    static func error(code: Int32, message: String, handle: OpaquePointer?) -> StorageError {
        switch code {
        case csqlite_constraint_unique, csqlite_constraint_primarykey:
            // SQLite names a constraint only by its columns, in the message:
            // "UNIQUE constraint failed: apple_links.sub".
            let columns = message.components(separatedBy: "failed: ").last ?? ""
            return StorageError(.uniqueViolation, message, constraint: uniqueConstraints[columns])
        case _ where code & 0xff == SQLITE_CONSTRAINT:
            return StorageError(.constraint, message)
        case _ where code & 0xff == SQLITE_BUSY || code & 0xff == SQLITE_LOCKED:
            return StorageError(.busy, "database is busy: \(message)")
        default:
            return StorageError(.io, "SQLite error \(code): \(message)")
        }
    }
}

@available(*, unavailable)
extension SQLiteConnection: Sendable {}

/// A prepared statement, finalized in deinit; reset and cleared after every run so it holds no bound values.
final class SQLiteStatement {
    private let handle: OpaquePointer
    private let connection: OpaquePointer

    init(_ handle: OpaquePointer, connection: OpaquePointer) {
        self.handle = handle
        self.connection = connection
    }

    deinit { sqlite3_finalize(handle) }

    /// Whether the statement leaves the database unchanged (`sqlite3_stmt_readonly`).
    var isReadOnly: Bool { sqlite3_stmt_readonly(handle) != 0 }

    func run(_ arguments: [SQLValue]) throws(StorageError) -> [[SQLValue]] {
        defer {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }
        guard Int(sqlite3_bind_parameter_count(handle)) == arguments.count else {
            throw StorageError(
                .io,
                "statement expects \(sqlite3_bind_parameter_count(handle)) arguments, got \(arguments.count)"
            )
        }
        for (offset, argument) in arguments.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch argument {
            case .null:
                rc = sqlite3_bind_null(handle, index)
            case .integer(let value):
                rc = sqlite3_bind_int64(handle, index, value)
            case .text(let value):
                var copy = value
                rc = copy.withUTF8 { csqlite_bind_text(handle, index, $0.baseAddress, Int32($0.count)) }
            case .blob(let value):
                rc = value.withUnsafeBytes { csqlite_bind_blob(handle, index, $0.baseAddress, Int32($0.count)) }
            }
            guard rc == SQLITE_OK else {
                throw SQLiteConnection.error(
                    code: rc,
                    message: String(cString: sqlite3_errmsg(connection)),
                    handle: connection
                )
            }
        }
        var rows: [[SQLValue]] = []
        let columnCount = sqlite3_column_count(handle)
        while true {
            let rc = sqlite3_step(handle)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else {
                throw SQLiteConnection.error(
                    code: rc,
                    message: String(cString: sqlite3_errmsg(connection)),
                    handle: connection
                )
            }
            var row: [SQLValue] = []
            row.reserveCapacity(Int(columnCount))
            for column in 0..<columnCount {
                row.append(value(at: column))
            }
            rows.append(row)
        }
        return rows
    }

    private func value(at column: Int32) -> SQLValue {
        switch sqlite3_column_type(handle, column) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(handle, column))
        case SQLITE_TEXT:
            // Pointer first, then length (the order SQLite documents), decoded with the explicit length.
            guard let pointer = sqlite3_column_text(handle, column) else { return .text("") }
            let count = Int(sqlite3_column_bytes(handle, column))
            return .text(String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            guard let pointer = sqlite3_column_blob(handle, column) else { return .blob([]) }
            let count = Int(sqlite3_column_bytes(handle, column))
            return .blob(Array(UnsafeRawBufferPointer(start: pointer, count: count)))
        case SQLITE_FLOAT:
            return .integer(Int64(sqlite3_column_double(handle, column)))
        default:
            return .null
        }
    }
}
