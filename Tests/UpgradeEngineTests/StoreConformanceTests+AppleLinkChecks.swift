import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// The Apple link check's schedule and claims (`AppleLinkCheckStore`).
extension StoreConformanceTests {
    /// Links of `names`, each with a stored token unless its name starts with `no-token`; `ended`
    /// ones are revoked.
    func checkedLinks(_ db: TestDatabase, _ names: [String], ended: Set<String> = []) throws -> [String: String] {
        var ids: [String: String] = [:]
        try db.store.write { tx in
            for name in names {
                let account = account(name)
                ids[name] = account.id
                try tx.insertAccount(account)
                var link = link(account.id, sub: "001.\(name)")
                link.refreshTokenCiphertext = name.hasPrefix("no-token") ? nil : [1, 2, 3]
                if ended.contains(name) { link.status = .revoked }
                try tx.insertAppleLink(link)
            }
        }
        return ids
    }

    @Test(
        "only linked links with a stored token are scheduled, claimed and counted as due",
        arguments: Backend.all
    )
    func linkCheckTakesPart(_ backend: Backend) throws {
        let db = try backend.database()
        let ids = try checkedLinks(db, ["alice", "bob", "no-token", "ended"], ended: ["ended"])
        let unscheduled = try db.store.read { try $0.unscheduledAppleLinkChecks(limit: 10) }
        #expect(Set(unscheduled) == [ids["alice"]!, ids["bob"]!])
        #expect(try db.store.read { try $0.oldestDueAppleLinkCheck(now: Self.now + 1000) } == nil)

        let scheduled = try db.store.write { tx in
            [
                try tx.scheduleAppleLinkCheck(accountID: ids["alice"]!, dueAt: Self.now + 10),
                try tx.scheduleAppleLinkCheck(accountID: ids["bob"]!, dueAt: Self.now + 20),
                try tx.scheduleAppleLinkCheck(accountID: ids["alice"]!, dueAt: Self.now + 99),
                // Not taking part: never due, even if scheduled.
                try tx.scheduleAppleLinkCheck(accountID: ids["ended"]!, dueAt: Self.now),
            ]
        }
        #expect(scheduled == [true, true, false, true], "a link is scheduled once")
        #expect(try db.store.read { try $0.unscheduledAppleLinkChecks(limit: 10) }.isEmpty)
        #expect(try db.store.read { try $0.oldestDueAppleLinkCheck(now: Self.now + 15) } == Self.now + 10)
        #expect(try db.store.read { try $0.oldestDueAppleLinkCheck(now: Self.now + 5) } == nil)

        let claimed = try db.store.write {
            try $0.claimDueAppleLinkChecks(now: Self.now + 100, token: "t1", claimedUntil: Self.now + 220, limit: 10)
        }
        #expect(claimed.map(\.accountID).sorted() == [ids["alice"]!, ids["bob"]!].sorted())
        #expect(claimed.allSatisfy { $0.claimToken == "t1" && $0.dueAt == Self.now + 220 })
        #expect(claimed.allSatisfy { $0.refreshTokenCiphertext == [1, 2, 3] && $0.clientID == "com.example.app" })
    }

    @Test("a claimed link goes to one checker until its claim runs out", arguments: Backend.all)
    func linkCheckClaims(_ backend: Backend) throws {
        let db = try backend.database()
        let ids = try checkedLinks(db, ["alice", "bob", "carol"])
        try db.store.write { tx in
            for (offset, name) in ["alice", "bob", "carol"].enumerated() {
                _ = try tx.scheduleAppleLinkCheck(accountID: ids[name]!, dueAt: Self.now + Int64(offset))
            }
        }
        let first = try db.store.write {
            try $0.claimDueAppleLinkChecks(now: Self.now + 10, token: "a", claimedUntil: Self.now + 130, limit: 2)
        }
        #expect(first.map(\.accountID).sorted() == [ids["alice"]!, ids["bob"]!].sorted(), "oldest due first")
        let second = try db.store.write {
            try $0.claimDueAppleLinkChecks(now: Self.now + 10, token: "b", claimedUntil: Self.now + 130, limit: 10)
        }
        #expect(second.map(\.accountID) == [ids["carol"]!], "claimed links are not claimed again")
        let during = try db.store.write {
            try $0.claimDueAppleLinkChecks(now: Self.now + 129, token: "c", claimedUntil: Self.now + 250, limit: 10)
        }
        #expect(during.isEmpty)
        #expect(try db.store.read { try $0.oldestDueAppleLinkCheck(now: Self.now + 129) } == nil, "claimed: not due")

        // Alice's check is valid; bob's failed; carol's checker died.
        let finished = try db.store.write { tx in
            [
                try tx.finishAppleLinkCheck(
                    accountID: ids["alice"]!,
                    token: "b",
                    checkedAt: Self.now + 11,
                    nextDueAt: 0
                ),
                try tx.finishAppleLinkCheck(
                    accountID: ids["alice"]!,
                    token: "a",
                    checkedAt: Self.now + 11,
                    nextDueAt: Self.now + 1000
                ),
                try tx.deferAppleLinkCheck(
                    accountID: ids["bob"]!,
                    token: "a",
                    nextDueAt: Self.now + 60,
                    error: "HTTP 503"
                ),
                try tx.deferAppleLinkCheck(
                    accountID: ids["bob"]!,
                    token: "a",
                    nextDueAt: Self.now + 60,
                    error: "again"
                ),
            ]
        }
        #expect(finished == [false, true, true, false], "only the claim's holder ends it, once")
        let alice = try #require(try db.store.read { try $0.appleLinkCheck(accountID: ids["alice"]!) })
        #expect(alice.checkedAt == Self.now + 11 && alice.dueAt == Self.now + 1000 && alice.claimToken == nil)
        let bob = try #require(try db.store.read { try $0.appleLinkCheck(accountID: ids["bob"]!) })
        #expect(bob.failures == 1 && bob.lastError == "HTTP 503" && bob.dueAt == Self.now + 60 && bob.checkedAt == nil)

        let lapsed = try db.store.write {
            try $0.claimDueAppleLinkChecks(now: Self.now + 130, token: "d", claimedUntil: Self.now + 250, limit: 10)
        }
        #expect(
            lapsed.map(\.accountID).sorted() == [ids["bob"]!, ids["carol"]!].sorted(),
            "a lapsed claim is taken over"
        )
        #expect(lapsed.first { $0.accountID == ids["bob"]! }?.failures == 1)
        #expect(
            try db.store.write { try $0.releaseAppleLinkCheck(accountID: ids["carol"]!, token: "b", dueAt: 0) } == false
        )
        #expect(
            try db.store.write {
                try $0.releaseAppleLinkCheck(accountID: ids["carol"]!, token: "d", dueAt: Self.now + 140)
            }
        )
        let carol = try #require(try db.store.read { try $0.appleLinkCheck(accountID: ids["carol"]!) })
        #expect(carol.dueAt == Self.now + 140 && carol.claimToken == nil && carol.failures == 0)

        // A valid check forgets the failures.
        #expect(
            try db.store.write {
                try $0.finishAppleLinkCheck(accountID: ids["bob"]!, token: "d", checkedAt: Self.now + 131, nextDueAt: 5)
            }
        )
        let healed = try #require(try db.store.read { try $0.appleLinkCheck(accountID: ids["bob"]!) })
        #expect(healed.failures == 0 && healed.lastError == nil && healed.checkedAt == Self.now + 131)
    }

    @Test("two checkers claiming at once never take one link twice", arguments: Backend.all)
    func linkCheckClaimRace(_ backend: Backend) async throws {
        let db = try backend.database()
        let names = (0..<40).map { "user\($0)" }
        let ids = try checkedLinks(db, names)
        try db.store.write { tx in
            for id in ids.values { _ = try tx.scheduleAppleLinkCheck(accountID: id, dueAt: Self.now) }
        }
        let store = db.store
        let claims = try await withThrowingTaskGroup(of: [String].self) { group in
            for checker in 0..<4 {
                group.addTask {
                    var mine: [String] = []
                    while true {
                        let batch = try store.write {
                            try $0.claimDueAppleLinkChecks(
                                now: Self.now,
                                token: "c\(checker)",
                                claimedUntil: Self.now + 100,
                                limit: 3
                            )
                        }
                        if batch.isEmpty { return mine }
                        mine += batch.map(\.accountID)
                    }
                }
            }
            return try await group.reduce(into: [String]()) { $0 += $1 }
        }
        #expect(claims.count == 40 && Set(claims) == Set(ids.values), "each link claimed exactly once")
    }
}
