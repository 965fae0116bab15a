/// What `ASAuthorizationAppleIDProvider.getCredentialState(forUserID:)` answers, with Apple's raw
/// values (docs/apple-protocol.md §3.5), for `GET /v1/apple/credential-state` and the Apple ID
/// emulator's device side (Apple has no REST API for it).
public enum AppleCredentialState: Int, Sendable, Hashable, CaseIterable, Codable {
    case revoked = 0
    case authorized = 1
    case notFound = 2
    /// The id belongs to the team that owned the app before a transfer.
    case transferred = 3

    /// The JSON spelling of the answer.
    public var name: String {
        switch self {
        case .revoked: "revoked"
        case .authorized: "authorized"
        case .notFound: "notFound"
        case .transferred: "transferred"
        }
    }

    /// The state of `userID` given the transfer state of the account it is linked to, or `nil`
    /// when no account is linked to it.
    ///
    /// Until the exchange succeeds the sender team's id is still the one the account is reached by,
    /// so it reads as `authorized` even while prepared or failed. A revoked or deleted account reads
    /// as `revoked` under every id it had.
    public init(userID: String, link: TransferState?) {
        guard let link else {
            self = .notFound
            return
        }
        let isCurrent = userID == link.sub
        let isPrevious = userID == link.previousSub
        switch link {
        case .revoked, .deleted:
            self = isCurrent || isPrevious ? .revoked : .notFound
        case .transferred:
            self = isCurrent ? .authorized : isPrevious ? .transferred : .notFound
        case .linked, .transferPrepared, .transferFailed:
            self = isCurrent ? .authorized : .notFound
        }
    }
}
