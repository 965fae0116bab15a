/// The support console's sessions, shared by every server on the database (docs/architecture.md
/// §7.8). A session is found by the SHA-256 of its id; what the console checks it against (the token
/// file, the form token) is `ConsoleSessions`'s, the store only keeps the rows.
public protocol ConsoleSessionStore {
    func insertConsoleSession(_ session: ConsoleSessionRecord) throws(StorageError)
    /// The session keyed `hash` if it is live at `now`; an expired one is absent.
    func consoleSession(hash: String, now: Int64) throws(StorageError) -> ConsoleSessionRecord?
    /// Deletes the session keyed `hash`; returns whether there was one.
    @discardableResult
    func deleteConsoleSession(hash: String) throws(StorageError) -> Bool
    /// Deletes at most `limit` sessions expired at `now`, the oldest first; returns how many.
    @discardableResult
    func deleteExpiredConsoleSessions(now: Int64, limit: Int) throws(StorageError) -> Int
    /// Sessions live at `now`.
    func liveConsoleSessionCount(now: Int64) throws(StorageError) -> Int
}

/// One signed-in member of staff, as stored: neither the session id nor the admin token, only their
/// fingerprints.
public struct ConsoleSessionRecord: Sendable, Hashable {
    /// The SHA-256 (hex) of the session id.
    public var hash: String
    public var tokenName: String
    /// `ConsoleSessions.fingerprint` of the admin token signed in with.
    public var tokenFingerprint: String
    public var createdAt: Int64
    public var expiresAt: Int64

    public init(hash: String, tokenName: String, tokenFingerprint: String, createdAt: Int64, expiresAt: Int64) {
        self.hash = hash
        self.tokenName = tokenName
        self.tokenFingerprint = tokenFingerprint
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}
