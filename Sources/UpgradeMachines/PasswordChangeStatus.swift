/// The stable name of a password-change state: the `status` column of `password_changes`, the
/// `status` field of every answer, and the label in the audit trail. Raw values never change.
public enum PasswordChangeStatus: String, Sendable, Hashable, CaseIterable, Codable {
    case started
    case stepUpRequired
    case completed
    case failed
    /// Ended by the extension (`POST /v1/password-changes/{id}/cancel`), nothing stored.
    case cancelled
    case expired

    /// Terminal states accept nothing.
    public var isTerminal: Bool {
        switch self {
        case .started, .stepUpRequired: false
        case .completed, .failed, .cancelled, .expired: true
        }
    }
}
