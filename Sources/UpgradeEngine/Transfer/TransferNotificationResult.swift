/// What one of Apple's server-to-server events did (docs/apple-protocol.md §4). Every answer is a success for Apple:
/// the endpoint acknowledges each delivery, including users we never linked.
public struct TransferNotificationResult: Sendable, Equatable {
    public enum Outcome: String, Sendable, Equatable {
        /// The account's state or link facts changed; one audit row says how.
        case changed
        /// Everything the event says was already recorded (a redelivery, or an older event than
        /// the one recorded). Nothing was written.
        case unchanged
        /// No account is linked to this Apple id. Apple may notify about users we never linked.
        case unknownUser = "unknown-user"
        /// An event type Apple has not documented; acknowledged and ignored.
        case unknownEventType = "unknown-event-type"
    }

    public var outcome: Outcome
    public var accountID: String?
    /// The account's transfer status afterwards, for revocation and deletion events.
    public var status: TransferStatus?

    public init(outcome: Outcome, accountID: String? = nil, status: TransferStatus? = nil) {
        self.outcome = outcome
        self.accountID = accountID
        self.status = status
    }
}
