/// The daily check of Apple links' refresh tokens (`apple_links.check_*`), inside a transaction.
/// Only a link that is `linked` and has a stored refresh token takes part; the others are never
/// scheduled, claimed or counted. A checker takes a due link by claiming it, so of several checkers
/// on one database only one checks it (docs/architecture.md, "The Apple link check").
public protocol AppleLinkCheckStore {
    /// Up to `limit` account ids of links that take part and have no check scheduled yet.
    func unscheduledAppleLinkChecks(limit: Int) throws(StorageError) -> [String]
    /// Schedules the first check of a link that has none; false if it already has one.
    func scheduleAppleLinkCheck(accountID: String, dueAt: Int64) throws(StorageError) -> Bool
    /// Claims up to `limit` links due by `now` (oldest due first) in one conditional write: sets
    /// their claim to `token` and their due time to `claimedUntil`, so another checker takes them
    /// only once the claim runs out. Of two concurrent callers, each link goes to one at most.
    func claimDueAppleLinkChecks(
        now: Int64,
        token: String,
        claimedUntil: Int64,
        limit: Int
    ) throws(StorageError) -> [AppleLinkCheck]
    /// Records a check Apple answered as valid at `checkedAt`: the next is due at `nextDueAt`, the
    /// failures are forgotten and the claim ends. False (nothing changed) if `token` no longer
    /// holds the link.
    func finishAppleLinkCheck(
        accountID: String,
        token: String,
        checkedAt: Int64,
        nextDueAt: Int64
    ) throws(StorageError) -> Bool
    /// Counts a failed check, keeps `error` and ends the claim; the next is due at `nextDueAt`.
    /// False (nothing changed) if `token` no longer holds the link.
    func deferAppleLinkCheck(
        accountID: String,
        token: String,
        nextDueAt: Int64,
        error: String
    ) throws(StorageError) -> Bool
    /// Ends the claim without counting a check (a checker that paused before reaching the link):
    /// the link is due at `dueAt`. False (nothing changed) if `token` no longer holds the link.
    func releaseAppleLinkCheck(accountID: String, token: String, dueAt: Int64) throws(StorageError) -> Bool
    /// The earliest due time among links due by `now` (nil if none is), for the metrics.
    func oldestDueAppleLinkCheck(now: Int64) throws(StorageError) -> Int64?
    /// A link's check state, nil for an unknown account.
    func appleLinkCheck(accountID: String) throws(StorageError) -> AppleLinkCheck?
}

/// One link's check state as a checker sees it. The refresh token stays sealed here (context: the
/// account id, `UpgradeService.refreshTokenContext`).
public struct AppleLinkCheck: Sendable, Equatable {
    public var accountID: String
    public var clientID: String
    public var refreshTokenCiphertext: [UInt8]?
    public var status: AppleLinkStatus
    public var dueAt: Int64?
    public var claimToken: String?
    /// The last check Apple answered as valid.
    public var checkedAt: Int64?
    /// Failed checks since the last valid one.
    public var failures: Int64
    /// A short reason for the last failure, never a token.
    public var lastError: String?

    public init(
        accountID: String,
        clientID: String,
        refreshTokenCiphertext: [UInt8]?,
        status: AppleLinkStatus,
        dueAt: Int64?,
        claimToken: String? = nil,
        checkedAt: Int64? = nil,
        failures: Int64 = 0,
        lastError: String? = nil
    ) {
        self.accountID = accountID
        self.clientID = clientID
        self.refreshTokenCiphertext = refreshTokenCiphertext
        self.status = status
        self.dueAt = dueAt
        self.claimToken = claimToken
        self.checkedAt = checkedAt
        self.failures = failures
        self.lastError = lastError
    }

    static let columns =
        "account_id, client_id, refresh_token_ciphertext, status, check_due_at, check_claim_token, checked_at, check_failures, check_error"

    init(row: [SQLValue]) {
        self.init(
            accountID: row[0].string ?? "",
            clientID: row[1].string ?? "",
            refreshTokenCiphertext: row[2].bytes,
            status: AppleLinkStatus(rawValue: row[3].string ?? "") ?? .revoked,
            dueAt: row[4].int,
            claimToken: row[5].string,
            checkedAt: row[6].int,
            failures: row[7].int ?? 0,
            lastError: row[8].string
        )
    }
}
