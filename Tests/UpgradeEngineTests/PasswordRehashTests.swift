import Synchronization
import Testing

@testable import UpgradeEngine

/// A legacy hash is checked as it is and replaced by the current argon2id hash after its first
/// successful check, in the transaction that records it; a wrong password changes nothing.
@Suite("Rehash on the first successful password check")
struct PasswordRehashTests {
    let now = UpgradeHarness.now

    /// One fixture per scheme the verifier knows, bcrypt to `{CRYPT}`, from independent generators.
    static let legacy: [PasswordFixtures.Entry] = {
        var seen = Set<String>()
        return PasswordFixtures.entries.filter { seen.insert($0.scheme).inserted }
    }()

    @Test("each legacy format is rehashed as argon2id with the current parameters", arguments: legacy)
    func legacyHashIsReplaced(_ entry: PasswordFixtures.Entry) throws {
        let h = try UpgradeHarness()
        let account = try h.addAccount("legacy", password: entry.password, storedHash: entry.hash)

        // A wrong password first: nothing is rehashed.
        #expect(throws: ServiceFailure.self) {
            try h.service.start(username: "legacy", password: entry.password + "x", serviceIdentifier: "s", now: now)
        }
        #expect(try h.store.read { try $0.passwordCredential(accountID: account.id) }?.hash == entry.hash)

        _ = try h.service.start(username: "legacy", password: entry.password, serviceIdentifier: "s", now: now + 60)
        let stored = try #require(try h.store.read { try $0.passwordCredential(accountID: account.id) })
        #expect(stored.format == "argon2id")
        #expect(stored.hash != entry.hash)
        let hasher = try PasswordHasher(parameters: UpgradeHarness.fastHash)
        #expect(hasher.isCurrent(stored.hash))
        #expect(try PasswordVerifier().verify(password: entry.password, encodedHash: stored.hash))
        let audit = try h.store.read { try $0.auditTrail(accountID: account.id, limit: 10) }
        #expect(
            audit.filter { $0.detail["passwordRehashedFrom"] != nil }.map(\.detail["passwordRehashedFrom"]) == [
                entry.format
            ]
        )

        // The next successful check finds a current hash and leaves it alone.
        _ = try h.service.start(username: "legacy", password: entry.password, serviceIdentifier: "s", now: now + 120)
        #expect(try h.store.read { try $0.passwordCredential(accountID: account.id) }?.hash == stored.hash)
    }

    @Test("argon2id with other parameters is rehashed; the current parameters are not")
    func argon2ParametersAreCompared() throws {
        let h = try UpgradeHarness()
        let older = try PasswordHasher(parameters: .init(memoryKiB: 512, iterations: 1, parallelism: 1))
            .hash(password: "pw")
        let account = try h.addAccount("older", password: "pw", storedHash: older)
        _ = try h.service.start(username: "older", password: "pw", serviceIdentifier: "s", now: now)
        let stored = try #require(try h.store.read { try $0.passwordCredential(accountID: account.id) })
        #expect(stored.hash != older)
        #expect(stored.hash.contains("m=256,t=1,p=1"))

        let current = try h.addAccount("current", password: "pw")
        let before = try h.store.read { try $0.passwordCredential(accountID: current.id) }
        _ = try h.service.start(username: "current", password: "pw", serviceIdentifier: "s", now: now)
        #expect(try h.store.read { try $0.passwordCredential(accountID: current.id) } == before)

        // Django's `argon2$` before a hash with the current parameters: rewritten as a plain PHC string.
        let plain = try PasswordHasher(parameters: UpgradeHarness.fastHash).hash(password: "pw")
        let django = try h.addAccount("django", password: "pw", storedHash: "argon2" + plain)
        _ = try h.service.start(username: "django", password: "pw", serviceIdentifier: "s", now: now)
        let rewritten = try #require(try h.store.read { try $0.passwordCredential(accountID: django.id) })
        #expect(rewritten.hash.hasPrefix("$argon2id$v=19$"))
    }
}

/// Every key derivation the server runs reports its CPU time, rehashes included, so the
/// `password_hash_cpu_seconds_total` metric (and the CPU benchmarks that subtract it) see them.
@Suite("Hashing reports its CPU time like a check")
struct PasswordHashAccountingTests {
    final class Count: Sendable {
        let value = Mutex<Int>(0)
    }

    @Test("hash(password:with:) and verify each report one derivation")
    func reported() throws {
        let count = Count()
        var verifier = PasswordVerifier(dummyParameters: UpgradeHarness.fastHash)
        verifier.onHashed = { seconds in
            #expect(seconds >= 0)
            count.value.withLock { $0 += 1 }
        }
        let hasher = try PasswordHasher(parameters: UpgradeHarness.fastHash)
        let hash = try verifier.hash(password: "pw", with: hasher)
        #expect(count.value.withLock { $0 } == 1)
        #expect(try verifier.verify(password: "pw", encodedHash: hash))
        #expect(count.value.withLock { $0 } == 2)
    }
}
