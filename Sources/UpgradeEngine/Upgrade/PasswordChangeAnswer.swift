/// A successful (2xx) answer to a password-change call: `{id, status, result}`, with `expiresAt`
/// while a step-up is open and `attemptsRemaining` after a wrong code.
public struct PasswordChangeAnswer: Sendable, Equatable {
    public var id: String
    public var status: PasswordChangeStatus
    public var result: UpgradeResult
    public var expiresAt: Int64?
    public var attemptsRemaining: Int?

    public init(
        id: String,
        status: PasswordChangeStatus,
        result: UpgradeResult,
        expiresAt: Int64? = nil,
        attemptsRemaining: Int? = nil
    ) {
        self.id = id
        self.status = status
        self.result = result
        self.expiresAt = expiresAt
        self.attemptsRemaining = attemptsRemaining
    }
}
