import AppleEmulator
import Foundation
import Testing
import UpgradeAPI
import UpgradeEngine
import UpgradeTestSupport

/// Sign-in, credential state and Apple's server-to-server notifications over HTTP.
@Suite("Apple endpoints end to end")
struct AppleEndpointsTests {
    /// Upgrades `plain` to the demo Apple user and returns the account id and the user's `sub`.
    static func upgraded(_ server: DevServer) async throws -> (accountID: String, sub: String) {
        try server.addAccount("plain", password: "pw-plain")
        let started = try await server.post(
            "/v1/upgrades",
            ["username": "plain", "password": "pw-plain", "serviceIdentifier": "s"]
        )
        let credential = try server.appleCredential(for: started)
        let done = try await server.post("/v1/upgrades/\(try #require(started["id"]))/apple-credential", credential)
        #expect(done["status"] == "completed")
        return (try #require(done["accountId"]), try #require(credential["user"] as? String))
    }

    func link(_ server: DevServer, _ accountID: String) throws -> AppleLinkRecord? {
        try server.application.store.read { try $0.appleLink(accountID: accountID) }
    }

    @Test("credential state: authorized after the upgrade, notFound for an unknown id, validation without one")
    func credentialState() async throws {
        let server = try DevServer()
        let (_, sub) = try await Self.upgraded(server)
        let state = try await server.get("/v1/apple/credential-state?user=\(sub)")
        #expect(state.status == 200)
        #expect(state["state"] == "authorized")
        #expect(state.json["rawValue"] as? Int == 1)
        #expect(try await server.get("/v1/apple/credential-state?user=000000.unknown.0000")["state"] == "notFound")
        #expect(try await server.get("/v1/apple/credential-state").status == 422)
        // Decoded strictly: bytes that are not UTF-8 are no value, '+' is a space, and an encoded id
        // reads as itself.
        #expect(try await server.get("/v1/apple/credential-state?user=%C3\(sub)").status == 422)
        #expect(try await server.get("/v1/apple/credential-state?user=a+b")["state"] == "notFound")
        let encoded = sub.replacing(".", with: "%2E")
        #expect(try await server.get("/v1/apple/credential-state?user=\(encoded)")["state"] == "authorized")
    }

    @Test("sign-in finds the account by sub and stores the refresh token of the exchanged code", arguments: Backend.all)
    func signIn(_ backend: Backend) async throws {
        let server = try DevServer(backend)
        let (accountID, sub) = try await Self.upgraded(server)
        let before = try link(server, accountID)?.refreshTokenCiphertext
        let authorization = try server.development.emulator.authorize(
            userID: server.development.appleUserID,
            clientID: DevelopmentEnvironment.clientID,
            nonce: try await server.signInNonce(),
            state: nil,
            emailMode: .hidden
        )
        let answer = try await server.post(
            "/v1/apple/sign-in",
            ["identityToken": authorization.identityToken, "authorizationCode": authorization.authorizationCode]
        )
        #expect(answer.status == 200)
        #expect(answer["accountId"] == accountID)
        #expect(answer["sub"] == sub)
        #expect(answer.json["migrated"] as? Bool == false)
        let after = try link(server, accountID)?.refreshTokenCiphertext
        #expect(after != nil && after != before, "the new refresh token replaced the old one")
        // The same token again: its nonce is spent, so the replay stops before Apple or the account.
        let replay = try await server.post(
            "/v1/apple/sign-in",
            ["identityToken": authorization.identityToken, "authorizationCode": authorization.authorizationCode]
        )
        #expect(replay.status == 400)
        #expect(replay.problem == "nonce-mismatch")
        #expect(replay["detail"]?.contains("already been used") == true)
        // A new token with the same (spent) code: Apple refuses the code, and the client is told so.
        let again = try server.development.emulator.authorize(
            userID: server.development.appleUserID,
            clientID: DevelopmentEnvironment.clientID,
            nonce: try await server.signInNonce(),
            state: nil,
            emailMode: .hidden
        )
        let spentCode = try await server.post(
            "/v1/apple/sign-in",
            ["identityToken": again.identityToken, "authorizationCode": authorization.authorizationCode]
        )
        #expect(spentCode.status == 400)
        #expect(spentCode.problem == "invalid-authorization-code")
        // A token for an Apple user with no account.
        let stranger = try server.development.emulator.createUser(email: "stranger@example.com")
        let other = try server.development.emulator.authorize(
            userID: stranger,
            clientID: DevelopmentEnvironment.clientID,
            nonce: try await server.signInNonce(),
            state: nil,
            emailMode: .shared
        )
        let unknown = try await server.post("/v1/apple/sign-in", ["identityToken": other.identityToken])
        #expect(unknown.status == 404)
        let forged = try await server.post(
            "/v1/apple/sign-in",
            ["identityToken": String(other.identityToken.dropLast(4)) + "AAAA"]
        )
        #expect(forged.status == 400)
        #expect(forged.problem == "invalid-identity-token")
    }

    @Test(
        "sign-in requires a nonce we issued: missing, foreign, forged, expired and spent ones are refused",
        arguments: Backend.all
    )
    func signInNonces(_ backend: Backend) async throws {
        let server = try DevServer(backend)
        _ = try await Self.upgraded(server)
        func token(nonce: String?) throws -> String {
            try server.development.emulator.authorize(
                userID: server.development.appleUserID,
                clientID: DevelopmentEnvironment.clientID,
                nonce: nonce,
                state: nil,
                emailMode: .hidden
            ).identityToken
        }
        func signIn(_ identityToken: String) async throws -> DevServer.Response {
            try await server.post("/v1/apple/sign-in", ["identityToken": identityToken])
        }

        let issued = try await server.post("/v1/apple/sign-in/nonce", [:])
        #expect(issued.status == 201)
        #expect(issued.headers["cache-control"] == "no-store")
        let nonce = try #require(issued["nonce"])
        let expiry = Date(timeIntervalSince1970: TimeInterval(server.clock.now + 600))
        #expect(issued["expiresAt"] == ISO8601DateFormatter().string(from: expiry))
        #expect(try await server.post("/v1/apple/sign-in/nonce", ["extra": 1]).status == 422)

        let missing = try await signIn(try token(nonce: nil))
        #expect(missing.status == 400 && missing.problem == "nonce-mismatch")
        #expect(missing["detail"]?.contains("carries no nonce") == true)
        let foreign = try await signIn(try token(nonce: "a-nonce-the-client-made-up"))
        #expect(foreign.status == 400 && foreign.problem == "nonce-mismatch")
        var tampered = Array(nonce)
        tampered[20] = tampered[20] == "A" ? "B" : "A"
        let forged = try await signIn(try token(nonce: String(tampered)))
        #expect(forged.status == 400 && forged.problem == "nonce-mismatch")

        // Expired: issued now, carried by a token minted (validly) eleven minutes later.
        let stale = try #require(try await server.post("/v1/apple/sign-in/nonce", [:])["nonce"])
        server.clock.advance(601)
        let expired = try await signIn(try token(nonce: stale))
        #expect(expired.status == 400 && expired.problem == "nonce-mismatch")

        // None of those spent anything; the good nonce still signs in, once, even with a new token.
        let fresh = try #require(try await server.post("/v1/apple/sign-in/nonce", [:])["nonce"])
        #expect(try await signIn(try token(nonce: fresh)).status == 200)
        let reused = try await signIn(try token(nonce: fresh))
        #expect(reused.status == 400 && reused.problem == "nonce-mismatch")
    }

    @Test(
        "each notification changes what Apple's documentation says; a redelivery and a forgery change nothing",
        arguments: Backend.all
    )
    func notifications(_ backend: Backend) async throws {
        let server = try DevServer(backend)
        let (accountID, sub) = try await Self.upgraded(server)
        let emulator = server.development.emulator
        let user = server.development.appleUserID

        func deliver(_ notification: AppleServerNotification) async throws -> DevServer.Response {
            try await server.post("/v1/apple/notifications", ["payload": notification.payload])
        }

        // email-disabled, then email-enabled: forwarding recorded on the link.
        try emulator.setEmailForwarding(userID: user, teamID: DevelopmentEnvironment.teamID, enabled: false)
        let disabled = try #require(emulator.drainNotifications().first)
        #expect(try await deliver(disabled)["status"] == "processed")
        #expect(try link(server, accountID)?.emailForwardingEnabled == false)
        try emulator.setEmailForwarding(userID: user, teamID: DevelopmentEnvironment.teamID, enabled: true)
        let enabled = try #require(emulator.drainNotifications().first)
        #expect(try await deliver(enabled)["status"] == "processed")
        #expect(try link(server, accountID)?.emailForwardingEnabled == true)

        // A forged payload: refused, nothing changes.
        try emulator.revokeConsent(userID: user, clientID: DevelopmentEnvironment.clientID)
        let revoked = try #require(emulator.drainNotifications().first)
        let forged = try await server.post(
            "/v1/apple/notifications",
            ["payload": String(revoked.payload.dropLast(4)) + "AAAA"]
        )
        #expect(forged.status == 400)
        #expect(forged.problem == "invalid-notification")
        #expect(try link(server, accountID)?.status == .linked)
        #expect(try await server.get("/v1/apple/credential-state?user=\(sub)")["state"] == "authorized")

        // consent-revoked: the link ends and its refresh token is deleted.
        #expect(try link(server, accountID)?.refreshTokenCiphertext != nil)
        #expect(try await deliver(revoked)["status"] == "processed")
        #expect(try link(server, accountID)?.status == .revoked)
        #expect(try link(server, accountID)?.refreshTokenCiphertext == nil)
        #expect(try await server.get("/v1/apple/credential-state?user=\(sub)")["state"] == "revoked")
        let audit = try server.application.store.read { try $0.auditTrail(accountID: accountID, limit: 100) }.count

        // The same delivery again: acknowledged as a duplicate, nothing written.
        let again = try await deliver(revoked)
        #expect(again.status == 200)
        #expect(again["status"] == "duplicate")
        #expect(
            try server.application.store.read { try $0.auditTrail(accountID: accountID, limit: 100) }.count == audit
        )

        // account-deleted for another upgraded user.
        try server.addAccount("second", password: "pw-2")
        let bob = try emulator.createUser(email: "bob@example.com")
        let started = try await server.post(
            "/v1/upgrades",
            ["username": "second", "password": "pw-2", "serviceIdentifier": "s"]
        )
        let credential = try server.appleCredential(for: started, userID: bob)
        let done = try await server.post("/v1/upgrades/\(try #require(started["id"]))/apple-credential", credential)
        let bobAccount = try #require(done["accountId"])
        try emulator.deleteAccount(userID: bob)
        let deleted = try #require(emulator.drainNotifications().last)
        #expect(try await deliver(deleted)["status"] == "processed")
        #expect(try link(server, bobAccount)?.status == .deleted)
        #expect(try link(server, bobAccount)?.refreshTokenCiphertext == nil)
    }
}

/// A code is accepted only with the identity token it belongs to, over HTTP, on both endpoints that
/// take one.
@Suite("Authorization code bound to its token, end to end")
struct AuthorizationCodeBindingHTTPTests {
    func link(_ server: DevServer, _ accountID: String) throws -> AppleLinkRecord? {
        try server.application.store.read { try $0.appleLink(accountID: accountID) }
    }

    func sheet(
        _ server: DevServer,
        user: String,
        nonce: String?,
        state: String? = nil,
        codeHash: Bool = true
    ) throws -> AppleAuthorization {
        try server.development.emulator.authorize(
            userID: user,
            clientID: DevelopmentEnvironment.clientID,
            nonce: nonce,
            state: state,
            emailMode: .hidden,
            codeHashInToken: codeHash
        )
    }

    @Test("apple-credential: A's token with B's code is refused, with or without c_hash, and links nothing")
    func upgradeEndpoint() async throws {
        let server = try DevServer()
        let emulator = server.development.emulator
        let bob = try emulator.createUser(email: "bob@example.com")
        for codeHash in [true, false] {
            let username = codeHash ? "with-hash" : "without-hash"
            try server.addAccount(username, password: "pw")
            let started = try await server.post(
                "/v1/upgrades",
                ["username": username, "password": "pw", "serviceIdentifier": "s"]
            )
            let id = try #require(started["id"])
            let alice = try sheet(
                server,
                user: server.development.appleUserID,
                nonce: started["nonce"],
                state: started["state"],
                codeHash: codeHash
            )
            let bobs = try sheet(server, user: bob, nonce: nil)
            let answer = try await server.post(
                "/v1/upgrades/\(id)/apple-credential",
                [
                    "identityToken": alice.identityToken, "authorizationCode": bobs.authorizationCode,
                    "state": started["state"] ?? "",
                ]
            )
            #expect(answer.status == 400, "c_hash: \(codeHash)")
            #expect(answer.problem == "invalid-authorization-code")
            #expect(answer["result"] == "failure")
            #expect(answer["upgradeStatus"] == "failed")
            let view = try await server.get("/v1/upgrades/\(id)")
            #expect(view["status"] == "failed")
            #expect(view["problem"] == "invalid-authorization-code")
            #expect(
                emulator.credentialState(forUserID: bobs.user, clientID: DevelopmentEnvironment.clientID)
                    == (codeHash ? .authorized : .revoked),
                "with c_hash the code is never spent; without, the grant it produced is revoked"
            )
        }
        let accounts = try server.application.store.read { tx in
            try ["with-hash", "without-hash"].map { try tx.account(username: Username($0)) }
        }
        #expect(accounts.allSatisfy { $0?.credentialKind == .password })
    }

    @Test(
        "sign-in: A's token with B's code is refused and A's stored refresh token stays; a token without c_hash and its own code works"
    )
    func signInEndpoint() async throws {
        let server = try DevServer()
        let (accountID, _) = try await AppleEndpointsTests.upgraded(server)
        let stored = try link(server, accountID)?.refreshTokenCiphertext
        let emulator = server.development.emulator
        let alice = server.development.appleUserID
        let bob = try emulator.createUser(email: "bob@example.com")

        // With c_hash: refused before anything is spent or looked up.
        let mixed = try sheet(server, user: alice, nonce: try await server.signInNonce())
        let bobs = try sheet(server, user: bob, nonce: nil)
        let refused = try await server.post(
            "/v1/apple/sign-in",
            ["identityToken": mixed.identityToken, "authorizationCode": bobs.authorizationCode]
        )
        #expect(refused.status == 400)
        #expect(refused.problem == "invalid-authorization-code")
        #expect(
            emulator.credentialState(forUserID: bobs.user, clientID: DevelopmentEnvironment.clientID) == .authorized
        )

        // Without c_hash: the exchange's id_token names Bob, so nothing is stored and Bob's grant is revoked.
        let bare = try sheet(server, user: alice, nonce: try await server.signInNonce(), codeHash: false)
        let bobsAgain = try sheet(server, user: bob, nonce: nil)
        let mismatched = try await server.post(
            "/v1/apple/sign-in",
            ["identityToken": bare.identityToken, "authorizationCode": bobsAgain.authorizationCode]
        )
        #expect(mismatched.status == 400)
        #expect(mismatched.problem == "invalid-authorization-code")
        #expect(try link(server, accountID)?.refreshTokenCiphertext == stored, "Bob's refresh token was not stored")
        #expect(
            emulator.credentialState(forUserID: bobsAgain.user, clientID: DevelopmentEnvironment.clientID) == .revoked
        )

        // Without c_hash, with its own code: the id_token agrees, and the new refresh token is stored.
        let own = try sheet(server, user: alice, nonce: try await server.signInNonce(), codeHash: false)
        let accepted = try await server.post(
            "/v1/apple/sign-in",
            ["identityToken": own.identityToken, "authorizationCode": own.authorizationCode]
        )
        #expect(accepted.status == 200)
        #expect(accepted["accountId"] == accountID)
        let replaced = try link(server, accountID)?.refreshTokenCiphertext
        #expect(replaced != nil && replaced != stored)
    }
}
