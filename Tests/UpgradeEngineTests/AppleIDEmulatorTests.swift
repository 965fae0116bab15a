import Foundation
import Synchronization
import Testing

@testable import AppleEmulator
@testable import UpgradeEngine

/// A clock tests move by hand.
final class TestClock: Sendable {
    private let current: Mutex<Int64>

    init(_ start: Int64 = 1_760_000_000) {
        current = Mutex(start)
    }

    var now: Int64 { current.withLock { $0 } }

    func advance(_ seconds: Int64) {
        current.withLock { $0 += seconds }
    }
}

/// Two teams, an app with a grouped Services ID owned by team A, and one user.
struct EmulatorWorld {
    static let teamA = "TEAMAAAAA1"
    static let teamB = "TEAMBBBBB2"
    static let keyA = "KEYAAAAAA1"
    static let keyB = "KEYBBBBBB2"
    static let app = "com.example.app"
    static let web = "com.example.app.web"

    let clock = TestClock()
    let emulator: AppleIDEmulator
    let privateKeyA = P256PrivateKey()
    let privateKeyB = P256PrivateKey()
    let clientA: EmulatedAppleClient
    let clientB: EmulatedAppleClient
    let user: String

    init(configuration: AppleIDEmulator.Configuration = .init()) throws {
        let clock = self.clock
        emulator = AppleIDEmulator(configuration: configuration, clock: { clock.now })
        try emulator.addTeam(Self.teamA)
        try emulator.addTeam(Self.teamB)
        try emulator.registerKey(teamID: Self.teamA, keyID: Self.keyA, publicKey: privateKeyA.publicKey)
        try emulator.registerKey(teamID: Self.teamB, keyID: Self.keyB, publicKey: privateKeyB.publicKey)
        try emulator.addApp(clientID: Self.app, teamID: Self.teamA)
        try emulator.addApp(clientID: Self.web, teamID: Self.teamA, primaryAppID: Self.app)
        clientA = try emulator.client(teamID: Self.teamA, keyID: Self.keyA, privateKey: privateKeyA)
        clientB = try emulator.client(teamID: Self.teamB, keyID: Self.keyB, privateKey: privateKeyB)
        user = try emulator.createUser(email: "jane@example.com", fullName: "Jane Appleseed")
    }

    func verifier(audiences: Set<String> = [Self.app, Self.web]) throws -> IdentityTokenVerifier {
        IdentityTokenVerifier(keys: emulator.keySet, policy: try IdentityTokenPolicy(allowedAudiences: audiences))
    }

    func secret(
        teamID: String = teamA,
        keyID: String = keyA,
        clientID: String = app,
        key: P256PrivateKey? = nil,
        lifetime: Int64 = 300
    ) throws -> String {
        try ClientSecretSigner(teamID: teamID, keyID: keyID, clientID: clientID, privateKey: key ?? privateKeyA)
            .make(now: clock.now, lifetime: lifetime)
    }
}

/// The endpoint error code `body` failed with, or nil if it succeeded.
func endpointCode(_ body: () throws -> Void) -> AppleEndpointError.Code? {
    do {
        try body()
        return nil
    } catch let error as AppleEndpointError {
        #expect(error.httpStatus == 400)
        return error.code
    } catch {
        Issue.record("unexpected error \(error)")
        return nil
    }
}

func asyncEndpointCode(_ body: () async throws -> Void) async -> AppleEndpointError.Code? {
    do {
        try await body()
        return nil
    } catch let error as AppleEndpointError {
        return error.code
    } catch {
        Issue.record("unexpected error \(error)")
        return nil
    }
}

@Suite("Apple ID emulator")
struct AppleIDEmulatorTests {
    /// `NNNNNN.<32 hex>.NNNN`, the observed shape of Apple's user ids.
    static func hasSubShape(_ sub: String) -> Bool {
        let parts = sub.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 3 && parts[0].count == 6 && parts[0].allSatisfy { $0.isASCII && $0.isNumber }
            && parts[1].count == 32 && parts[1].allSatisfy { $0.isHexDigit && !$0.isUppercase }
            && parts[2].count == 4 && parts[2].allSatisfy { $0.isASCII && $0.isNumber }
    }

    @Test("authorization yields an identity token that verifies against the emulator's JWKS, with Apple's claims")
    func identityToken() throws {
        let world = try EmulatorWorld()
        let authorization = try world.emulator.authorize(
            userID: world.user,
            clientID: EmulatorWorld.app,
            nonce: "nonce-1",
            state: "state-1",
            emailMode: .hidden
        )
        #expect(authorization.state == "state-1" && authorization.isFirstAuthorization)
        #expect(authorization.fullName == "Jane Appleseed")
        #expect(Self.hasSubShape(authorization.user))
        let claims = try world.verifier().verify(
            authorization.identityToken,
            expectedNonce: "nonce-1",
            now: world.clock.now
        )
        #expect(claims.issuer == "https://appleid.apple.com" && claims.audience == EmulatorWorld.app)
        #expect(claims.subject == authorization.user)
        #expect(claims.expiresAt - claims.issuedAt == 600)
        #expect(claims.email == authorization.email)
        #expect(claims.email?.hasSuffix("@privaterelay.appleid.com") == true)
        #expect(claims.emailVerified && claims.isPrivateEmail == true && claims.nonceSupported == true)
        #expect(claims.realUserStatus == 2)
        #expect(claims.codeHash == AppleIDEmulator.halfHash(authorization.authorizationCode))
        #expect(claims.transferSub == nil)

        // A second authorization: same sub, no email/name handed over, no real_user_status, and the
        // email choice of the first time stands.
        let again = try world.emulator.authorize(
            userID: world.user,
            clientID: EmulatorWorld.web,
            nonce: "nonce-2",
            state: nil,
            emailMode: .shared
        )
        #expect(!again.isFirstAuthorization && again.email == nil && again.fullName == nil)
        let second = try world.verifier().verify(again.identityToken, expectedNonce: "nonce-2", now: world.clock.now)
        #expect(second.subject == claims.subject, "grouped apps of one team share the sub")
        #expect(second.audience == EmulatorWorld.web)
        #expect(second.realUserStatus == nil && second.email == claims.email)

        // The header is Apple's: {"kid":…,"alg":"RS256"}.
        let header = try JWSHeader(json: JWSCompact(parsing: again.identityToken, maximumLength: 8192).header)
        #expect(header.keyID == world.emulator.activeSigningKeyID && header.algorithm == "RS256")
    }

    @Test("shared email and string booleans (the 2019–2023 token style)")
    func sharedEmailStringBooleans() throws {
        var configuration = AppleIDEmulator.Configuration()
        configuration.booleanClaims = .string
        configuration.identityTokenLifetime = 86_400
        let world = try EmulatorWorld(configuration: configuration)
        let authorization = try world.emulator.authorize(
            userID: world.user,
            clientID: EmulatorWorld.app,
            nonce: nil,
            state: nil,
            emailMode: .shared
        )
        let payload = try JSONValue.parse(JWSCompact(parsing: authorization.identityToken, maximumLength: 8192).payload)
        #expect(payload["email_verified"] == .string("true"))
        #expect(payload["is_private_email"] == nil, "absent for a real address")
        #expect(payload["nonce"] == nil)
        let claims = try world.verifier().verify(authorization.identityToken, expectedNonce: nil, now: world.clock.now)
        #expect(claims.email == "jane@example.com" && claims.emailVerified && claims.isPrivateEmail == nil)
        #expect(claims.expiresAt - claims.issuedAt == 86_400)
    }

    @Test("an authorization code works once, only for its client, and only for 5 minutes")
    func authorizationCode() async throws {
        let world = try EmulatorWorld()
        func authorize() throws -> AppleAuthorization {
            try world.emulator.authorize(
                userID: world.user,
                clientID: EmulatorWorld.app,
                nonce: "n",
                state: nil,
                emailMode: .hidden
            )
        }
        let first = try authorize()
        let response = try await world.clientA.exchangeAuthorizationCode(
            first.authorizationCode,
            clientID: EmulatorWorld.app
        )
        #expect(response.tokenType == "Bearer" && response.expiresIn == 3600)
        let refreshToken = try #require(response.refreshToken)
        let idToken = try #require(response.idToken)
        let claims = try world.verifier().verify(idToken, expectedNonce: "n", now: world.clock.now)
        #expect(
            claims.subject == first.user && claims.accessTokenHash == AppleIDEmulator.halfHash(response.accessToken)
        )
        #expect(claims.codeHash == nil)

        let reused = await asyncEndpointCode {
            _ = try await world.clientA.exchangeAuthorizationCode(first.authorizationCode, clientID: EmulatorWorld.app)
        }
        #expect(reused == .invalidGrant)

        let second = try authorize()
        let otherClient = await asyncEndpointCode {
            _ = try await world.clientA.exchangeAuthorizationCode(second.authorizationCode, clientID: EmulatorWorld.web)
        }
        #expect(otherClient == .invalidGrant, "a code is bound to the client id it was issued to")
        world.clock.advance(299)
        _ = try await world.clientA.exchangeAuthorizationCode(second.authorizationCode, clientID: EmulatorWorld.app)

        let third = try authorize()
        world.clock.advance(300)
        let expired = await asyncEndpointCode {
            _ = try await world.clientA.exchangeAuthorizationCode(third.authorizationCode, clientID: EmulatorWorld.app)
        }
        #expect(expired == .invalidGrant)
        let unknown = await asyncEndpointCode {
            _ = try await world.clientA.exchangeAuthorizationCode("c0.0.nonsense", clientID: EmulatorWorld.app)
        }
        #expect(unknown == .invalidGrant)

        // Refresh: a new access token and identity token, no new refresh token.
        let refreshed = try await world.clientA.refresh(refreshToken, clientID: EmulatorWorld.app)
        #expect(refreshed.refreshToken == nil && refreshed.idToken != nil)
        let wrongClient = await asyncEndpointCode {
            _ = try await world.clientA.refresh(refreshToken, clientID: EmulatorWorld.web)
        }
        #expect(wrongClient == .invalidGrant)
    }

    @Test("redirect_uri must match the authorization request's")
    func redirectURI() async throws {
        let world = try EmulatorWorld()
        let web = try world.emulator.authorize(
            userID: world.user,
            clientID: EmulatorWorld.web,
            nonce: nil,
            state: nil,
            emailMode: .hidden,
            redirectURI: "https://example.com/callback"
        )
        let missing = await asyncEndpointCode {
            _ = try await world.clientA.exchangeAuthorizationCode(web.authorizationCode, clientID: EmulatorWorld.web)
        }
        #expect(missing == .invalidClient)
        _ = try await world.clientA.exchangeAuthorizationCode(
            web.authorizationCode,
            clientID: EmulatorWorld.web,
            redirectURI: "https://example.com/callback"
        )
    }

    @Test("client secrets are validated like Apple does: anything off is invalid_client")
    func clientSecret() throws {
        let world = try EmulatorWorld()
        let code = try world.emulator.authorize(
            userID: world.user,
            clientID: EmulatorWorld.app,
            nonce: nil,
            state: nil,
            emailMode: .hidden
        ).authorizationCode
        func exchange(_ secret: String, clientID: String = EmulatorWorld.app) -> AppleEndpointError.Code? {
            endpointCode {
                _ = try world.emulator.token(form: [
                    ("client_id", clientID), ("client_secret", secret), ("code", code),
                    ("grant_type", "authorization_code"),
                ])
            }
        }
        let good = try world.secret()
        let jws = try JWSCompact(parsing: good, maximumLength: 4096)
        let parts = good.split(separator: ".").map(String.init)
        let der = try #require(P256PublicKey.derSignature(fromRaw: jws.signature))
        let hs256 =
            Base64URL.encode(Array(#"{"alg":"HS256","kid":"KEYAAAAAA1"}"#.utf8)) + "." + parts[1] + "." + parts[2]
        let cases: [(String, String)] = [
            ("unregistered key", try world.secret(key: P256PrivateKey())),
            ("key registered by another team", try world.secret(keyID: EmulatorWorld.keyB, key: world.privateKeyB)),
            (
                "other team's own key",
                try world.secret(teamID: EmulatorWorld.teamB, keyID: EmulatorWorld.keyB, key: world.privateKeyB)
            ),
            ("DER signature", parts[0] + "." + parts[1] + "." + Base64URL.encode(der)),
            ("sub is another client id", try world.secret(clientID: EmulatorWorld.web)),
            ("HS256 header", hs256),
            ("garbage", "not-a-jwt"),
        ]
        for (name, secret) in cases {
            #expect(exchange(secret) == .invalidClient, "\(name)")
        }
        let expired = try world.secret(lifetime: 60)
        world.clock.advance(61)
        #expect(exchange(expired) == .invalidClient, "expired secret")
        #expect(exchange(try world.secret(), clientID: "com.unknown") == .invalidClient, "unknown client id")
        #expect(exchange(try world.secret()) == nil, "the code was not consumed by the failed attempts")
    }

    @Test("a client secret reused across requests has its claims judged on every use")
    func reusedClientSecret() throws {
        let world = try EmulatorWorld()
        func teamToken(_ secret: String, clientID: String = EmulatorWorld.app) -> AppleEndpointError.Code? {
            endpointCode {
                _ = try world.emulator.token(form: [
                    ("client_id", clientID), ("client_secret", secret), ("grant_type", "client_credentials"),
                    ("scope", "user.migration"),
                ])
            }
        }
        let secret = try world.secret(lifetime: 60)
        #expect(teamToken(secret) == nil)
        #expect(teamToken(secret) == nil, "the same secret serves again")
        #expect(teamToken(secret, clientID: EmulatorWorld.web) == .invalidClient, "its sub is still another client")
        // One character of the signature changed: not the text that verified.
        var forged = Array(secret)
        forged[forged.count - 2] = forged[forged.count - 2] == "A" ? "B" : "A"
        #expect(teamToken(String(forged)) == .invalidClient, "a forged signature")
        world.clock.advance(61)
        #expect(teamToken(secret) == .invalidClient, "expired, though its signature verified before")
    }

    @Test("token endpoint parameter errors")
    func tokenParameters() throws {
        let world = try EmulatorWorld()
        let secret = try world.secret()
        func call(_ form: [(name: String, value: String)]) -> AppleEndpointError.Code? {
            endpointCode { _ = try world.emulator.token(form: form) }
        }
        #expect(call([("client_id", EmulatorWorld.app), ("client_secret", secret)]) == .invalidRequest)
        #expect(
            call([("client_id", EmulatorWorld.app), ("client_secret", secret), ("grant_type", "password")])
                == .unsupportedGrantType
        )
        #expect(
            call([("client_id", EmulatorWorld.app), ("client_secret", secret), ("grant_type", "client_credentials")])
                == .invalidRequest
        )
        #expect(
            call([
                ("client_id", EmulatorWorld.app), ("client_secret", secret), ("grant_type", "client_credentials"),
                ("scope", "openid"),
            ]) == .invalidScope
        )
        #expect(
            call([
                ("client_id", EmulatorWorld.app), ("client_id", EmulatorWorld.app), ("client_secret", secret),
                ("grant_type", "client_credentials"), ("scope", "user.migration"),
            ]) == .invalidRequest,
            "a repeated parameter"
        )
        #expect(
            call([("client_id", EmulatorWorld.app), ("client_secret", secret), ("grant_type", "authorization_code")])
                == .invalidRequest,
            "no code"
        )
        let team = try world.emulator.token(form: [
            ("client_id", EmulatorWorld.app), ("client_secret", secret), ("grant_type", "client_credentials"),
            ("scope", "user.migration"),
        ])
        #expect(team.idToken == nil && team.refreshToken == nil && team.expiresIn == 3600)
    }

    @Test("key rotation: old tokens verify while their key is published, new tokens use the new key")
    func keyRotation() throws {
        let world = try EmulatorWorld()
        let oldKeyID = world.emulator.activeSigningKeyID
        func token() throws -> String {
            try world.emulator.authorize(
                userID: world.user,
                clientID: EmulatorWorld.app,
                nonce: nil,
                state: nil,
                emailMode: .hidden
            )
            .identityToken
        }
        let old = try token()
        let newKeyID = world.emulator.rotateSigningKey()
        #expect(newKeyID != oldKeyID && world.emulator.activeSigningKeyID == newKeyID)
        let fresh = try token()
        let verifier = try world.verifier()
        #expect(verifier.keys.keyIDs == [oldKeyID, newKeyID])
        _ = try verifier.verify(old, expectedNonce: nil, now: world.clock.now)
        _ = try verifier.verify(fresh, expectedNonce: nil, now: world.clock.now)
        #expect(try JWSHeader(json: JWSCompact(parsing: fresh, maximumLength: 8192).header).keyID == newKeyID)

        // A verifier holding only the old set meets an unknown kid (and must refetch).
        let stale = IdentityTokenVerifier(
            keys: try JWKSet(keys: [(oldKeyID, try #require(verifier.keys[oldKeyID]))]),
            policy: verifier.policy
        )
        #expect(throws: IdentityTokenError.self) { try stale.verify(fresh, expectedNonce: nil, now: world.clock.now) }

        #expect(throws: AppleEmulatorError.self) { try world.emulator.retireSigningKey(newKeyID) }
        try world.emulator.retireSigningKey(oldKeyID)
        let after = try world.verifier()
        #expect(after.keys.keyIDs == [newKeyID])
        do {
            _ = try after.verify(old, expectedNonce: nil, now: world.clock.now)
            Issue.record("a token of a retired key verified")
        } catch {
            #expect(error.code == .unknownKeyID)
        }
        // The published set is valid JSON of Apple's shape.
        let published = try JWKSet(json: world.emulator.keySet.json.serialized())
        #expect(published.keyIDs == [newKeyID])
    }

    @Test("app transfer: transfer ids round-trip, are stable and 1:1, and the window closes after 60 days")
    func transfer() async throws {
        let world = try EmulatorWorld()
        let other = try world.emulator.createUser(email: "john@example.com")
        let jane = try world.emulator.authorize(
            userID: world.user,
            clientID: EmulatorWorld.app,
            nonce: nil,
            state: nil,
            emailMode: .hidden
        )
        let john = try world.emulator.authorize(
            userID: other,
            clientID: EmulatorWorld.app,
            nonce: nil,
            state: nil,
            emailMode: .shared
        )
        let relayA = try world.emulator.relayEmail(userID: world.user, teamID: EmulatorWorld.teamA)

        // Sender side, before the transfer (TN3159 preparation).
        let teamTokenA = try await world.clientA.teamAccessToken(clientID: EmulatorWorld.app).accessToken
        let transferJane = try await world.clientA.transferSub(
            forSub: jane.user,
            target: EmulatorWorld.teamB,
            clientID: EmulatorWorld.app,
            accessToken: teamTokenA
        )
        let transferJaneAgain = try await world.clientA.transferSub(
            forSub: jane.user,
            target: EmulatorWorld.teamB,
            clientID: EmulatorWorld.app,
            accessToken: teamTokenA
        )
        let transferJohn = try await world.clientA.transferSub(
            forSub: john.user,
            target: EmulatorWorld.teamB,
            clientID: EmulatorWorld.app,
            accessToken: teamTokenA
        )
        #expect(transferJane == transferJaneAgain, "stable")
        #expect(transferJane != transferJohn && transferJane != jane.user, "1:1 and not the sub")
        let toOtherTeam = try world.emulator.transferID(user: world.user, from: EmulatorWorld.teamA, to: "TEAMCCCCC3")
        #expect(toOtherTeam != transferJane, "specific to the recipient team")

        // Before the transfer completes, B cannot use the app's client id.
        let early = await asyncEndpointCode { _ = try await world.clientB.teamAccessToken(clientID: EmulatorWorld.app) }
        #expect(early == .invalidClient)

        try world.emulator.transferApp(clientID: EmulatorWorld.app, toTeam: EmulatorWorld.teamB)
        world.clock.advance(86_400)

        // Recipient side.
        let teamTokenB = try await world.clientB.teamAccessToken(clientID: EmulatorWorld.app).accessToken
        let migratedJane = try await world.clientB.migrate(
            transferSub: transferJane,
            clientID: EmulatorWorld.app,
            accessToken: teamTokenB
        )
        let subB = try world.emulator.subject(userID: world.user, teamID: EmulatorWorld.teamB)
        #expect(migratedJane.sub == subB && subB != jane.user)
        #expect(migratedJane.email == (try world.emulator.relayEmail(userID: world.user, teamID: EmulatorWorld.teamB)))
        #expect(migratedJane.email != relayA && migratedJane.isPrivateEmail == true)
        let migratedJohn = try await world.clientB.migrate(
            transferSub: transferJohn,
            clientID: EmulatorWorld.app,
            accessToken: teamTokenB
        )
        #expect(migratedJohn.email == nil && migratedJohn.isPrivateEmail == nil, "shared addresses are not returned")
        #expect(AppleMigrationInfo.migratedUser(migratedJane).json["is_private_email"] == .bool(true))

        // The sender cannot redeem, the recipient cannot mint for the sender.
        let freshTokenA = try await world.clientA.teamAccessToken(clientID: EmulatorWorld.app).accessToken
        let senderRedeems = await asyncEndpointCode {
            _ = try await world.clientA.migrate(
                transferSub: transferJane,
                clientID: EmulatorWorld.app,
                accessToken: freshTokenA
            )
        }
        #expect(senderRedeems == .invalidRequest)

        // Signing in during the window: the new sub plus transfer_sub.
        let during = try world.emulator.authorize(
            userID: world.user,
            clientID: EmulatorWorld.app,
            nonce: nil,
            state: nil,
            emailMode: .hidden
        )
        let claims = try world.verifier().verify(during.identityToken, expectedNonce: nil, now: world.clock.now)
        #expect(claims.subject == subB && claims.transferSub == transferJane && !during.isFirstAuthorization)
        #expect(world.emulator.credentialState(forUserID: jane.user, clientID: EmulatorWorld.app) == .transferred)
        #expect(world.emulator.credentialState(forUserID: subB, clientID: EmulatorWorld.app) == .authorized)
        #expect(world.emulator.credentialState(forUserID: "000000.x.0000", clientID: EmulatorWorld.app) == .notFound)

        // The Services ID moved with its primary App ID.
        _ = try await world.clientB.teamAccessToken(clientID: EmulatorWorld.web)

        // After 60 days: no more transfer_sub, no more exchange, the sender is out.
        world.clock.advance(59 * 86_400)
        let lateToken = try await world.clientB.teamAccessToken(clientID: EmulatorWorld.app).accessToken
        let late = await asyncEndpointCode {
            _ = try await world.clientB.migrate(
                transferSub: transferJohn,
                clientID: EmulatorWorld.app,
                accessToken: lateToken
            )
        }
        #expect(late == .invalidRequest)
        let after = try world.emulator.authorize(
            userID: world.user,
            clientID: EmulatorWorld.app,
            nonce: nil,
            state: nil,
            emailMode: .hidden
        )
        #expect(
            try world.verifier().verify(after.identityToken, expectedNonce: nil, now: world.clock.now).transferSub
                == nil
        )
        let senderLate = await asyncEndpointCode {
            _ = try await world.clientA.teamAccessToken(clientID: EmulatorWorld.app)
        }
        #expect(senderLate == .invalidClient)
    }

    @Test(
        "users created in a batch have signed in to the app already: subs, emails and migration as authorize leaves them"
    )
    func authorizedUserBatch() async throws {
        let world = try EmulatorWorld()
        let hidden = try world.emulator.createAuthorizedUsers(count: 3, clientID: EmulatorWorld.web, emailMode: .hidden)
        let shared = try world.emulator.createAuthorizedUsers(count: 2, clientID: EmulatorWorld.app, emailMode: .shared)
        #expect(hidden.count == 3 && shared.count == 2)
        #expect(Set((hidden + shared).map(\.userID)).count == 5 && Set((hidden + shared).map(\.sub)).count == 5)
        for user in hidden + shared {
            #expect(Self.hasSubShape(user.sub))
            #expect(user.sub == (try world.emulator.subject(userID: user.userID, teamID: EmulatorWorld.teamA)))
            // Consent is per app group: the Services ID's batch authorized its primary App ID too.
            #expect(world.emulator.credentialState(forUserID: user.sub, clientID: EmulatorWorld.app) == .authorized)
        }
        for user in hidden {
            #expect(user.email == (try world.emulator.relayEmail(userID: user.userID, teamID: EmulatorWorld.teamA)))
        }
        #expect(shared.allSatisfy { $0.email == $0.userID + "@example.com" })

        // The next sign-in is not the first and keeps the recorded email choice.
        let again = try world.emulator.authorize(
            userID: hidden[0].userID,
            clientID: EmulatorWorld.app,
            nonce: nil,
            state: nil,
            emailMode: .shared
        )
        #expect(again.user == hidden[0].sub && !again.isFirstAuthorization)
        let claims = try world.verifier().verify(again.identityToken, expectedNonce: nil, now: world.clock.now)
        #expect(claims.email == hidden[0].email)

        // They can be migrated like any user who signed in.
        let token = try await world.clientA.teamAccessToken(clientID: EmulatorWorld.app).accessToken
        let transferSub = try await world.clientA.transferSub(
            forSub: shared[1].sub,
            target: EmulatorWorld.teamB,
            clientID: EmulatorWorld.app,
            accessToken: token
        )
        #expect(Self.hasSubShape(transferSub))

        #expect(throws: AppleEmulatorError.self) {
            try world.emulator.createAuthorizedUsers(count: 0, clientID: EmulatorWorld.app, emailMode: .shared)
        }
        #expect(throws: AppleEmulatorError.self) {
            try world.emulator.createAuthorizedUsers(
                count: AppleIDEmulator.maximumUserBatch + 1,
                clientID: EmulatorWorld.app,
                emailMode: .shared
            )
        }
        let unknown = #expect(throws: AppleEmulatorError.self) {
            try world.emulator.createAuthorizedUsers(count: 1, clientID: "com.nothing", emailMode: .shared)
        }
        #expect(unknown?.code == .unknownApp)
    }

    @Test("migration request errors")
    func migrationErrors() async throws {
        let world = try EmulatorWorld()
        let jane = try world.emulator.authorize(
            userID: world.user,
            clientID: EmulatorWorld.app,
            nonce: nil,
            state: nil,
            emailMode: .hidden
        )
        let token = try await world.clientA.teamAccessToken(clientID: EmulatorWorld.app).accessToken
        let secret = try world.secret()
        func call(_ form: [(name: String, value: String)], bearer: String?) -> AppleEndpointError.Code? {
            endpointCode { _ = try world.emulator.userMigrationInfo(form: form, authorization: bearer) }
        }
        let base: [(name: String, value: String)] = [("client_id", EmulatorWorld.app), ("client_secret", secret)]
        #expect(call(base + [("sub", jane.user), ("target", EmulatorWorld.teamB)], bearer: nil) == .invalidRequest)
        #expect(
            call(base + [("sub", jane.user), ("target", EmulatorWorld.teamB)], bearer: "Bearer nope") == .invalidGrant
        )
        #expect(call(base + [("sub", jane.user)], bearer: "Bearer \(token)") == .invalidRequest, "no target")
        #expect(call(base + [("sub", jane.user), ("target", "short")], bearer: "Bearer \(token)") == .invalidRequest)
        #expect(
            call(base + [("sub", jane.user), ("target", EmulatorWorld.teamA)], bearer: "Bearer \(token)")
                == .invalidRequest
        )
        #expect(
            call(base + [("sub", "123456.nobody.0000"), ("target", EmulatorWorld.teamB)], bearer: "Bearer \(token)")
                == .invalidRequest
        )
        #expect(
            call(
                base + [("sub", jane.user), ("target", EmulatorWorld.teamB), ("transfer_sub", "x")],
                bearer: "Bearer \(token)"
            )
                == .invalidRequest
        )
        world.clock.advance(3600)
        let later: [(name: String, value: String)] = [
            ("client_id", EmulatorWorld.app), ("client_secret", try world.secret()),
        ]
        #expect(
            call(later + [("sub", jane.user), ("target", EmulatorWorld.teamB)], bearer: "Bearer \(token)")
                == .invalidGrant,
            "the access token expired after an hour"
        )

        // A per-user access token is single-use here.
        let authorization = try world.emulator.authorize(
            userID: world.user,
            clientID: EmulatorWorld.app,
            nonce: nil,
            state: nil,
            emailMode: .hidden
        )
        let perUser = try await world.clientA.exchangeAuthorizationCode(
            authorization.authorizationCode,
            clientID: EmulatorWorld.app
        )
        let fresh =
            [("client_id", EmulatorWorld.app), ("client_secret", try world.secret())] + [
                ("sub", jane.user), ("target", EmulatorWorld.teamB),
            ]
        #expect(call(fresh, bearer: "Bearer \(perUser.accessToken)") == nil)
        #expect(call(fresh, bearer: "Bearer \(perUser.accessToken)") == .invalidGrant)

        // A user who revoked cannot be migrated.
        try world.emulator.revokeConsent(userID: world.user, clientID: EmulatorWorld.app)
        let teamToken = try await world.clientA.teamAccessToken(clientID: EmulatorWorld.app).accessToken
        #expect(call(fresh, bearer: "Bearer \(teamToken)") == .invalidRequest)
    }

    @Test("revoking a token ends the authorization; unknown tokens revoke fine")
    func revoke() async throws {
        let world = try EmulatorWorld()
        let exchanger: any AppleTokenExchanging = world.clientA
        let first = try world.emulator.authorize(
            userID: world.user,
            clientID: EmulatorWorld.app,
            nonce: nil,
            state: nil,
            emailMode: .hidden
        )
        let response = try await exchanger.exchangeAuthorizationCode(
            first.authorizationCode,
            clientID: EmulatorWorld.app
        )
        let refreshToken = try #require(response.refreshToken)
        #expect(
            await asyncEndpointCode { try await exchanger.revoke(token: refreshToken, clientID: EmulatorWorld.web) }
                == .invalidRequest
        )
        try await exchanger.revoke(token: refreshToken, clientID: EmulatorWorld.app)
        try await exchanger.revoke(token: refreshToken, clientID: EmulatorWorld.app)
        try await exchanger.revoke(token: "never-issued", clientID: EmulatorWorld.app)
        #expect(
            await asyncEndpointCode { _ = try await world.clientA.refresh(refreshToken, clientID: EmulatorWorld.app) }
                == .invalidGrant
        )
        #expect(world.emulator.credentialState(forUserID: first.user, clientID: EmulatorWorld.app) == .revoked)
        let again = try world.emulator.authorize(
            userID: world.user,
            clientID: EmulatorWorld.app,
            nonce: nil,
            state: nil,
            emailMode: .shared
        )
        #expect(again.isFirstAuthorization && again.user == first.user && again.email == "jane@example.com")
        #expect(
            endpointCode {
                try world.emulator.revoke(form: [
                    ("client_id", EmulatorWorld.app), ("client_secret", try world.secret()), ("token", "t"),
                    ("token_type_hint", "id_token"),
                ])
            } == .invalidRequest
        )
    }

    @Test("consent revocation, account deletion and email forwarding send signed notifications")
    func notifications() async throws {
        var configuration = AppleIDEmulator.Configuration()
        configuration.accountDeletedEventType = AppleServerNotification.EventType("account-delete")
        let world = try EmulatorWorld(configuration: configuration)
        let authorization = try world.emulator.authorize(
            userID: world.user,
            clientID: EmulatorWorld.web,
            nonce: nil,
            state: nil,
            emailMode: .hidden
        )
        let keys = world.emulator.keySet

        func decode(_ notification: AppleServerNotification) throws -> (claims: JSONValue, event: JSONValue) {
            let jws = try JWSCompact(parsing: notification.payload, maximumLength: 8192)
            let header = try JWSHeader(json: jws.header)
            let keyID = try #require(header.keyID)
            let key = try #require(keys[keyID])
            #expect(header.algorithm == "RS256" && key.verify(signature: jws.signature, message: jws.signingInput))
            let claims = try JSONValue.parse(jws.payload)
            let events = try #require(claims["events"]?.stringValue, "events arrive as a JSON-encoded string")
            return (claims, try JSONValue.parse(Array(events.utf8)))
        }

        try world.emulator.setEmailForwarding(userID: world.user, teamID: EmulatorWorld.teamA, enabled: true)
        try world.emulator.setEmailForwarding(userID: world.user, teamID: EmulatorWorld.teamA, enabled: false)
        try world.emulator.setEmailForwarding(userID: world.user, teamID: EmulatorWorld.teamA, enabled: false)
        try world.emulator.revokeConsent(userID: world.user, clientID: EmulatorWorld.web)
        let exchange = await asyncEndpointCode {
            _ = try await world.clientA.exchangeAuthorizationCode(
                authorization.authorizationCode,
                clientID: EmulatorWorld.web
            )
        }
        #expect(exchange == .invalidGrant, "a code dies with the consent")
        _ = try world.emulator.authorize(
            userID: world.user,
            clientID: EmulatorWorld.app,
            nonce: nil,
            state: nil,
            emailMode: .hidden
        )
        try world.emulator.deleteAccount(userID: world.user)
        #expect(throws: AppleEmulatorError.self) {
            try world.emulator.authorize(
                userID: world.user,
                clientID: EmulatorWorld.app,
                nonce: nil,
                state: nil,
                emailMode: .hidden
            )
        }
        #expect(world.emulator.credentialState(forUserID: authorization.user, clientID: EmulatorWorld.app) == .revoked)

        let sent = world.emulator.drainNotifications()
        #expect(sent.map(\.type.rawValue) == ["email-disabled", "consent-revoked", "account-delete"])
        #expect(sent.allSatisfy { $0.clientID == EmulatorWorld.app }, "sent for the primary App ID")
        #expect(world.emulator.drainNotifications().isEmpty)
        let (claims, disabled) = try decode(sent[0])
        #expect(claims["iss"] == .string("https://appleid.apple.com") && claims["aud"] == .string(EmulatorWorld.app))
        #expect(claims["jti"]?.stringValue?.isEmpty == false && claims["iat"] == .integer(world.clock.now))
        #expect(disabled["sub"] == .string(authorization.user) && disabled["is_private_email"] == .string("true"))
        #expect(
            disabled["email"] == .string(try world.emulator.relayEmail(userID: world.user, teamID: EmulatorWorld.teamA))
        )
        #expect(try decode(sent[1]).event["type"] == .string("consent-revoked"))
        #expect(try decode(sent[2]).event["sub"] == .string(authorization.user))
        #expect(sent[0].body["payload"] == .string(sent[0].payload))
    }

    @Test("management API refusals")
    func management() throws {
        let world = try EmulatorWorld()
        let cases: [(String, () throws -> Void, AppleEmulatorError.Code)] = [
            ("short team id", { try world.emulator.addTeam("ABC") }, .invalidIdentifier),
            ("duplicate team", { try world.emulator.addTeam(EmulatorWorld.teamA) }, .alreadyExists),
            (
                "app of unknown team", { try world.emulator.addApp(clientID: "com.x", teamID: "TEAMZZZZZ9") },
                .unknownTeam
            ),
            (
                "duplicate app",
                { try world.emulator.addApp(clientID: EmulatorWorld.app, teamID: EmulatorWorld.teamA) }, .alreadyExists
            ),
            (
                "group across teams",
                {
                    try world.emulator.addApp(
                        clientID: "com.y",
                        teamID: EmulatorWorld.teamB,
                        primaryAppID: EmulatorWorld.app
                    )
                },
                .unknownApp
            ),
            (
                "unknown user",
                {
                    _ = try world.emulator.authorize(
                        userID: "user-0",
                        clientID: EmulatorWorld.app,
                        nonce: nil,
                        state: nil,
                        emailMode: .hidden
                    )
                }, .unknownUser
            ),
            (
                "unknown app",
                {
                    _ = try world.emulator.authorize(
                        userID: world.user,
                        clientID: "com.none",
                        nonce: nil,
                        state: nil,
                        emailMode: .hidden
                    )
                }, .unknownApp
            ),
            (
                "transfer a grouped Services ID",
                { try world.emulator.transferApp(clientID: EmulatorWorld.web, toTeam: EmulatorWorld.teamB) },
                .notAllowed
            ),
            (
                "transfer to the owner",
                { try world.emulator.transferApp(clientID: EmulatorWorld.app, toTeam: EmulatorWorld.teamA) },
                .notAllowed
            ),
            (
                "revoke without consent",
                { try world.emulator.revokeConsent(userID: world.user, clientID: EmulatorWorld.app) }, .notAllowed
            ),
            ("retire unknown key", { try world.emulator.retireSigningKey("nope") }, .unknownKey),
        ]
        for (name, action, code) in cases {
            do {
                try action()
                Issue.record("\(name): accepted")
            } catch let error as AppleEmulatorError {
                #expect(error.code == code, "\(name): \(error.message)")
            } catch {
                Issue.record("\(name): \(error)")
            }
        }
    }

    @Test("many concurrent sign-ins and exchanges")
    func concurrency() async throws {
        let world = try EmulatorWorld()
        let users = try (0..<8).map { try world.emulator.createUser(email: "user\($0)@example.com") }
        let verifier = try world.verifier()
        let subs = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<32 {
                group.addTask {
                    let user = users[index % users.count]
                    let authorization = try world.emulator.authorize(
                        userID: user,
                        clientID: index % 2 == 0 ? EmulatorWorld.app : EmulatorWorld.web,
                        nonce: "n\(index)",
                        state: nil,
                        emailMode: .hidden
                    )
                    let response = try await world.clientA.exchangeAuthorizationCode(
                        authorization.authorizationCode,
                        clientID: index % 2 == 0 ? EmulatorWorld.app : EmulatorWorld.web
                    )
                    let claims = try verifier.verify(
                        try #require(response.idToken),
                        expectedNonce: "n\(index)",
                        now: world.clock.now
                    )
                    #expect(claims.subject == authorization.user)
                    return claims.subject
                }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(subs.count == 32 && Set(subs).count == 8, "one stable sub per user and team")
    }
}

extension AppleIDEmulator {
    /// The transfer id of a user between two teams (test access to the stable mapping).
    func transferID(user: String, from: String, to: String) throws -> String {
        state.withLock { Self.transferID(&$0, userID: user, from: from, to: to) }
    }
}
