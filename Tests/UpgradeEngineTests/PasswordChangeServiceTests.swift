import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// The password-change driver: what it stores, counts and spends for each outcome.
@Suite("Password change service")
struct PasswordChangeServiceTests {
    let now = UpgradeHarness.now
    static let old = "Old-password-1"
    static let new = "abcdEf-ghijK1-lmnoPq"

    func failure(_ body: () throws -> some Any) -> ServiceFailure? {
        do {
            _ = try body()
            Issue.record("expected a failure")
            return nil
        } catch {
            return error as? ServiceFailure
        }
    }

    @Test(
        "completed: the new password is stored as argon2id with its audit row; the old one no longer verifies",
        arguments: Backend.all
    )
    func completes(_ backend: Backend) throws {
        let h = try UpgradeHarness(backend: backend)
        let alice = try h.addAccount("alice", password: Self.old)
        let answer = try h.service.startPasswordChange(
            username: "Alice",
            password: Self.old,
            newPassword: Self.new,
            serviceIdentifier: "example.com",
            now: now + 1
        )
        #expect(answer.status == .completed && answer.result == .success && answer.expiresAt == nil)
        let (credential, change, audit) = try h.store.read { tx in
            (
                try tx.passwordCredential(accountID: alice.id), try tx.passwordChange(id: answer.id),
                try tx.auditTrail(accountID: alice.id, limit: 10)
            )
        }
        let stored = try #require(credential)
        // Hashed with the service's current parameters (the harness's fast ones).
        #expect(stored.format == "argon2id" && stored.hash.hasPrefix("$argon2id$v=19$m=256,t=1,p=1$"))
        #expect(h.service.configuration.passwordHasher.isCurrent(stored.hash))
        #expect(stored.updatedAt == now + 1)
        #expect(try PasswordVerifier().verify(password: Self.new, encodedHash: stored.hash))
        #expect(try !PasswordVerifier().verify(password: Self.old, encodedHash: stored.hash))
        #expect(change?.status == "completed" && change?.newPasswordHash == nil)
        #expect(audit.contains { $0.event == "password.changed" && $0.detail["passwordChange"] == answer.id })
        #expect(!audit.contains { "\($0.detail)".contains(Self.new) || "\($0.detail)".contains(Self.old) })
        // A step-up on the completed change is refused: a failure, not the change's `success`.
        let late = failure { try h.service.stepUpPasswordChange(id: answer.id, code: .totp("123456"), now: now + 2) }
        #expect(late?.kind == .notAllowedInState && late?.result == .failure)
        #expect(late?.passwordChangeStatus == .completed)
    }

    @Test("a broken rule is answered before the password is checked: nothing counted or stored")
    func rulesFirst() throws {
        let h = try UpgradeHarness()
        try h.addAccount("alice", password: Self.old)
        let refused = failure {
            try h.service.startPasswordChange(
                username: "alice",
                password: "wrong",
                newPassword: "abcdefghijkl1",
                serviceIdentifier: "s",
                now: now
            )
        }
        #expect(refused?.kind == .passwordPolicy && refused?.rule == "required: upper")
        #expect(refused?.message == "the new password must contain an uppercase letter (required: upper)")
        #expect(refused?.upgradeID == nil && refused?.result == .failure)
        #expect(try h.store.read { try $0.throttle(usernameKey: "alice") } == nil)
    }

    @Test(
        "TOTP: the new hash waits in the row until the code; too many wrong codes fail it and clear the hash",
        arguments: Backend.all
    )
    func stepUp(_ backend: Backend) throws {
        let h = try UpgradeHarness(backend: backend)
        let secret = Array("12345678901234567890".utf8)
        let alice = try h.addAccount("alice", password: Self.old, totpSecret: secret)
        let started = try h.service.startPasswordChange(
            username: "alice",
            password: Self.old,
            newPassword: Self.new,
            serviceIdentifier: "s",
            now: now
        )
        #expect(started.status == .stepUpRequired && started.result == .twoFactorAuthRequired)
        #expect(started.expiresAt == now + 300 && started.attemptsRemaining == 5)
        let open = try #require(try h.store.read { try $0.passwordChange(id: started.id) })
        #expect(open.newPasswordHash?.hasPrefix("$argon2id$") == true)
        #expect(open.newPasswordHash?.contains(Self.new) == false)
        // The account's password is unchanged until the code.
        let before = try h.store.read { try $0.passwordCredential(accountID: alice.id) }
        #expect(try PasswordVerifier().verify(password: Self.old, encodedHash: before?.hash ?? ""))

        var last: ServiceFailure?
        for attempt in 1...5 {
            // Past the lockout's short delays, so each wrong code is judged.
            last = failure {
                try h.service.stepUpPasswordChange(
                    id: started.id,
                    code: .totp("000000"),
                    now: now + Int64(attempt) * 30
                )
            }
        }
        #expect(last?.kind == .tooManyAttempts && last?.passwordChangeStatus == .failed)
        let failed = try h.store.read { try $0.passwordChange(id: started.id) }
        #expect(failed?.status == "failed" && failed?.newPasswordHash == nil)
        let after = try h.store.read { try $0.passwordCredential(accountID: alice.id) }
        #expect(after == before, "the password is unchanged")
    }

    @Test("past its deadline a step-up expires the change without checking the code")
    func expires() throws {
        let h = try UpgradeHarness()
        try h.addAccount("alice", password: Self.old, totpSecret: Array("12345678901234567890".utf8))
        let started = try h.service.startPasswordChange(
            username: "alice",
            password: Self.old,
            newPassword: Self.new,
            serviceIdentifier: "s",
            now: now
        )
        let late = failure { try h.service.stepUpPasswordChange(id: started.id, code: .totp("000000"), now: now + 300) }
        #expect(late?.kind == .upgradeExpired && late?.passwordChangeStatus == .expired)
        #expect(late?.message == "the password change expired; start a new one")
        #expect(try h.store.read { try $0.passwordChange(id: started.id) }?.newPasswordHash == nil)
        #expect(try h.store.read { try $0.throttle(usernameKey: "alice") } == nil, "an expiry is not a failure")
    }
}
