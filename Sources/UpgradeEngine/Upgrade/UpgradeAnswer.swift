/// A successful (2xx) answer to an upgrade call: `{id, status, result, expiresAt}` plus `state` and
/// `nonce` once the account may go on to Apple, and `accountId` once converted.
public struct UpgradeAnswer: Sendable, Equatable {
    public var id: String
    public var status: UpgradeStatus
    public var result: UpgradeResult
    /// The exact strings the client passes to Apple's request; only in the answer that issues them.
    public var state: String?
    public var nonce: String?
    public var expiresAt: Int64?
    public var accountID: String?
    public var attemptsRemaining: Int?

    public init(
        id: String,
        status: UpgradeStatus,
        result: UpgradeResult,
        state: String? = nil,
        nonce: String? = nil,
        expiresAt: Int64? = nil,
        accountID: String? = nil,
        attemptsRemaining: Int? = nil
    ) {
        self.id = id
        self.status = status
        self.result = result
        self.state = state
        self.nonce = nonce
        self.expiresAt = expiresAt
        self.accountID = accountID
        self.attemptsRemaining = attemptsRemaining
    }
}

/// `GET /v1/upgrades/{id}`: status and transition history, no secrets.
public struct UpgradeView: Sendable, Equatable {
    public struct Transition: Sendable, Equatable {
        public var at: Int64
        public var event: String
        public var from: String?
        public var to: String?
        /// The transition's problem, when the audit row recorded one this version knows.
        public var problem: UpgradeFailureReason?
    }

    public var id: String
    public var status: UpgradeStatus
    public var result: UpgradeResult?
    /// How a failed or expired upgrade ended.
    public var problem: UpgradeFailureReason?
    public var expiresAt: Int64?
    public var createdAt: Int64
    public var history: [Transition]
}
