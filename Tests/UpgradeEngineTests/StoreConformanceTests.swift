import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// What the storage protocol promises, on every backend: `Backend.all` is SQLite, and PostgreSQL
/// when `UPGRADE_TEST_POSTGRES` names a cluster. What one backend alone has is in `SQLiteStoreTests`
/// and `PostgresStoreTests`.
@Suite("Storage conformance")
struct StoreConformanceTests {
    static let now: Int64 = 1_700_000_000

    func account(_ name: String, id: String? = nil) -> AccountRecord {
        AccountRecord(
            id: id ?? UUID().uuidString,
            username: name,
            credentialKind: .password,
            createdAt: Self.now,
            updatedAt: Self.now
        )
    }

    /// A TOTP enrollment for `account` with a placeholder secret.
    func enrollment(_ account: AccountRecord) -> TOTPEnrollmentRecord {
        TOTPEnrollmentRecord(
            accountID: account.id,
            secretCiphertext: [1, 2, 3],
            algorithm: .sha1,
            digits: 6,
            period: 30,
            lastAcceptedStep: nil,
            createdAt: Self.now
        )
    }

    /// The files alone: no database, so it runs for PostgreSQL without a cluster too (and its argument
    /// is not named `backend`: Scripts/test counts those as cases run on a database).
    @Test(
        "the embedded schema is exactly Schema/<backend> (rerun Scripts/embed-schema if this fails)",
        arguments: Backend.allCases
    )
    func embeddedSchemaMatchesFiles(_ schema: Backend) throws {
        let folder = Fixtures.root.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
            "Schema/\(schema.rawValue)"
        )
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".sql") }
            .sorted()
        #expect(files.count == schema.migrations.count)
        for (file, migration) in zip(files, schema.migrations) {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            #expect(text.trimmingCharacters(in: .newlines) == migration.sql, "\(file)")
            #expect(file == String(format: "%04d_", migration.version) + migration.name + ".sql")
        }
    }

    @Test("both backends number and name their migrations alike")
    func migrationsAreParallel() {
        #expect(EmbeddedSchema.postgres.map(\.version) == EmbeddedSchema.sqlite.map(\.version))
        #expect(EmbeddedSchema.postgres.map(\.name) == EmbeddedSchema.sqlite.map(\.name))
    }

    @Test(
        "PostgreSQL is configured, so every conformance test runs on it too",
        .enabled(
            if: TestPostgres.isAvailable,
            "UPGRADE_TEST_POSTGRES is not set: the conformance tests ran on SQLite only; start a cluster with Scripts/dev-postgres and export its URL as UPGRADE_TEST_POSTGRES"
        )
    )
    func postgresIsConfigured() throws {
        #expect(Backend.all == [.sqlite, .postgres])
        try Backend.postgres.database(migrated: false).store.ping()
    }

    @Test("migrate applies each migration once; status lists them", arguments: Backend.all)
    func migrateIsIdempotent(_ backend: Backend) throws {
        let db = try backend.database()
        #expect(try db.store.migrate(now: Self.now).isEmpty)
        let status = try db.store.migrationStatus()
        #expect(status.map(\.version) == backend.migrations.map(\.version))
        #expect(status.allSatisfy { $0.appliedAt == 1_700_000_000 })
    }

    @Test("status on an empty database lists every migration as pending", arguments: Backend.all)
    func statusBeforeMigrate(_ backend: Backend) throws {
        let db = try backend.database(migrated: false)
        let status = try db.store.migrationStatus()
        #expect(status.map(\.version) == backend.migrations.map(\.version))
        #expect(status.allSatisfy { $0.appliedAt == nil })
    }

    @Test("an edited, already-applied migration is refused", arguments: Backend.all)
    func checksumDrift(_ backend: Backend) throws {
        let db = try backend.database()
        _ = try db.store.write { tx in
            try TestDatabase.raw(tx, "UPDATE schema_migrations SET checksum = 'edited' WHERE version = 1")
        }
        let error = try #require(throws: StorageError.self) { try db.store.migrate(now: Self.now) }
        #expect(error.code == .migration, "\(error)")
    }

    @Test("one Apple sub cannot be linked to two accounts", arguments: Backend.all)
    func subIsUnique(_ backend: Backend) throws {
        let db = try backend.database()
        let first = account("alice")
        let second = account("bob")
        try db.store.write { tx in
            try tx.insertAccount(first)
            try tx.insertAccount(second)
            try tx.insertAppleLink(link(first.id, sub: "001.abc.1"))
        }
        do {
            try db.store.write { tx in try tx.insertAppleLink(link(second.id, sub: "001.abc.1")) }
            Issue.record("second link was accepted")
        } catch let error as StorageError {
            #expect(error.code == .uniqueViolation)
            #expect(error.constraint == .appleLinksSub)
        }
        #expect(try db.store.read { try $0.appleLink(accountID: second.id) } == nil)
    }

    @Test(
        "an Apple link's update changes its sub and details; a taken sub or a stale version is refused",
        arguments: Backend.all
    )
    func appleLinkUpdate(_ backend: Backend) throws {
        let db = try backend.database()
        let alice = account("alice")
        let bob = account("bob")
        try db.store.write { tx in
            try tx.insertAccount(alice)
            try tx.insertAccount(bob)
            try tx.insertAppleLink(link(alice.id, sub: "001.alice.1"))
            try tx.insertAppleLink(link(bob.id, sub: "001.bob.1"))
        }
        var next = link(alice.id, sub: "001.alice.1")
        next.email = "alice@privaterelay.appleid.com"
        next.emailForwardingEnabled = false
        next.updatedAt = Self.now + 1
        try db.store.write { try $0.updateAppleLink(next, expectedVersion: 1) }
        var stored = try #require(try db.store.read { try $0.appleLink(accountID: alice.id) })
        #expect(stored.email == next.email && stored.emailForwardingEnabled == false && stored.version == 2)

        next.sub = "001.alice.2"
        try db.store.write { try $0.updateAppleLink(next, expectedVersion: 2) }
        stored = try #require(try db.store.read { try $0.appleLink(sub: "001.alice.2") })
        #expect(stored.accountID == alice.id && stored.version == 3)
        #expect(try db.store.read { try $0.appleLink(sub: "001.alice.1") } == nil)

        next.sub = "001.bob.1"
        next.email = "changed@example.com"
        do {
            try db.store.write { try $0.updateAppleLink(next, expectedVersion: 3) }
            Issue.record("a sub linked to another account was accepted")
        } catch let error as StorageError {
            #expect(error.code == .uniqueViolation && error.constraint == .appleLinksSub)
        }
        stored = try #require(try db.store.read { try $0.appleLink(accountID: alice.id) })
        #expect(stored.sub == "001.alice.2" && stored.email == "alice@privaterelay.appleid.com" && stored.version == 3)
        #expect(throws: StorageError.self) {
            try db.store.write { try $0.updateAppleLink(link(alice.id, sub: "001.alice.9"), expectedVersion: 1) }
        }
    }

    @Test(
        "a transfer record's update is found by its new status and transfer sub, and keeps the old sub",
        arguments: Backend.all
    )
    func transferRecordUpdate(_ backend: Backend) throws {
        let db = try backend.database()
        let alice = account("alice")
        var record = TransferRecord(
            accountID: alice.id,
            status: "pending",
            machine: "{}",
            oldSub: "001.old.1",
            transferSub: nil,
            newSub: nil,
            targetTeamID: "TEAMB12345",
            failureReason: nil,
            attempts: 0,
            windowEndsAt: nil,
            updatedAt: Self.now
        )
        try db.store.write { tx in
            try tx.insertAccount(alice)
            try tx.upsertTransferRecord(record, expectedVersion: nil)
        }
        record.attempts = 1
        try db.store.write { try $0.upsertTransferRecord(record, expectedVersion: 1) }
        record.status = "prepared"
        record.transferSub = "001.transfer.1"
        record.oldSub = "001.someone.else"
        try db.store.write { try $0.upsertTransferRecord(record, expectedVersion: 2) }
        let stored = try #require(try db.store.read { try $0.transferRecord(transferSub: "001.transfer.1") })
        #expect(stored.status == "prepared" && stored.attempts == 1 && stored.version == 3)
        #expect(stored.oldSub == "001.old.1", "the old sub is the insert's")
        #expect(try db.store.read { try $0.transferRecord(oldSub: "001.old.1") }?.accountID == alice.id)
        #expect(try db.store.read { try $0.transferRecords(status: "prepared", limit: 10) }.count == 1)
        #expect(try db.store.read { try $0.transferRecords(status: "pending", limit: 10) }.isEmpty)
        // A stale version changes nothing.
        record.status = "failed"
        #expect(throws: StorageError.self) {
            try db.store.write { try $0.upsertTransferRecord(record, expectedVersion: 2) }
        }
        #expect(try db.store.read { try $0.transferRecord(accountID: alice.id) }?.status == "prepared")
    }

    @Test(
        "linked accounts are listed in pages in account-id order, each with its transfer record once it has one",
        arguments: Backend.all
    )
    func linkedAccountPages(_ backend: Backend) throws {
        let db = try backend.database()
        let accounts = (1...5).map { account("user\($0)", id: "acct-\($0)") }
        var revoked = link("acct-3", sub: "001.user.3")
        revoked.status = .revoked
        let record = TransferRecord(
            accountID: "acct-2",
            status: "transferPrepared",
            machine: "{}",
            oldSub: "001.user.2",
            transferSub: "001.transfer.2",
            newSub: nil,
            targetTeamID: "TEAMB12345",
            failureReason: nil,
            attempts: 1,
            windowEndsAt: 1_800_000_000,
            updatedAt: Self.now
        )
        var emailed = link("acct-4", sub: "001.user.4")
        emailed.email = "x@privaterelay.appleid.com"
        emailed.isPrivateEmail = true
        emailed.refreshTokenCiphertext = [1, 2, 3]
        try db.store.write { tx in
            for account in accounts { try tx.insertAccount(account) }
            try tx.insertAppleLink(link("acct-1", sub: "001.user.1"))
            try tx.insertAppleLink(link("acct-2", sub: "001.user.2"))
            try tx.insertAppleLink(revoked)
            try tx.insertAppleLink(emailed)
            try tx.insertAppleLink(link("acct-5", sub: "001.user.5"))
            try tx.upsertTransferRecord(record, expectedVersion: nil)
        }
        let first = try db.store.read { try $0.linkedAccounts(afterAccountID: nil, limit: 2) }
        #expect(first.map(\.link.accountID) == ["acct-1", "acct-2"])
        #expect(first[0].record == nil && first[0].link == link("acct-1", sub: "001.user.1"))
        var stored = record
        stored.version = 1
        #expect(first[1].record == stored)
        let rest = try db.store.read { try $0.linkedAccounts(afterAccountID: "acct-2", limit: 10) }
        #expect(rest.map(\.link.accountID) == ["acct-4", "acct-5"], "a revoked link is not listed")
        #expect(rest[0].link == emailed && rest[0].record == nil)
        #expect(try db.store.read { try $0.linkedAccounts(afterAccountID: "acct-5", limit: 10) }.isEmpty)
    }

    @Test(
        "inserting a transfer record another request created is a lost race; another account's old sub is refused",
        arguments: Backend.all
    )
    func transferRecordInsertRace(_ backend: Backend) throws {
        let db = try backend.database()
        let alice = account("alice")
        let bob = account("bob")
        let record = TransferRecord(
            accountID: alice.id,
            status: "transferPrepared",
            machine: "{}",
            oldSub: "001.old.1",
            transferSub: "001.transfer.1",
            newSub: nil,
            targetTeamID: "TEAMB12345",
            failureReason: nil,
            attempts: 1,
            windowEndsAt: nil,
            updatedAt: Self.now
        )
        try db.store.write { tx in
            try tx.insertAccount(alice)
            try tx.insertAccount(bob)
            try tx.upsertTransferRecord(record, expectedVersion: nil)
        }
        // The same record again, as a second batch that read the account before the first wrote it.
        do {
            try db.store.write { try $0.upsertTransferRecord(record, expectedVersion: nil) }
            Issue.record("a second insert for the account was accepted")
        } catch let error as StorageError {
            #expect(error.code == .versionConflict, "\(error)")
        }
        var other = record
        other.accountID = bob.id
        other.transferSub = "001.transfer.2"
        do {
            try db.store.write { try $0.upsertTransferRecord(other, expectedVersion: nil) }
            Issue.record("two accounts share an old sub")
        } catch let error as StorageError {
            #expect(error.code == .uniqueViolation && error.constraint == .transferRecordsOldSub, "\(error)")
        }
        #expect(try db.store.read { try $0.transferRecords(status: nil, limit: 10) }.map(\.accountID) == [alice.id])
    }

    func link(_ accountID: String, sub: String) -> AppleLinkRecord {
        AppleLinkRecord(
            accountID: accountID,
            sub: sub,
            teamID: "TEAMA12345",
            clientID: "com.example.app",
            email: nil,
            isPrivateEmail: nil,
            refreshTokenCiphertext: nil,
            status: .linked,
            linkedAt: Self.now,
            updatedAt: Self.now
        )
    }

    @Test("a stale version loses; the row is unchanged", arguments: Backend.all)
    func optimisticConcurrency(_ backend: Backend) throws {
        let db = try backend.database()
        let alice = account("alice")
        try db.store.write { try $0.insertAccount(alice) }
        try db.store.write {
            try $0.updateAccountCredentialKind(id: alice.id, kind: .appleOnly, expectedVersion: 1, now: Self.now)
        }
        #expect(throws: StorageError(.versionConflict, "account was changed by another request; reload and retry")) {
            try db.store.write {
                try $0.updateAccountCredentialKind(id: alice.id, kind: .password, expectedVersion: 1, now: Self.now)
            }
        }
        let stored = try db.store.read { try $0.account(id: alice.id) }
        #expect(stored?.credentialKind == .appleOnly)
        #expect(stored?.version == 2)
    }

    @Test(
        "an upgrade's update stores what a transition changes and keeps what was fixed at insert",
        arguments: Backend.all
    )
    func upgradeSessionUpdate(_ backend: Backend) throws {
        let db = try backend.database()
        let alice = account("alice")
        let session = UpgradeSessionRecord(
            id: "upg_1",
            accountID: alice.id,
            usernameKey: "alice",
            serviceIdentifier: "example.com",
            status: "awaitingAppleCredential",
            machine: "{}",
            stateHash: "s",
            nonceHash: "n",
            linkedSub: nil,
            createdAt: Self.now,
            expiresAt: Self.now + 600,
            updatedAt: Self.now
        )
        try db.store.write { tx in
            try tx.insertAccount(alice)
            try tx.insertUpgradeSession(session)
        }
        var next = session
        next.accountID = nil
        next.usernameKey = "mallory"
        next.serviceIdentifier = "other.example"
        next.createdAt = 0
        next.status = "completed"
        next.machine = #"{"status":"completed"}"#
        next.nonceHash = nil
        next.linkedSub = "001234.abc"
        next.expiresAt = Self.now + 1
        next.updatedAt = Self.now + 1

        try db.store.write { try $0.updateUpgradeSession(next, expectedVersion: 1) }

        let stored = try #require(try db.store.read { try $0.upgradeSession(id: "upg_1") })
        #expect(stored.accountID == alice.id)
        #expect(stored.usernameKey == "alice")
        #expect(stored.serviceIdentifier == "example.com")
        #expect(stored.createdAt == Self.now)
        #expect(stored.status == "completed")
        #expect(stored.machine == next.machine)
        #expect(stored.stateHash == "s")
        #expect(stored.nonceHash == nil)
        #expect(stored.linkedSub == "001234.abc")
        #expect(stored.expiresAt == Self.now + 1)
        #expect(stored.updatedAt == Self.now + 1)
        #expect(stored.version == 2)
    }
    @Test(
        "an account's open upgrades are exactly those whose status is not terminal, oldest first",
        arguments: Backend.all
    )
    func openUpgradeSessions(_ backend: Backend) throws {
        let db = try backend.database()
        let alice = account("alice")
        try db.store.write { tx in
            try tx.insertAccount(alice)
            for (offset, status) in UpgradeStatus.allCases.enumerated() {
                try tx.insertUpgradeSession(
                    UpgradeSessionRecord(
                        id: "upg_\(status.rawValue)",
                        accountID: alice.id,
                        usernameKey: "alice",
                        serviceIdentifier: "example.com",
                        status: status.rawValue,
                        machine: "{}",
                        stateHash: nil,
                        nonceHash: nil,
                        linkedSub: nil,
                        createdAt: Self.now - Int64(offset),
                        expiresAt: Self.now + 600,
                        updatedAt: Self.now
                    )
                )
            }
        }
        let open = try db.store.read { try $0.openUpgradeSessions(accountID: alice.id, limit: 100) }
        #expect(open.map(\.status) == UpgradeStatus.allCases.filter { !$0.isTerminal }.reversed().map(\.rawValue))
    }

    @Test("a throwing transaction rolls back everything it wrote", arguments: Backend.all)
    func rollback(_ backend: Backend) throws {
        struct Boom: Error {}
        let db = try backend.database()
        #expect(throws: Boom.self) {
            try db.store.write { tx in
                try tx.insertAccount(account("carol"))
                throw Boom()
            }
        }
        #expect(try db.store.read { try $0.account(username: Username("carol")) } == nil)
    }

    @Test(
        "a read transaction refuses a write and changes nothing; the connection still writes afterwards",
        arguments: Backend.all
    )
    func readTransactionRefusesWrites(_ backend: Backend) throws {
        let db = try backend.database()
        // One connection, so the refused write and the later ones share it.
        let store = try db.reopen(maxConnections: 1)
        do {
            try store.read { try $0.insertAccount(account("mallory")) }
            Issue.record("a write inside a read transaction was not refused")
        } catch let error as StorageError {
            #expect(error.code == .io && error.message.contains("read transaction"), "\(error)")
        }
        #expect(try store.read { try $0.account(username: Username("mallory")) } == nil)
        // The same statement, now cached, runs in a write transaction.
        try store.write { try $0.insertAccount(account("mallory")) }
        #expect(try store.read { try $0.account(username: Username("mallory")) } != nil)
    }

    @Test(
        "migration 4 keeps every audit row and its id, keeps the trail append-only, and ids keep rising",
        arguments: Backend.all
    )
    func auditRebuildKeepsRows(_ backend: Backend) throws {
        let db = try backend.database(migrated: false)
        let store = db.store
        #expect(try db.migrate(through: 3).map(\.version) == [1, 2, 3])
        for index in 0..<5 {
            try store.write {
                try $0.appendAudit(
                    AuditEvent(at: Self.now + Int64(index), accountID: "a", upgradeID: "u", event: "before.\(index)")
                )
            }
        }
        let before = try store.read { try $0.auditTrail(upgradeID: "u", limit: 100) }
        #expect(try db.migrate(through: 4).map(\.version) == [4])
        let after = try store.read { try $0.auditTrail(upgradeID: "u", limit: 100) }
        #expect(after == before)
        #expect(try store.read { try $0.auditTrail(accountID: "a", limit: 100) } == before)
        try store.write { try $0.appendAudit(AuditEvent(at: Self.now, accountID: "a", upgradeID: "u", event: "after")) }
        let ids = try store.read { try $0.auditTrail(upgradeID: "u", limit: 100) }.compactMap(\.id)
        #expect(ids == ids.sorted() && Set(ids).count == 6 && ids.last! > before.last!.id!)
        #expect(throws: StorageError.self) {
            try store.write { try TestDatabase.raw($0, "DELETE FROM audit_events") }
        }
        #expect(throws: StorageError.self) {
            try store.write { try TestDatabase.raw($0, "UPDATE audit_events SET event = 'x'") }
        }
    }

    @Test(
        "usernames are stored and found in their enforced form, case-insensitively and trimmed",
        arguments: Backend.all
    )
    func usernameNormalisation(_ backend: Backend) throws {
        let db = try backend.database()
        try db.store.write { try $0.insertAccount(account(" Alice ")) }
        #expect(try db.store.read { try $0.account(username: Username("ALICE")) }?.username == "alice")
    }

    @Test(
        "the backend stores and compares a username byte for byte; enforcing it is the engine's step",
        arguments: Backend.all
    )
    func usernameRowIsStoredAsGiven(_ backend: Backend) throws {
        let db = try backend.database()
        let nfd = "jose\u{301}"
        try db.store.write { tx in
            try tx.insertAccountRow(account("Alice"))
            try tx.insertAccountRow(account(nfd))
        }
        let stored = try db.store.read { try $0.accounts(afterID: nil, limit: 10) }.map(\.username)
        #expect(stored.contains { $0.utf8.elementsEqual("Alice".utf8) })
        #expect(stored.contains { $0.utf8.elementsEqual(nfd.utf8) })
        #expect(try db.store.read { try $0.account(username: Username("alice")) } == nil)
        #expect(try db.store.read { try $0.account(username: Username(nfd)) } == nil)
        // `insertAccount` enforces first: "ALICE" is stored, and found, as "alice".
        try db.store.write { try $0.insertAccount(account("ALICE")) }
        #expect(try db.store.read { try $0.account(username: Username("alice")) } != nil)
    }

    @Test(
        "a password check's snapshot, read in one statement, equals the four single-row reads",
        arguments: Backend.all
    )
    func passwordCheckSnapshot(_ backend: Backend) throws {
        let db = try backend.database()
        let plain = account("plain")
        let withTOTP = account("Two-Factor")
        let converted = account("converted")
        try db.store.write { tx in
            for record in [plain, withTOTP, converted] {
                try tx.insertAccount(record)
                try tx.upsertPasswordCredential(
                    PasswordCredentialRecord(
                        accountID: record.id,
                        hash: "h-\(record.id)",
                        format: "argon2id",
                        updatedAt: 7
                    )
                )
            }
            try tx.upsertTOTPEnrollment(enrollment(withTOTP))
            try tx.deletePasswordCredential(accountID: converted.id)
            _ = try tx.recordFailure(usernameKey: "plain", now: 5)
            _ = try tx.recordFailure(usernameKey: "nobody", now: 6)
            _ = try tx.recordFailure(usernameKey: "nobody", now: 8)
        }
        for key in ["plain", "two-factor", "Two-Factor", "converted", "nobody", "never-seen"] {
            let username = try Username(key)
            let snapshot = try db.store.read { try $0.passwordCheckSnapshot(username: username) }
            let expected = try db.store.read { tx in
                var expected = PasswordCheckSnapshot(throttle: try tx.throttle(usernameKey: username.value))
                expected.account = try tx.account(username: username)
                if let account = expected.account {
                    expected.credential = try tx.passwordCredential(accountID: account.id)
                    expected.hasSecondFactor = try tx.totpEnrollment(accountID: account.id) != nil
                }
                return expected
            }
            #expect(snapshot == expected, "\(key)")
        }
        let twoFactor = try db.store.read { try $0.passwordCheckSnapshot(username: Username("two-factor")) }
        #expect(twoFactor.hasSecondFactor && twoFactor.credential?.hash == "h-\(withTOTP.id)")
        let nobody = try db.store.read { try $0.passwordCheckSnapshot(username: Username("nobody")) }
        #expect(nobody.account == nil && nobody.throttle?.failures == 2 && nobody.throttle?.lastFailureAt == 8)
        #expect(try db.store.read { try $0.passwordCheckSnapshot(username: Username("converted")) }.credential == nil)
    }

    @Test("the audit trail is append-only", arguments: Backend.all)
    func auditAppendOnly(_ backend: Backend) throws {
        let db = try backend.database()
        try db.store.write {
            try $0.appendAudit(
                AuditEvent(at: Self.now, accountID: "a", upgradeID: nil, event: "test", detail: ["k": "v"])
            )
        }
        #expect(throws: StorageError.self) {
            try db.store.write {
                try TestDatabase.raw($0, "UPDATE audit_events SET event = 'x'")
            }
        }
        #expect(throws: StorageError.self) {
            try db.store.write { try TestDatabase.raw($0, "DELETE FROM audit_events") }
        }
        let trail = try db.store.read { try $0.auditTrail(accountID: "a", limit: 10) }
        #expect(trail.map(\.event) == ["test"])
        #expect(trail.first?.detail == ["k": "v"])
    }

    @Test(
        "the audit detail is the engine's JSON: the store keeps its text, and reading skips what is not a string",
        arguments: Backend.all
    )
    func auditDetailJSON(_ backend: Backend) throws {
        let event = AuditEvent(
            at: Self.now,
            accountID: "a",
            upgradeID: nil,
            event: "t",
            detail: ["b": "x\"y", "a": "1"]
        )
        #expect(event.detailJSON == #"{"a":"1","b":"x\"y"}"#)
        let db = try backend.database()
        try db.store.write { try $0.appendAudit(event) }
        let stored = try db.store.read { tx in
            try TestDatabase.raw(tx, "SELECT detail FROM audit_events").first?.first
        }
        #expect(stored == .text(event.detailJSON))
        #expect(try db.store.read { try $0.auditTrail(accountID: "a", limit: 1) }.first?.detail == event.detail)
        #expect(AuditEvent.detail(json: #"{"a":"1","n":2,"o":{"k":"v"}}"#) == ["a": "1"])
        #expect(AuditEvent.detail(json: "not JSON").isEmpty)
        #expect(AuditEvent.detail(json: #"["a"]"#).isEmpty)
    }

    @Test("a TOTP step and a recovery code can each be used once", arguments: Backend.all)
    func singleUseSecondFactor(_ backend: Backend) throws {
        let db = try backend.database()
        let alice = account("alice")
        try db.store.write { tx in
            try tx.insertAccount(alice)
            try tx.upsertTOTPEnrollment(enrollment(alice))
            try tx.insertRecoveryCodes(accountID: alice.id, codeHashes: ["h1", "h2"])
        }
        #expect(try db.store.write { try $0.advanceTOTPStep(accountID: alice.id, step: 100) })
        #expect(try !db.store.write { try $0.advanceTOTPStep(accountID: alice.id, step: 100) })
        #expect(try !db.store.write { try $0.advanceTOTPStep(accountID: alice.id, step: 99) })
        #expect(try db.store.write { try $0.consumeRecoveryCode(accountID: alice.id, codeHash: "h1", now: Self.now) })
        #expect(try !db.store.write { try $0.consumeRecoveryCode(accountID: alice.id, codeHash: "h1", now: Self.now) })
        #expect(try db.store.read { try $0.unusedRecoveryCodeCount(accountID: alice.id) } == 1)
    }

    @Test(
        "an upgrade ticket is spent once, by its own account, before it expires; minting deletes expired ones",
        arguments: Backend.all
    )
    func upgradeTicketsAreSingleUse(_ backend: Backend) throws {
        let db = try backend.database()
        let alice = account("alice")
        let bob = account("bob")
        func ticket(_ hash: String, _ owner: AccountRecord, expiresAt: Int64 = Self.now + 300) -> UpgradeTicketRecord {
            UpgradeTicketRecord(
                ticketHash: hash,
                accountID: owner.id,
                secondFactorVerified: hash == "t-2fa",
                createdAt: Self.now,
                expiresAt: expiresAt
            )
        }
        try db.store.write { tx in
            try tx.insertAccount(alice)
            try tx.insertAccount(bob)
            try tx.insertUpgradeTicket(ticket("t1", alice), now: Self.now)
            try tx.insertUpgradeTicket(ticket("t-2fa", alice), now: Self.now)
            try tx.insertUpgradeTicket(ticket("t-old", alice, expiresAt: Self.now + 10), now: Self.now)
        }
        func consume(_ hash: String, _ owner: AccountRecord, at now: Int64 = Self.now) throws -> UpgradeTicketRecord? {
            try db.store.write {
                try $0.consumeUpgradeTicket(hash: hash, accountID: owner.id, usedBy: "upg_1", now: now)
            }
        }
        // Another account's ticket is refused and stays unspent for its owner.
        #expect(try consume("t1", bob) == nil)
        #expect(try consume("t1", alice) == ticket("t1", alice))
        #expect(try consume("t1", alice) == nil, "spent once")
        #expect(try db.store.read { try $0.upgradeTicket(hash: "t1") }?.usedAt == Self.now)
        #expect(try db.store.read { try $0.upgradeTicket(hash: "t1") }?.usedBy == "upg_1")
        #expect(try consume("t-2fa", alice)?.secondFactorVerified == true)
        #expect(try consume("t-old", alice, at: Self.now + 10) == nil, "expired at its expiresAt")
        #expect(try consume("unknown", alice) == nil)
        // Minting deletes the tickets expired by then.
        try db.store.write { try $0.insertUpgradeTicket(ticket("t2", bob), now: Self.now + 10) }
        #expect(try db.store.read { try $0.upgradeTicket(hash: "t-old") } == nil)
        #expect(try db.store.read { try $0.upgradeTicket(hash: "t2") } != nil)
        let duplicate = #expect(throws: StorageError.self) {
            try db.store.write { try $0.insertUpgradeTicket(ticket("t2", alice), now: Self.now + 10) }
        }
        #expect(duplicate?.constraint == .upgradeTicketsHash)

        // Racing spenders of one ticket: exactly one gets it.
        try db.store.write { try $0.insertUpgradeTicket(ticket("t-race", bob), now: Self.now) }
        let results = DispatchQueue.ConcurrentResults(count: 8)
        let store = db.store
        let bobID = bob.id
        DispatchQueue.concurrentPerform(iterations: 8) { index in
            let spent = try? store.write {
                try $0.consumeUpgradeTicket(hash: "t-race", accountID: bobID, usedBy: "upg_0", now: Self.now)
            }
            results.set(index, spent != nil)
        }
        #expect(results.values.filter { $0 }.count == 1)

        // Racing re-presentations of one spent ticket: exactly one moves it.
        let moved = DispatchQueue.ConcurrentResults(count: 8)
        DispatchQueue.concurrentPerform(iterations: 8) { index in
            let done = try? store.write {
                try $0.rebindUpgradeTicket(
                    hash: "t-race",
                    accountID: bobID,
                    from: "upg_0",
                    to: "upg_\(index + 1)",
                    now: Self.now
                )
            }
            moved.set(index, done == true)
        }
        #expect(moved.values.filter { $0 }.count == 1)
    }

    @Test(
        "a spent ticket moves only from the flow it is spent on, for its account, before it expires",
        arguments: Backend.all
    )
    func upgradeTicketsRebind(_ backend: Backend) throws {
        let db = try backend.database()
        let alice = account("alice")
        let bob = account("bob")
        try db.store.write { tx in
            try tx.insertAccount(alice)
            try tx.insertAccount(bob)
            for hash in ["t1", "t2", "t3"] {
                try tx.insertUpgradeTicket(
                    UpgradeTicketRecord(
                        ticketHash: hash,
                        accountID: alice.id,
                        secondFactorVerified: false,
                        createdAt: Self.now,
                        expiresAt: Self.now + 300
                    ),
                    now: Self.now
                )
            }
            _ = try tx.consumeUpgradeTicket(hash: "t1", accountID: alice.id, usedBy: "upg_a", now: Self.now)
        }
        func rebind(_ from: String, _ to: String, _ owner: AccountRecord, at now: Int64 = Self.now) throws -> Bool {
            try db.store.write {
                try $0.rebindUpgradeTicket(hash: "t1", accountID: owner.id, from: from, to: to, now: now)
            }
        }
        #expect(try !rebind("upg_other", "upg_b", alice), "not from a flow it is not spent on")
        #expect(try !rebind("upg_a", "upg_b", bob), "not for another account")
        #expect(try !rebind("upg_a", "upg_b", alice, at: Self.now + 300), "not once expired")
        #expect(try rebind("upg_a", "upg_b", alice))
        #expect(try db.store.read { try $0.upgradeTicket(hash: "t1") }?.usedBy == "upg_b")
        #expect(try db.store.read { try $0.upgradeTicket(hash: "t1") }?.usedAt == Self.now)
        #expect(try !rebind("upg_a", "upg_c", alice), "moved once")
        // An unspent ticket is not moved: it is spent.
        #expect(
            try !db.store.write {
                try $0.rebindUpgradeTicket(hash: "t2", accountID: alice.id, from: "", to: "upg_x", now: Self.now)
            }
        )
        // A credential change deletes all of the account's tickets, spent or not.
        try db.store.write { tx in
            try tx.insertUpgradeTicket(
                UpgradeTicketRecord(
                    ticketHash: "t-bob",
                    accountID: bob.id,
                    secondFactorVerified: false,
                    createdAt: Self.now,
                    expiresAt: Self.now + 300
                ),
                now: Self.now
            )
            try tx.deleteUpgradeTickets(accountID: alice.id)
        }
        for hash in ["t1", "t2", "t3"] { #expect(try db.store.read { try $0.upgradeTicket(hash: hash) } == nil) }
        #expect(try db.store.read { try $0.upgradeTicket(hash: "t-bob") } != nil, "another account's stays")
    }

    @Test("open password changes: the account's started and stepUpRequired ones, oldest first", arguments: Backend.all)
    func openPasswordChanges(_ backend: Backend) throws {
        let db = try backend.database()
        let alice = account("alice")
        let bob = account("bob")
        func change(_ id: String, _ owner: AccountRecord, _ status: String, at time: Int64) -> PasswordChangeRecord {
            PasswordChangeRecord(
                id: id,
                accountID: owner.id,
                usernameKey: owner.username,
                serviceIdentifier: "example.com",
                status: status,
                machine: "{}",
                newPasswordHash: nil,
                createdAt: time,
                expiresAt: time + 600,
                updatedAt: time
            )
        }
        try db.store.write { tx in
            try tx.insertAccount(alice)
            try tx.insertAccount(bob)
            try tx.insertPasswordChange(change("pwc_3", alice, "stepUpRequired", at: Self.now + 2))
            try tx.insertPasswordChange(change("pwc_1", alice, "started", at: Self.now))
            try tx.insertPasswordChange(change("pwc_2", alice, "completed", at: Self.now + 1))
            try tx.insertPasswordChange(change("pwc_4", alice, "failed", at: Self.now + 3))
            try tx.insertPasswordChange(change("pwc_5", alice, "expired", at: Self.now + 4))
            try tx.insertPasswordChange(change("pwc_6", bob, "stepUpRequired", at: Self.now))
        }
        let open = try db.store.read { try $0.openPasswordChanges(accountID: alice.id, limit: 10) }
        #expect(open.map(\.id) == ["pwc_1", "pwc_3"])
        #expect(try db.store.read { try $0.openPasswordChanges(accountID: alice.id, limit: 1) }.map(\.id) == ["pwc_1"])
    }

    @Test("deleting an account's password leaves a database with no hash for it", arguments: Backend.all)
    func deletePassword(_ backend: Backend) throws {
        let db = try backend.database()
        let alice = account("alice")
        try db.store.write { tx in
            try tx.insertAccount(alice)
            try tx.upsertPasswordCredential(
                PasswordCredentialRecord(accountID: alice.id, hash: "$2b$04$x", format: "bcrypt", updatedAt: Self.now)
            )
        }
        try db.store.write { try $0.deletePasswordCredential(accountID: alice.id) }
        #expect(try db.store.read { try $0.passwordCredential(accountID: alice.id) } == nil)
        // Nothing left to delete is no failure.
        try db.store.write { try $0.deletePasswordCredential(accountID: alice.id) }
    }

    @Test(
        "an account's snapshot, read in one statement, equals the account, password and profile reads",
        arguments: Backend.all
    )
    func accountSnapshot(_ backend: Backend) throws {
        let db = try backend.database()
        let bare = account("bare")
        let full = account("full")
        try db.store.write { tx in
            try tx.insertAccount(bare)
            try tx.insertAccount(full)
            try tx.upsertPasswordCredential(
                PasswordCredentialRecord(accountID: full.id, hash: "h-full", format: "argon2id", updatedAt: 7)
            )
            try tx.upsertAccountProfile(
                AccountProfileRecord(
                    accountID: full.id,
                    email: "full@example.com",
                    displayName: "Füll Example",
                    importRun: nil,
                    importLine: nil,
                    updatedAt: 8,
                    emailSource: .device,
                    displayNameSource: .device,
                    fullName: PersonName(givenName: "Füll", familyName: "Example"),
                    realUserStatus: .likelyReal
                )
            )
        }
        for id in [bare.id, full.id] {
            let (snapshot, expected) = try db.store.read { tx in
                (
                    try tx.accountSnapshot(id: id),
                    try tx.account(id: id).map { account in
                        AccountSnapshot(
                            account: account,
                            credential: try tx.passwordCredential(accountID: id),
                            profile: try tx.accountProfile(accountID: id)
                        )
                    }
                )
            }
            #expect(snapshot != nil && snapshot == expected, "\(id)")
        }
        let fullSnapshot = try db.store.read { try $0.accountSnapshot(id: full.id) }
        #expect(fullSnapshot?.credential?.hash == "h-full" && fullSnapshot?.profile?.realUserStatus == .likelyReal)
        #expect(try db.store.read { try $0.accountSnapshot(id: "nobody") } == nil)
    }

    @Test("many threads writing at once: every increment lands exactly once", arguments: Backend.all)
    func concurrentWriters(_ backend: Backend) async throws {
        let db = try backend.database()
        let store = db.store
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<40 {
                group.addTask {
                    _ = try? store.write { try $0.recordFailure(usernameKey: "shared", now: Self.now) }
                }
            }
        }
        #expect(try store.read { try $0.throttle(usernameKey: "shared") }?.failures == 40)
    }
}

extension DispatchQueue {
    /// One Bool per concurrent iteration, written under a lock.
    final class ConcurrentResults: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: [Bool]
        init(count: Int) { stored = Array(repeating: false, count: count) }
        func set(_ index: Int, _ value: Bool) { lock.withLock { stored[index] = value } }
        var values: [Bool] { lock.withLock { stored } }
    }
}
