/// What one applied transfer event did. When ``stateChanged``, the driver persists the machine's
/// new state and an audit entry in one transaction guarded by the record's version.
public struct TransferTransition: Sendable, Hashable {
    public let from: TransferStatus
    public let to: TransferStatus
    /// ``TransferEvent/name`` of the applied event.
    public let event: String
    /// In the order they are to be performed.
    public let effects: [TransferEffect]
    /// Whether anything needs persisting. `false` for a replay and for a `begin…` event that only
    /// hands out the call to make.
    public let stateChanged: Bool
    /// The event repeats an outcome already recorded (a re-run batch, a sign-in during the window,
    /// a redelivered notification). Nothing changed; report the row as already done.
    public let isReplay: Bool

    public init(
        from: TransferStatus,
        to: TransferStatus,
        event: String,
        effects: [TransferEffect],
        stateChanged: Bool,
        isReplay: Bool
    ) {
        self.from = from
        self.to = to
        self.event = event
        self.effects = effects
        self.stateChanged = stateChanged
        self.isReplay = isReplay
    }

    /// One line for the audit trail, e.g. `transferPrepared -> transferred on newSubObtained`.
    public var auditSummary: String {
        let line = "\(from.rawValue) -> \(to.rawValue) on \(event)"
        return isReplay ? line + " (replay)" : line
    }
}
