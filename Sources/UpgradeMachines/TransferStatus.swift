/// The stable name of a transfer state: the `status` column, `transfer status` counts and the
/// audit trail. Raw values never change.
public enum TransferStatus: String, Sendable, Hashable, CaseIterable, Codable {
    case linked
    case transferPrepared
    case transferred
    case transferFailed
    case revoked
    case deleted

    /// `revoked` and `deleted` accept nothing that changes them: such users cannot be migrated.
    public var isTerminal: Bool {
        switch self {
        case .linked, .transferPrepared, .transferred, .transferFailed: false
        case .revoked, .deleted: true
        }
    }
}
