import Foundation
import Testing

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
            updatedAt: Self.now
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
        changed.importLine = 9
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
        try db.store.write { tx in
            try tx.upsertAccountProfile(changed)
            try tx.upsertImportRun(finished)
            try tx.deleteRecoveryCodes(accountID: alice.id)
        }
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
