/// What `accounts import` stores besides accounts and credentials: each account's profile (the
/// fields an import brings, which import line wrote it last, and what the device forwarded from
/// Apple where the import gave nothing) and each import's progress.
public protocol AccountImportStore {
    /// Stores every field of the profile (the account id names it), replacing any earlier one.
    func upsertAccountProfile(_ profile: AccountProfileRecord) throws(StorageError)
    /// `upsertAccountProfile` for each in order, in a few statements; no two name one account.
    func upsertAccountProfiles(_ profiles: [AccountProfileRecord]) throws(StorageError)
    func accountProfile(accountID: String) throws(StorageError) -> AccountProfileRecord?
    /// Deletes the account's recovery codes, used or not, before an import replaces them.
    func deleteRecoveryCodes(accountID: String) throws(StorageError)
    /// What a batch of imported or provisioned rows is decided against, for each of `accountIDs`: its
    /// Apple link, password, TOTP enrollment, recovery code hashes and profile, read in five
    /// statements whatever the number of accounts (docs/architecture.md §7.5). Every id given has an
    /// entry; one with nothing stored (or no account) has an empty state.
    func storedStates(accountIDs: [String]) throws(StorageError) -> [String: StoredAccountState]
    /// Stores every field of the run (the id names it), replacing any earlier state.
    func upsertImportRun(_ run: ImportRunRecord) throws(StorageError)
    func importRun(id: String) throws(StorageError) -> ImportRunRecord?
    /// The `limit` most recently started runs, newest first: what the support console lists.
    func importRuns(limit: Int) throws(StorageError) -> [ImportRunRecord]
}

/// An account's credentials, link and profile as stored: `AccountImportStore.storedStates(accountIDs:)`.
public struct StoredAccountState: Sendable, Equatable {
    public var appleLink: AppleLinkRecord?
    public var password: PasswordCredentialRecord?
    public var totp: TOTPEnrollmentRecord?
    /// The hashes of its recovery codes, used or not, in no particular order.
    public var recoveryCodeHashes: [String] = []
    public var profile: AccountProfileRecord?

    public init() {}
}

/// An account's contact details: what an import brought, or what the device forwarded from Apple's
/// first authorization where the account had none (`DeviceGivenProfile`). Personal data: deleted
/// with the account (docs/architecture.md §7.1).
public struct AccountProfileRecord: Sendable, Equatable {
    public var accountID: String
    public var email: String?
    public var displayName: String?
    /// The import (`ImportRunRecord.id`) that wrote the account last, and the input line it came from.
    public var importRun: String?
    public var importLine: Int64?
    public var updatedAt: Int64
    /// Where `email` and `displayName` came from; nil exactly when the value is.
    public var emailSource: ProfileSource?
    public var displayNameSource: ProfileSource?
    /// The name's parts as the device forwarded them (always `ProfileSource.device`).
    public var fullName: PersonName?
    /// The identity token's `real_user_status`, from the first token that carried one.
    public var realUserStatus: AppleRealUserStatus?

    public init(
        accountID: String,
        email: String?,
        displayName: String?,
        importRun: String?,
        importLine: Int64?,
        updatedAt: Int64,
        emailSource: ProfileSource? = nil,
        displayNameSource: ProfileSource? = nil,
        fullName: PersonName? = nil,
        realUserStatus: AppleRealUserStatus? = nil
    ) {
        self.accountID = accountID
        self.email = email
        self.displayName = displayName
        self.importRun = importRun
        self.importLine = importLine
        self.updatedAt = updatedAt
        self.emailSource = emailSource
        self.displayNameSource = displayNameSource
        self.fullName = fullName
        self.realUserStatus = realUserStatus
    }
}

/// One import's progress: the last input line a committed batch covered, and the counts so far.
public struct ImportRunRecord: Sendable, Equatable {
    public var id: String
    /// What was imported, for people: the file name (or `-`) and the format.
    public var source: String
    public var lastLine: Int64
    public var created: Int64
    public var updated: Int64
    public var skipped: Int64
    public var failed: Int64
    public var startedAt: Int64
    public var updatedAt: Int64
    /// Set by the transaction that committed the input's last row.
    public var finishedAt: Int64?

    public init(
        id: String,
        source: String,
        lastLine: Int64,
        created: Int64 = 0,
        updated: Int64 = 0,
        skipped: Int64 = 0,
        failed: Int64 = 0,
        startedAt: Int64,
        updatedAt: Int64,
        finishedAt: Int64? = nil
    ) {
        self.id = id
        self.source = source
        self.lastLine = lastLine
        self.created = created
        self.updated = updated
        self.skipped = skipped
        self.failed = failed
        self.startedAt = startedAt
        self.updatedAt = updatedAt
        self.finishedAt = finishedAt
    }
}
