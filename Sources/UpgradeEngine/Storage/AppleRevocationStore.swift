/// The queue of Apple refresh tokens to revoke (`apple_revocations`), inside a transaction. A row is
/// inserted by the transaction that deletes its account and stays until `/auth/revoke` succeeded
/// for it; a sender takes rows by claiming them, so two senders never hold one row at once.
public protocol AppleRevocationStore {
    func insertAppleRevocation(_ revocation: AppleRevocationRecord) throws(StorageError)
    func appleRevocation(id: String) throws(StorageError) -> AppleRevocationRecord?
    /// Claims up to `limit` rows that are not done, due by `now` (`nextAttemptAt <= now`) and not
    /// claimed (or whose claim lapsed by `now`), oldest due first, in one conditional write: sets
    /// their claim to `token` until `claimedUntil` and returns them so. Of two concurrent callers,
    /// each row goes to one at most.
    func claimDueAppleRevocations(
        now: Int64,
        token: String,
        claimedUntil: Int64,
        limit: Int
    ) throws(StorageError) -> [AppleRevocationRecord]
    /// Claims one row as above whether or not it is due (a deletion's first attempt, the CLI's own
    /// retries); nil if it is done, claimed by someone else, or unknown.
    func claimAppleRevocation(
        id: String,
        now: Int64,
        token: String,
        claimedUntil: Int64
    ) throws(StorageError) -> AppleRevocationRecord?
    /// Marks the row done at `now` (counting the attempt), empties its ciphertext, ends any claim
    /// and keeps `note` (why it counts as done, if not a plain 200). False if it was already done.
    func finishAppleRevocation(id: String, now: Int64, note: String?) throws(StorageError) -> Bool
    /// Counts a failed attempt, ends the claim and schedules the next attempt, if `token` still
    /// holds the row and it is not done; false otherwise (changes nothing).
    func deferAppleRevocation(
        id: String,
        token: String,
        nextAttemptAt: Int64,
        error: String
    ) throws(StorageError) -> Bool
    /// Rows not done yet, due or not.
    func pendingAppleRevocationCount() throws(StorageError) -> Int
    /// Up to `limit` rows not done yet, soonest due first: what the support console lists.
    func pendingAppleRevocations(limit: Int) throws(StorageError) -> [AppleRevocationRecord]
}

/// A row of `apple_revocations`. No personal data: the deleted account's id (the sealed token's
/// context), the token still sealed, the client id it was issued to, and the sending state.
public struct AppleRevocationRecord: Sendable, Equatable {
    public var id: String
    public var accountID: String
    /// The refresh token sealed with the server's secret key (context: the account id); empty once done.
    public var tokenCiphertext: [UInt8]
    public var clientID: String
    public var createdAt: Int64
    public var attempts: Int64
    public var nextAttemptAt: Int64
    public var claimToken: String?
    public var claimedUntil: Int64?
    public var doneAt: Int64?
    /// A short reason from the last attempt (an HTTP status, Apple's error code), never a token.
    public var lastError: String?

    public init(
        id: String,
        accountID: String,
        tokenCiphertext: [UInt8],
        clientID: String,
        createdAt: Int64,
        attempts: Int64 = 0,
        nextAttemptAt: Int64,
        claimToken: String? = nil,
        claimedUntil: Int64? = nil,
        doneAt: Int64? = nil,
        lastError: String? = nil
    ) {
        self.id = id
        self.accountID = accountID
        self.tokenCiphertext = tokenCiphertext
        self.clientID = clientID
        self.createdAt = createdAt
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.claimToken = claimToken
        self.claimedUntil = claimedUntil
        self.doneAt = doneAt
        self.lastError = lastError
    }

    static let columns =
        "id, account_id, token_ciphertext, client_id, created_at, attempts, next_attempt_at, claim_token, claimed_until, done_at, last_error"

    init(row: [SQLValue]) {
        self.init(
            id: row[0].string ?? "",
            accountID: row[1].string ?? "",
            tokenCiphertext: row[2].bytes ?? [],
            clientID: row[3].string ?? "",
            createdAt: row[4].int ?? 0,
            attempts: row[5].int ?? 0,
            nextAttemptAt: row[6].int ?? 0,
            claimToken: row[7].string,
            claimedUntil: row[8].int,
            doneAt: row[9].int,
            lastError: row[10].string
        )
    }

    var insertArguments: [SQLValue] {
        [
            .text(id), .text(accountID), .blob(tokenCiphertext), .text(clientID), .integer(createdAt),
            .integer(attempts), .integer(nextAttemptAt), SQLValue(claimToken), SQLValue(claimedUntil),
            SQLValue(doneAt), SQLValue(lastError),
        ]
    }
}
