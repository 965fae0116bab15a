/// What one applied event did. The driver performs ``effects``, then, when ``stateChanged``,
/// persists the machine's new state and one audit entry (``from``, ``to``, ``event``,
/// ``problem``: none of them secret) in one transaction, guarded by the record's version.
public struct UpgradeTransition: Sendable, Hashable {
    public let from: UpgradeStatus
    public let to: UpgradeStatus
    /// ``UpgradeEvent/name`` of the applied event.
    public let event: String
    /// In the order they are to be performed.
    public let effects: [UpgradeEffect]
    /// The problem this call reports, or `nil` for a 2xx answer. Usually the new state's
    /// ``UpgradeState/problem``; a wrong code with attempts left reports ``UpgradeFailureReason/invalidCode``
    /// while the state stays `stepUpRequired`.
    public let problem: UpgradeFailureReason?
    /// The event repeats the call that finished the upgrade (the same credential on `completed`,
    /// another cancel on `cancelled`). Nothing changed: answer from the current state exactly as the
    /// first time, and persist and audit nothing.
    public let isReplay: Bool

    public init(
        from: UpgradeStatus,
        to: UpgradeStatus,
        event: String,
        effects: [UpgradeEffect],
        problem: UpgradeFailureReason?,
        isReplay: Bool
    ) {
        self.from = from
        self.to = to
        self.event = event
        self.effects = effects
        self.problem = problem
        self.isReplay = isReplay
    }

    /// Whether there is anything to persist. Every transition that is not a replay changes the
    /// state (a wrong code changes the attempt count even though the status stays the same).
    public var stateChanged: Bool { !isReplay }

    /// One line for the audit trail, e.g. `stepUpRequired -> failed on stepUpEvaluated (too-many-attempts)`.
    public var auditSummary: String {
        let line = "\(from.rawValue) -> \(to.rawValue) on \(event)"
        guard let problem else { return isReplay ? line + " (replay)" : line }
        return line + " (\(problem.rawValue))"
    }
}
