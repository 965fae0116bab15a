import Testing

@testable import UpgradeEngine

/// Firebase scrypt and keyed HMAC accounts sign in with the sealed parameter set their hash names,
/// and are rehashed to argon2id on the first match like every legacy hash; a set that cannot be had
/// is an operator problem the audit trail names, without any of its secrets.
@Suite("Firebase scrypt and keyed HMAC accounts at sign-in")
struct KeyedHashRehashTests {
    let now = UpgradeHarness.now

    /// One fixture per format and set.
    static let samples: [KeyedHashFixtures.Entry] = {
        var seen = Set<String>()
        return KeyedHashFixtures.entries.filter { seen.insert("\($0.format) \($0.set)").inserted }
    }()

    /// The harness with the fixture sets stored under the ids the fixtures name.
    static func harness() throws -> UpgradeHarness {
        let h = try UpgradeHarness()
        let sets = KeyedHashFixtures.sets.sorted { $0.key < $1.key }
        let ids = try StoredHashParameters.add(
            sets.map(\.value),
            store: h.store,
            secrets: h.secrets,
            now: UpgradeHarness.now
        )
        #expect(ids == sets.map(\.key))
        return h
    }

    @Test("each format and set checks the password and is rehashed as argon2id on the first match", arguments: samples)
    func rehashed(_ entry: KeyedHashFixtures.Entry) throws {
        let h = try Self.harness()
        let account = try h.addAccount("keyed", password: entry.password, storedHash: entry.hash)
        #expect(throws: ServiceFailure.self) {
            try h.service.start(username: "keyed", password: entry.password + "x", serviceIdentifier: "s", now: now)
        }
        #expect(try h.store.read { try $0.passwordCredential(accountID: account.id) }?.hash == entry.hash)

        _ = try h.service.start(username: "keyed", password: entry.password, serviceIdentifier: "s", now: now + 60)
        let stored = try #require(try h.store.read { try $0.passwordCredential(accountID: account.id) })
        #expect(stored.format == "argon2id")
        #expect(try PasswordVerifier().verify(password: entry.password, encodedHash: stored.hash))
        let audit = try h.store.read { try $0.auditTrail(accountID: account.id, limit: 10) }
        #expect(audit.compactMap { $0.detail["passwordRehashedFrom"] } == [entry.format])
    }

    @Test("a hash naming a set that is not stored, or does not open, fails like a wrong password and says why")
    func unavailableSet() throws {
        let h = try Self.harness()
        let entry = try #require(KeyedHashFixtures.entries.first { $0.set == 3 })
        let missing = try h.addAccount(
            "missing",
            password: entry.password,
            storedHash: entry.hash.replacingOccurrences(of: "p=3$", with: "p=42$")
        )
        #expect(throws: ServiceFailure.self) {
            try h.service.start(username: "missing", password: entry.password, serviceIdentifier: "s", now: now)
        }
        let audit = try h.store.read { try $0.auditTrail(accountID: missing.id, limit: 10) }
        #expect(audit.contains { $0.detail["hash"] == "parametersUnavailable" })
        let secrets = KeyedHashFixtures.sets.values.flatMap(KeyedHashTests.secrets)
        for event in audit {
            for secret in secrets { #expect(!"\(event.detail)".contains(secret)) }
        }
    }
}
