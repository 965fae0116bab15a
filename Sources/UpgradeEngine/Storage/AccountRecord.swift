import Foundation

/// How an account signs in. `appleOnly` accounts have no password row.
public enum CredentialKind: String, Sendable, Codable {
    case password
    case appleOnly
}

public struct AccountRecord: Sendable, Equatable {
    public var id: String
    /// The username as stored: `Username.value` for every account created since usernames follow
    /// the PRECIS profile; an older row may still hold its earlier form until `db migrate` re-keys it.
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
}
