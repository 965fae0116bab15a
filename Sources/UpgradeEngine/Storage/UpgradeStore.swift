/// The engine's storage: SQLite embedded (`SQLiteStore`), PostgreSQL (`PostgresStore`) for many
/// stateless instances on one database. The engine reaches a database only through these protocols, so a backend is a type
/// that conforms to `UpgradeStore` and a transaction type that conforms to `StoreTransaction`, one
/// aggregate at a time (`AccountStore`, `UpgradeSessionStore`, `AppleLinkStore`, `TransferStore`,
/// `NotificationStore`, `AuditStore`, `JobLeaseStore`, `ClientThrottleStore`, `UpgradeTicketStore`,
/// `PasswordChangeStore`, `AppleRevocationStore`, `AccountImportStore`, `WebhookOutboxStore`, `HashParameterStore`,
/// `SealedValueStore`, `AppleLinkCheckStore`, `AdminTokenUseStore`, `ReportStore`, `ConsoleSessionStore`, `ServeInstanceStore`). Nothing above these protocols knows SQL or a
/// backend's codes.
///
/// What every backend guarantees:
/// - **Transactions.** `write` commits everything `body` wrote if it returns and nothing if it
///   throws, and rethrows the first error unchanged. The engine never catches a storage error inside
///   a transaction to carry on, so a backend may abort the transaction at its first failed statement
///   (PostgreSQL does). A write that returns nothing may report its failure from a later call of
///   the same transaction, or from `write` itself: PostgreSQL sends such writes with the next
///   statement that answers, or with the COMMIT, and a failed one keeps the transaction from
///   committing anything. So a caller handles storage errors around `write`, never around one call
///   inside it. `read` sees one consistent snapshot of committed data and refuses writes.
/// - **Retries.** A backend may run `body` more than once: PostgreSQL rolls back a transaction that
///   lost a serialization conflict or a deadlock and runs the closure again; only the last run
///   commits. A closure therefore does database work only, plus what is safe to repeat (drawing
///   random values, sealing, building records). It never calls out (Apple, another service) and
///   never leaves an effect outside the transaction that a rolled-back run would leave behind.
/// - **Concurrency.** Write transactions are serialisable: each behaves as if it ran alone, so a
///   decision made from what it read still holds when it commits. SQLite gets this by serialising
///   writers; PostgreSQL by SERIALIZABLE isolation and the retries above (docs/architecture.md §8.4).
///   Beyond that, each method is atomic by itself (a conditional write such as `advanceTOTPStep`,
///   `consumeRecoveryCode`, `useSignInNonce`, `consumeUpgradeTicket` or `recordNotification` returns true to one of two
///   concurrent callers at most), and the version guards and unique constraints below hold.
/// - **Version guards.** An insert stores the record's `version` as given. An update that takes
///   `expectedVersion` changes the row only if its stored version is that one, in the same statement
///   that sets it one higher; otherwise, or if the row is missing, it changes nothing and throws
///   `.versionConflict`.
/// - **Typed errors.** Every method throws `StorageError` only: `.versionConflict` as above;
///   `.uniqueViolation` with `constraint` set to the `StorageError.Constraint` the write broke (the
///   backend maps its own constraint names to these once); `.constraint` for any other rule of the
///   schema (CHECK, foreign key, NOT NULL, the append-only audit trail); `.busy` when a lock, a
///   connection or a conflict-free run was not had in time (the caller may retry); `.unavailable`
///   when the database server cannot be reached or the connection broke (the caller may retry once
///   it is back); `.io` for the rest. Messages name tables, columns, constraints and the backend's
///   codes, never a bound value: values may be secrets.
/// - **Values.** Text is stored and compared byte for byte, with no case folding, collation or
///   Unicode normalisation: usernames arrive in their enforced form (`Username`) and the engine
///   alone decides what is equal. Orders by id are byte orders. Integers are 64-bit; blobs come back
///   exactly as stored. What a column holds (a state machine's JSON, the audit detail's JSON) is the
///   engine's format, kept as the text it is given.
/// - **Migrations.** Numbered, each applied once, in order, in a transaction, with its checksum
///   recorded; a database with a migration the binary does not know, or an applied one that was
///   edited, is refused. Two processes migrating one database at once both succeed: one applies,
///   the other waits for it and finds nothing left to do.
public protocol UpgradeStore: Sendable {
    /// Applies pending schema migrations in order; returns the ones applied now.
    func migrate(now: Int64) throws(StorageError) -> [MigrationStatus]
    /// Every known migration and whether (and when) it was applied.
    func migrationStatus() throws(StorageError) -> [MigrationStatus]
    /// Runs `body` in a read-write transaction that commits if it returns and rolls back if it throws.
    /// The first error thrown is rethrown unchanged. `body` may run more than once (a transaction
    /// rolled back by a conflict runs again; only the last run commits), so it does database work
    /// only and never calls out.
    func write<T>(_ body: (any StoreTransaction) throws -> T) throws -> T
    /// Runs `body` against a consistent snapshot; writes are refused.
    func read<T>(_ body: (any StoreTransaction) throws -> T) throws -> T
    /// Cheap liveness probe for readiness checks.
    func ping() throws(StorageError)
}

/// What a transaction can do: every aggregate's reads and writes. Each aggregate is its own
/// protocol, in its own file, so a backend implements (and a reader finds) one at a time.
public protocol StoreTransaction:
    AccountStore, UpgradeSessionStore, AppleLinkStore, TransferStore, NotificationStore, AuditStore,
    JobLeaseStore, ClientThrottleStore, UpgradeTicketStore, PasswordChangeStore, AppleRevocationStore,
    AccountImportStore, WebhookOutboxStore, HashParameterStore, SealedValueStore, AppleLinkCheckStore,
    AdminTokenUseStore, ReportStore, ConsoleSessionStore, ServeInstanceStore
{}

/// A schema migration known to the binary and, once applied, recorded in the database.
public struct MigrationStatus: Sendable, Equatable {
    public var version: Int
    public var name: String
    public var checksum: String
    public var appliedAt: Int64?

    public init(version: Int, name: String, checksum: String, appliedAt: Int64?) {
        self.version = version
        self.name = name
        self.checksum = checksum
        self.appliedAt = appliedAt
    }
}

extension UpgradeStore {
    /// `write` for callers that throw only `StorageError` (the outbox and revocation senders): an
    /// error the body throws that is not one is reported as an I/O failure naming its type.
    func writeStorageErrors<T>(_ body: (any StoreTransaction) throws -> T) throws(StorageError) -> T {
        try Self.storageErrors { try write(body) }
    }

    /// `read`, with errors as `writeStorageErrors` reports them.
    func readStorageErrors<T>(_ body: (any StoreTransaction) throws -> T) throws(StorageError) -> T {
        try Self.storageErrors { try read(body) }
    }

    private static func storageErrors<T>(_ work: () throws -> T) throws(StorageError) -> T {
        do {
            return try work()
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.io, "\(type(of: error))")
        }
    }
}
