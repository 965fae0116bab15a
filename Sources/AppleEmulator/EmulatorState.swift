import UpgradeEngine

/// Everything the emulator remembers, guarded by one lock in `AppleIDEmulator`.
///
/// Secrets that callers present back (authorization codes, refresh and access tokens) are
/// stored under their SHA-256, so the tables never hold a usable secret and a lookup never
/// compares secrets byte by byte.
struct EmulatorState: Sendable {
    struct Team: Sendable {
        /// Registered Sign in with Apple keys (the `.p8` public halves), by key id.
        var keys: [String: P256PublicKey] = [:]
    }

    struct Transfer: Sendable {
        var fromTeam: String
        var toTeam: String
        var completedAt: Int64
    }

    struct App: Sendable {
        var teamID: String
        /// A Services ID grouped with a primary App ID; grouped apps share consent and move together.
        var primaryAppID: String?
        /// The most recent transfer between teams.
        var transfer: Transfer?
    }

    struct Consent: Sendable {
        var emailMode: AppleEmailMode
        var revoked: Bool
    }

    struct User: Sendable {
        var email: String
        var fullName: String?
        var realUserStatus: Int
        var deleted = false
        /// Team-scoped `sub`s, created on first need and stable afterwards.
        var subs: [String: String] = [:]
        /// Private relay addresses, one per team.
        var relayEmails: [String: String] = [:]
        /// Consent per app group (primary App ID).
        var consents: [String: Consent] = [:]
        /// Teams whose relay address the user stopped forwarding.
        var forwardingDisabled: Set<String> = []
    }

    struct Code: Sendable {
        var clientID: String
        var userID: String
        var teamID: String
        var nonce: String?
        var redirectURI: String?
        var issuedAt: Int64
        var authTime: Int64
        var used = false
    }

    struct RefreshGrant: Sendable {
        var clientID: String
        var userID: String
        var teamID: String
        var authTime: Int64
        var revoked = false
    }

    struct AccessGrant: Sendable {
        var clientID: String
        var teamID: String
        /// nil for a team token (`client_credentials`).
        var userID: String?
        var expiresAt: Int64
        /// Per-user tokens are single-use at `/auth/usermigrationinfo` (DTS, docs/apple-protocol.md §2.3).
        var consumed = false
        var revoked = false
    }

    struct TransferKey: Hashable, Sendable {
        var userID: String
        var fromTeam: String
        var toTeam: String
    }

    struct SigningKey: Sendable {
        var keyID: String
        var key: RSAPrivateKey
    }

    var teams: [String: Team] = [:]
    var apps: [String: App] = [:]
    var users: [String: User] = [:]
    /// sub → (user, team), to resolve ids that clients present.
    var subjects: [String: (userID: String, teamID: String)] = [:]
    /// Published RS256 keys, oldest first; the last one signs.
    var signingKeys: [SigningKey] = []
    var codes: [String: Code] = [:]
    var refreshTokens: [String: RefreshGrant] = [:]
    var accessTokens: [String: AccessGrant] = [:]
    var transferIDs: [TransferKey: String] = [:]
    var transfers: [String: TransferKey] = [:]
    var outbox: [AppleServerNotification] = []
    /// `/auth/revoke` calls answered 200, by the SHA-256 of the token presented: what a test asks to
    /// see that a token was revoked, and how often.
    var revocations: [String: Revocation] = [:]
    /// `grant_type=refresh_token` requests whose client secret was accepted, by the user the
    /// presented token was issued to, answered 200 or `invalid_grant` alike: what a test asks to
    /// see how often, and when (the emulator's clock), a refresh token was checked.
    var refreshChecks: [String: [Int64]] = [:]
    /// HTTP statuses the next requests to an endpoint answer instead of being handled, in order.
    var faults: [String: [Int]] = [:]

    struct Revocation: Sendable {
        var clientID: String
        var userID: String?
        var tokenType: String
        var count: Int
    }

    static func secretKey(_ secret: String) -> String {
        Digest.sha256(secret).hexString
    }

    /// The consent group of a client id: its primary App ID, or itself.
    func group(of clientID: String) -> String {
        apps[clientID]?.primaryAppID ?? clientID
    }
}
