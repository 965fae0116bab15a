/// `ASExtensionError.Code` values (domain `ASExtensionErrorDomain`) that an extension passes to
/// `cancelRequest(withError:)`; a cancelled upgrade records which one ended it.
public enum ASExtensionErrorCode: Int, Sendable, Hashable, CaseIterable, Codable {
    /// Authentication failed, no credential, or Apple unreachable.
    case failed = 0
    /// The user dismissed the system sheet.
    case userCanceled = 1
    /// The silent path needs UI (e.g. a second factor); the system retries with the interface.
    case userInteractionRequired = 100
    case credentialIdentityNotFound = 101

    /// The case name as it appears in Apple's headers, accepted in REST bodies next to the number.
    public var name: String {
        switch self {
        case .failed: "failed"
        case .userCanceled: "userCanceled"
        case .userInteractionRequired: "userInteractionRequired"
        case .credentialIdentityNotFound: "credentialIdentityNotFound"
        }
    }

    public init?(name: String) {
        guard let code = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = code
    }
}
