/// The engine's storage: SQLite embedded (`SQLiteStore`), PostgreSQL next for many stateless
/// instances. The engine reaches a database only through these protocols, so a backend is a type
/// that conforms to `UpgradeStore` and a transaction type that conforms to `StoreTransaction`, one
/// aggregate at a time (`AccountStore`, `UpgradeSessionStore`, `AppleLinkStore`, `TransferStore`,
/// `NotificationStore`, `AuditStore`). Nothing above these protocols knows SQL or a backend's codes.
///
/// What every backend guarantees:
/// - **Transactions.** `write` commits everything `body` wrote if it returns and nothing if it
///   throws, and rethrows the first error unchanged. The engine never catches a storage error inside
///   a transaction to carry on, so a backend may abort the transaction at its first failed statement
///   (PostgreSQL does). `read` sees one consistent snapshot of committed data and refuses writes.
/// - **Concurrency.** The engine relies on three things only, never on a row it read staying as it
///   was until commit: each method is atomic by itself (a conditional write such as
///   `advanceTOTPStep`, `consumeRecoveryCode`, `useSignInNonce` or `recordNotification` returns true
///   to one of two concurrent callers at most), the version guards below, and the unique constraints.
///   SQLite gets this by serialising writers; READ COMMITTED with single-statement conditional
///   writes and unique indexes is enough elsewhere.
/// - **Version guards.** An insert stores the record's `version` as given. An update that takes
///   `expectedVersion` changes the row only if its stored version is that one, in the same statement
///   that sets it one higher; otherwise, or if the row is missing, it changes nothing and throws
///   `.versionConflict`.
/// - **Typed errors.** Every method throws `StorageError` only: `.versionConflict` as above;
///   `.uniqueViolation` with `constraint` set to the `StorageError.Constraint` the write broke (the
///   backend maps its own constraint names to these once); `.constraint` for any other rule of the
///   schema (CHECK, foreign key, NOT NULL, the append-only audit trail); `.busy` when a lock was not
///   granted in time (the caller may retry); `.io` for the rest. Messages name tables, columns,
///   constraints and the backend's codes, never a bound value: values may be secrets.
/// - **Values.** Text is stored and compared byte for byte, with no case folding, collation or
///   Unicode normalisation: usernames arrive in their enforced form (`Username`) and the engine
///   alone decides what is equal. Orders by id are byte orders. Integers are 64-bit; blobs come back
///   exactly as stored. What a column holds (a state machine's JSON, the audit detail's JSON) is the
///   engine's format, kept as the text it is given.
/// - **Migrations.** Numbered, each applied once, in order, in a transaction, with its checksum
///   recorded; a database with a migration the binary does not know, or an applied one that was
///   edited, is refused.
public protocol UpgradeStore: Sendable {
    /// Applies pending schema migrations in order; returns the ones applied now.
    func migrate(now: Int64) throws(StorageError) -> [MigrationStatus]
    /// Every known migration and whether (and when) it was applied.
    func migrationStatus() throws(StorageError) -> [MigrationStatus]
    /// Runs `body` in a read-write transaction that commits if it returns and rolls back if it throws.
    /// The first error thrown is rethrown unchanged.
    func write<T>(_ body: (any StoreTransaction) throws -> T) throws -> T
    /// Runs `body` against a consistent snapshot; writes are refused.
    func read<T>(_ body: (any StoreTransaction) throws -> T) throws -> T
    /// Cheap liveness probe for readiness checks.
    func ping() throws(StorageError)
}

/// What a transaction can do: every aggregate's reads and writes. Each aggregate is its own
/// protocol, in its own file, so a backend implements (and a reader finds) one at a time.
public protocol StoreTransaction:
    AccountStore, UpgradeSessionStore, AppleLinkStore, TransferStore, NotificationStore, AuditStore
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
