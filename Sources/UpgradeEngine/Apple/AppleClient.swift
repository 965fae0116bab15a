/// Apple's Sign in with Apple REST endpoints over HTTPS (docs/apple-protocol.md §2, §3.3–3.4): `/auth/token` for
/// the three grants, `/auth/revoke`, `/auth/usermigrationinfo` in both directions and
/// `/auth/keys`, over libcurl (`AppleClientTransport`). Point `configuration.baseURL` at the emulator to run the same code locally.
///
/// Every form is strictly percent-encoded; the ES256 client secret is made with
/// `ClientSecretSigner` and cached per client id until shortly before it expires. Calls are
/// bounded in time and answer size, and retried (with jittered exponential backoff, honouring
/// `Retry-After`) only after 429, 5xx or a transport failure. Apple's `{"error": "…"}` becomes an
/// `AppleEndpointError` whose code is Apple's (an unknown value is kept as it came) and whose
/// message explains the usual causes. No error, event or log carries a secret, code or token.
public final class AppleClient: AppleTokenExchanging, AppleKeySetFetching {
    /// `token_type_hint` for `/auth/revoke`.
    public enum TokenTypeHint: String, Sendable {
        case refreshToken = "refresh_token"
        case accessToken = "access_token"
    }

    public let configuration: Configuration
    let transport: AppleClientTransport
    let secrets: AppleClientSecretCache

    public init(configuration: Configuration) throws(AppleClientConfigurationError) {
        try configuration.validate()
        self.configuration = configuration
        transport = AppleClientTransport(connectTimeout: configuration.connectTimeout)
        secrets = AppleClientSecretCache(
            credentials: configuration.credentials,
            lifetime: configuration.clientSecretLifetime,
            renewal: configuration.clientSecretRenewal,
            clock: configuration.clock
        )
    }

    /// Signs every later call with `credentials` (a reload of `APPLE_KEY_ID` and
    /// `APPLE_PRIVATE_KEY_FILE`); the cached client secrets are dropped at once.
    public func replaceCredentials(_ credentials: Credentials) {
        secrets.replaceCredentials(credentials)
    }

    /// The id of the key client secrets are signed with now, if one is configured.
    public var clientSecretKeyID: String? { secrets.keyID }

    // MARK: /auth/token

    /// `grant_type=authorization_code`. `clientID` must equal the identity token's `aud`.
    public func exchangeAuthorizationCode(
        _ code: String,
        clientID: String
    ) async throws(AppleEndpointError) -> AppleTokenResponse {
        try await exchangeAuthorizationCode(code, clientID: clientID, redirectURI: nil)
    }

    /// `redirect_uri` must be sent when (and only when) the authorization request had one (web).
    public func exchangeAuthorizationCode(
        _ code: String,
        clientID: String,
        redirectURI: String?
    ) async throws(AppleEndpointError) -> AppleTokenResponse {
        try Self.requireValue(code, "the authorization code")
        var form: [(name: String, value: String)] = [
            ("client_id", clientID), ("client_secret", try secrets.secret(for: clientID)), ("code", code),
            ("grant_type", "authorization_code"),
        ]
        if let redirectURI { form.append(("redirect_uri", redirectURI)) }
        let call = Call(post: "/auth/token", detail: "authorization_code", form: form, consumesGrant: true)
        let answer = try await perform(call)
        return try answer.tokenResponse(requiringRefreshToken: true, requiringIDToken: true)
    }

    /// `grant_type=refresh_token`: checks that a stored refresh token is still valid (Apple asks for
    /// at most one check a day per token). Apple answers a new access token and identity token and
    /// no new refresh token; `invalid_grant` means the authorization is gone.
    public func refresh(_ refreshToken: String, clientID: String) async throws(AppleEndpointError) -> AppleTokenResponse
    {
        try Self.requireValue(refreshToken, "the refresh token")
        let form: [(name: String, value: String)] = [
            ("client_id", clientID), ("client_secret", try secrets.secret(for: clientID)),
            ("grant_type", "refresh_token"), ("refresh_token", refreshToken),
        ]
        let answer = try await perform(Call(post: "/auth/token", detail: "refresh_token", form: form))
        return try answer.tokenResponse(requiringRefreshToken: false, requiringIDToken: false)
    }

    /// `grant_type=client_credentials`, `scope=user.migration`: the team's access token for
    /// `/auth/usermigrationinfo` (valid an hour).
    public func teamAccessToken(clientID: String) async throws(AppleEndpointError) -> AppleTokenResponse {
        let form: [(name: String, value: String)] = [
            ("client_id", clientID), ("client_secret", try secrets.secret(for: clientID)),
            ("grant_type", "client_credentials"), ("scope", "user.migration"),
        ]
        let answer = try await perform(Call(post: "/auth/token", detail: "client_credentials", form: form))
        return try answer.tokenResponse(requiringRefreshToken: false, requiringIDToken: false)
    }

    // MARK: /auth/revoke

    /// `/auth/revoke` for a refresh or access token; succeeds if the token was already invalid.
    public func revoke(token: String, clientID: String) async throws(AppleEndpointError) {
        try await revoke(token: token, clientID: clientID, tokenTypeHint: nil)
    }

    public func revoke(token: String, clientID: String, tokenTypeHint: TokenTypeHint?) async throws(AppleEndpointError)
    {
        try Self.requireValue(token, "the token to revoke")
        var form: [(name: String, value: String)] = [
            ("client_id", clientID), ("client_secret", try secrets.secret(for: clientID)), ("token", token),
        ]
        if let tokenTypeHint { form.append(("token_type_hint", tokenTypeHint.rawValue)) }
        _ = try await perform(Call(post: "/auth/revoke", detail: nil, form: form))
    }

    // MARK: /auth/usermigrationinfo

    /// Sender team: the `transfer_sub` of `sub` for the recipient team `target` (docs/apple-protocol.md §3.3).
    /// `target` is the *recipient's* team id: a wrong one yields ids nobody can exchange.
    public func transferSub(
        forSub sub: String,
        target: String,
        clientID: String,
        accessToken: String
    ) async throws(AppleEndpointError) -> String {
        try Self.requireValue(sub, "sub")
        guard ClientSecretSigner.isAppleIdentifier(target) else {
            throw AppleEndpointError(
                code: .invalidRequest,
                httpStatus: nil,
                message: "target must be the recipient's 10-character team id (A-Z, 0-9)"
            )
        }
        if let credentials = configuration.credentials, credentials.teamID == target {
            throw AppleEndpointError(
                code: .invalidRequest,
                httpStatus: nil,
                message: "target \(target) is our own team; it must be the team the app is transferred to"
            )
        }
        let form: [(name: String, value: String)] = [
            ("sub", sub), ("target", target), ("client_id", clientID),
            ("client_secret", try secrets.secret(for: clientID)),
        ]
        let call = Call(
            post: "/auth/usermigrationinfo",
            detail: "sender",
            form: form,
            bearer: try Self.bearer(accessToken),
            consumesGrant: true
        )
        return try await perform(call).transferSub()
    }

    /// Recipient team: the new `sub` (and, for users who hid their email, the new relay address)
    /// for a `transfer_sub` (docs/apple-protocol.md §3.4).
    public func migrate(
        transferSub: String,
        clientID: String,
        accessToken: String
    ) async throws(AppleEndpointError) -> AppleMigratedUser {
        try Self.requireValue(transferSub, "transfer_sub")
        let form: [(name: String, value: String)] = [
            ("transfer_sub", transferSub), ("client_id", clientID),
            ("client_secret", try secrets.secret(for: clientID)),
        ]
        let call = Call(
            post: "/auth/usermigrationinfo",
            detail: "recipient",
            form: form,
            bearer: try Self.bearer(accessToken),
            consumesGrant: true
        )
        return try await perform(call).migratedUser()
    }

    // MARK: /auth/keys

    /// Apple's current key set and the `max-age` it may be cached for.
    public func fetchKeySet() async throws(AppleEndpointError) -> AppleFetchedKeySet {
        try await fetchKeySet(path: "/auth/keys")
    }

    /// A key set at another path under the base URL (`token verify --jwks URL`): a percent-encoded
    /// path, refused unless it is one (no space, query or fragment could reach the request line).
    public func fetchKeySet(path: String) async throws(AppleEndpointError) -> AppleFetchedKeySet {
        guard path.hasPrefix("/"), path.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != 0x3f && $0 != 0x23 }) else {
            throw AppleEndpointError(
                code: .invalidRequest,
                httpStatus: nil,
                message: "the key set's path is not a URL path"
            )
        }
        var call = Call(get: path)
        call.limit = JWKSet.maximumJSONBytes
        return try await perform(call).keySet()
    }

    // MARK: Helpers

    static func requireValue(_ value: String, _ what: String) throws(AppleEndpointError) {
        guard !value.isEmpty else {
            throw AppleEndpointError(code: .invalidRequest, httpStatus: nil, message: "\(what) is empty")
        }
    }

    /// The `Authorization` value; a token that could split the header is refused before sending.
    static func bearer(_ accessToken: String) throws(AppleEndpointError) -> String {
        guard !accessToken.isEmpty, accessToken.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
            throw AppleEndpointError(
                code: .invalidRequest,
                httpStatus: nil,
                message: "the access token is empty or contains characters a token never has"
            )
        }
        return "Bearer " + accessToken
    }
}
