/// Apple's `/auth/token` answer (docs/apple-protocol.md §2.2). `refreshToken` is absent for `refresh_token` and
/// `client_credentials` grants; `idToken` is absent for `client_credentials`.
public struct AppleTokenResponse: Sendable, Equatable {
    public var accessToken: String
    public var tokenType: String
    public var expiresIn: Int
    public var refreshToken: String?
    public var idToken: String?

    public init(accessToken: String, tokenType: String, expiresIn: Int, refreshToken: String?, idToken: String?) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.expiresIn = expiresIn
        self.refreshToken = refreshToken
        self.idToken = idToken
    }
}

/// Apple's answer to `/auth/usermigrationinfo` from the recipient team (docs/apple-protocol.md §3.4).
public struct AppleMigratedUser: Sendable, Equatable {
    public var sub: String
    public var email: String?
    public var isPrivateEmail: Bool?

    public init(sub: String, email: String?, isPrivateEmail: Bool?) {
        self.sub = sub
        self.email = email
        self.isPrivateEmail = isPrivateEmail
    }
}

/// An error answer from one of Apple's endpoints: HTTP 400 with `{"error": "..."}` (docs/apple-protocol.md §2.3),
/// or a transport-level failure. Carries no token or secret.
public struct AppleEndpointError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let invalidRequest = Code("invalid_request")
        public static let invalidClient = Code("invalid_client")
        public static let invalidGrant = Code("invalid_grant")
        public static let unauthorizedClient = Code("unauthorized_client")
        public static let unsupportedGrantType = Code("unsupported_grant_type")
        public static let invalidScope = Code("invalid_scope")
        /// Not one of Apple's codes: the endpoint could not be reached or answered something unexpected.
        public static let unavailable = Code("unavailable")
    }

    public let code: Code
    public let httpStatus: Int?
    public let message: String
    /// How long Apple asked us to wait (`Retry-After` on a 429 or 5xx), when the call gave up on
    /// such an answer: a caller with its own backoff (the link check) waits at least that long.
    public var retryAfter: Duration?

    public init(code: Code, httpStatus: Int?, message: String, retryAfter: Duration? = nil) {
        self.code = code
        self.httpStatus = httpStatus
        self.message = message
        self.retryAfter = retryAfter
    }

    public var description: String { "Apple endpoint error \(code): \(message)" }
}

/// The calls the engine makes to Apple (or to the emulator that plays Apple). The real HTTPS
/// client and the in-process emulator both conform.
public protocol AppleTokenExchanging: Sendable {
    /// `grant_type=authorization_code`. `clientID` must equal the identity token's `aud`.
    func exchangeAuthorizationCode(
        _ code: String,
        clientID: String
    ) async throws(AppleEndpointError)
        -> AppleTokenResponse
    /// `/auth/revoke` for a refresh or access token; succeeds if the token was already invalid.
    func revoke(token: String, clientID: String) async throws(AppleEndpointError)
}
