public struct PasswordCredentialRecord: Sendable, Equatable {
    public var accountID: String
    /// The stored hash string (a secret-equivalent: never logged or returned).
    public var hash: String
    /// The format family, e.g. `bcrypt`, kept for reporting without parsing the hash.
    public var format: String
    public var updatedAt: Int64

    /// The format of an account whose password only the legacy login system can check (imported or
    /// provisioned with `legacyPassword`): its hash is empty until the first match stores one
    /// (docs/legacy-verification.md).
    public static let legacyFormat = "legacy"

    /// Whether the legacy login system checks this password (`legacyFormat`).
    public var isLegacy: Bool { format == Self.legacyFormat }

    public init(accountID: String, hash: String, format: String, updatedAt: Int64) {
        self.accountID = accountID
        self.hash = hash
        self.format = format
        self.updatedAt = updatedAt
    }
}
