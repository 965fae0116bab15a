/// What one applied password-change event did. When ``stateChanged`` the driver persists the new
/// state and one audit row (statuses, event name, problem: nothing secret) in one transaction with
/// the ``effects``; otherwise it persists nothing.
public struct PasswordChangeTransition: Sendable, Hashable {
    public let from: PasswordChangeStatus
    public let to: PasswordChangeStatus
    /// ``PasswordChangeEvent/name`` of the applied event.
    public let event: String
    public let effects: [PasswordChangeEffect]
    /// The problem this call reports, or `nil` for a 2xx answer.
    public let problem: PasswordChangeFailureReason?
    /// False for a refused new password: the state is exactly as before and nothing is stored.
    public let stateChanged: Bool

    public init(
        from: PasswordChangeStatus,
        to: PasswordChangeStatus,
        event: String,
        effects: [PasswordChangeEffect],
        problem: PasswordChangeFailureReason?,
        stateChanged: Bool
    ) {
        self.from = from
        self.to = to
        self.event = event
        self.effects = effects
        self.problem = problem
        self.stateChanged = stateChanged
    }

    /// One line for the audit trail, e.g. `started -> completed on passwordEvaluated`.
    public var auditSummary: String {
        let line = "\(from.rawValue) -> \(to.rawValue) on \(event)"
        guard let problem else { return line }
        return line + " (\(problem.rawValue))"
    }
}
