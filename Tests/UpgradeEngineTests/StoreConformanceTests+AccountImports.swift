import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// Account profiles and import progress (`AccountImportStore`).
extension StoreConformanceTests {
    @Test("profiles and import runs round-trip, upsert in place and go with their account", arguments: Backend.all)
    func accountImportStore(_ backend: Backend) throws {
        let db = try backend.database()
        let alice = account("alice")
        let profile = AccountProfileRecord(
            accountID: alice.id,
            email: "alice@example.com",
            displayName: "Alice Ä. Example",
            importRun: "run-1",
            importLine: 7,
            updatedAt: Self.now,
            emailSource: .device,
            displayNameSource: .import,
            fullName: PersonName(givenName: "Alice Ä.", familyName: "Example \"Quoted\"", nickname: "Al"),
            realUserStatus: .likelyReal
        )
        let run = ImportRunRecord(
            id: "run-1",
            source: "users.csv (csv)",
            lastLine: 1000,
            startedAt: Self.now,
            updatedAt: Self.now
        )
        try db.store.write { tx in
            try tx.insertAccount(alice)
            try tx.upsertAccountProfile(profile)
            try tx.insertRecoveryCodes(accountID: alice.id, codeHashes: ["a", "b"])
            try tx.upsertImportRun(run)
        }
        var changed = profile
        changed.email = nil
        changed.emailSource = nil
        changed.importLine = 9
        changed.fullName = PersonName(familyName: "山田")
        changed.realUserStatus = .unsupported
        var finished = run
        finished.lastLine = 2000
        finished.created = 3
        finished.updated = 4
        finished.skipped = 5
        finished.failed = 6
        finished.finishedAt = Self.now + 1
        let stored = try db.store.read { tx in
            (
                try tx.accountProfile(accountID: alice.id), try tx.importRun(id: "run-1"),
                try tx.importRun(id: "run-2"), try tx.accountProfile(accountID: "nobody")
            )
        }
        #expect(stored.0 == profile)
        #expect(stored.1 == run)
        #expect(stored.2 == nil)
        #expect(stored.3 == nil)
        // The hashes of every code, used or not, as provisioning compares them.
        let codes = [String(repeating: "a", count: 64), String(repeating: "b", count: 64)]
        try db.store.write { tx in
            try tx.insertRecoveryCodes(accountID: alice.id, codeHashes: codes)
            #expect(try tx.consumeRecoveryCode(accountID: alice.id, codeHash: codes[0], now: 5))
        }
        #expect(
            try Set(db.store.read { try $0.storedStates(accountIDs: [alice.id]) }[alice.id]?.recoveryCodeHashes ?? [])
                == Set(["a", "b"] + codes)
        )
        try db.store.write { tx in
            try tx.upsertAccountProfile(changed)
            try tx.upsertImportRun(finished)
            try tx.deleteRecoveryCodes(accountID: alice.id)
        }
        #expect(try db.store.read { try $0.storedStates(accountIDs: [alice.id]) }[alice.id]?.recoveryCodeHashes == [])
        let updated = try db.store.read { tx in
            (
                try tx.accountProfile(accountID: alice.id), try tx.importRun(id: "run-1"),
                try tx.unusedRecoveryCodeCount(accountID: alice.id)
            )
        }
        #expect(updated.0 == changed)
        #expect(updated.1 == finished)
        #expect(updated.2 == 0)
        _ = try db.store.write { try $0.deleteAccount(id: alice.id) }
        #expect(try db.store.read { try $0.accountProfile(accountID: alice.id) } == nil)
        #expect(try db.store.read { try $0.importRun(id: "run-1") } == finished, "a run outlives the accounts it wrote")
    }
}

extension StoreConformanceTests {
    @Test(
        "storedStates reads what a provisioning batch compares its rows with, as the one-row reads do, for many accounts at once",
        arguments: Backend.all
    )
    func storedStates(_ backend: Backend) throws {
        let db = try backend.database()
        // alice: everything but a link; bob: Apple-only with a link and a profile; carol: nothing
        // but the account; "nobody": no account at all.
        let alice = account("alice")
        var bob = account("bob")
        bob.credentialKind = .appleOnly
        let carol = account("carol")
        let profile = AccountProfileRecord(
            accountID: bob.id,
            email: "bob@example.com",
            displayName: "Bob",
            importRun: nil,
            importLine: nil,
            updatedAt: Self.now,
            emailSource: .device,
            displayNameSource: .device
        )
        try db.store.write { tx in
            for record in [alice, bob, carol] { try tx.insertAccount(record) }
            try tx.upsertPasswordCredential(
                PasswordCredentialRecord(
                    accountID: alice.id,
                    hash: "$argon2id$x",
                    format: "argon2id",
                    updatedAt: Self.now
                )
            )
            try tx.upsertTOTPEnrollment(enrollment(alice))
            try tx.insertRecoveryCodes(accountID: alice.id, codeHashes: ["c1", "c2", "c3"])
            try tx.insertAppleLink(link(bob.id, sub: "001234.bob"))
            try tx.upsertAccountProfile(profile)
        }
        let ids = [alice.id, bob.id, carol.id, "nobody"]
        let (states, one) = try db.store.read { tx in
            (
                try tx.storedStates(accountIDs: ids),
                try ids.map { id in
                    (
                        try tx.appleLink(accountID: id), try tx.passwordCredential(accountID: id),
                        try tx.totpEnrollment(accountID: id), try tx.accountProfile(accountID: id)
                    )
                }
            )
        }
        #expect(states.count == ids.count)
        for (id, single) in zip(ids, one) {
            let state = try #require(states[id])
            #expect(state.appleLink == single.0)
            #expect(state.password == single.1)
            #expect(state.totp == single.2)
            #expect(state.profile == single.3)
        }
        #expect(Set(states[alice.id]?.recoveryCodeHashes ?? []) == ["c1", "c2", "c3"])
        #expect(states[alice.id]?.password != nil && states[alice.id]?.totp != nil)
        #expect(states[bob.id]?.appleLink?.sub == "001234.bob" && states[bob.id]?.profile == profile)
        #expect(states[carol.id] == StoredAccountState())
        #expect(states["nobody"] == StoredAccountState())
        #expect(try db.store.read { try $0.storedStates(accountIDs: []) }.isEmpty)
    }
}

/// The batch writes and lookups an import's batch uses: each equal to its one-row form, across a
/// whole multi-row statement and the rows left over.
extension StoreConformanceTests {
    @Test("batch inserts, upserts and the username lookup equal their one-row forms", arguments: Backend.all)
    func batchWrites(_ backend: Backend) throws {
        let db = try backend.database()
        let count = 2 * MultiRowInsert.chunk + 7
        let accounts = (0..<count).map { account("user\($0)", id: String(format: "id-%04d", $0)) }
        let passwords = accounts.map {
            PasswordCredentialRecord(accountID: $0.id, hash: "hash-\($0.id)", format: "bcrypt", updatedAt: Self.now)
        }
        let profiles = accounts.enumerated().map { index, account in
            AccountProfileRecord(
                accountID: account.id,
                email: index.isMultiple(of: 2) ? "\(account.username)@example.com" : nil,
                displayName: index.isMultiple(of: 3) ? "Ünï \(index)" : nil,
                importRun: "run-1",
                importLine: Int64(index + 1),
                updatedAt: Self.now
            )
        }
        let events = accounts.map {
            AuditEvent(at: Self.now, accountID: $0.id, upgradeID: nil, event: "account.imported", detail: ["n": $0.id])
        }
        try db.store.write { tx in
            try tx.insertAccountRows(accounts)
            try tx.upsertPasswordCredentials(passwords)
            try tx.upsertAccountProfiles(profiles)
            try tx.appendAudit(events)
            try tx.appendAudit([])
            try tx.insertAccountRows([])
        }
        let (stored, storedPasswords, storedProfiles, trail) = try db.store.read { tx in
            (
                try tx.accounts(afterID: nil, limit: 1000),
                try accounts.map { try tx.passwordCredential(accountID: $0.id) },
                try accounts.map { try tx.accountProfile(accountID: $0.id) },
                try tx.auditEvents(AuditSearch(limit: 1000))
            )
        }
        #expect(stored.map(\.id) == accounts.map(\.id))
        #expect(stored.map(\.username) == accounts.map(\.username))
        #expect(storedPasswords == passwords)
        #expect(storedProfiles == profiles)
        #expect(trail.reversed().map(\.accountID) == events.map(\.accountID), "ids increase in the given order")
        #expect(trail.reversed().map(\.detail) == events.map(\.detail))

        // Upserts replace in place, a chunk and the rest alike.
        let changedPasswords = passwords.map {
            PasswordCredentialRecord(accountID: $0.accountID, hash: "new", format: "argon2id", updatedAt: Self.now + 1)
        }
        let changedProfiles = profiles.map {
            AccountProfileRecord(
                accountID: $0.accountID,
                email: "x@example.com",
                displayName: nil,
                importRun: "run-2",
                importLine: 1,
                updatedAt: Self.now + 1
            )
        }
        try db.store.write { tx in
            try tx.upsertPasswordCredentials(changedPasswords)
            try tx.upsertAccountProfiles(changedProfiles)
        }
        let (again, againProfiles) = try db.store.read { tx in
            (
                try accounts.map { try tx.passwordCredential(accountID: $0.id) },
                try accounts.map { try tx.accountProfile(accountID: $0.id) }
            )
        }
        #expect(again == changedPasswords)
        #expect(againProfiles == changedProfiles)

        let wanted = try [Username("user3"), Username("nobody"), Username("user200"), Username("user3")]
        let found = try db.store.read { tx in
            (try tx.accounts(usernames: wanted), try tx.accounts(usernames: []))
        }
        #expect(found.0.map(\.id).sorted() == ["id-0003", "id-0200"])
        #expect(found.1.isEmpty)

        // A username taken in a batch fails the batch, and the batch leaves nothing behind.
        #expect(throws: StorageError.self) {
            try db.store.write { tx in
                try tx.insertAccountRows((0..<MultiRowInsert.chunk).map { self.account("new\($0)") })
                try tx.insertAccountRows([self.account("user5")])
            }
        }
        #expect(try db.store.read { try $0.accounts(afterID: nil, limit: 1000).count } == count)
    }
}
