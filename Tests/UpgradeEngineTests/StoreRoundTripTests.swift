import Foundation
import Synchronization
import Testing
import UpgradeTestSupport

@testable import AppleEmulator
@testable import UpgradeEngine

/// What one completed upgrade costs the database, and the rule that lets PostgreSQL send writes
/// ahead: a write that fails is still reported by its transaction, which then commits nothing.
@Suite("Store round trips")
struct StoreRoundTripTests {
    static let teamID = "TEAMA12345"
    static let keyID = "KEY1234567"
    static let clientID = "com.example.app"
    static let now: Int64 = 1_760_000_000

    /// The upgrade service on `store`, with the Apple ID emulator in process.
    final class World: Sendable {
        let emulator: AppleIDEmulator
        let service: UpgradeService
        let store: any UpgradeStore

        init(store: any UpgradeStore) throws {
            self.store = store
            emulator = AppleIDEmulator(clock: { StoreRoundTripTests.now })
            try emulator.addTeam(StoreRoundTripTests.teamID)
            let key = P256PrivateKey()
            try emulator.registerKey(
                teamID: StoreRoundTripTests.teamID,
                keyID: StoreRoundTripTests.keyID,
                publicKey: key.publicKey
            )
            try emulator.addApp(clientID: StoreRoundTripTests.clientID, teamID: StoreRoundTripTests.teamID)
            service = UpgradeService(
                store: store,
                passwords: PasswordVerifier(dummyParameters: UpgradeHarness.fastHash),
                secrets: SecretBox.developmentOnly(),
                identityTokens: IdentityTokenVerifier(
                    keys: emulator.keySet,
                    policy: try IdentityTokenPolicy(allowedAudiences: [StoreRoundTripTests.clientID])
                ),
                apple: try emulator.client(
                    teamID: StoreRoundTripTests.teamID,
                    keyID: StoreRoundTripTests.keyID,
                    privateKey: key
                ),
                configuration: {
                    // The accounts' hashes are current, so no rehash adds to the count.
                    var configuration = UpgradeServiceConfiguration(appleTeamID: StoreRoundTripTests.teamID)
                    configuration.passwordHasher = try! PasswordHasher(parameters: UpgradeHarness.fastHash)
                    return configuration
                }()
            )
        }

        /// A password account, without a second factor.
        func addAccount(_ username: String) throws {
            let account = AccountRecord(
                id: UUID().uuidString.lowercased(),
                username: username,
                credentialKind: .password,
                createdAt: StoreRoundTripTests.now,
                updatedAt: StoreRoundTripTests.now
            )
            let hash = try PasswordHasher(parameters: UpgradeHarness.fastHash).hash(password: "pw")
            try store.write { tx in
                try tx.insertAccount(account)
                try tx.upsertPasswordCredential(
                    PasswordCredentialRecord(
                        accountID: account.id,
                        hash: hash,
                        format: "argon2id",
                        updatedAt: StoreRoundTripTests.now
                    )
                )
            }
        }

        /// Password, Apple's sheet, credential: the upgrade completes without a step-up.
        func upgrade(_ username: String) async throws {
            let started = try service.start(
                username: username,
                password: "pw",
                serviceIdentifier: "s",
                now: StoreRoundTripTests.now
            )
            #expect(started.status == .awaitingAppleCredential)
            let user = try emulator.createUser(email: "\(username)@example.com")
            let authorization = try emulator.authorize(
                userID: user,
                clientID: StoreRoundTripTests.clientID,
                nonce: started.nonce,
                state: started.state,
                emailMode: .hidden
            )
            let credential = UpgradeService.AppleCredential(
                identityToken: authorization.identityToken,
                authorizationCode: authorization.authorizationCode,
                state: authorization.state ?? "",
                user: authorization.user
            )
            let done = try await service.submitAppleCredential(id: started.id, credential, now: StoreRoundTripTests.now)
            #expect(done.status == .completed)
        }
    }

    /// Counted on a warmed pool and also from cold, with unnamed statements (the default, what a
    /// transaction pooler needs) and with `prepared_statements=on`, whose prepares travel with the
    /// first executions: they add statements, not round trips. Each transaction's settings follow
    /// its BEGIN in the same round trip. The five transactions (two reads, three writes) are listed
    /// in Benchmarks/README.md.
    @Test(
        "a completed upgrade without step-up costs PostgreSQL 3 commits, 10 round trips and 34 statements",
        .enabled(if: TestPostgres.isAvailable, "UPGRADE_TEST_POSTGRES is not set"),
        arguments: [false, true]
    )
    func upgradeCost(preparedStatements: Bool) async throws {
        let db = try Backend.postgres.database()
        let store = try db.openPostgresStore(preparedStatements: preparedStatements)
        let (cold, _) = try await Self.expectUpgradeCost(store)
        if preparedStatements {
            #expect(cold.prepares > 0, "\(cold)")
        } else {
            #expect(cold.prepares == 0, "\(cold)")
        }
    }

    /// The same budget through PgBouncer in transaction mode, whose two server sessions the
    /// transactions share: the pooler adds no round trip of the client's.
    @Test(
        "through PgBouncer (transaction pooling) a completed upgrade costs the same 10 round trips",
        .enabled(if: TestPgBouncer.isAvailable, .init(rawValue: TestPgBouncer.reason))
    )
    func upgradeCostThroughPooler() async throws {
        let db = try Backend.postgres.database()
        let pooler = try TestPgBouncer(poolSize: 2)
        let (cold, _) = try await Self.expectUpgradeCost(try db.openPostgresStore(through: pooler))
        #expect(cold.prepares == 0, "\(cold)")
    }

    /// A provisioning sync sends the same accounts again and again; every row is then `skipped`, and
    /// deciding so reads what each account holds. Those reads are a few statements for the whole
    /// batch (`AccountImportStore.storedStates`), so the batch's round trips do not grow with its rows.
    @Test(
        "a provisioning batch sent again costs PostgreSQL as many round trips for 40 rows as for 4",
        .enabled(if: TestPostgres.isAvailable, "UPGRADE_TEST_POSTGRES is not set")
    )
    func repeatedProvisioningBatch() throws {
        let db = try Backend.postgres.database()
        let store = try db.openPostgresStore(preparedStatements: false)
        let service = AccountProvisioningService(
            store: store,
            passwords: PasswordVerifier(dummyParameters: UpgradeHarness.fastHash),
            secrets: SecretBox.developmentOnly(),
            appleTeamID: nil,
            appleClientID: nil
        )
        let hash = try PasswordHasher(parameters: UpgradeHarness.fastHash).hash(password: "pw")
        var costs: [PostgresTraffic] = []
        for (prefix, count) in [("small", 4), ("large", 40)] {
            // Every field a row compares: password, TOTP, recovery codes, email and name.
            let rows: [JSONValue] = (0..<count).map { index in
                // Stored hashes of two codes (64 lowercase hex digits each).
                let codes: [JSONValue] = [
                    .string(String(format: "%064x", 2 * index + 1)), .string(String(format: "%064x", 2 * index + 2)),
                ]
                let name = "\(prefix)-\(index)"
                let uri = "otpauth://totp/App:\(name)?secret=JBSWY3DPEHPK3PXP&issuer=App"
                return .object([
                    "username": .string(name), "passwordHash": .string(hash), "email": .string("\(name)@example.com"),
                    "displayName": .string("User \(index)"), "totp": .string(uri), "recoveryCodes": .array(codes),
                ])
            }
            let created = try service.batch(rows, by: "sync", now: Self.now)
            #expect(created.allSatisfy { $0.action == .created }, "\(created.map(\.reason))")
            let before = store.traffic
            let again = try service.batch(rows, by: "sync", now: Self.now + 60)
            costs.append(store.traffic - before)
            #expect(again.allSatisfy { $0.action == .skipped }, "\(again.map(\.reason))")
        }
        #expect(costs[0].roundTrips == costs[1].roundTrips, "\(costs)")
        #expect(costs[1].roundTrips <= 12 && costs[1].commits == 1, "\(costs[1])")
    }

    /// Two upgrades, cold then warm, each with the counts every route must show; returns both.
    private static func expectUpgradeCost(_ store: PostgresStore) async throws -> (PostgresTraffic, PostgresTraffic) {
        let world = try World(store: store)
        try world.addAccount("alice")
        try world.addAccount("bob")

        let beforeCold = store.traffic
        try await world.upgrade("alice")
        let cold = store.traffic - beforeCold
        let beforeWarm = store.traffic
        try await world.upgrade("bob")
        let warm = store.traffic - beforeWarm

        #expect(warm.commits == 3, "\(warm)")
        // The budget is 10 (issue 28). Three of them re-read the account's password inside a write:
        // `start`'s (a change committed since the check ends what the old password opens), the
        // claim's and the conversion's (a change committed between them wins; docs/architecture.md
        // §4.4). The claim's and the conversion's read the account, its password and its profile
        // (which `account.converted` carries) in one statement (`accountSnapshot`); the conversion's
        // writes, the password's deletion among them, all travel with its COMMIT.
        #expect(warm.roundTrips == 10, "\(warm)")
        #expect(warm.statements == 34, "\(warm)")
        #expect(warm.prepares == 0, "\(warm)")
        #expect(
            cold.roundTrips == warm.roundTrips && cold.commits == 3 && cold.statements == warm.statements,
            "\(cold)"
        )
        return (cold, warm)
    }

    @Test(
        "a stale versioned update fails its transaction, and nothing written before or after it commits",
        arguments: Backend.all
    )
    func staleUpdateCommitsNothing(_ backend: Backend) throws {
        let db = try backend.database()
        let account = AccountRecord(
            id: "acct-1",
            username: "alice",
            credentialKind: .password,
            createdAt: Self.now,
            updatedAt: Self.now
        )
        try db.store.write { try $0.insertAccount(account) }
        let audit = AuditEvent(at: Self.now, accountID: account.id, upgradeID: nil, event: "test.event", detail: [:])
        #expect(throws: StorageError(.versionConflict, "account was changed by another request; reload and retry")) {
            try db.store.write { tx in
                try tx.appendAudit(audit)
                try tx.updateAccountCredentialKind(id: account.id, kind: .appleOnly, expectedVersion: 7, now: Self.now)
                try tx.appendAudit(audit)
            }
        }
        #expect(try db.store.read { try $0.auditTrail(accountID: account.id, limit: 10) }.isEmpty)
        #expect(try db.store.read { try $0.account(id: account.id) }?.version == 1)
        // The same update at the right version commits, with both rows.
        try db.store.write { tx in
            try tx.appendAudit(audit)
            try tx.updateAccountCredentialKind(id: account.id, kind: .appleOnly, expectedVersion: 1, now: Self.now)
            try tx.appendAudit(audit)
        }
        #expect(try db.store.read { try $0.auditTrail(accountID: account.id, limit: 10) }.count == 2)
        #expect(try db.store.read { try $0.account(id: account.id) }?.credentialKind == .appleOnly)
    }

    @Test(
        "a write inside a read transaction is refused by the call that makes it, and changes nothing",
        arguments: Backend.all
    )
    func readRefusesQueuedWrites(_ backend: Backend) throws {
        let db = try backend.database()
        let audit = AuditEvent(at: Self.now, accountID: "acct-r", upgradeID: nil, event: "test.event", detail: [:])
        let error = try #require(throws: StorageError.self) {
            try db.store.read { tx in try tx.appendAudit(audit) }
        }
        #expect(error.message.contains("read transaction"), "\(error)")
        #expect(try db.store.read { try $0.auditTrail(accountID: "acct-r", limit: 10) }.isEmpty)
    }

    @Test(
        "a refused insert is reported with its constraint, by a later call or by write itself; nothing commits",
        arguments: Backend.all
    )
    func refusedInsertCommitsNothing(_ backend: Backend) throws {
        let db = try backend.database()
        let alice = AccountRecord(
            id: "acct-a",
            username: "alice",
            credentialKind: .password,
            createdAt: Self.now,
            updatedAt: Self.now
        )
        let bob = AccountRecord(
            id: "acct-b",
            username: "bob",
            credentialKind: .password,
            createdAt: Self.now,
            updatedAt: Self.now
        )
        func link(_ accountID: String) -> AppleLinkRecord {
            AppleLinkRecord(
                accountID: accountID,
                sub: "001.sub.1",
                teamID: Self.teamID,
                clientID: Self.clientID,
                email: nil,
                isPrivateEmail: nil,
                refreshTokenCiphertext: nil,
                status: .linked,
                linkedAt: Self.now,
                updatedAt: Self.now
            )
        }
        try db.store.write { tx in
            try tx.insertAccount(alice)
            try tx.insertAccount(bob)
            try tx.insertAppleLink(link(alice.id))
        }
        let audit = AuditEvent(at: Self.now, accountID: bob.id, upgradeID: nil, event: "test.event", detail: [:])
        // The failure is the last thing the closure does: `write` reports it.
        var error = try #require(throws: StorageError.self) {
            try db.store.write { tx in
                try tx.appendAudit(audit)
                try tx.insertAppleLink(link(bob.id))
            }
        }
        #expect(error.code == .uniqueViolation && error.constraint == .appleLinksSub, "\(error)")
        // A read follows it: the read, or `write`, reports it, and the read's answer is never seen.
        error = try #require(throws: StorageError.self) {
            try db.store.write { tx in
                try tx.insertAppleLink(link(bob.id))
                _ = try tx.account(id: bob.id)
                try tx.appendAudit(audit)
            }
        }
        #expect(error.code == .uniqueViolation && error.constraint == .appleLinksSub, "\(error)")
        #expect(try db.store.read { try $0.auditTrail(accountID: bob.id, limit: 10) }.isEmpty)
        #expect(try db.store.read { try $0.appleLink(accountID: bob.id) } == nil)
    }
}
