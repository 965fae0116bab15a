/// The stable name of an upgrade state: the `status` column, the `status` field of every REST
/// answer, and the label in the audit trail. Raw values never change.
public enum UpgradeStatus: String, Sendable, Hashable, CaseIterable, Codable {
    case started
    case stepUpRequired
    case awaitingAppleCredential
    case converting
    case completed
    case failed
    case cancelled
    case expired

    /// Terminal states accept nothing that changes them.
    public var isTerminal: Bool {
        switch self {
        case .started, .stepUpRequired, .awaitingAppleCredential, .converting: false
        case .completed, .failed, .cancelled, .expired: true
        }
    }
}
