/// A request the server refused, one that got no answer, or one refused before it was sent.
///
/// Everything the server said is kept, so an app can act on it and its support can find the request
/// in the server's log: the HTTP `status` (0 when no answer arrived), the problem document's `type`
/// (`https://…/problems/invalid-code`; `about:blank` when the answer was not a problem document),
/// `title`, `detail` (English, for logs and developers: show people your own localized text, chosen by
/// ``slug``), `result`, `attemptsRemaining` after a wrong code, `retryAfter` (the body's member or the
/// `Retry-After` header), the broken password `rule`, the upgrade's or password change's `id` and status,
/// and the response's `X-Request-Id`. No field ever holds a password, code, ticket or token.
public struct UpgradeClientError: Error, Sendable, Equatable {
    /// What kind of failure this is; a struct so that kinds can be added without breaking a `switch`.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case refused, unreachable, unexpectedAnswer, invalidArgument
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The server answered with a problem document (`status` is 400 or more).
        public static let refused = Kind(.refused)
        /// No answer arrived: the server could not be reached, the connection broke or the request
        /// timed out (`status` 0). The server may or may not have acted on the request.
        public static let unreachable = Kind(.unreachable)
        /// An answer that is not the API's: a success without the expected members, or an error
        /// without a problem document (a proxy's page, say).
        public static let unexpectedAnswer = Kind(.unexpectedAnswer)
        /// Refused by this library before any request, such as an empty password without a ticket.
        public static let invalidArgument = Kind(.invalidArgument)

        public var description: String { base.rawValue }
    }

    public var kind: Kind
    public var status: Int
    public var problemType: String
    public var title: String?
    public var detail: String?
    /// `failure`, or `twoFactorAuthRequired` after a wrong code with tries left.
    public var result: String?
    public var attemptsRemaining: Int?
    /// Seconds to wait before trying again (`locked`, `rate-limited`, `503`s).
    public var retryAfter: Int?
    /// `password-policy`: the rule the new password breaks (`minlength: 12`, `visible-characters`, ...).
    public var rule: String?
    /// The upgrade (or password change) the refusal is about, when one exists.
    public var upgradeID: String?
    /// The upgrade's status after the refused call (`failed`, `cancelled`, `stepUpRequired`, ...).
    public var upgradeStatus: String?
    /// The password change's status after the refused call.
    public var passwordChangeStatus: String?
    /// The `X-Request-Id` of the answer: the id of this request in the server's log.
    public var requestID: String?

    public init(
        kind: Kind,
        status: Int = 0,
        problemType: String = "about:blank",
        title: String? = nil,
        detail: String? = nil,
        result: String? = nil,
        attemptsRemaining: Int? = nil,
        retryAfter: Int? = nil,
        rule: String? = nil,
        upgradeID: String? = nil,
        upgradeStatus: String? = nil,
        passwordChangeStatus: String? = nil,
        requestID: String? = nil
    ) {
        self.kind = kind
        self.status = status
        self.problemType = problemType
        self.title = title
        self.detail = detail
        self.result = result
        self.attemptsRemaining = attemptsRemaining
        self.retryAfter = retryAfter
        self.rule = rule
        self.upgradeID = upgradeID
        self.upgradeStatus = upgradeStatus
        self.passwordChangeStatus = passwordChangeStatus
        self.requestID = requestID
    }

    /// The stable last segment of `problemType` (`invalid-code`, `rate-limited`, ...); empty when the
    /// answer was not a problem document.
    public var slug: String {
        problemType == "about:blank" ? "" : problemType.split(separator: "/").last.map(String.init) ?? ""
    }

    /// A wrong step-up code with tries left: the UI asks for another code, nothing is cancelled.
    public var mayTryAnotherCode: Bool {
        slug == "invalid-code" && (attemptsRemaining ?? 0) > 0
    }

    /// What a call without UI cancels its request with when this error ends it: always `failed`.
    /// The server tells no unknown account apart from a wrong password (so never
    /// `credentialIdentityNotFound`), and a second factor is not an error but the
    /// `twoFactorAuthRequired` step (see ``ExtensionErrorCode``). From the UI, a wrong code with tries
    /// left is not a reason to cancel at all (``mayTryAnotherCode``).
    public var extensionErrorCode: ExtensionErrorCode { .failed }
}

extension UpgradeClientError: CustomStringConvertible {
    public var description: String {
        var text = kind == .refused ? "\(status) \(slug.isEmpty ? problemType : slug)" : "\(kind)"
        if let detail { text += ": \(detail)" }
        if let requestID { text += " (request \(requestID))" }
        return text
    }
}
