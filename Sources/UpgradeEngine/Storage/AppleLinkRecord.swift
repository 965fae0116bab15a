public enum AppleLinkStatus: String, Sendable, Codable {
    case linked
    case revoked
    case deleted
    case transferred
}

public struct AppleLinkRecord: Sendable, Equatable {
    public var accountID: String
    public var sub: String
    public var teamID: String
    public var clientID: String
    public var email: String?
    public var isPrivateEmail: Bool?
    /// The refresh token sealed with the server's secret key; nil once revoked.
    public var refreshTokenCiphertext: [UInt8]?
    public var status: AppleLinkStatus
    /// Whether Apple forwards mail from the private relay address, as the last `email-enabled` /
    /// `email-disabled` notification said; nil until one arrives.
    public var emailForwardingEnabled: Bool?
    /// The `event_time` of that notification, so an older redelivered event cannot undo a newer one.
    public var emailForwardingAt: Int64?
    public var linkedAt: Int64
    public var updatedAt: Int64
    public var version: Int64

    public init(
        accountID: String,
        sub: String,
        teamID: String,
        clientID: String,
        email: String?,
        isPrivateEmail: Bool?,
        refreshTokenCiphertext: [UInt8]?,
        status: AppleLinkStatus,
        emailForwardingEnabled: Bool? = nil,
        emailForwardingAt: Int64? = nil,
        linkedAt: Int64,
        updatedAt: Int64,
        version: Int64 = 1
    ) {
        self.accountID = accountID
        self.sub = sub
        self.teamID = teamID
        self.clientID = clientID
        self.email = email
        self.isPrivateEmail = isPrivateEmail
        self.refreshTokenCiphertext = refreshTokenCiphertext
        self.status = status
        self.emailForwardingEnabled = emailForwardingEnabled
        self.emailForwardingAt = emailForwardingAt
        self.linkedAt = linkedAt
        self.updatedAt = updatedAt
        self.version = version
    }
}
