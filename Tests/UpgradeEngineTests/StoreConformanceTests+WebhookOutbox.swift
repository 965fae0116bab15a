import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// The webhook outbox (`WebhookOutboxStore`): numbering, the in-order claim, finishing, deferring,
/// giving up, replay and counts, the same on both backends.
extension StoreConformanceTests {
    func webhookEvent(_ id: String, account: String?, at: Int64 = Self.now) -> WebhookEventRecord {
        WebhookEventRecord(
            id: id,
            accountID: account,
            type: "account.converted",
            payload: #"{"type":"account.converted"}"#,
            createdAt: at,
            nextAttemptAt: at
        )
    }

    @Test(
        "outbox: events are numbered per account, and a claim takes only each account's first pending event",
        arguments: Backend.all
    )
    func webhookOrderedClaim(_ backend: Backend) throws {
        let db = try backend.database()
        let ids = ["msg_a1", "msg_b1", "msg_a2", "msg_x", "msg_a3"]
        try db.store.write { tx in
            for (id, account) in zip(ids, ["a", "b", "a", nil, "a"]) {
                try tx.insertWebhookEvent(webhookEvent(id, account: account))
            }
        }
        let sequences = try db.store.read { tx in try ids.map { try tx.webhookEvent(id: $0)?.accountSequence } }
        #expect(sequences == [1, 1, 2, nil, 3])

        let first = try db.store.write {
            try $0.claimDueWebhookEvents(now: Self.now, token: "t1", claimedUntil: Self.now + 30, limit: 10)
        }
        #expect(Set(first.map(\.id)) == ["msg_a1", "msg_b1", "msg_x"])
        #expect(first.allSatisfy { $0.claimToken == "t1" && $0.firstAttemptAt == Self.now })
        // Everything due is claimed or waits behind its account's claimed event.
        let none = try db.store.write {
            try $0.claimDueWebhookEvents(now: Self.now, token: "t2", claimedUntil: Self.now + 30, limit: 10)
        }
        #expect(none.isEmpty)

        // a1 fails once: a2 still waits, since a1 is pending (deferred), not given up.
        #expect(
            try db.store.write {
                try $0.deferWebhookEvent(
                    id: "msg_a1",
                    token: "t1",
                    nextAttemptAt: Self.now + 5,
                    failedAt: nil,
                    error: "HTTP 503"
                )
            }
        )
        #expect(
            try db.store.write {
                try $0.deferWebhookEvent(
                    id: "msg_a1",
                    token: "t1",
                    nextAttemptAt: Self.now + 5,
                    failedAt: nil,
                    error: "x"
                )
            } == false
        )
        #expect(
            try db.store.write {
                try $0.claimDueWebhookEvents(now: Self.now + 1, token: "t3", claimedUntil: Self.now + 31, limit: 10)
            }.isEmpty
        )
        // A finish needs the claim's token, and counts once.
        #expect(try db.store.write { try $0.finishWebhookEvent(id: "msg_b1", token: "wrong", now: Self.now) } == false)
        #expect(try db.store.write { try $0.finishWebhookEvent(id: "msg_b1", token: "t1", now: Self.now) })
        #expect(try db.store.write { try $0.finishWebhookEvent(id: "msg_b1", token: "t1", now: Self.now) } == false)

        // Due again: a1 first; once delivered, a2; a given-up a2 lets a3 go.
        let retry = try db.store.write {
            try $0.claimDueWebhookEvents(now: Self.now + 5, token: "t4", claimedUntil: Self.now + 35, limit: 10)
        }
        #expect(retry.map(\.id) == ["msg_a1"])
        #expect(retry.first?.attempts == 1 && retry.first?.lastError == "HTTP 503")
        #expect(retry.first?.firstAttemptAt == Self.now)
        // The account's later events were put off with it: not due, so not scanned, before it is.
        #expect(try db.store.read { try $0.webhookEvent(id: "msg_a2") }?.nextAttemptAt == Self.now + 5)
        // What `webhooks status` lists as being retried: tried, neither delivered nor given up.
        let retrying = try db.store.read { try $0.retryingWebhookEvents(limit: 10) }
        #expect(retrying.map(\.id) == ["msg_a1"] && retrying.first?.lastError == "HTTP 503")
        #expect(try db.store.write { try $0.finishWebhookEvent(id: "msg_a1", token: "t4", now: Self.now + 5) })
        let second = try db.store.write {
            try $0.claimDueWebhookEvents(now: Self.now + 5, token: "t5", claimedUntil: Self.now + 35, limit: 10)
        }
        #expect(second.map(\.id) == ["msg_a2"])
        #expect(
            try db.store.write {
                try $0.deferWebhookEvent(
                    id: "msg_a2",
                    token: "t5",
                    nextAttemptAt: Self.now + 5,
                    failedAt: Self.now + 5,
                    error: "timed out"
                )
            }
        )
        let third = try db.store.write {
            try $0.claimDueWebhookEvents(now: Self.now + 5, token: "t6", claimedUntil: Self.now + 35, limit: 10)
        }
        #expect(third.map(\.id) == ["msg_a3"])

        let counts = try db.store.read { try $0.webhookOutboxCounts() }
        #expect(counts == WebhookOutboxCounts(pending: 2, delivered: 2, failed: 1, oldestPendingAt: Self.now))
        #expect(try db.store.read { try $0.failedWebhookEvents(limit: 10) }.map(\.id) == ["msg_a2"])
    }

    @Test("outbox: an event behind a deferred one of its account is not due before it", arguments: Backend.all)
    func webhookBehindDeferred(_ backend: Backend) throws {
        let db = try backend.database()
        try db.store.write { try $0.insertWebhookEvent(webhookEvent("msg_a1", account: "a")) }
        _ = try db.store.write {
            try $0.claimDueWebhookEvents(now: Self.now, token: "t1", claimedUntil: Self.now + 30, limit: 10)
        }
        #expect(
            try db.store.write {
                try $0.deferWebhookEvent(
                    id: "msg_a1",
                    token: "t1",
                    nextAttemptAt: Self.now + 600,
                    failedAt: nil,
                    error: "HTTP 503"
                )
            }
        )
        try db.store.write { tx in
            try tx.insertWebhookEvent(webhookEvent("msg_a2", account: "a", at: Self.now + 1))
            try tx.insertWebhookEvent(webhookEvent("msg_b1", account: "b", at: Self.now + 1))
            try tx.insertWebhookEvent(webhookEvent("msg_x", account: nil, at: Self.now + 1))
        }
        let next = try db.store.read { tx in
            try ["msg_a2", "msg_b1", "msg_x"].map { try tx.webhookEvent(id: $0)?.nextAttemptAt }
        }
        #expect(next == [Self.now + 600, Self.now + 1, Self.now + 1])
        // Delivered, the first lets the second go at once.
        let due = try db.store.write {
            try $0.claimDueWebhookEvents(now: Self.now + 600, token: "t2", claimedUntil: Self.now + 630, limit: 10)
        }
        #expect(Set(due.map(\.id)) == ["msg_a1", "msg_b1", "msg_x"])
        #expect(try db.store.write { try $0.finishWebhookEvent(id: "msg_a1", token: "t2", now: Self.now + 600) })
        let after = try db.store.write {
            try $0.claimDueWebhookEvents(now: Self.now + 600, token: "t3", claimedUntil: Self.now + 630, limit: 10)
        }
        #expect(after.map(\.id) == ["msg_a2"])
    }

    @Test(
        "outbox: a lapsed claim is taken over, and replay makes events since a time pending again with their ids",
        arguments: Backend.all
    )
    func webhookLapseAndReplay(_ backend: Backend) throws {
        let db = try backend.database()
        try db.store.write { tx in
            try tx.insertWebhookEvent(webhookEvent("msg_old", account: "a", at: Self.now - 100))
            try tx.insertWebhookEvent(webhookEvent("msg_new", account: "a", at: Self.now))
        }
        let claimed = try db.store.write {
            try $0.claimDueWebhookEvents(now: Self.now, token: "dead", claimedUntil: Self.now + 30, limit: 10)
        }
        #expect(claimed.map(\.id) == ["msg_old"])
        let takenOver = try db.store.write {
            try $0.claimDueWebhookEvents(now: Self.now + 30, token: "alive", claimedUntil: Self.now + 60, limit: 10)
        }
        #expect(takenOver.map(\.id) == ["msg_old"])
        #expect(
            try db.store.write { try $0.finishWebhookEvent(id: "msg_old", token: "dead", now: Self.now + 31) } == false
        )
        #expect(try db.store.write { try $0.finishWebhookEvent(id: "msg_old", token: "alive", now: Self.now + 31) })
        let next = try db.store.write {
            try $0.claimDueWebhookEvents(now: Self.now + 31, token: "n", claimedUntil: Self.now + 61, limit: 10)
        }
        #expect(next.map(\.id) == ["msg_new"])
        #expect(try db.store.write { try $0.finishWebhookEvent(id: "msg_new", token: "n", now: Self.now + 32) })
        #expect(try db.store.read { try $0.webhookOutboxCounts() }.delivered == 2)

        #expect(try db.store.write { try $0.replayWebhookEvents(since: Self.now - 50, now: Self.now + 40) } == 1)
        let replayed = try #require(try db.store.read { try $0.webhookEvent(id: "msg_new") })
        #expect(replayed.deliveredAt == nil && replayed.attempts == 0 && replayed.firstAttemptAt == nil)
        #expect(replayed.nextAttemptAt == Self.now + 40 && replayed.payload == #"{"type":"account.converted"}"#)
        #expect(try db.store.read { try $0.webhookEvent(id: "msg_old") }?.deliveredAt == Self.now + 31)
        #expect(
            try db.store.read { try $0.webhookOutboxCounts() }
                == WebhookOutboxCounts(pending: 1, delivered: 1, failed: 0, oldestPendingAt: Self.now)
        )
    }
}
