/// What an admin bearer token may do. Each admin route names the one scope it needs.
public enum AdminScope: String, Sendable, Hashable, CaseIterable, Comparable {
    /// Mint upgrade tickets for in-app upgrades (`POST /v1/upgrade-tickets`).
    case tickets
    /// Read and delete accounts.
    case accounts
    /// Search the audit trail.
    case audit
    /// Create and update accounts (`PUT /v1/admin/accounts/{username}`, `POST /v1/admin/accounts/batch`).
    case provisioning
    /// Scrape `GET /metrics` on the API listener: its counters tell which usernames exist and what
    /// their stored hashes cost, so strangers may not read them (docs/architecture.md §10.3).
    case metrics

    public static func < (lhs: AdminScope, rhs: AdminScope) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// A comma list such as `tickets,accounts`: at least one scope, each known, none twice.
    public static func parseList(_ text: String) throws(AdminTokenError) -> [AdminScope] {
        var scopes: [AdminScope] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let scope = AdminScope(rawValue: String(part)) else {
                throw AdminTokenError(
                    .invalidScopes,
                    "unknown scope '\(part)'; scopes are a comma list of \(allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            guard !scopes.contains(scope) else {
                throw AdminTokenError(.invalidScopes, "scope '\(part)' given twice")
            }
            scopes.append(scope)
        }
        return scopes.sorted()
    }
}

/// One admin token as stored: its name, scopes, creation time, optional expiry and the SHA-256 of
/// the token. The token itself is shown once when it is made and kept nowhere.
public struct AdminToken: Sendable, Hashable {
    public let name: String
    /// Sorted, without duplicates.
    public let scopes: [AdminScope]
    public let createdAt: Int64
    /// Unix seconds from which the token is refused as a wrong one would be; nil: never.
    public let expiresAt: Int64?
    /// SHA-256 of the token's UTF-8 bytes.
    let hash: [UInt8]

    init(name: String, scopes: [AdminScope], createdAt: Int64, expiresAt: Int64? = nil, hash: [UInt8]) {
        self.name = name
        self.scopes = scopes
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.hash = hash
    }

    public func allows(_ scope: AdminScope) -> Bool { scopes.contains(scope) }

    public func isExpired(at now: Int64) -> Bool { expiresAt.map { now >= $0 } ?? false }

    /// What every token starts with, so a leaked one is recognisable (secret scanners, logs).
    public static let prefix = "siwa_admin_"
    /// Longer presented values are refused before hashing.
    public static let maxPresentedBytes = 256

    /// A new token: the prefix and 256 random bits in base64url.
    public static func generate() -> String { prefix + SecureRandom.token(byteCount: 32) }

    /// A token's stored hash. SHA-256 without salt or stretching is enough here, and deliberate: the
    /// token holds 256 random bits, so nobody can search the input space from a stolen hash, and
    /// a slow password hash would only make every admin request cost CPU. (A password, with little
    /// entropy, needs argon2id instead.)
    static func hash(of token: String) -> [UInt8] { Digest.sha256(token) }

    /// 1 to 64 ASCII letters, digits, `.`, `_` and `-`, starting with a letter or digit.
    public static func isValidName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...64).contains(bytes.count), isAlphanumeric(bytes[0]) else { return false }
        return bytes.allSatisfy { isAlphanumeric($0) || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D }
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }
}

/// The tokens `serve` accepts (`UPGRADE_ADMIN_TOKENS_FILE`), read at start-up and on each reload.
public struct AdminTokenSet: Sendable {
    public let tokens: [AdminToken]

    public init(_ tokens: [AdminToken]) { self.tokens = tokens }

    /// What a presented token turned out to be.
    public enum Verdict: Sendable, Equatable {
        case valid(AdminToken)
        /// A listed token past its expiry: refused exactly as an unknown one, named only in the log.
        case expired(name: String)
        case unknown
    }

    /// The token `presented` is, or nil; an expired one is nil too.
    public func authenticate(_ presented: String, now: Int64) -> AdminToken? {
        if case .valid(let token) = verdict(presented, now: now) { return token }
        return nil
    }

    /// Which token `presented` is, at `now`. Every stored hash is compared in constant time and the
    /// loop never stops early, so the time taken says nothing about which token, or how much of
    /// one, matched.
    public func verdict(_ presented: String, now: Int64) -> Verdict {
        guard presented.utf8.count <= AdminToken.maxPresentedBytes else { return .unknown }
        let hash = AdminToken.hash(of: presented)
        var found: AdminToken?
        for token in tokens where ConstantTime.equals(token.hash, hash) {
            found = token
        }
        guard let found else { return .unknown }
        return found.isExpired(at: now) ? .expired(name: found.name) : .valid(found)
    }
}

/// Why an admin token file or command was refused: one line, never containing a token or a hash.
public struct AdminTokenError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        public static let notFound = Code("notFound")
        public static let notReadable = Code("notReadable")
        public static let notRegularFile = Code("notRegularFile")
        public static let permissionsTooOpen = Code("permissionsTooOpen")
        public static let malformed = Code("malformed")
        public static let invalidName = Code("invalidName")
        public static let invalidScopes = Code("invalidScopes")
        public static let duplicateName = Code("duplicateName")
        public static let unknownName = Code("unknownName")
        public static let invalidExpiry = Code("invalidExpiry")
        public static let ioFailed = Code("ioFailed")

        public var description: String { name }
    }

    public let code: Code
    public let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
