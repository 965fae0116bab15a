/// Accounts and their credentials inside a transaction: the account, its password, its second
/// factor (TOTP and recovery codes), and the throttle on failed password attempts.
public protocol AccountStore {
    /// Stores the account exactly as given; a username already taken fails with `.uniqueViolation`
    /// on `.accountsUsername`. Callers use `insertAccount`, which puts the username in its enforced
    /// form first: what a username is belongs to the engine, not to a backend.
    func insertAccountRow(_ account: AccountRecord) throws(StorageError)
    /// `insertAccountRow` for each account in order, in a few statements (an import's batch).
    func insertAccountRows(_ accounts: [AccountRecord]) throws(StorageError)
    func account(id: String) throws(StorageError) -> AccountRecord?
    /// The account stored under exactly this username.
    func account(username: Username) throws(StorageError) -> AccountRecord?
    /// The accounts stored under exactly these usernames, in no particular order, in one query; a
    /// username no account has is left out.
    func accounts(usernames: [Username]) throws(StorageError) -> [AccountRecord]
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
    /// `upsertPasswordCredential` for each in order, in a few statements; no two name one account.
    func upsertPasswordCredentials(_ credentials: [PasswordCredentialRecord]) throws(StorageError)
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

    /// Deletes the account and, by the schema's cascades, everything of it: password, TOTP, recovery
    /// codes, upgrade sessions and tickets, password changes, transfer record, Apple link, profile.
    /// Rows that outlive it (audit trail, webhook outbox, the username's throttle row) are left to the
    /// caller (`AccountDeletionService` erases what names the person in them). Returns whether the
    /// account existed.
    func deleteAccount(id: String) throws(StorageError) -> Bool
}

/// The rows a password check reads (`AccountStore.passwordCheckSnapshot`).
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

extension AccountStore {
    /// Stores the account under `Username(account.username).value`; a username the profile refuses
    /// fails with `.constraint`, one already taken with `.uniqueViolation` on `.accountsUsername`.
    public func insertAccount(_ account: AccountRecord) throws(StorageError) {
        var enforced = account
        do {
            enforced.username = try Username(account.username).value
        } catch {
            throw StorageError(.constraint, "accounts.username is not a valid username (\(error.code))")
        }
        try insertAccountRow(enforced)
    }

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

extension Username {
    /// Usernames as a JSON array of strings: the one parameter of a query that takes a list
    /// (`accounts(usernames:)`), so its text is the same whatever the list's length.
    static func jsonArray(_ usernames: [Username]) -> String {
        JWSJSON.array(usernames.map { .string($0.value) }).serializedString
    }
}
