/// The engine's storage, designed for two backends (SQLite embedded, PostgreSQL for many stateless
/// instances). Nothing here assumes SQLite: transactions are closures that either commit as a whole or
/// roll back, optimistic concurrency is expressed by `expectedVersion` arguments, and uniqueness
/// failures surface as `StorageError.uniqueViolation` with the typed constraint that refused them.
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

/// What a transaction can do. Updates that take `expectedVersion` fail with `.versionConflict` when the
/// row changed since it was read; the row's version then increases by one.
public protocol StoreTransaction {
    // Accounts and credentials
    /// Stores the account under `Username(account.username).value`; a username the profile refuses
    /// fails with `.constraint`, one already taken with `.uniqueViolation` on `.accountsUsername`.
    func insertAccount(_ account: AccountRecord) throws(StorageError)
    func account(id: String) throws(StorageError) -> AccountRecord?
    /// The account stored under exactly this username.
    func account(username: Username) throws(StorageError) -> AccountRecord?
    /// Accounts in id order after `afterID`, for checks that read them all a page at a time.
    func accounts(afterID: String?, limit: Int) throws(StorageError) -> [AccountRecord]
    /// Re-keys an account whose stored username predates the username profile.
    func updateAccountUsername(id: String, username: Username, expectedVersion: Int64, now: Int64) throws(StorageError)
    func updateAccountCredentialKind(
        id: String,
        kind: CredentialKind,
        expectedVersion: Int64,
        now: Int64
    ) throws(StorageError)
    func upsertPasswordCredential(_ credential: PasswordCredentialRecord) throws(StorageError)
    func passwordCredential(accountID: String) throws(StorageError) -> PasswordCredentialRecord?
    /// Returns whether a row was deleted.
    @discardableResult
    func deletePasswordCredential(accountID: String) throws(StorageError) -> Bool

    // Second factor
    func upsertTOTPEnrollment(_ enrollment: TOTPEnrollmentRecord) throws(StorageError)
    func totpEnrollment(accountID: String) throws(StorageError) -> TOTPEnrollmentRecord?
    /// Records an accepted step only if it is newer than the stored one; returns false if another request
    /// already accepted this step or a later one (so a code can never be used twice, even concurrently).
    func advanceTOTPStep(accountID: String, step: Int64) throws(StorageError) -> Bool
    func insertRecoveryCodes(accountID: String, codeHashes: [String]) throws(StorageError)
    /// Marks an unused code as used; returns false if it does not exist or was already used.
    func consumeRecoveryCode(accountID: String, codeHash: String, now: Int64) throws(StorageError) -> Bool
    func unusedRecoveryCodeCount(accountID: String) throws(StorageError) -> Int

    /// What a password check needs, read at once: the username's failures (keyed by `username.value`),
    /// its account, that account's password and whether it has a second factor.
    func passwordCheckSnapshot(username: Username) throws(StorageError) -> PasswordCheckSnapshot

    // Throttling
    func throttle(usernameKey: String) throws(StorageError) -> ThrottleRecord?
    func recordFailure(usernameKey: String, now: Int64) throws(StorageError) -> ThrottleRecord
    func clearFailures(usernameKey: String) throws(StorageError)

    // Apple links
    func insertAppleLink(_ link: AppleLinkRecord) throws(StorageError)
    func appleLink(accountID: String) throws(StorageError) -> AppleLinkRecord?
    func appleLink(sub: String) throws(StorageError) -> AppleLinkRecord?
    /// Stores every field of the link (the account id names it). A `sub` another link has fails
    /// with `.uniqueViolation` on `.appleLinksSub`.
    func updateAppleLink(_ link: AppleLinkRecord, expectedVersion: Int64) throws(StorageError)

    // Upgrade sessions
    func insertUpgradeSession(_ session: UpgradeSessionRecord) throws(StorageError)
    func upgradeSession(id: String) throws(StorageError) -> UpgradeSessionRecord?
    /// Stores what a transition changes: status, machine, state and nonce hashes, linked `sub`, expiry,
    /// update time. The id, account, username key, service identifier and creation time are fixed
    /// when the upgrade is inserted and are left as they are.
    func updateUpgradeSession(_ session: UpgradeSessionRecord, expectedVersion: Int64) throws(StorageError)
    /// The account's upgrades in an open state or `converting`, oldest first, at most `limit`.
    func openUpgradeSessions(accountID: String, limit: Int) throws(StorageError) -> [UpgradeSessionRecord]
    /// Upgrades in `converting` whose claim ends at or before `time`, earliest first, at most `limit`.
    func conversions(expiringBy time: Int64, limit: Int) throws(StorageError) -> [UpgradeSessionRecord]

    // Team transfer
    /// Inserts the record (`expectedVersion` nil) or updates it. `oldSub`, the Apple id the account
    /// had when its transfer began, is fixed by the insert; an update leaves it as it is. Either
    /// fails with `.versionConflict` when the record changed, or was created, since it was read.
    func upsertTransferRecord(_ record: TransferRecord, expectedVersion: Int64?) throws(StorageError)
    func transferRecord(accountID: String) throws(StorageError) -> TransferRecord?
    func transferRecord(transferSub: String) throws(StorageError) -> TransferRecord?
    /// The record of the account that had the Apple id `oldSub` when its transfer began (the sender
    /// team's id), for the credential state of an id that was transferred away.
    func transferRecord(oldSub: String) throws(StorageError) -> TransferRecord?
    /// Counts for `transfer status`.
    func transferProgress() throws(StorageError) -> TransferProgress
    func transferRecords(status: String?, limit: Int) throws(StorageError) -> [TransferRecord]
    func linkedAccountIDs(afterAccountID: String?, limit: Int) throws(StorageError) -> [String]

    // Apple notifications
    /// Records a processed notification; returns false if its `jti` was already recorded.
    func recordNotification(jti: String, type: String, now: Int64) throws(StorageError) -> Bool
    func notificationSeen(jti: String) throws(StorageError) -> Bool

    // Sign-in nonces
    /// Records a sign-in nonce as used until `expiresAt`, first forgetting those expired by `now`;
    /// returns false if it was already used.
    func useSignInNonce(hash: String, expiresAt: Int64, now: Int64) throws(StorageError) -> Bool

    // Audit
    func appendAudit(_ event: AuditEvent) throws(StorageError)
    func auditTrail(accountID: String, limit: Int) throws(StorageError) -> [AuditEvent]
    func auditTrail(upgradeID: String, limit: Int) throws(StorageError) -> [AuditEvent]
}

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

/// The rows a password check reads (`StoreTransaction.passwordCheckSnapshot`).
public struct PasswordCheckSnapshot: Sendable, Equatable {
    public var throttle: ThrottleRecord?
    public var account: AccountRecord?
    public var credential: PasswordCredentialRecord?
    public var hasSecondFactor: Bool

    public init(
        throttle: ThrottleRecord? = nil,
        account: AccountRecord? = nil,
        credential: PasswordCredentialRecord? = nil,
        hasSecondFactor: Bool = false
    ) {
        self.throttle = throttle
        self.account = account
        self.credential = credential
        self.hasSecondFactor = hasSecondFactor
    }
}

extension StoreTransaction {
    /// The snapshot from the single-row reads; a backend may read it in one statement instead.
    public func passwordCheckSnapshot(username: Username) throws(StorageError) -> PasswordCheckSnapshot {
        var snapshot = PasswordCheckSnapshot(throttle: try throttle(usernameKey: username.value))
        snapshot.account = try account(username: username)
        if let account = snapshot.account {
            snapshot.credential = try passwordCredential(accountID: account.id)
            snapshot.hasSecondFactor = try totpEnrollment(accountID: account.id) != nil
        }
        return snapshot
    }
}
