import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// Look-alike usernames (UTS #39; docs/usernames.md) at the store: a new account whose username has
/// an existing account's confusable skeleton is refused, on every backend, however the creations
/// interleave; and databases that already hold look-alikes get their skeletons and keep them.
extension StoreConformanceTests {
    /// `alice` spelled with Latin look-alikes only: every one passes the script rule, and all have
    /// the skeleton `alice`.
    static let latinAlices = [
        "alice", "\u{251}lice", "al\u{131}ce", "\u{251}l\u{131}ce", "a\u{1C0}ice", "\u{251}\u{1C0}ice",
        "a\u{1C0}\u{131}ce", "\u{251}\u{1C0}\u{131}ce",
    ]

    static func usernames(_ store: any UpgradeStore) throws -> [String] {
        try store.read { tx in try tx.accounts(afterID: nil, limit: 100).map(\.username) }
    }

    @Test(
        "creating ɑlice, аlice or alicе beside alice is refused: the script rule or the skeleton",
        arguments: Backend.all
    )
    func lookAlikeCreationRefused(_ backend: Backend) throws {
        let db = try backend.database()
        try db.store.write { try $0.insertAccount(account("alice")) }
        let attempts: [(String, StorageError.Code, StorageError.Constraint?)] = [
            ("\u{251}lice", .uniqueViolation, .accountsUsernameSkeleton),  // Latin alpha: one script
            ("\u{430}lice", .constraint, nil),  // Cyrillic а: mixed scripts
            ("alic\u{435}", .constraint, nil),  // Cyrillic е: mixed scripts
            ("ALICE", .uniqueViolation, .accountsUsername),  // the same name, as before
        ]
        for (username, code, constraint) in attempts {
            do {
                try db.store.write { try $0.insertAccount(account(username)) }
                Issue.record("\(username) was created")
            } catch let error as StorageError {
                #expect(error.code == code, "\(username): \(error)")
                #expect(error.constraint == constraint, "\(username): \(error)")
                #expect(!error.message.contains("alice"), "no bound value: \(error)")
            }
        }
        #expect(try Self.usernames(db.store) == ["alice"])
        let found = try db.store.read { try $0.lookAlikeAccounts(of: Username("\u{251}LICE")) }
        #expect(found.map(\.username) == ["alice"])
        #expect(try db.store.read { try $0.lookAlikeAccounts(of: Username("alice")) }.isEmpty, "not itself")
        #expect(try db.store.read { try $0.lookAlikeAccounts(of: Username("bob")) }.isEmpty)
    }

    @Test("names in several scripts live side by side", arguments: Backend.all)
    func singleScriptNamesCoexist(_ backend: Backend) throws {
        let db = try backend.database()
        let names = [
            "alice", "\u{438}\u{432}\u{430}\u{43D}", "\u{305F}\u{306A}\u{304B}", "jos\u{E9}", "jose", "bob",
            "\u{6771}\u{4EAC}\u{30BF}\u{30EF}\u{30FC}", "user2", "user3",
        ]
        try db.store.write { tx in for name in names { try tx.insertAccount(account(name)) } }
        #expect(try Self.usernames(db.store).sorted() == names.sorted())
    }

    @Test("a row stored around the check still meets the unique index on skeletons", arguments: Backend.all)
    func skeletonIndexBacksTheCheck(_ backend: Backend) throws {
        let db = try backend.database()
        try db.store.write { try $0.insertAccount(account("alice")) }
        do {
            try db.store.write { try $0.insertAccountRows([account("\u{251}lice")]) }
            Issue.record("the look-alike row was stored")
        } catch let error as StorageError {
            #expect(error.code == .uniqueViolation, "\(error)")
            #expect(error.constraint == .accountsUsernameSkeleton, "\(error)")
        }
    }

    @Test("look-alikes created at once from many threads: exactly one is stored", arguments: Backend.all)
    func concurrentLookAlikes(_ backend: Backend) async throws {
        let db = try backend.database()
        let store = db.store
        let names = Self.latinAlices
        #expect(Set(names.map(Username.skeleton(ofStored:))).count == 1)
        let outcomes = DispatchQueue.ConcurrentResults(count: names.count)
        let refusals = DispatchQueue.ConcurrentResults(count: names.count)
        await withTaskGroup(of: Void.self) { group in
            for (index, name) in names.enumerated() {
                let record = account(name)
                group.addTask {
                    do {
                        try store.write { try $0.insertAccount(record) }
                        outcomes.set(index, true)
                    } catch let error as StorageError {
                        refusals.set(index, error.constraint == .accountsUsernameSkeleton)
                    } catch {}
                }
            }
        }
        #expect(outcomes.values.filter { $0 }.count == 1)
        #expect(
            zip(outcomes.values, refusals.values).allSatisfy { $0 != $1 },
            "every other one refused as a look-alike"
        )
        #expect(try Self.usernames(store).count == 1)
    }

    /// A database as the binary before migration 18 left it, with look-alikes stored side by side.
    static func oldDatabaseWithLookAlikes(_ backend: Backend, forProcesses: Bool = false) throws -> TestDatabase {
        let db = try backend.database(migrated: false, forProcesses: forProcesses)
        _ = try db.migrate(through: UsernameSkeletons.migrationVersion - 1)
        let rows: [(String, String)] = [
            ("a1", "alice"), ("a2", "\u{430}lice"), ("a3", "alic\u{435}"), ("a4", "\u{251}lice"), ("b1", "bob"),
            ("c1", "user1"), ("c2", "userl"), ("d1", "\u{438}\u{432}\u{430}\u{43D}"),
        ]
        try db.store.write { tx in
            for (id, username) in rows {
                try TestDatabase.raw(
                    tx,
                    "INSERT INTO accounts (id, username, credential_kind, created_at, updated_at) VALUES (?, ?, 'password', 1, 1)",
                    [.text(id), .text(username)]
                )
            }
        }
        return db
    }

    @Test(
        "migration 18 computes every stored skeleton, groups look-alikes already stored, and still refuses a new one",
        arguments: Backend.all
    )
    func migrationFillsSkeletons(_ backend: Backend) throws {
        let db = try Self.oldDatabaseWithLookAlikes(backend)
        #expect(try db.store.migrate(now: Self.now).map(\.version).contains(UsernameSkeletons.migrationVersion))
        let shared = try db.store.read { try $0.accountsSharingUsernameSkeleton() }
        #expect(shared.map(\.account.id) == ["a1", "a2", "a3", "a4", "c1", "c2"])
        #expect(shared.map(\.skeleton) == Array(repeating: "alice", count: 4) + Array(repeating: "userl", count: 2))
        #expect(try db.store.read { try UsernameSkeletons.areCurrent($0) })
        let sharedFlags = try db.store.read { tx in
            try TestDatabase.raw(tx, "SELECT id FROM accounts WHERE username_skeleton_shared = 1 ORDER BY id")
                .map { $0[0].string ?? "" }
        }
        #expect(sharedFlags == ["a1", "a2", "a3", "a4", "c1", "c2"])

        // Each group is left for an operator; a new look-alike of it is refused all the same.
        for name in ["al\u{131}ce", "user\u{1C0}"] {
            #expect {
                try db.store.write { try $0.insertAccount(account(name)) }
            } throws: { error in
                (error as? StorageError)?.constraint == .accountsUsernameSkeleton
            }
        }
        try db.store.write { try $0.insertAccount(account("carol")) }
        // Migrating again changes nothing.
        #expect(try db.store.migrate(now: Self.now).isEmpty)
        #expect(try db.store.read { try $0.accountsSharingUsernameSkeleton() }.count == 6)
    }

    @Test(
        "skeletons from another ICU release are computed again by migrate; until then creation is refused",
        arguments: Backend.all
    )
    func skeletonsFromAnotherRelease(_ backend: Backend) throws {
        let db = try backend.database()
        try db.store.write { tx in
            try tx.insertAccount(account("alice"))
            try tx.insertAccount(account("bob"))
            // As another release might have left them: different skeletons, alice's one of a kind.
            try TestDatabase.raw(
                tx,
                "UPDATE accounts SET username_skeleton = 'old-' || username, username_skeleton_shared = 0"
            )
            try tx.setUsernameSkeletonSource("ICU 1.0, Unicode 1.0")
        }
        let refused = try #require(throws: StorageError.self) {
            try db.store.write { try $0.insertAccount(account("\u{251}lice")) }
        }
        #expect(refused.code == .migration)
        #expect(refused.message.contains("run 'upgrade-cli db migrate'"), "\(refused)")

        #expect(try db.store.migrate(now: Self.now).isEmpty)
        #expect(try db.store.read { try UsernameSkeletons.areCurrent($0) })
        #expect {
            try db.store.write { try $0.insertAccount(account("\u{251}lice")) }
        } throws: { error in
            (error as? StorageError)?.constraint == .accountsUsernameSkeleton
        }
    }
}
