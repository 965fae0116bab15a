import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

@Suite("Upgrade service")
struct UpgradeServiceTests {
    typealias H = UpgradeHarness
    let now = UpgradeHarness.now
    let sub = "001234.0123456789abcdef0123456789abcdef.1234"

    /// Runs `body` and returns the failure it threw, recording an issue if it did not throw one.
    func failure(_ body: () async throws -> some Any) async -> ServiceFailure? {
        do {
            _ = try await body()
            Issue.record("expected a failure")
            return nil
        } catch {
            #expect(error is ServiceFailure, "\(error)")
            return error as? ServiceFailure
        }
    }

    func credential(
        _ answer: UpgradeAnswer,
        token: String? = nil,
        user: String? = nil
    ) -> UpgradeService.AppleCredential {
        UpgradeService.AppleCredential(
            identityToken: token ?? H.identityToken(nonce: answer.nonce),
            authorizationCode: "c." + SecureRandom.token(),
            state: answer.state ?? "",
            user: user
        )
    }

    @Test(
        "password without 2FA: state and nonce issued, credential converts the account and deletes the password",
        arguments: Backend.all
    )
    func happyPathWithoutSecondFactor(_ backend: Backend) async throws {
        let h = try UpgradeHarness(backend: backend)
        let alice = try h.addAccount("alice", password: "correct horse")
        let started = try h.service.start(
            username: "Alice",
            password: "correct horse",
            serviceIdentifier: "example.com",
            now: now
        )
        #expect(started.status == .awaitingAppleCredential)
        #expect(started.result == .success)
        let state = try #require(started.state)
        let nonce = try #require(started.nonce)
        #expect(state.utf8.count >= 43 && nonce.utf8.count >= 43, "≥ 256 random bits each")
        #expect(state != nonce)
        #expect(started.expiresAt == now + 300)

        let completed = try await h.service.submitAppleCredential(
            id: started.id,
            credential(started, user: sub),
            now: now + 5
        )
        #expect(completed.status == .completed)
        #expect(completed.result == .success)
        #expect(completed.accountID == alice.id)

        let (account, password, link) = try h.store.read { tx in
            (
                try tx.account(id: alice.id), try tx.passwordCredential(accountID: alice.id),
                try tx.appleLink(accountID: alice.id)
            )
        }
        #expect(account?.credentialKind == .appleOnly)
        #expect(password == nil, "the password hash is deleted")
        #expect(link?.sub == sub)
        #expect(link?.clientID == H.clientID)
        #expect(link?.teamID == H.teamID)
        #expect(link?.email == "x7k2@privaterelay.appleid.com")
        let sealed = try #require(link?.refreshTokenCiphertext)
        let refresh = try h.secrets.open(sealed, context: UpgradeService.refreshTokenContext(accountID: alice.id))
        #expect(String(decoding: refresh, as: UTF8.self) == h.apple.issuedRefreshTokens.first)

        // The old password no longer works, and says so the same way a wrong one does.
        let again = await failure {
            try h.service.start(
                username: "alice",
                password: "correct horse",
                serviceIdentifier: "example.com",
                now: now + 10
            )
        }
        #expect(again?.kind == .invalidCredentials)
    }

    @Test("a retried completion returns the same answer and changes nothing", arguments: Backend.all)
    func completionIsIdempotent(_ backend: Backend) async throws {
        let h = try UpgradeHarness(backend: backend)
        try h.addAccount("alice", password: "pw")
        let started = try h.service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: now)
        let request = credential(started)
        let first = try await h.service.submitAppleCredential(id: started.id, request, now: now + 1)
        let auditBefore = try h.store.read { try $0.auditTrail(upgradeID: started.id, limit: 100) }
        let second = try await h.service.submitAppleCredential(id: started.id, request, now: now + 2)
        #expect(second == first)
        #expect(h.apple.exchangeCount == 1)
        #expect(try h.store.read { try $0.auditTrail(upgradeID: started.id, limit: 100) } == auditBefore)
        // The same call with another state is refused and still changes nothing.
        var forged = request
        forged.state = SecureRandom.token()
        let refused = await failure { try await h.service.submitAppleCredential(id: started.id, forged, now: now + 3) }
        #expect(refused?.kind == .stateMismatch)
        #expect(try h.service.view(id: started.id, now: now + 3).status == .completed)
        // The right state with another Apple account's token: the upgrade linked the first, so the
        // retry is refused, as a failure, and nothing changes.
        var other = request
        other.identityToken = H.identityToken(sub: "001234.another.apple.user", nonce: started.nonce)
        let conflict = await failure { try await h.service.submitAppleCredential(id: started.id, other, now: now + 4) }
        #expect(conflict?.kind == .subConflict, "\(conflict?.message ?? "answered")")
        #expect(conflict?.result == .failure)
        #expect(conflict?.status == .completed)
        // A token that does not verify is refused the same way, and so is a `user` naming another.
        var forgedToken = request
        forgedToken.identityToken = "not.a.token"
        let invalid = await failure {
            try await h.service.submitAppleCredential(id: started.id, forgedToken, now: now + 5)
        }
        #expect(invalid?.kind == .invalidIdentityToken && invalid?.result == .failure)
        var otherUser = request
        otherUser.user = "001234.another.apple.user"
        let mismatch = await failure {
            try await h.service.submitAppleCredential(id: started.id, otherUser, now: now + 6)
        }
        #expect(mismatch?.kind == .invalidIdentityToken)
        #expect(try h.store.read { try $0.auditTrail(upgradeID: started.id, limit: 100) } == auditBefore)
        #expect(h.apple.exchangeCount == 1)
        #expect(try await h.service.submitAppleCredential(id: started.id, request, now: now + 7) == first)
    }

    @Test("a call the upgrade's state refuses is a failure, whatever that state's own result")
    func refusedCallIsAFailure() async throws {
        let h = try UpgradeHarness()
        try h.addAccount("alice", password: "pw")
        try h.addAccount("bob", password: "pw", totpSecret: Array("12345678901234567890".utf8))
        // Awaiting Apple's credential (`success`): a step-up is refused, not a success.
        let ready = try h.service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: now)
        let stepUp = await failure { try h.service.stepUp(id: ready.id, code: .totp("123456"), now: now + 1) }
        #expect(stepUp?.kind == .notAllowedInState && stepUp?.result == .failure)
        #expect(stepUp?.status == .awaitingAppleCredential)
        // Waiting for a code (`twoFactorAuthRequired`): Apple's credential is refused, not a code request.
        let waiting = try h.service.start(username: "bob", password: "pw", serviceIdentifier: "s", now: now)
        let early = await failure {
            try await h.service.submitAppleCredential(id: waiting.id, credential(ready), now: now + 1)
        }
        #expect(early?.kind == .notAllowedInState && early?.result == .failure)
        #expect(early?.status == .stepUpRequired)
        // Completed (`success`): a cancel is refused.
        _ = try await h.service.submitAppleCredential(id: ready.id, credential(ready), now: now + 2)
        let cancel = await failure { try h.service.cancel(id: ready.id, reason: .userCanceled, now: now + 3) }
        #expect(cancel?.kind == .notAllowedInState && cancel?.result == .failure)
    }

    @Test(
        "TOTP step-up: wrong code keeps twoFactorAuthRequired with attempts left, right code issues state and nonce",
        arguments: Backend.all
    )
    func stepUpWithTOTP(_ backend: Backend) async throws {
        let h = try UpgradeHarness(backend: backend)
        let secret = Array("12345678901234567890".utf8)
        try h.addAccount("bob", password: "pw", totpSecret: secret)
        let started = try h.service.start(username: "bob", password: "pw", serviceIdentifier: "s", now: now)
        #expect(started.status == .stepUpRequired)
        #expect(started.result == .twoFactorAuthRequired)
        #expect(started.state == nil && started.nonce == nil)

        let code = TOTP.code(secret: secret, parameters: .standard, counter: UInt64((now + 30) / 30))
        let wrong = code == "000000" ? "111111" : "000000"
        let refused = await failure { try h.service.stepUp(id: started.id, code: .totp(wrong), now: now + 30) }
        #expect(refused?.kind == .invalidCode)
        #expect(refused?.result == .twoFactorAuthRequired)
        #expect(refused?.attemptsRemaining == 4)

        let accepted = try h.service.stepUp(id: started.id, code: .totp(code), now: now + 30)
        #expect(accepted.status == .awaitingAppleCredential)
        #expect(accepted.result == .success)
        #expect(accepted.state != nil && accepted.nonce != nil)

        // The same code in a second upgrade is a replay. Starting it cancelled the first one.
        let second = try h.service.start(username: "bob", password: "pw", serviceIdentifier: "s", now: now + 31)
        let replayed = await failure { try h.service.stepUp(id: second.id, code: .totp(code), now: now + 31) }
        #expect(replayed?.kind == .invalidCode)
        #expect(try h.service.view(id: started.id, now: now + 31).status == .cancelled)

        let next = TOTP.code(secret: secret, parameters: .standard, counter: UInt64((now + 60) / 30))
        let stepped = try h.service.stepUp(id: second.id, code: .totp(next), now: now + 60)
        let completed = try await h.service.submitAppleCredential(id: second.id, credential(stepped), now: now + 70)
        #expect(completed.status == .completed)
    }

    @Test("a recovery code works once")
    func recoveryCode() async throws {
        let h = try UpgradeHarness()
        let codes = RecoveryCodes.generate(count: 2)
        try h.addAccount("carol", password: "pw", totpSecret: SecureRandom.bytes(20), recoveryCodes: codes)
        let first = try h.service.start(username: "carol", password: "pw", serviceIdentifier: "s", now: now)
        let answer = try h.service.stepUp(id: first.id, code: .recoveryCode(codes[0].lowercased()), now: now + 1)
        #expect(answer.status == .awaitingAppleCredential)
        let second = try h.service.start(username: "carol", password: "pw", serviceIdentifier: "s", now: now + 2)
        let reused = await failure { try h.service.stepUp(id: second.id, code: .recoveryCode(codes[0]), now: now + 3) }
        #expect(reused?.kind == .invalidCode)
    }

    @Test("step-up attempts exhausted fail the upgrade")
    func attemptsExhausted() async throws {
        let h = try UpgradeHarness()
        try h.addAccount("bob", password: "pw", totpSecret: SecureRandom.bytes(20))
        let started = try h.service.start(username: "bob", password: "pw", serviceIdentifier: "s", now: now)
        var last: ServiceFailure?
        for attempt in 1...5 {
            // Spaced past the lockout policy's growing delay between failures.
            last = await failure {
                try h.service.stepUp(id: started.id, code: .totp("12345x"), now: now + Int64(attempt) * 10)
            }
        }
        #expect(last?.kind == .tooManyAttempts)
        #expect(last?.result == .failure)
        #expect(last?.status == .failed)
        let after = await failure { try h.service.stepUp(id: started.id, code: .totp("123456"), now: now + 60) }
        #expect(after?.status == .failed)
    }

    @Test("wrong codes in quick succession are rate-limited without using up attempts")
    func stepUpRateLimited() async throws {
        let h = try UpgradeHarness()
        try h.addAccount("bob", password: "pw", totpSecret: SecureRandom.bytes(20))
        let started = try h.service.start(username: "bob", password: "pw", serviceIdentifier: "s", now: now)
        for _ in 0..<3 {
            _ = await failure { try h.service.stepUp(id: started.id, code: .totp("12345x"), now: now + 1) }
        }
        let limited = await failure { try h.service.stepUp(id: started.id, code: .totp("12345x"), now: now + 1) }
        #expect(limited?.kind == .rateLimited)
        #expect(limited?.result == .twoFactorAuthRequired)
        #expect(limited?.attemptsRemaining == 2)
        #expect(limited?.retryAfter == 1)
        #expect(try h.service.view(id: started.id, now: now + 1).status == .stepUpRequired)
    }

    @Test("wrong password and unknown user look the same; both lock after repeated failures", arguments: Backend.all)
    func uniformFailuresAndLockout(_ backend: Backend) async throws {
        let h = try UpgradeHarness(backend: backend)
        try h.addAccount("alice", password: "right")
        let wrong = await failure {
            try h.service.start(username: "alice", password: "wrong", serviceIdentifier: "s", now: now)
        }
        let unknown = await failure {
            try h.service.start(username: "mallory", password: "wrong", serviceIdentifier: "s", now: now)
        }
        #expect(wrong?.kind == .invalidCredentials)
        #expect(unknown?.kind == wrong?.kind)
        #expect(unknown?.message == wrong?.message)
        #expect(unknown?.status == wrong?.status)

        // Failures spaced past each growing delay, until the policy locks both usernames alike.
        var clock = now
        for _ in 0..<9 {
            clock += 120
            _ = await failure {
                try h.service.start(username: "alice", password: "wrong", serviceIdentifier: "s", now: clock)
            }
            _ = await failure {
                try h.service.start(username: "mallory", password: "wrong", serviceIdentifier: "s", now: clock)
            }
        }
        clock += 1
        let lockedKnown = await failure {
            try h.service.start(username: "alice", password: "right", serviceIdentifier: "s", now: clock)
        }
        let lockedUnknown = await failure {
            try h.service.start(username: "mallory", password: "x", serviceIdentifier: "s", now: clock)
        }
        #expect(lockedKnown?.kind == .locked)
        #expect(lockedUnknown?.kind == .locked)
        #expect(lockedKnown?.retryAfter == lockedUnknown?.retryAfter)
        // After the lock runs out, the right password works again and resets the count.
        let answer = try h.service.start(
            username: "alice",
            password: "right",
            serviceIdentifier: "s",
            now: clock + 900
        )
        #expect(answer.status == .awaitingAppleCredential)
        #expect(try h.store.read { try $0.throttle(usernameKey: "alice") } == nil)
    }

    @Test("each bad credential fails the upgrade with its own problem", arguments: CredentialCase.allCases)
    func credentialFailures(_ kase: CredentialCase) async throws {
        let h = try UpgradeHarness()
        try h.addAccount("alice", password: "pw")
        let started = try h.service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: now)
        var request = credential(started)
        switch kase {
        case .stateMismatch: request.state = SecureRandom.token(byteCount: 32)
        case .nonceMismatch: request.identityToken = H.identityToken(nonce: SecureRandom.token())
        case .nonceMissing: request.identityToken = H.identityToken(nonce: nil)
        case .otherAudience: request.identityToken = H.identityToken(nonce: started.nonce, audience: "com.other.app")
        case .expiredToken: request.identityToken = H.identityToken(nonce: started.nonce, issuedAt: now - 4000)
        case .badSignature: request.identityToken = String(request.identityToken.dropLast(4)) + "AAAA"
        case .userDoesNotMatch: request.user = "000000.ffffffffffffffffffffffffffffffff.0000"
        }
        let refused = await failure { try await h.service.submitAppleCredential(id: started.id, request, now: now + 5) }
        #expect(refused?.kind == kase.expected)
        #expect(refused?.status == .failed)
        #expect(refused?.result == .failure)
        #expect(h.apple.exchangeCount == 0, "nothing reaches Apple")
        #expect(try h.account("alice")?.credentialKind == .password, "nothing changed")
        // The upgrade is over: even the right credential is refused now.
        let retry = await failure {
            try await h.service.submitAppleCredential(id: started.id, credential(started), now: now + 6)
        }
        #expect(retry?.status == .failed)
    }

    enum CredentialCase: CaseIterable, Sendable {
        case stateMismatch, nonceMismatch, nonceMissing, otherAudience, expiredToken, badSignature, userDoesNotMatch
        var expected: ServiceFailure.Kind {
            switch self {
            case .stateMismatch: .stateMismatch
            case .nonceMismatch, .nonceMissing: .nonceMismatch
            default: .invalidIdentityToken
            }
        }
    }

    @Test("a sub already linked to another account is a conflict, never a merge", arguments: Backend.all)
    func subConflict(_ backend: Backend) async throws {
        let h = try UpgradeHarness(backend: backend)
        let alice = try h.addAccount("alice", password: "pw")
        let bob = try h.addAccount("bob", password: "pw")
        let first = try h.service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: now)
        _ = try await h.service.submitAppleCredential(id: first.id, credential(first), now: now + 1)
        let second = try h.service.start(username: "bob", password: "pw", serviceIdentifier: "s", now: now + 2)
        let refused = await failure {
            try await h.service.submitAppleCredential(id: second.id, credential(second), now: now + 3)
        }
        #expect(refused?.kind == .subConflict)
        let links = try h.store.read { tx in
            (try tx.appleLink(accountID: alice.id), try tx.appleLink(accountID: bob.id))
        }
        #expect(links.0?.sub == sub)
        #expect(links.1 == nil)
        #expect(try h.account("bob")?.credentialKind == .password)
    }

    @Test("an account converted elsewhere after start is not eligible: the upgrade fails before Apple is called")
    func notEligibleAtClaim() async throws {
        let h = try UpgradeHarness()
        let alice = try h.addAccount("alice", password: "pw")
        let started = try h.service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: now)
        try h.store.write { tx in
            let account = try #require(try tx.account(id: alice.id))
            try tx.updateAccountCredentialKind(
                id: alice.id,
                kind: .appleOnly,
                expectedVersion: account.version,
                now: now
            )
        }
        let refused = await failure {
            try await h.service.submitAppleCredential(id: started.id, credential(started), now: now + 1)
        }
        #expect(refused?.kind == .notEligible)
        #expect(refused?.status == .failed)
        #expect(try h.store.read { try $0.appleLink(accountID: alice.id) } == nil)
        // The upgrade went straight from awaiting the credential to failed: never `converting`.
        let history = try h.service.view(id: started.id, now: now + 2).history
        #expect(history.last?.from == "awaitingAppleCredential")
        #expect(history.last?.to == "failed")
        #expect(!history.contains { $0.to == "converting" })
    }

    @Test("an upgrade past its deadline expires, whatever the call")
    func expiry() async throws {
        let h = try UpgradeHarness()
        try h.addAccount("alice", password: "pw")
        let started = try h.service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: now)
        #expect(try h.service.view(id: started.id, now: now + 301).status == .expired)
        let late = await failure {
            try await h.service.submitAppleCredential(id: started.id, credential(started), now: now + 301)
        }
        #expect(late?.kind == .upgradeExpired)
        #expect(h.apple.exchangeCount == 0)
        #expect(try h.account("alice")?.credentialKind == .password)
    }

    @Test("cancel from an open state, repeated cancel is the same answer", arguments: ASExtensionErrorCode.allCases)
    func cancel(_ reason: ASExtensionErrorCode) async throws {
        let h = try UpgradeHarness()
        try h.addAccount("alice", password: "pw")
        let started = try h.service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: now)
        let cancelled = try h.service.cancel(id: started.id, reason: reason, now: now + 1)
        #expect(cancelled.status == .cancelled)
        #expect(cancelled.result == .failure)
        #expect(try h.service.cancel(id: started.id, reason: .failed, now: now + 2) == cancelled)
        let after = await failure {
            try await h.service.submitAppleCredential(id: started.id, credential(started), now: now + 3)
        }
        #expect(after?.kind == .notAllowedInState)
        let history = try h.service.view(id: started.id, now: now + 3).history
        #expect(history.map(\.to) == ["awaitingAppleCredential", "cancelled"])
    }

    @Test(
        "Apple refusing the code fails the upgrade and changes no account",
        arguments: [AppleEndpointError.Code.invalidGrant, .unavailable]
    )
    func appleRefuses(_ code: AppleEndpointError.Code) async throws {
        let h = try UpgradeHarness()
        try h.addAccount("alice", password: "pw")
        h.apple.fail(with: code)
        let started = try h.service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: now)
        let refused = await failure {
            try await h.service.submitAppleCredential(id: started.id, credential(started), now: now + 1)
        }
        #expect(refused?.kind == (code == .invalidGrant ? .invalidAuthorizationCode : .appleUnavailable))
        let view = try h.service.view(id: started.id, now: now + 1)
        #expect(view.status == .failed)
        // What is stored says which of the two it was, and a later call is answered as the first was.
        #expect(view.problem == (code == .invalidGrant ? .appleExchangeFailed : .appleUnavailable))
        let again = await failure {
            try await h.service.submitAppleCredential(id: started.id, credential(started), now: now + 2)
        }
        #expect(again?.kind == refused?.kind)
        #expect(try h.account("alice")?.credentialKind == .password)
        #expect(try h.store.read { try $0.appleLink(sub: sub) } == nil)
    }

    @Test(
        "50 concurrent completions of one upgrade: exactly one conversion, every caller sees it",
        arguments: Backend.all
    )
    func concurrentCompletions(_ backend: Backend) async throws {
        let h = try UpgradeHarness(backend: backend)
        let alice = try h.addAccount("alice", password: "pw")
        h.apple.delay(milliseconds: 50)
        let started = try h.service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: now)
        let request = credential(started)
        let service = h.service
        let answers = await withTaskGroup(of: Result<UpgradeAnswer, ServiceFailure>.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    do {
                        return .success(try await service.submitAppleCredential(id: started.id, request, now: now + 1))
                    } catch {
                        return .failure((error as? ServiceFailure) ?? ServiceFailure(.internalError, "\(error)"))
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let successes: [UpgradeAnswer] = answers.compactMap { try? $0.get() }
        #expect(successes.count == 50, "losers wait for the winner: \(answers.filter { (try? $0.get()) == nil })")
        #expect(Set(successes.map(\.accountID)) == [alice.id])
        #expect(h.apple.exchangeCount == 1, "one code exchange")
        let conversions = try h.store.read { try $0.auditTrail(accountID: alice.id, limit: 100) }.filter {
            $0.event == "account.convertedToApple"
        }
        #expect(conversions.count == 1)
    }

    @Test("bad input is refused before anything is stored")
    func validation() async throws {
        let h = try UpgradeHarness()
        let empty = await failure {
            try h.service.start(username: "", password: "pw", serviceIdentifier: "s", now: now)
        }
        #expect(empty?.kind == .validation)
        let huge = await failure {
            try h.service.start(
                username: "a",
                password: String(repeating: "x", count: 2000),
                serviceIdentifier: "s",
                now: now
            )
        }
        #expect(huge?.kind == .validation)
        let missing = await failure { try h.service.view(id: "upg_nope", now: now) }
        #expect(missing?.kind == .notFound)
        #expect(try h.store.read { try $0.throttle(usernameKey: "a") } == nil)
    }
}
