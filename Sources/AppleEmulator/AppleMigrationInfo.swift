import UpgradeEngine

/// Apple's `/auth/usermigrationinfo` answer (docs/apple-protocol.md §3.3 / §3.4): the sender team gets a
/// `transfer_sub`; the recipient team gets the user's new team-scoped id and, for users who hid
/// their email, a new relay address.
public enum AppleMigrationInfo: Sendable, Equatable {
    case transferSub(String)
    case migratedUser(AppleMigratedUser)

    /// The response body as Apple sends it.
    public var json: JSONValue {
        switch self {
        case .transferSub(let transferSub):
            return .object(["transfer_sub": .string(transferSub)])
        case .migratedUser(let user):
            return .object([
                "sub": .string(user.sub), "email": user.email.map(JSONValue.string),
                "is_private_email": user.isPrivateEmail.map(JSONValue.bool),
            ])
        }
    }
}
