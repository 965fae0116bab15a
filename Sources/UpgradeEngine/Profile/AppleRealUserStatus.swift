/// The identity token's `real_user_status` claim: Apple's judgement of whether the user is likely a
/// real person, sent only in the token of the first authorization on recent OS versions
/// (docs/apple-protocol.md §1.2). The raw values are Apple's; the names are `ASUserDetectionStatus`'.
public enum AppleRealUserStatus: Int, Sendable, CaseIterable {
    case unsupported = 0
    case unknown = 1
    case likelyReal = 2

    /// `unsupported`, `unknown` or `likelyReal`: what the API, webhooks and the CLI show.
    public var name: String {
        switch self {
        case .unsupported: "unsupported"
        case .unknown: "unknown"
        case .likelyReal: "likelyReal"
        }
    }
}
