import Foundation
import Synchronization
import Testing

@testable import UpgradeEngine

/// Apple's keys unreachable: the upgrade must not fail for it.
@Suite("Apple key outage during an upgrade")
struct AppleKeysOutageTests {
    /// Fails with `keysUnavailable` while `down` is set, then verifies with the harness's key.
    final class FlakyKeys: IdentityTokenVerifying {
        let down = Atomic<Bool>(true)
        let verifier: IdentityTokenVerifier

        init() throws {
            verifier = IdentityTokenVerifier(
                keys: try JWKSet(keys: [(UpgradeHarness.keyID, UpgradeHarness.appleKey.publicKey)]),
                policy: try IdentityTokenPolicy(allowedAudiences: [UpgradeHarness.clientID])
            )
        }

        func verifyIdentityToken(
            _ token: String,
            nonce: IdentityTokenVerifier.NonceExpectation?,
            now: Int64
        ) async throws(IdentityTokenError) -> AppleIdentityClaims {
            if down.load(ordering: .relaxed) {
                throw IdentityTokenError(.keysUnavailable, "Apple's key set is not available")
            }
            return try verifier.verify(token, nonce: nonce, now: now)
        }
    }

    @Test("an outage answers apple-unavailable and keeps the upgrade open; the retry completes it")
    func outageKeepsUpgradeOpen() async throws {
        let harness = try UpgradeHarness()
        try harness.addAccount("alice", password: "pw")
        let keys = try FlakyKeys()
        let service = UpgradeService(
            store: harness.store,
            passwords: PasswordVerifier(dummyParameters: UpgradeHarness.fastHash),
            secrets: harness.secrets,
            identityTokens: keys,
            apple: harness.apple,
            configuration: UpgradeServiceConfiguration(appleTeamID: UpgradeHarness.teamID)
        )
        let now = UpgradeHarness.now
        let started = try service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: now)
        let credential = UpgradeService.AppleCredential(
            identityToken: UpgradeHarness.identityToken(nonce: started.nonce),
            authorizationCode: "c." + SecureRandom.token(),
            state: started.state ?? ""
        )
        do {
            _ = try await service.submitAppleCredential(id: started.id, credential, now: now + 1)
            Issue.record("verified without keys")
        } catch {
            #expect(error.kind == .appleUnavailable)
            #expect(error.cause?.isEmpty == false, "the log line learns why the keys were unavailable")
            #expect(error.status == .awaitingAppleCredential)
        }
        #expect(try service.view(id: started.id, now: now + 1).status == .awaitingAppleCredential)
        #expect(harness.apple.exchangeCount == 0)

        keys.down.store(false, ordering: .relaxed)
        let done = try await service.submitAppleCredential(id: started.id, credential, now: now + 2)
        #expect(done.status == .completed)
    }
}
