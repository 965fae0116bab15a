import Foundation
import UpgradeEngine

/// Sign in with Apple, credential state, and Apple's server-to-server notifications.
extension UpgradeAPIHandler {
    /// `POST /v1/apple/sign-in`: verifies the identity token with Apple's keys and its nonce (one we
    /// issued, unexpired, never used before: `SignInNonces`), finds the account by
    /// `sub` (or by `transfer_sub` during a transfer window, completing that account's migration), and
    /// exchanges the optional authorization code, storing its refresh token.
    func signIn(_ request: HTTPRequest, now: Int64) throws -> HTTPResponse {
        let body = try JSONBody(request, allowed: ["identityToken", "authorizationCode"])
        let token = try body.requiredString("identityToken")
        guard token.utf8.count <= 16 * 1024 else { throw APIProblem.validation("field 'identityToken' is too long") }
        let code = try body.string("authorizationCode")
        if let code, code.isEmpty || code.utf8.count > 2048 {
            throw APIProblem.validation("field 'authorizationCode' must be 1 to 2048 bytes")
        }
        let keys = apple.keys
        let nonces = signInNonces
        let claims: AppleIdentityClaims
        do {
            claims = try blockingWait { () async throws(IdentityTokenError) -> AppleIdentityClaims in
                try await keys.verifyIdentityToken(token, nonce: .issuedForSignIn(nonces), now: now)
            }
        } catch  where error.code == .nonceMissing || error.code == .nonceMismatch {
            throw APIProblem(
                status: 400,
                slug: "nonce-mismatch",
                detail: error.code == .nonceMissing
                    ? "the identity token carries no nonce; get one from POST /v1/apple/sign-in/nonce and pass it to Apple's request unchanged"
                    : "the identity token's nonce was not issued by this server or has expired; get a new one from POST /v1/apple/sign-in/nonce"
            )
        } catch {
            throw APIProblem(
                status: 400,
                slug: "invalid-identity-token",
                detail: "the identity token was rejected (\(error.code))"
            )
        }
        // A nonce signs in once: a replayed token stops here, before any account is looked up.
        guard let nonce = claims.checkedNonce else {
            throw APIProblem(status: 500, slug: "internal", detail: "the sign-in nonce could not be recorded")
        }
        let firstUse = try store.write { tx in
            try tx.useSignInNonce(
                hash: SignInNonces.usedKey(nonce),
                expiresAt: nonces.usedRecordExpiry(acceptedAt: now),
                now: now
            )
        }
        guard firstUse else {
            throw APIProblem(
                status: 400,
                slug: "nonce-mismatch",
                detail:
                    "this identity token's nonce has already been used to sign in; get a new one from POST /v1/apple/sign-in/nonce"
            )
        }
        // A code that names another token is refused before anything is looked up or spent.
        if let code, !AuthorizationCodeExchange.codeMatchesToken(code, claims) {
            throw APIProblem(
                status: 400,
                slug: "invalid-authorization-code",
                detail: "the authorization code does not belong to the identity token (c_hash differs); it was not used"
            )
        }
        let result: TransferSignInResult
        do {
            result = try transfers.signIn(claims: claims, now: now)
        } catch {
            throw Self.problem(error)
        }
        if let code {
            let exchange = AuthorizationCodeExchange(apple: apple.client, identityTokens: keys)
            let exchanged: AppleTokenResponse
            do {
                exchanged = try blockingWait { () async throws(AuthorizationCodeError) -> AppleTokenResponse in
                    try await exchange.exchange(code, for: claims, now: now)
                }
            } catch {
                let unavailable = error.code == .appleUnavailable
                throw APIProblem(
                    status: unavailable ? 502 : 400,
                    slug: unavailable ? "apple-unavailable" : "invalid-authorization-code",
                    detail: error.message
                )
            }
            if let refresh = exchanged.refreshToken {
                try upgrades.storeRefreshToken(refresh, accountID: result.accountID, now: now)
            }
        }
        return .json(
            JWSJSON.object([
                "accountId": .string(result.accountID), "sub": .string(claims.subject),
                "migrated": .bool(result.migrated),
            ]).serializedString
        )
    }

    /// `POST /v1/apple/sign-in/nonce`: a nonce for the client to pass to Apple, unchanged, before
    /// calling sign-in. Nothing is stored until it comes back inside a token (`SignInNonces`).
    func signInNonce(_ request: HTTPRequest, now: Int64) throws -> HTTPResponse {
        if !request.body.isEmpty { _ = try JSONBody(request, allowed: []) }
        let issued = signInNonces.issue(now: now)
        var response = HTTPResponse(
            status: 201,
            body: JWSJSON.object([
                "nonce": .string(issued.nonce), "expiresAt": .string(Self.timestamp(issued.expiresAt)),
            ]).serialized()
        )
        response.headers.replaceOrAppend(name: "Content-Type", value: "application/json")
        response.headers.replaceOrAppend(name: "Cache-Control", value: "no-store")
        return response
    }

    /// `GET /v1/apple/credential-state?user=SUB`: what `getCredentialState` would answer.
    func credentialState(_ request: HTTPRequest) throws -> HTTPResponse {
        let users = Self.queryValues(request.query, name: "user")
        guard users.count == 1, let user = users.first, !user.isEmpty, user.utf8.count <= 256 else {
            throw APIProblem.validation("give exactly one 'user' query parameter: the Apple user id")
        }
        let state: AppleCredentialState
        do {
            state = try transfers.credentialState(userID: user)
        } catch {
            throw Self.problem(error)
        }
        return .json(
            JWSJSON.object(["state": .string(state.name), "rawValue": .integer(Int64(state.rawValue))]).serializedString
        )
    }

    /// `POST /v1/apple/notifications`: Apple's `{"payload": "<JWS>"}`. Verified with Apple's keys
    /// before anything is read; a redelivered `jti` is acknowledged and changes nothing; a bad
    /// signature is a 400 that changes nothing.
    func notification(_ request: HTTPRequest, now: Int64) throws -> HTTPResponse {
        let body = try JSONBody(request, allowed: ["payload"])
        let payload = try body.requiredString("payload")
        let keyID: String?
        do {
            let parts = try JWSCompact(parsing: payload, maximumLength: AppleNotificationVerifier.maximumLength)
            keyID = try JWSHeader(json: parts.header).keyID
        } catch {
            throw APIProblem(
                status: 400,
                slug: "invalid-notification",
                detail: "the payload is not a signed notification"
            )
        }
        let keys = apple.keys
        let verifier = AppleNotificationVerifier(allowedAudiences: allowedAudiences)
        let notification: AppleNotification
        do {
            let keySet = try blockingWait { () async throws(IdentityTokenError) -> JWKSet in
                try await keys.keySet(containing: keyID)
            }
            notification = try verifier.verify(payload, keys: keySet, now: now)
        } catch {
            throw APIProblem(
                status: 400,
                slug: "invalid-notification",
                detail: "the notification was rejected (\(error.code))"
            )
        }
        let seen: Bool
        do {
            seen = try store.read { try $0.notificationSeen(jti: notification.jti) }
        } catch {
            throw APIProblem(status: 503, slug: "not-ready", detail: "the database does not answer; Apple will retry")
        }
        if seen {
            return .json(#"{"status":"duplicate"}"#)
        }
        // Handled first, recorded second: handling is idempotent, so a crash in between only means the
        // redelivery is handled again, never that an event is lost.
        let outcome: TransferNotificationResult
        do {
            outcome = try transfers.handleNotification(
                type: notification.type.name,
                sub: notification.sub,
                email: notification.email,
                isPrivateEmail: notification.isPrivateEmail,
                eventTime: notification.eventTime,
                now: now
            )
            _ = try store.write {
                try $0.recordNotification(jti: notification.jti, type: notification.type.name, now: now)
            }
        } catch let failure as TransferFailure {
            throw Self.problem(failure)
        }
        return .json(
            JWSJSON.object(["status": .string("processed"), "outcome": .string(outcome.outcome.rawValue)])
                .serializedString
        )
    }

    static func problem(_ failure: TransferFailure) -> APIProblem {
        switch failure.code {
        case .notFound: APIProblem(status: 404, slug: "not-found", detail: failure.message)
        case .revoked: APIProblem(status: 403, slug: "revoked", detail: failure.message)
        case .conflict: APIProblem(status: 409, slug: "sub-conflict", detail: failure.message)
        case .validation: APIProblem.validation(failure.message)
        default:
            {
                var problem = APIProblem(
                    status: 500,
                    slug: "internal",
                    detail: "the server could not answer this request"
                )
                problem.cause = failure.cause
                return problem
            }()
        }
    }

    /// Values of one query parameter, percent-decoded; `+` is a space.
    static func queryValues(_ query: Substring?, name: String) -> [String] {
        guard let query else { return [] }
        return query.split(separator: "&").compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == name else { return nil }
            return String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
        }
    }
}
