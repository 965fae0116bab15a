/// Accounts and their credentials inside a transaction: the account, its password, its second
/// factor (TOTP and recovery codes), and the throttle on failed password attempts.
public protocol AccountStore {
    /// Stores each account exactly as given, in order, in a few statements, with `usernameSkeletons[i]`
    /// as the `i`th account's confusable skeleton, not shared (`docs/usernames.md`). A username already
    /// taken fails with `.uniqueViolation` on `.accountsUsername`, a skeleton another unshared account
    /// has with `.accountsUsernameSkeleton`. Callers use `insertAccount`, which puts the username in
    /// its enforced form and refuses look-alikes first, or `insertAccountRows(_:)`, which computes
    /// the skeletons: what a username is belongs to the engine, not to a backend.
    func insertAccountRows(_ accounts: [AccountRecord], usernameSkeletons: [String]) throws(StorageError)
    func account(id: String) throws(StorageError) -> AccountRecord?
    /// The account stored under exactly this username.
    func account(username: Username) throws(StorageError) -> AccountRecord?
    /// The accounts stored under exactly these usernames, in no particular order, in one query; a
    /// username no account has is left out.
    func accounts(usernames: [Username]) throws(StorageError) -> [AccountRecord]
    /// Accounts in id order after `afterID`, for checks that read them all a page at a time.
    func accounts(afterID: String?, limit: Int) throws(StorageError) -> [AccountRecord]
    /// The accounts whose stored username skeleton is one of these, in no particular order, in one
    /// query (shared or not).
    func accounts(usernameSkeletons: [String]) throws(StorageError) -> [AccountRecord]
    /// Every account whose stored skeleton another account also has, ordered by skeleton, then id.
    func accountsSharingUsernameSkeleton() throws(StorageError) -> [(skeleton: String, account: AccountRecord)]
    /// Stores these skeletons, each for the account with that id, and marks those accounts shared
    /// (out of the unique rule) until `settleSharedUsernameSkeletons` runs. Only computing every
    /// skeleton again (`UsernameSkeletons.refreshIfStale`) uses it.
    func setUsernameSkeletons(_ skeletons: [(accountID: String, skeleton: String)]) throws(StorageError)
    /// Leaves shared exactly the accounts whose skeleton another account also has.
    func settleSharedUsernameSkeletons() throws(StorageError)
    /// The ICU release (`SpoofChecker.dataVersion`) that computed the stored skeletons; nil before
    /// migration 18 filled them.
    func usernameSkeletonSource() throws(StorageError) -> String?
    func setUsernameSkeletonSource(_ version: String) throws(StorageError)
    /// Re-keys an account whose stored username predates the username profile. Only migration 7 does,
    /// before skeletons exist: the stored skeleton is left as it is.
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
    /// The account with its password and its profile, read at once: what claiming and converting an
    /// upgrade check again inside their writes. Nil when no account has this id.
    func accountSnapshot(id: String) throws(StorageError) -> AccountSnapshot?
    /// Accounts whose password only the legacy login system can check (`PasswordCredentialRecord.legacyFormat`).
    func legacyPasswordCount() throws(StorageError) -> Int
    /// Deletes the account's password, if it has one. A write that returns nothing: PostgreSQL sends
    /// it with the transaction's next statement that answers (`UpgradeStore`).
    func deletePasswordCredential(accountID: String) throws(StorageError)

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
    /// fails with `.constraint`, one already taken with `.uniqueViolation` on `.accountsUsername`, one
    /// that looks like another account's (`lookAlikeAccounts`) with `.uniqueViolation` on
    /// `.accountsUsernameSkeleton`. The look-alike read and the insert are one transaction's: under
    /// SQLite's one writer and PostgreSQL's SERIALIZABLE nothing comes between them, and the unique
    /// index on unshared skeletons refuses a concurrent twin at any isolation level.
    public func insertAccount(_ account: AccountRecord) throws(StorageError) {
        var enforced = account
        let username: Username
        do {
            username = try Username(account.username)
        } catch {
            throw StorageError(.constraint, "accounts.username is not a valid username (\(error.code))")
        }
        enforced.username = username.value
        try UsernameSkeletons.requireCurrent(self)
        let sameSkeleton = try accounts(usernameSkeletons: [username.skeleton])
        // The same name has the same skeleton: that is the older, plainer refusal.
        if sameSkeleton.contains(where: { username.isStored(as: $0.username) }) {
            throw StorageError(
                .uniqueViolation,
                "accounts.username: another account has this username",
                constraint: .accountsUsername
            )
        }
        guard sameSkeleton.isEmpty else {
            throw StorageError(
                .uniqueViolation,
                "accounts.username_skeleton: the username looks like another account's (UTS #39 confusable skeleton)",
                constraint: .accountsUsernameSkeleton
            )
        }
        try insertAccountRows([enforced], usernameSkeletons: [username.skeleton])
    }

    /// Stores the account exactly as given, with its username's skeleton, without the profile or
    /// the look-alike read (the schema's unique indexes still apply).
    public func insertAccountRow(_ account: AccountRecord) throws(StorageError) {
        try insertAccountRows([account])
    }

    /// `insertAccountRows(_:usernameSkeletons:)` with each stored username's skeleton: an import's
    /// batch, whose rows `AccountImporter` has already compared with the stored skeletons.
    public func insertAccountRows(_ accounts: [AccountRecord]) throws(StorageError) {
        try insertAccountRows(accounts, usernameSkeletons: accounts.map { Username.skeleton(ofStored: $0.username) })
    }

    /// The stored accounts whose usernames look like `username`: the same confusable skeleton
    /// (UTS #39), other than the one stored under exactly `username`. Refuses to answer from
    /// skeletons an ICU release other than this binary's computed (`UsernameSkeletons`).
    public func lookAlikeAccounts(of username: Username) throws(StorageError) -> [AccountRecord] {
        try UsernameSkeletons.requireCurrent(self)
        return try accounts(usernameSkeletons: [username.skeleton]).filter { !username.isStored(as: $0.username) }
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
        JSONValue.array(usernames.map { .string($0.value) }).serializedString
    }
}
