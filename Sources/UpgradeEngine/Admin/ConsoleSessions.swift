/// The support console's sign-ins (docs/architecture.md §7.8), kept in the database
/// (`ConsoleSessionStore`) so that every instance on it sees the same sessions and a restart keeps
/// them. A session is server-side state, not a signed cookie, so that signing out ends it at once
/// everywhere: the cookie only names it, and a copied cookie is worth nothing after sign-out, after
/// its lifetime, or after its token left or changed in the token file (checked on every request).
///
/// A row holds the SHA-256 of the session id, never the id, and the token's name and `fingerprint`,
/// never the token; the form token is derived from the id and stored nowhere. Someone who reads the
/// database therefore learns no cookie and no form token, and someone who writes it cannot make a
/// row of their own, or lengthen one: the fingerprint is keyed by what only the token file holds.
public struct ConsoleSessions: Sendable {
    /// One signed-in member of staff.
    public struct Session: Sendable, Equatable {
        /// The admin token signed in with, as the token file lists it now, unchanged since sign-in.
        public let token: AdminToken
        /// The form token every POST of this session must carry (`formToken(id:)`).
        public let csrf: String
        public let expiresAt: Int64
    }

    /// Seconds from sign-in to the end of a session, whatever is done in it: 15 minutes.
    public static let lifetime: Int64 = 900
    /// More live sessions than this are refused a new one (each needs a valid admin token).
    public static let capacity = 10_000
    /// Expired sessions deleted by one sign-in at most, so that its cost stays bounded; as each
    /// sign-in adds one row, expired rows never pile up.
    static let purgeBatch = 100
    /// The length of an id `start` draws (256 bits in base64url): a cookie of another length names
    /// no session, and costs no database read.
    static let idLength = 43

    let store: any UpgradeStore

    public init(store: any UpgradeStore) { self.store = store }

    /// A new session for `token` and its id (256 random bits), ending `replacing` (the session the
    /// browser held, if any) in the same transaction; nil when `capacity` sessions are live. Expired
    /// sessions are deleted first.
    public func start(
        token: AdminToken,
        replacing old: String?,
        now: Int64
    ) throws(ServiceFailure) -> (id: String, session: Session)? {
        let id = SecureRandom.token(byteCount: 32)
        let hash = Self.hash(id)
        let expiresAt = now + Self.lifetime
        let record = ConsoleSessionRecord(
            hash: hash,
            tokenName: token.name,
            tokenFingerprint: Self.fingerprint(token, sessionHash: hash, createdAt: now, expiresAt: expiresAt),
            createdAt: now,
            expiresAt: expiresAt
        )
        let stored = try perform {
            try store.write { tx in
                try tx.deleteExpiredConsoleSessions(now: now, limit: Self.purgeBatch)
                if let old { try tx.deleteConsoleSession(hash: Self.hash(old)) }
                guard try tx.liveConsoleSessionCount(now: now) < Self.capacity else { return false }
                try tx.insertConsoleSession(record)
                return true
            }
        }
        guard stored else { return nil }
        return (id, Session(token: token, csrf: Self.formToken(id: id), expiresAt: record.expiresAt))
    }

    /// The live session `id` names, bound to a token `tokens` still lists unchanged and unexpired;
    /// otherwise nil, and a session whose token went or changed is ended.
    public func session(id: String, tokens: AdminTokenSet?, now: Int64) throws(ServiceFailure) -> Session? {
        guard id.utf8.count == Self.idLength else { return nil }
        let hash = Self.hash(id)
        guard let record = try perform({ try store.read { try $0.consoleSession(hash: hash, now: now) } }) else {
            return nil
        }
        // Names are unique in the token file; the fingerprint covers its scopes, expiry and hash, and
        // the row's own key and times.
        guard let token = tokens?.tokens.first(where: { $0.name == record.tokenName }),
            ConstantTime.equals(
                Self.fingerprint(token, sessionHash: hash, createdAt: record.createdAt, expiresAt: record.expiresAt),
                record.tokenFingerprint
            ),
            !token.isExpired(at: now)
        else {
            try end(id: id)
            return nil
        }
        return Session(token: token, csrf: Self.formToken(id: id), expiresAt: record.expiresAt)
    }

    /// Ends the session `id` names, if any, for every instance at once.
    public func end(id: String) throws(ServiceFailure) {
        let hash = Self.hash(id)
        _ = try perform { try store.write { try $0.deleteConsoleSession(hash: hash) } }
    }

    /// Sessions live at `now`, on every instance.
    public func count(now: Int64) throws(ServiceFailure) -> Int {
        try perform { try store.read { try $0.liveConsoleSessionCount(now: now) } }
    }

    /// The key a session is stored under: the SHA-256 (hex) of its id.
    static func hash(_ id: String) -> String { Digest.sha256(id).hexString }

    /// A session's form token: the HMAC-SHA256 of a fixed label under the session id, in base64url.
    /// Derived rather than stored, so the database holds nothing a form could be forged with; it
    /// tells nothing of the id, nor the id's hash of it.
    static func formToken(id: String) -> String {
        Base64URL.encode(Digest.hmac(.sha256, key: Array(id.utf8), message: Array("console form token".utf8)))
    }

    /// What a session remembers of its admin token: the HMAC-SHA256, keyed by the token's stored hash
    /// (which only the token file holds), of everything the token file says of it (name, scopes,
    /// creation time, expiry) and of the row it is stored in (the session id's hash, its start and
    /// end), in hex. Any change to the entry, or another token under its name, ends the session; a
    /// row copied under another session hash, or given a later end, fails the comparison, so writing
    /// to the database makes no session. The key is itself a SHA-256 of 256 random bits, so the
    /// fingerprint leads nobody to the token.
    static func fingerprint(_ token: AdminToken, sessionHash: String, createdAt: Int64, expiresAt: Int64) -> String {
        let entry = [
            "console session", token.name, token.scopes.map(\.rawValue).joined(separator: ","),
            "\(token.createdAt)", token.expiresAt.map { "\($0)" } ?? "-", sessionHash, "\(createdAt)", "\(expiresAt)",
        ]
        return Digest.hmac(.sha256, key: token.hash, message: Array(entry.joined(separator: "\n").utf8)).hexString
    }

    private func perform<T>(_ work: () throws -> T) throws(ServiceFailure) -> T {
        do {
            return try work()
        } catch {
            throw UpgradeService.storageFailure(error)
        }
    }
}
