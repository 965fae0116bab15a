import Foundation

/// How an account signs in. `appleOnly` accounts have no password row.
public enum CredentialKind: String, Sendable, Codable {
    case password
    case appleOnly
}

public struct AccountRecord: Sendable, Equatable {
    public var id: String
    public var username: String
    public var credentialKind: CredentialKind
    public var createdAt: Int64
    public var updatedAt: Int64
    public var version: Int64

    public init(
        id: String,
        username: String,
        credentialKind: CredentialKind,
        createdAt: Int64,
        updatedAt: Int64,
        version: Int64 = 1
    ) {
        self.id = id
        self.username = username
        self.credentialKind = credentialKind
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.version = version
    }

    /// Usernames are matched case-insensitively after trimming, so `Alice` and `alice ` are one account
    /// and one throttling key.
    public static func normalize(username: String) -> String {
        // The common case, a name that starts and ends with a visible ASCII character, needs no
        // trimming; anything else is trimmed by Foundation's Unicode-aware rules.
        if let first = username.utf8.first, let last = username.utf8.last, (0x21...0x7e).contains(first),
            (0x21...0x7e).contains(last)
        {
            return username.lowercased()
        }
        return username.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
    }
}
