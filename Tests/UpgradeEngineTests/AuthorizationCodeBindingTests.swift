import Foundation
import Testing

@testable import UpgradeEngine

/// An authorization code is accepted only with the identity token it belongs to: `c_hash` before the
/// code is spent, the `sub` of the `id_token` Apple returns with the exchange after.
@Suite("Authorization code bound to its identity token")
struct AuthorizationCodeBindingTests {
    typealias H = UpgradeHarness
    let now = UpgradeHarness.now
    let sub = "001234.0123456789abcdef0123456789abcdef.1234"
    let otherSub = "009999.fedcba9876543210fedcba9876543210.9999"

    func started(_ h: UpgradeHarness, _ username: String = "alice") throws -> UpgradeAnswer {
        try h.addAccount(username, password: "pw")
        return try h.service.start(username: username, password: "pw", serviceIdentifier: "s", now: now)
    }

    func submit(
        _ h: UpgradeHarness,
        _ answer: UpgradeAnswer,
        token: String,
        code: String
    ) async -> Result<UpgradeAnswer, ServiceFailure> {
        do {
            let credential = UpgradeService.AppleCredential(
                identityToken: token,
                authorizationCode: code,
                state: answer.state ?? ""
            )
            return .success(try await h.service.submitAppleCredential(id: answer.id, credential, now: now + 5))
        } catch {
            return .failure(error)
        }
    }

    /// Nothing of the upgrade reached the account: still a password account, no Apple link.
    func expectUnchanged(_ h: UpgradeHarness, _ username: String = "alice") throws {
        let account = try #require(try h.account(username))
        #expect(account.credentialKind == .password)
        #expect(try h.store.read { try $0.appleLink(accountID: account.id) } == nil)
        #expect(try h.store.read { try $0.passwordCredential(accountID: account.id) } != nil)
    }

    @Test("c_hash is the base64url left half of SHA-256 of the code (OpenID Connect)")
    func halfHash() {
        // SHA-256("abc") = ba7816bf 8f01cfea 414140de 5dae2223 b00361a3 96177a9c b410ff61 f20015ad.
        #expect(AuthorizationCodeExchange.halfHash("abc") == Base64URL.encode(Digest.sha256("abc").prefix(16)))
        #expect(AuthorizationCodeExchange.halfHash("abc") == "ungWv48Bz-pBQUDeXa4iIw")
    }

    @Test("a token whose c_hash names another code fails the upgrade before the code is spent")
    func codeHashMismatch() async throws {
        let h = try UpgradeHarness()
        let answer = try started(h)
        let code = "c." + SecureRandom.token()
        let token = H.identityToken(
            nonce: answer.nonce,
            extra: ["c_hash": .string(AuthorizationCodeExchange.halfHash("c." + SecureRandom.token()))]
        )
        let result = await submit(h, answer, token: token, code: code)
        guard case .failure(let failure) = result else {
            Issue.record("a code for another token was accepted")
            return
        }
        #expect(failure.kind == .invalidAuthorizationCode)
        #expect(failure.status == .failed)
        #expect(h.apple.exchangeCount == 0, "the code never reached Apple")
        try expectUnchanged(h)
        let view = try h.service.view(id: answer.id, now: now + 6)
        #expect(view.status == .failed)
        #expect(view.problem == .invalidAuthorizationCode)
    }

    @Test("a token whose c_hash names this code completes")
    func codeHashMatches() async throws {
        let h = try UpgradeHarness()
        let answer = try started(h)
        let code = "c." + SecureRandom.token()
        let token = H.identityToken(
            nonce: answer.nonce,
            extra: ["c_hash": .string(AuthorizationCodeExchange.halfHash(code))]
        )
        let result = await submit(h, answer, token: token, code: code)
        #expect((try? result.get())?.status == .completed)
    }

    @Test("without c_hash, the code completes when the exchanged id_token names the token's sub")
    func noCodeHashSameUser() async throws {
        let h = try UpgradeHarness()
        let answer = try started(h)
        h.apple.codesBelong(to: sub)
        let result = await submit(h, answer, token: H.identityToken(sub: sub, nonce: answer.nonce), code: "c.1")
        #expect((try? result.get())?.status == .completed)
        #expect(h.apple.revokedTokens.isEmpty)
    }

    @Test(
        "without c_hash, a code of another user (or an id_token missing) fails the upgrade, stores nothing and revokes the grant",
        arguments: [true, false]
    )
    func noCodeHashOtherUser(idTokenReturned: Bool) async throws {
        let h = try UpgradeHarness()
        let answer = try started(h)
        h.apple.codesBelong(to: idTokenReturned ? otherSub : nil)
        let result = await submit(h, answer, token: H.identityToken(sub: sub, nonce: answer.nonce), code: "c.2")
        guard case .failure(let failure) = result else {
            Issue.record("another user's code was accepted")
            return
        }
        #expect(failure.kind == .invalidAuthorizationCode)
        #expect(failure.status == .failed)
        #expect(h.apple.exchangeCount == 1)
        #expect(h.apple.revokedTokens == h.apple.issuedRefreshTokens, "the grant just obtained is revoked at Apple")
        try expectUnchanged(h)
        let view = try h.service.view(id: answer.id, now: now + 6)
        #expect(view.problem == .invalidAuthorizationCode)
        let trail = try h.store.read { try $0.auditTrail(upgradeID: answer.id, limit: 20) }
        #expect(trail.last?.detail["grantRevoked"] == "true")
        #expect(!trail.contains { $0.detail.values.contains(otherSub) }, "the other user's sub is not recorded")
    }

    @Test("against the emulator: user A's token with user B's code is refused, and B's code still works for B")
    func emulatorUsers() async throws {
        let world = try UpgradeEmulatorTests.World()
        try world.harness.addAccount("alice", password: "pw")
        try world.harness.addAccount("bob", password: "pw")
        let bobUser = try world.emulator.createUser(email: "bob@example.com")
        let alice = try world.service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: world.now)
        let bob = try world.service.start(username: "bob", password: "pw", serviceIdentifier: "s", now: world.now)
        let aliceSheet = try world.authorize(alice)
        let bobSheet = try world.sheet(user: bobUser, nonce: bob.nonce, state: bob.state, emailMode: .shared)
        var mixed = aliceSheet
        mixed.authorizationCode = bobSheet.authorizationCode
        do {
            _ = try await world.service.submitAppleCredential(id: alice.id, mixed, now: world.now)
            Issue.record("Alice's token with Bob's code was accepted")
        } catch {
            #expect(error.kind == .invalidAuthorizationCode)
        }
        #expect(try world.harness.account("alice")?.credentialKind == .password)
        // Bob's code was not spent: his own upgrade completes with it.
        let done = try await world.service.submitAppleCredential(
            id: bob.id,
            .init(
                identityToken: bobSheet.identityToken,
                authorizationCode: bobSheet.authorizationCode,
                state: bob.state ?? ""
            ),
            now: world.now
        )
        #expect(done.status == .completed)
    }

    @Test("against the emulator: without c_hash, A's token with B's code links nothing and revokes B's new grant")
    func emulatorWithoutCodeHash() async throws {
        let world = try UpgradeEmulatorTests.World()
        try world.harness.addAccount("alice", password: "pw")
        let bobUser = try world.emulator.createUser(email: "bob@example.com")
        let alice = try world.service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: world.now)
        let aliceSheet = try world.sheet(nonce: alice.nonce, state: alice.state, codeHash: false)
        let bobSheet = try world.sheet(user: bobUser, nonce: nil, state: nil, emailMode: .shared)
        #expect(
            world.emulator.credentialState(forUserID: bobSheet.user, clientID: UpgradeEmulatorTests.clientID)
                == .authorized
        )
        do {
            _ = try await world.service.submitAppleCredential(
                id: alice.id,
                .init(
                    identityToken: aliceSheet.identityToken,
                    authorizationCode: bobSheet.authorizationCode,
                    state: alice.state ?? ""
                ),
                now: world.now
            )
            Issue.record("Alice's token with Bob's code was accepted")
        } catch {
            #expect(error.kind == .invalidAuthorizationCode)
        }
        let account = try #require(try world.harness.account("alice"))
        #expect(account.credentialKind == .password)
        #expect(try world.harness.store.read { try $0.appleLink(accountID: account.id) } == nil)
        #expect(
            world.emulator.credentialState(forUserID: bobSheet.user, clientID: UpgradeEmulatorTests.clientID)
                == .revoked,
            "the grant obtained with Bob's code was revoked at Apple"
        )
    }

    @Test("against the emulator: a token without c_hash still completes with its own code")
    func emulatorOwnCodeWithoutCodeHash() async throws {
        let world = try UpgradeEmulatorTests.World()
        try world.harness.addAccount("alice", password: "pw")
        let alice = try world.service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: world.now)
        let sheet = try world.sheet(nonce: alice.nonce, state: alice.state, codeHash: false)
        let done = try await world.service.submitAppleCredential(
            id: alice.id,
            .init(
                identityToken: sheet.identityToken,
                authorizationCode: sheet.authorizationCode,
                state: alice.state ?? ""
            ),
            now: world.now
        )
        #expect(done.status == .completed)
    }
}
