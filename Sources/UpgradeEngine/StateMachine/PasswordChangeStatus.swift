/// The stable name of a password-change state: the `status` column of `password_changes`, the
/// `status` field of every answer, and the label in the audit trail. Raw values never change.
public enum PasswordChangeStatus: String, Sendable, Hashable, CaseIterable, Codable {
    case started
    case stepUpRequired
    case completed
    case failed
    case expired

    /// Terminal states accept nothing.
    public var isTerminal: Bool {
        switch self {
        case .started, .stepUpRequired: false
        case .completed, .failed, .expired: true
        }
    }
}
