/// Exchanges an authorization code only together with the identity token it came with.
///
/// A client sends Apple's identity token and authorization code side by side; nothing in the
/// request itself says they belong to the same Apple user. Without a check, user A's token with
/// user B's code links A's `sub` and stores B's refresh token (so later revocation and validation
/// act on the wrong user). Two checks bind them (OpenID Connect Core §3.3.2.11 and §3.1.3.7):
/// 1. before the code is spent: when the identity token carries `c_hash`, it must equal the
///    base64url left half of SHA-256 of the code;
/// 2. after the exchange: the `id_token` Apple returns with it is verified like any identity token
///    (signature, `iss`, `aud`, times) and must name the same `sub` and `aud`. On a mismatch
///    nothing may be stored, and the grant just obtained is revoked at Apple so that no stray
///    authorization is left behind.
public struct AuthorizationCodeExchange: Sendable {
    let apple: any AppleTokenExchanging
    let identityTokens: any IdentityTokenVerifying

    public init(apple: any AppleTokenExchanging, identityTokens: any IdentityTokenVerifying) {
        self.apple = apple
        self.identityTokens = identityTokens
    }

    /// Check 1 alone, for callers that must refuse a mismatched code before doing anything else.
    /// A token without `c_hash` passes (check 2 still binds the code after the exchange).
    public static func codeMatchesToken(_ code: String, _ claims: AppleIdentityClaims) -> Bool {
        guard let codeHash = claims.codeHash else { return true }
        return ConstantTime.equals(halfHash(code), codeHash)
    }

    /// OpenID Connect's `c_hash` / `at_hash` for RS256: base64url of the left half of SHA-256(value).
    public static func halfHash(_ value: String) -> String {
        Base64URL.encode(Digest.sha256(value).prefix(16))
    }

    /// Both checks around the exchange. `claims` are the verified identity token's; the code goes to
    /// Apple with `client_id` equal to the token's audience (Apple requires that they match).
    public func exchange(
        _ code: String,
        for claims: AppleIdentityClaims,
        now: Int64
    ) async throws(AuthorizationCodeError) -> AppleTokenResponse {
        guard Self.codeMatchesToken(code, claims) else {
            throw AuthorizationCodeError(
                .notForThisToken,
                "the authorization code does not belong to the identity token (c_hash differs); it was not used"
            )
        }
        let tokens: AppleTokenResponse
        do {
            tokens = try await apple.exchangeAuthorizationCode(code, clientID: claims.audience)
        } catch {
            if [.invalidGrant, .invalidRequest].contains(error.code) {
                throw AuthorizationCodeError(
                    .refused,
                    "Apple refused the authorization code (\(error.code)); it may be expired, used, or for another client",
                    appleCode: error.code
                )
            }
            throw AuthorizationCodeError(
                .appleUnavailable,
                "Apple could not exchange the authorization code (\(error.code))",
                appleCode: error.code
            )
        }
        if let refusal = await bindingRefusal(tokens, to: claims, now: now) {
            let revoked = await revoke(tokens, clientID: claims.audience)
            throw AuthorizationCodeError(refusal.code, refusal.message, grantRevoked: revoked)
        }
        return tokens
    }

    /// Check 2: why the exchanged `id_token` does not bind the code to `claims`, or nil when it does.
    private func bindingRefusal(
        _ tokens: AppleTokenResponse,
        to claims: AppleIdentityClaims,
        now: Int64
    ) async -> AuthorizationCodeError? {
        guard let idToken = tokens.idToken else {
            return AuthorizationCodeError(
                .notForThisToken,
                "Apple's answer to the code exchange has no id_token, so the code cannot be tied to the identity token"
            )
        }
        let exchanged: AppleIdentityClaims
        do {
            // The nonce belongs to the device's request and was checked on the identity token.
            exchanged = try await identityTokens.verifyIdentityToken(idToken, nonce: nil, now: now)
        } catch {
            if error.code == .keysUnavailable {
                return AuthorizationCodeError(
                    .appleUnavailable,
                    "Apple's signing keys could not be fetched to check the id_token of the code exchange"
                )
            }
            return AuthorizationCodeError(
                .notForThisToken,
                "the id_token returned with the code exchange was rejected (\(error.code))"
            )
        }
        guard exchanged.subject == claims.subject, exchanged.audience == claims.audience else {
            return AuthorizationCodeError(
                .notForThisToken,
                "the authorization code belongs to another Apple user or client than the identity token"
            )
        }
        return nil
    }

    /// Revokes the grant of a refused exchange: its refresh token, or its access token when Apple gave
    /// none. Whether it worked is reported, never thrown: the request fails either way.
    private func revoke(_ tokens: AppleTokenResponse, clientID: String) async -> Bool {
        do {
            try await apple.revoke(token: tokens.refreshToken ?? tokens.accessToken, clientID: clientID)
            return true
        } catch {
            return false
        }
    }
}

/// Why an authorization code was not accepted. Messages never contain the code or a token.
public struct AuthorizationCodeError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String { case notForThisToken, refused, appleUnavailable }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The code and the identity token are not the same user's (or could not be shown to be).
        public static let notForThisToken = Code(.notForThisToken)
        /// Apple refused the code: expired, already used, or issued to another client.
        public static let refused = Code(.refused)
        /// Apple (or its keys) could not be reached or answered unexpectedly: not the client's fault.
        public static let appleUnavailable = Code(.appleUnavailable)

        public var description: String { base.rawValue }
    }

    public let code: Code
    public let message: String
    /// Apple's error code, when Apple answered the exchange with one.
    public let appleCode: AppleEndpointError.Code?
    /// For a refusal after the exchange: whether the grant it produced was revoked at Apple.
    public let grantRevoked: Bool?

    public init(
        _ code: Code,
        _ message: String,
        appleCode: AppleEndpointError.Code? = nil,
        grantRevoked: Bool? = nil
    ) {
        self.code = code
        self.message = message
        self.appleCode = appleCode
        self.grantRevoked = grantRevoked
    }

    public var description: String { "\(code): \(message)" }
}
