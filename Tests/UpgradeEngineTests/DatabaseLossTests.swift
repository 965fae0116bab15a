import Foundation
import Testing

@testable import UpgradeEngine

/// While the database cannot be reached every upgrade call fails as `databaseUnavailable` and
/// changes nothing; a conversion whose commit meets the outage did not happen; once the database is
/// back, the same service goes on.
@Suite("Losing the database")
struct DatabaseLossTests {
    typealias H = UpgradeHarness
    let now = UpgradeHarness.now

    func service(
        _ h: UpgradeHarness,
        _ store: FlakyStore,
        onEffect: @escaping @Sendable (UpgradeEffect, String) -> Void = { _, _ in }
    ) throws -> UpgradeService {
        var configuration = UpgradeServiceConfiguration(appleTeamID: H.teamID)
        configuration.onEffect = onEffect
        return UpgradeService(
            store: store,
            passwords: PasswordVerifier(dummyParameters: H.fastHash),
            secrets: h.secrets,
            identityTokens: IdentityTokenVerifier(
                keys: try JWKSet(keys: [(H.keyID, H.appleKey.publicKey)]),
                policy: try IdentityTokenPolicy(allowedAudiences: [H.clientID])
            ),
            apple: h.apple,
            configuration: configuration
        )
    }

    func failure(_ body: () async throws -> some Any) async -> ServiceFailure? {
        do {
            _ = try await body()
            Issue.record("expected a failure")
            return nil
        } catch {
            return error as? ServiceFailure
        }
    }

    @Test("every upgrade call fails as databaseUnavailable while the database is away, and works once it is back")
    func callsWhileAway() async throws {
        let h = try UpgradeHarness()
        let flaky = FlakyStore(h.store)
        let service = try service(h, flaky)
        try h.addAccount("alice", password: "pw")
        let open = try service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: now)
        let credential = UpgradeService.AppleCredential(
            identityToken: H.identityToken(nonce: open.nonce),
            authorizationCode: "c.1",
            state: open.state ?? ""
        )

        flaky.setDown(true)
        let failures = [
            await failure { try service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: now) },
            await failure { try service.view(id: open.id, now: now) },
            await failure { try service.stepUp(id: open.id, code: .totp("123456"), now: now) },
            await failure { try await service.submitAppleCredential(id: open.id, credential, now: now) },
            await failure { try service.cancel(id: open.id, reason: .userCanceled, now: now) },
        ]
        for failure in failures {
            #expect(failure?.kind == .databaseUnavailable, "\(String(describing: failure))")
            #expect(failure?.message.contains("retry") == true)
            #expect(failure?.cause?.contains("unavailable") == true, "the storage error is kept for the log")
        }
        #expect(h.apple.exchangeCount == 0)

        flaky.setDown(false)
        let done = try await service.submitAppleCredential(id: open.id, credential, now: now + 1)
        #expect(done.status == .completed)
        #expect(try h.account("alice")?.credentialKind == .appleOnly)
    }

    @Test("a conversion whose commit meets the outage did not happen: the account keeps its password")
    func conversionCommitMeetsOutage() async throws {
        let h = try UpgradeHarness()
        let flaky = FlakyStore(h.store)
        // The database goes away while Apple exchanges the code: after the claim, before the conversion.
        let service = try service(h, flaky) { effect, _ in
            if case .exchangeAuthorizationCode = effect { flaky.setDown(true) }
        }
        let alice = try h.addAccount("alice", password: "pw")
        let open = try service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: now)
        let credential = UpgradeService.AppleCredential(
            identityToken: H.identityToken(nonce: open.nonce),
            authorizationCode: "c.1",
            state: open.state ?? ""
        )
        let failed = await failure { try await service.submitAppleCredential(id: open.id, credential, now: now + 1) }
        #expect(failed?.kind == .databaseUnavailable)
        #expect(h.apple.exchangeCount == 1)

        flaky.setDown(false)
        #expect(try h.account("alice")?.credentialKind == .password)
        #expect(try h.store.read { try $0.appleLink(accountID: alice.id) } == nil)
        #expect(try h.store.read { try $0.passwordCredential(accountID: alice.id) } != nil)
        #expect(try service.load(open.id).status == "converting", "claimed, then nothing")
    }
}
