import Foundation
import Synchronization
import Testing

@testable import UpgradeEngine

/// The service performs exactly the effects the machine returns, in the order it returns them: for
/// each path, the effects observed while the service ran equal those a bare machine returns for the
/// same events.
@Suite("Upgrade service: effects as the machine returns them")
struct UpgradeEffectsTests {
    typealias H = UpgradeHarness
    let now = UpgradeHarness.now
    let sub = "001234.0123456789abcdef0123456789abcdef.1234"

    final class Log: Sendable {
        let effects = Mutex<[UpgradeEffect]>([])
        func record(_ effect: UpgradeEffect, _: String) { effects.withLock { $0.append(effect) } }
        var all: [UpgradeEffect] { effects.withLock { $0 } }
    }

    /// The effects a bare machine returns for `events`, applied in order at `now`.
    func machineEffects(_ events: [UpgradeEvent], now: Int64) throws -> [UpgradeEffect] {
        var machine = UpgradeStateMachine.start(now: now)
        return try events.flatMap { try machine.apply($0, now: now).effects }
    }

    /// The credential for `started`, with its own nonce unless another is given.
    func submit(_ h: UpgradeHarness, _ started: UpgradeAnswer, nonce: String? = nil) async throws -> UpgradeAnswer {
        try await h.service.submitAppleCredential(
            id: started.id,
            .init(
                identityToken: H.identityToken(nonce: nonce ?? started.nonce),
                authorizationCode: "c.1",
                state: started.state!
            ),
            now: now
        )
    }

    func harness(_ log: Log, apple: ScriptedAppleEndpoint = ScriptedAppleEndpoint()) throws -> UpgradeHarness {
        try UpgradeHarness(apple: apple, onEffect: { log.record($0, $1) })
    }

    @Test("password without 2FA, credential, code exchanged: issue, exchange, convert")
    func fullPath() async throws {
        let log = Log()
        let h = try harness(log)
        try h.addAccount("alice", password: "pw")
        let started = try h.service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: now)
        #expect(log.all == [.issueStateAndNonce])
        _ = try await submit(h, started)
        let expected = try machineEffects(
            [
                .passwordEvaluated(.accepted(secondFactor: false)), .appleCredentialEvaluated(.verified(sub: sub)),
                .authorizationCodeExchanged,
            ],
            now: now
        )
        #expect(expected == [.issueStateAndNonce, .exchangeAuthorizationCode, .convertAccount(sub: sub)])
        #expect(log.all == expected)
    }

    @Test("password with 2FA, then the code: nothing, then issue")
    func stepUpPath() throws {
        let log = Log()
        let h = try harness(log)
        let secret = Array("12345678901234567890".utf8)
        try h.addAccount("bob", password: "pw", totpSecret: secret)
        let started = try h.service.start(username: "bob", password: "pw", serviceIdentifier: "s", now: now)
        #expect(log.all == [])
        let code = TOTP.code(secret: secret, parameters: .standard, counter: UInt64(now / 30))
        _ = try h.service.stepUp(id: started.id, code: .totp(code), now: now)
        let expected = try machineEffects(
            [.passwordEvaluated(.accepted(secondFactor: true)), .stepUpEvaluated(.accepted)],
            now: now
        )
        #expect(log.all == expected)
        #expect(expected == [.issueStateAndNonce])
    }

    @Test("a refused code exchange: the exchange, and no conversion")
    func refusedExchange() async throws {
        let log = Log()
        let apple = ScriptedAppleEndpoint()
        apple.fail(with: .invalidGrant)
        let h = try harness(log, apple: apple)
        try h.addAccount("alice", password: "pw")
        let started = try h.service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: now)
        _ = try? await submit(h, started)
        let expected = try machineEffects(
            [
                .passwordEvaluated(.accepted(secondFactor: false)), .appleCredentialEvaluated(.verified(sub: sub)),
                .conversionFailed(.appleExchangeFailed),
            ],
            now: now
        )
        #expect(log.all == expected)
        #expect(expected == [.issueStateAndNonce, .exchangeAuthorizationCode])
    }

    @Test("failures and refusals perform nothing: a wrong password, a rejected credential, a retry")
    func nothingOnFailure() async throws {
        let log = Log()
        let h = try harness(log)
        try h.addAccount("alice", password: "pw")
        _ = try? h.service.start(username: "alice", password: "wrong", serviceIdentifier: "s", now: now)
        #expect(log.all == [])
        let started = try h.service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: now)
        _ = try? await h.service.submitAppleCredential(
            id: started.id,
            .init(identityToken: H.identityToken(nonce: "other"), authorizationCode: "c.1", state: started.state!),
            now: now
        )
        #expect(log.all == [.issueStateAndNonce], "a nonce mismatch performs nothing")
        _ = try? await submit(h, started)
        #expect(log.all == [.issueStateAndNonce], "a failed upgrade is refused before anything is done")
        #expect(h.apple.exchangeCount == 0)
    }
}
