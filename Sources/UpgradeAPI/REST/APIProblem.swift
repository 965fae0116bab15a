import UpgradeEngine

/// An RFC 9457 problem document for the REST API. Besides `type`, `title`, `status` and `detail` it
/// carries the members the Account Authentication Modification extension needs on every answer:
/// `result`, and the upgrade's `id` and `upgradeStatus` when one exists (`status` is taken by
/// RFC 9457 for the HTTP status code), `attemptsRemaining` and `retryAfter`; for a password change its
/// `id` and `changeStatus`, and `rule` for `password-policy`.
public struct APIProblem: Error, Sendable, CustomStringConvertible {
    public var status: Int
    public var slug: String
    public var detail: String
    public var extensions: [JSONValue.Member]
    public var headers: HTTPHeaders
    /// What underlay the failure, for the request's log line; never part of the response.
    public var cause: String?
    /// The earliest moment the answer may be written (`ServiceFailure.notBefore`): the event loop
    /// holds it until then, without a thread waiting.
    public var notBefore: ContinuousClock.Instant?

    public init(
        status: Int,
        slug: String,
        detail: String,
        extensions: [JSONValue.Member] = [],
        headers: HTTPHeaders = HTTPHeaders()
    ) {
        self.status = status
        self.slug = slug
        self.detail = detail
        self.extensions = extensions
        self.headers = headers
    }

    public init(_ failure: ServiceFailure) {
        var extensions = [JSONValue.Member("result", .string(failure.result.rawValue))]
        if let id = failure.upgradeID { extensions.append(.init("id", .string(id))) }
        if let status = failure.status { extensions.append(.init("upgradeStatus", .string(status.rawValue))) }
        if let status = failure.passwordChangeStatus {
            extensions.append(.init("changeStatus", .string(status.rawValue)))
        }
        if let rule = failure.rule { extensions.append(.init("rule", .string(rule))) }
        if let attempts = failure.attemptsRemaining {
            extensions.append(.init("attemptsRemaining", .integer(Int64(attempts))))
        }
        var headers = HTTPHeaders()
        if let retryAfter = failure.retryAfter {
            extensions.append(.init("retryAfter", .integer(retryAfter)))
            headers.replaceOrAppend(name: "Retry-After", value: String(retryAfter))
        } else if failure.kind == .databaseUnavailable {
            headers.replaceOrAppend(name: "Retry-After", value: Self.databaseRetryAfter)
        }
        let (status, slug) = UpgradeProblems.problem(for: failure.kind)
        self.init(
            status: status,
            slug: slug,
            detail: failure.message,
            extensions: extensions,
            headers: headers
        )
        cause = failure.cause
        notBefore = failure.notBefore
    }

    /// A sign-in or notification refusal, by `UpgradeProblems`' table.
    public init(_ failure: SignInFailure) {
        let (status, slug) = UpgradeProblems.problem(for: failure.kind)
        var headers = HTTPHeaders()
        if failure.kind == .storeUnavailable {
            headers.replaceOrAppend(name: "Retry-After", value: Self.databaseRetryAfter)
        }
        self.init(status: status, slug: slug, detail: failure.message, headers: headers)
        cause = failure.cause
    }

    /// A transfer-service refusal, by `UpgradeProblems`' table; an internal or database failure says
    /// only that, its cause kept for the log.
    public init(_ failure: TransferFailure) {
        switch failure.code {
        case .unavailable: self = .databaseUnavailable(cause: failure.cause)
        case .validation: self = .validation(failure.message)
        default:
            let (status, slug) = UpgradeProblems.transferTable[failure.code] ?? (500, "internal")
            self.init(
                status: status,
                slug: slug,
                detail: status == 500 ? "the server could not answer this request" : failure.message
            )
            cause = failure.cause
        }
    }

    /// `Retry-After` seconds while the database cannot be reached: a restart or failover takes a few.
    static let databaseRetryAfter = "2"

    /// `database-unavailable`: the database could not be reached; nothing changed.
    static func databaseUnavailable(cause: String?) -> APIProblem {
        var problem = APIProblem(
            status: 503,
            slug: "database-unavailable",
            detail: "the database cannot be reached; retry shortly",
            headers: ["Retry-After": databaseRetryAfter]
        )
        problem.cause = cause
        return problem
    }

    public static func validation(_ detail: String) -> APIProblem {
        APIProblem(status: 422, slug: "validation", detail: detail, extensions: [.init("result", .string("failure"))])
    }

    public var type: String { HTTPProblem.typeBase + slug }

    public var title: String { Self.titles[slug] ?? "Request failed" }

    public var description: String { "\(status) \(slug): \(detail)" }

    /// Every problem the REST layer sends carries `result`: `failure` unless the failure says
    /// otherwise (`twoFactorAuthRequired` after a wrong code), on every route, so that a client reads
    /// one shape (README, REST API).
    public var response: HTTPResponse {
        let result: [JSONValue.Member] =
            extensions.contains { $0.key == "result" } ? [] : [.init("result", .string("failure"))]
        let members: [JSONValue.Member] =
            [
                .init("type", .string(type)), .init("title", .string(title)), .init("status", .integer(Int64(status))),
                .init("detail", .string(detail)),
            ]
            + result + extensions
        var headers = self.headers
        headers.replaceOrAppend(name: "Content-Type", value: "application/problem+json")
        var response = HTTPResponse(status: status, headers: headers, body: JSONValue.object(members).serialized())
        response.notBefore = notBefore
        return response
    }

    /// Short, stable titles; the `detail` says what happened in this case. Every slug the REST layer
    /// sends has one (a test checks it, and that each is in `Schema/openapi.yaml`).
    static let titles: [String: String] = [
        "invalid-credentials": "Invalid credentials",
        "invalid-ticket": "Invalid upgrade ticket",
        "account-not-found": "Account not found",
        "locked": "Locked",
        "not-eligible": "Account not eligible",
        "invalid-code": "Invalid code",
        "too-many-attempts": "Too many attempts",
        "state-mismatch": "State mismatch",
        "nonce-mismatch": "Nonce mismatch",
        "invalid-identity-token": "Invalid identity token",
        "sub-conflict": "Apple account already linked",
        "upgrade-expired": "Upgrade expired",
        "not-allowed-in-state": "Not allowed in this state",
        "not-found": "Not found",
        "upgrade-in-progress": "Upgrade in progress",
        "conversion-interrupted": "Conversion interrupted",
        "credentials-changed": "Credentials changed",
        "invalid-authorization-code": "Invalid authorization code",
        "apple-unavailable": "Apple unavailable",
        "legacy-unavailable": "Legacy login system unavailable",
        "validation": "Invalid request body",
        "rate-limited": "Too many requests",
        "internal": "Internal error",
        "bad-request": "Bad request",
        "unsupported-media-type": "Unsupported media type",
        "method-not-allowed": "Method not allowed",
        "not-ready": "Not ready",
        "database-unavailable": "Database unavailable",
        "invalid-notification": "Invalid notification",
        "revoked": "Apple link ended",
        "unauthorized": "Admin token required",
        "insufficient-scope": "Insufficient scope",
        "password-policy": "Password rules not met",
    ]
}
