import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// Retired transfer records (migration 28; docs/apple-protocol.md §3.2, "A later transfer"), on
/// every backend.
extension StoreConformanceTests {
    func transferred(_ accountID: String, oldSub: String, transferSub: String, newSub: String) -> TransferRecord {
        TransferRecord(
            accountID: accountID,
            status: "transferred",
            machine: "{}",
            oldSub: oldSub,
            transferSub: transferSub,
            newSub: newSub,
            targetTeamID: "TEAMB67890",
            failureReason: nil,
            attempts: 2,
            windowEndsAt: Self.now + 100,
            updatedAt: Self.now
        )
    }

    @Test(
        "retiring moves a record as stored to the retired records, frees its ids, and refuses a stale version",
        arguments: Backend.all
    )
    func retireTransferRecord(_ backend: Backend) throws {
        let db = try backend.database()
        let alice = account("alice")
        let first = transferred(alice.id, oldSub: "001.a.1", transferSub: "001.t.ab", newSub: "001.b.1")
        try db.store.write { tx in
            try tx.insertAccount(alice)
            try tx.upsertTransferRecord(first, expectedVersion: nil)
        }
        // A stale version retires nothing, and the transaction keeps nothing of it.
        let stale = try #require(throws: StorageError.self) {
            try db.store.write { try $0.retireTransferRecord(accountID: alice.id, expectedVersion: 2, retiredAt: 5) }
        }
        #expect(stale.code == .versionConflict)
        #expect(try db.store.read { try $0.retiredTransferRecords(accountID: alice.id) }.isEmpty)

        // Retired with the next transfer's record in one transaction: the same ids may be used again.
        var second = transferred(alice.id, oldSub: "001.b.1", transferSub: "001.t.ba", newSub: "001.a.1")
        second.targetTeamID = "TEAMA12345"
        second.windowEndsAt = nil
        #expect(try db.store.read { try $0.latestWindowEnd(targetTeamID: "TEAMB67890") } == Self.now + 100)
        try db.store.write { tx in
            try tx.retireTransferRecord(accountID: alice.id, expectedVersion: 1, retiredAt: Self.now + 200)
            try tx.upsertTransferRecord(second, expectedVersion: nil)
        }
        // The window of the transfer to a team, whether its records are live or retired.
        #expect(try db.store.read { try $0.latestWindowEnd(targetTeamID: "TEAMB67890") } == Self.now + 100)
        #expect(try db.store.read { try $0.latestWindowEnd(targetTeamID: "TEAMA12345") } == nil)
        #expect(try db.store.read { try $0.latestWindowEnd(targetTeamID: "TEAMC13579") } == nil)
        let retired = try db.store.read { try $0.retiredTransferRecords(accountID: alice.id) }
        #expect(retired == [RetiredTransferRecord(record: first, retiredAt: Self.now + 200)])
        #expect(try db.store.read { try $0.transferRecord(accountID: alice.id) } == second)
        #expect(try db.store.read { try $0.retiredTransferRecord(oldSub: "001.a.1") }?.record == first)
        #expect(try db.store.read { try $0.retiredTransferRecord(oldSub: "001.b.1") } == nil)
        #expect(try db.store.read { try $0.retiredTransferTargets() } == ["TEAMB67890"])

        // A -> B -> A -> B: the same old id (and transfer id) retired twice; the latest is found.
        try db.store.write { tx in
            try tx.retireTransferRecord(accountID: alice.id, expectedVersion: 1, retiredAt: Self.now + 300)
            try tx.upsertTransferRecord(first, expectedVersion: nil)
            try tx.retireTransferRecord(accountID: alice.id, expectedVersion: 1, retiredAt: Self.now + 400)
        }
        #expect(
            try db.store.read { try $0.retiredTransferRecords(accountID: alice.id) }.map(\.retiredAt) == [
                Self.now + 200, Self.now + 300, Self.now + 400,
            ]
        )
        #expect(try db.store.read { try $0.retiredTransferRecord(oldSub: "001.a.1") }?.retiredAt == Self.now + 400)
        #expect(try db.store.read { try $0.transferRecord(accountID: alice.id) } == nil)
        #expect(try db.store.read { try $0.retiredTransferTargets() } == ["TEAMA12345", "TEAMB67890"])

        // Retiring a record that is gone is a lost race too.
        let gone = try #require(throws: StorageError.self) {
            try db.store.write { try $0.retireTransferRecord(accountID: alice.id, expectedVersion: 1, retiredAt: 5) }
        }
        #expect(gone.code == .versionConflict)

        // The retired records go with their account.
        _ = try db.store.write { try $0.deleteAccount(id: alice.id) }
        #expect(try db.store.read { try $0.retiredTransferRecords(accountID: alice.id) }.isEmpty)
        #expect(try db.store.read { try $0.retiredTransferRecord(oldSub: "001.a.1") } == nil)
    }

    @Test(
        "transfer status counts an earlier transfer's records, and its team's new users, for the later transfer",
        arguments: Backend.all
    )
    func progressAfterRetirement(_ backend: Backend) throws {
        let db = try backend.database()
        // Three accounts migrated A -> B, and one user who signed up under B.
        try db.store.write { tx in
            for name in ["u1", "u2", "u3", "fresh"] {
                let user = account(name, id: "acct-\(name)")
                try tx.insertAccount(user)
                var userLink = link(user.id, sub: "001.b.\(name)")
                userLink.teamID = "TEAMB67890"
                try tx.insertAppleLink(userLink)
                if name != "fresh" {
                    try tx.upsertTransferRecord(
                        transferred(
                            user.id,
                            oldSub: "001.a.\(name)",
                            transferSub: "001.t.\(name)",
                            newSub: userLink.sub
                        ),
                        expectedVersion: nil
                    )
                }
            }
        }
        var progress = try db.store.read { try $0.transferProgress() }
        #expect(progress.recordsByStatus["transferred"] == 3)
        #expect(progress.untouchedLinkedAccounts == 0, "B's own new user is not part of A -> B")
        #expect(progress.windows == [Self.now + 100: 3])

        // B -> C begins: u1 retired and prepared for C.
        try db.store.write { tx in
            try tx.retireTransferRecord(accountID: "acct-u1", expectedVersion: 1, retiredAt: Self.now + 1_000)
            var next = transferred("acct-u1", oldSub: "001.b.u1", transferSub: "001.t.c.u1", newSub: "")
            next.status = "transferPrepared"
            next.newSub = nil
            next.windowEndsAt = nil
            next.targetTeamID = "TEAMC13579"
            next.updatedAt = Self.now + 1_000
            try tx.upsertTransferRecord(next, expectedVersion: nil)
        }
        progress = try db.store.read { try $0.transferProgress() }
        #expect(progress.recordsByStatus["transferPrepared"] == 1)
        #expect(progress.recordsByStatus["transferred", default: 0] == 0)
        #expect(progress.untouchedLinkedAccounts == 3, "u2, u3 (to be retired) and fresh are B -> C's to prepare")
        #expect(progress.windows.isEmpty, "A -> B's window is not B -> C's")
    }
}
