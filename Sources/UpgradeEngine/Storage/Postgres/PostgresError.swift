/// A PostgreSQL failure: what libpq or the server reported, with the server's SQLSTATE.
///
/// Messages are built from the SQLSTATE, the server's primary message and the schema names the
/// server reports (table, constraint, column): never from a bound value, and never with the
/// password. The server's DETAIL, which quotes the offending key, is not read at all, and the
/// primary message is left out for data exceptions (class 22), whose text can quote the value.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case connectFailed, server, connectionLost, poolExhausted, misuse, versionConflict
        }
        private let base: Base
        public var description: String { base.rawValue }

        /// A connection could not be opened (unreachable host, refused login, missing database).
        public static let connectFailed = Kind(base: .connectFailed)
        /// The server refused a statement; `sqlstate` says why.
        public static let server = Kind(base: .server)
        /// The connection broke during a statement; the connection is unusable and its open
        /// transaction is gone (if COMMIT was in flight, whether it took effect is unknown).
        public static let connectionLost = Kind(base: .connectionLost)
        /// Every pooled connection stayed in use for the whole checkout wait.
        public static let poolExhausted = Kind(base: .poolExhausted)
        /// The client refused a call before sending it (a value PostgreSQL cannot store, a wrong
        /// argument count, a transaction in the wrong state).
        public static let misuse = Kind(base: .misuse)
        /// A versioned update found its row missing or at another version: another request won.
        public static let versionConflict = Kind(base: .versionConflict)
    }

    public let kind: Kind
    /// The five-character SQLSTATE from the server, nil when the failure is the client's or the network's.
    public let sqlstate: String?
    public let message: String
    /// The constraint the server named (`PG_DIAG_CONSTRAINT_NAME`), e.g. `apple_links_sub_key`.
    public let constraint: String?
    /// The table the server named (`PG_DIAG_TABLE_NAME`).
    public let table: String?

    public init(
        _ kind: Kind,
        _ message: String,
        sqlstate: String? = nil,
        constraint: String? = nil,
        table: String? = nil
    ) {
        self.kind = kind
        self.message = message
        self.sqlstate = sqlstate
        self.constraint = constraint
        self.table = table
    }

    /// SQLSTATE codes the storage layer tells apart (PostgreSQL documentation, Appendix A).
    public enum SQLState {
        public static let uniqueViolation = "23505"
        public static let serializationFailure = "40001"
        public static let deadlockDetected = "40P01"
        public static let lockNotAvailable = "55P03"
        public static let queryCanceled = "57014"
        public static let readOnlySQLTransaction = "25006"
        public static let inFailedSQLTransaction = "25P02"
        public static let invalidSQLStatementName = "26000"
        public static let tooManyConnections = "53300"
        public static let invalidPassword = "28P01"
        public static let invalidAuthorizationSpecification = "28000"
        public static let invalidCatalogName = "3D000"
        public static let divisionByZero = "22012"
        /// The server is shutting down (`pg_ctl stop`) or its backend was terminated.
        public static let adminShutdown = "57P01"
        public static let crashShutdown = "57P02"
        /// The server is starting up or in recovery and takes no connections yet.
        public static let cannotConnectNow = "57P03"
    }

    /// A serialization failure or a deadlock: PostgreSQL rolled the transaction back, and running
    /// the whole transaction again (from its BEGIN) may succeed.
    public var isRetryable: Bool {
        sqlstate == SQLState.serializationFailure || sqlstate == SQLState.deadlockDetected
    }

    /// Whether the connection that reported this is gone and must be discarded.
    public var isConnectionLost: Bool { kind == .connectionLost }

    /// The server's errors lead with their SQLSTATE; the client's own messages say what they are about.
    public var description: String {
        guard kind == .server else { return message }
        return "PostgreSQL error \(sqlstate ?? "(no SQLSTATE)"): \(message)"
    }

    /// The same failure as the storage protocol's typed error (docs/architecture.md §8.1):
    /// unique violations keep the constraint, as `table.column` when the constraint follows
    /// PostgreSQL's default naming (`<table>_<column>_key`); serialization failures, deadlocks,
    /// lock and statement timeouts and an exhausted pool are `busy`; a failed connect, a lost
    /// connection and the server shutting down or starting up are `unavailable`; a refused login or
    /// a missing database reported by a statement is `configuration`; anything else is `io`.
    public var storageError: StorageError {
        let text = description
        switch kind {
        case .poolExhausted: return StorageError(.busy, text)
        case .versionConflict: return StorageError(.versionConflict, text)
        case .connectFailed, .connectionLost: return StorageError(.unavailable, text)
        case .server: break
        default: return StorageError(.io, text)
        }
        guard let sqlstate else { return StorageError(.io, text) }
        switch sqlstate {
        case _ where sqlstate.hasPrefix("08"), SQLState.adminShutdown, SQLState.crashShutdown,
            SQLState.cannotConnectNow:
            return StorageError(.unavailable, text)
        case SQLState.uniqueViolation:
            return StorageError(.uniqueViolation, text, constraint: typedConstraint)
        case _ where sqlstate.hasPrefix("23"):
            return StorageError(.constraint, text)
        case SQLState.serializationFailure, SQLState.deadlockDetected, SQLState.lockNotAvailable,
            SQLState.queryCanceled, SQLState.tooManyConnections:
            return StorageError(.busy, text)
        case SQLState.invalidPassword, SQLState.invalidAuthorizationSpecification, SQLState.invalidCatalogName:
            return StorageError(.configuration, text)
        default:
            return StorageError(.io, text)
        }
    }

    /// The storage protocol's name for the constraint PostgreSQL reported: `apple_links_sub_key` on
    /// table `apple_links` is `apple_links.sub` (PostgreSQL's default name for a UNIQUE constraint),
    /// and `<table>_pkey` the table's primary key. Nil for a constraint the schema does not have.
    var typedConstraint: StorageError.Constraint? {
        guard let constraint, let table else { return nil }
        if constraint == table + "_pkey" { return Self.primaryKeys[table] }
        guard constraint.hasPrefix(table + "_"), constraint.hasSuffix("_key") else { return nil }
        let columns = constraint.dropFirst(table.count + 1).dropLast("_key".count)
        return columns.isEmpty ? nil : StorageError.Constraint(described: "\(table).\(columns)")
    }

    static let primaryKeys: [String: StorageError.Constraint] = [
        "accounts": .accountsID, "password_credentials": .passwordCredentialsAccount,
        "totp_enrollments": .totpEnrollmentsAccount, "recovery_codes": .recoveryCodesCode,
        "login_throttle": .loginThrottleUsernameKey, "apple_links": .appleLinksAccount,
        "upgrade_sessions": .upgradeSessionsID, "transfer_records": .transferRecordsAccount,
        "audit_events": .auditEventsID, "apple_notifications": .appleNotificationsJTI,
        "used_sign_in_nonces": .usedSignInNoncesHash, "job_leases": .jobLeasesJob,
        "client_throttle": .clientThrottleClientKey,
        "upgrade_tickets": .upgradeTicketsHash, "password_changes": .passwordChangesID,
        "apple_revocations": .appleRevocationsID,
        "account_profiles": .accountProfilesAccount, "import_runs": .importRunsID,
        "webhook_outbox": .webhookOutboxID, "username_skeleton_source": .usernameSkeletonSourceID,
        "hash_parameter_sets": .hashParameterSetsID, "admin_token_uses": .adminTokenUsesToken,
        "console_sessions": .consoleSessionsHash, "key_checks": .keyChecksKeyID,
        "retired_transfer_records": .retiredTransferRecordsID, "serve_instances": .serveInstancesID,
    ]
}
