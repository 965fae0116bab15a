import Foundation
import UpgradeEngine

/// Sign in with Apple, credential state, and Apple's server-to-server notifications: each decodes the
/// request, calls one engine service and renders its answer.
extension UpgradeAPIHandler {
    /// `POST /v1/apple/sign-in`: `SignInService.signIn`.
    func signIn(_ request: HTTPRequest, now: Int64) throws -> HTTPResponse {
        let body = try JSONBody(request, allowed: ["identityToken", "authorizationCode", "email", "fullName"])
        let token = try body.requiredString("identityToken")
        let code = try body.string("authorizationCode")
        let email = try body.string("email")
        let fullName = try body.stringMembers("fullName", allowed: PersonName.partNames).map(PersonName.init(parts:))
        let signIns = self.signIns
        let result = try blockingWait { () async throws(SignInFailure) -> SignInService.Result in
            try await signIns.signIn(
                identityToken: token,
                authorizationCode: code,
                email: email,
                fullName: fullName,
                now: now
            )
        }
        return Self.noStoreJSON(
            JSONValue.object([
                "accountId": .string(result.accountID), "sub": .string(result.sub),
                "migrated": .bool(result.migrated),
            ])
        )
    }

    /// `POST /v1/apple/sign-in/nonce`: a nonce for the client to pass to Apple, unchanged, before
    /// calling sign-in. Nothing is stored until it comes back inside a token (`SignInNonces`).
    func signInNonce(_ request: HTTPRequest, now: Int64) throws -> HTTPResponse {
        if !request.body.isEmpty { _ = try JSONBody(request, allowed: []) }
        let issued = signIns.issueNonce(now: now)
        return Self.noStoreJSON(
            .object(["nonce": .string(issued.nonce), "expiresAt": .string(Self.timestamp(issued.expiresAt))]),
            status: 201
        )
    }

    /// `GET /v1/apple/credential-state?user=SUB`: what `getCredentialState` would answer.
    func credentialState(_ request: HTTPRequest) throws -> HTTPResponse {
        let users = Self.queryValues(request.query, name: "user")
        guard users.count == 1, let user = users.first, !user.isEmpty, user.utf8.count <= 256 else {
            throw APIProblem.validation("give exactly one 'user' query parameter: the Apple user id")
        }
        let state = try transfers.credentialState(userID: user)
        return .json(
            JSONValue.object(["state": .string(state.name), "rawValue": .integer(Int64(state.rawValue))])
                .serializedString
        )
    }

    /// `POST /v1/apple/notifications`: Apple's `{"payload": "<JWS>"}`, `AppleNotificationService.receive`.
    func notification(_ request: HTTPRequest, now: Int64) throws -> HTTPResponse {
        let body = try JSONBody(request, allowed: ["payload"])
        let payload = try body.requiredString("payload")
        let notifications = self.notifications
        let receipt = try blockingWait { () async throws(SignInFailure) -> AppleNotificationService.Receipt in
            try await notifications.receive(payload: payload, now: now)
        }
        switch receipt {
        case .duplicate:
            return .json(#"{"status":"duplicate"}"#)
        case .processed(let outcome):
            return .json(
                JSONValue.object(["status": .string("processed"), "outcome": .string(outcome.rawValue)])
                    .serializedString
            )
        }
    }

    /// Values of one query parameter, percent-decoded strictly (`PercentEncoding`); `+` is a space.
    /// A value that does not decode is left out, so it counts as no value.
    static func queryValues(_ query: Substring?, name: String) -> [String] {
        guard let query else { return [] }
        return query.split(separator: "&").compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == name else { return nil }
            return PercentEncoding.decoded(parts[1], plusIsSpace: true)
        }
    }
}
