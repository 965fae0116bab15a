/// Team-transfer progress for one Apple-linked account. Holds the sender-side `sub` (never exported)
/// and the recipient-scoped `transferSub`.
public struct TransferRecord: Sendable, Equatable {
    public var accountID: String
    public var status: String
    public var machine: String
    public var oldSub: String
    public var transferSub: String?
    public var newSub: String?
    public var targetTeamID: String
    public var failureReason: String?
    public var attempts: Int
    public var windowEndsAt: Int64?
    public var updatedAt: Int64
    public var version: Int64

    public init(
        accountID: String,
        status: String,
        machine: String,
        oldSub: String,
        transferSub: String?,
        newSub: String?,
        targetTeamID: String,
        failureReason: String?,
        attempts: Int,
        windowEndsAt: Int64?,
        updatedAt: Int64,
        version: Int64 = 1
    ) {
        self.accountID = accountID
        self.status = status
        self.machine = machine
        self.oldSub = oldSub
        self.transferSub = transferSub
        self.newSub = newSub
        self.targetTeamID = targetTeamID
        self.failureReason = failureReason
        self.attempts = attempts
        self.windowEndsAt = windowEndsAt
        self.updatedAt = updatedAt
        self.version = version
    }
}
