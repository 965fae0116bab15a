/// What support staff may see of one account, read in one snapshot: `upgrade-cli accounts show`
/// and `GET /v1/admin/accounts/{username}` both print this. It holds facts about credentials, never
/// the credentials: no password hash, TOTP secret, recovery code hash or refresh token reaches it.
public struct AccountOverview: Sendable, Equatable {
    public struct Password: Sendable, Equatable {
        /// The hash format (`argon2id`, `bcrypt`, ...), not the hash.
        public var format: String
    }

    public struct TOTP: Sendable, Equatable {
        public var algorithm: DigestAlgorithm
        public var digits: Int
    }

    public struct AppleLink: Sendable, Equatable {
        public var status: AppleLinkStatus
        public var sub: String
        public var teamID: String
        public var clientID: String
        public var email: String?
        public var isPrivateEmail: Bool?
        /// Whether a (sealed) refresh token is stored; the token itself stays in the database.
        public var hasRefreshToken: Bool
        public var linkedAt: Int64
        /// What `GET /v1/apple/credential-state` answers for `sub`; nil when a stored transfer
        /// cannot be read.
        public var credentialState: AppleCredentialState?
    }

    public struct Transfer: Sendable, Equatable {
        public var status: String
        public var targetTeamID: String
        public var failureReason: String?
        /// For an earlier transfer: when a later one retired its record (docs/apple-protocol.md
        /// §3.2, "A later transfer"); nil for the account's current transfer.
        public var retiredAt: Int64?
    }

    public struct OpenUpgrade: Sendable, Equatable {
        public var id: String
        public var status: String
        public var expiresAt: Int64
    }

    public var account: AccountRecord
    /// The contact email and display name (`account_profiles`): an import's, or what the device
    /// forwarded from Apple's first authorization where the import gave none; nil when neither did.
    public var email: String?
    public var displayName: String?
    /// Where each came from; nil exactly when the value is.
    public var emailSource: ProfileSource?
    public var displayNameSource: ProfileSource?
    /// The name's parts as the device forwarded them.
    public var fullName: PersonName?
    /// The identity token's `real_user_status`, when a token carried one.
    public var realUserStatus: AppleRealUserStatus?
    public var password: Password?
    public var totp: TOTP?
    public var recoveryCodesLeft: Int
    public var apple: AppleLink?
    public var transfer: Transfer?
    /// The transfers before the current one that moved the account (A -> B before B -> C), oldest first.
    public var earlierTransfers: [Transfer]
    /// Upgrades that are not over yet, oldest first.
    public var openUpgrades: [OpenUpgrade]
    /// The account's latest audit events, newest first.
    public var lastEvents: [AuditEvent]

    /// At most this many open upgrades are listed (an account has one or two at a time).
    public static let openUpgradeLimit = 20

    /// The overview of the account named `username`, nil when none has that name; `events` caps
    /// `lastEvents`. Reads only, so it may run in a read transaction.
    public static func read(
        username: Username,
        events: Int,
        in tx: any StoreTransaction
    ) throws(StorageError) -> AccountOverview? {
        guard let account = try tx.account(username: username) else { return nil }
        let link = try tx.appleLink(accountID: account.id)
        let transfer = try tx.transferRecord(accountID: account.id)
        let profile = try tx.accountProfile(accountID: account.id)
        return AccountOverview(
            account: account,
            email: profile?.email,
            displayName: profile?.displayName,
            emailSource: profile?.emailSource,
            displayNameSource: profile?.displayNameSource,
            fullName: profile?.fullName,
            realUserStatus: profile?.realUserStatus,
            password: try tx.passwordCredential(accountID: account.id).map { Password(format: $0.format) },
            totp: try tx.totpEnrollment(accountID: account.id).map { TOTP(algorithm: $0.algorithm, digits: $0.digits) },
            recoveryCodesLeft: try tx.unusedRecoveryCodeCount(accountID: account.id),
            apple: link.map { link in
                AppleLink(
                    status: link.status,
                    sub: link.sub,
                    teamID: link.teamID,
                    clientID: link.clientID,
                    email: link.email,
                    isPrivateEmail: link.isPrivateEmail,
                    hasRefreshToken: link.refreshTokenCiphertext != nil,
                    linkedAt: link.linkedAt,
                    credentialState: try? TransferService.credentialState(
                        userID: link.sub,
                        link: link,
                        transfer: transfer
                    )
                )
            },
            transfer: transfer.map {
                Transfer(status: $0.status, targetTeamID: $0.targetTeamID, failureReason: $0.failureReason)
            },
            earlierTransfers: try tx.retiredTransferRecords(accountID: account.id).map {
                Transfer(
                    status: $0.record.status,
                    targetTeamID: $0.record.targetTeamID,
                    failureReason: $0.record.failureReason,
                    retiredAt: $0.retiredAt
                )
            },
            openUpgrades: try tx.openUpgradeSessions(accountID: account.id, limit: openUpgradeLimit).map {
                OpenUpgrade(id: $0.id, status: $0.status, expiresAt: $0.expiresAt)
            },
            lastEvents: try tx.auditEvents(AuditSearch(accountID: account.id, limit: events))
        )
    }
}
