import Foundation
import Testing

@testable import UpgradeEngine

@Suite("Webhook outbox: event ids and timestamps")
struct WebhookOutboxTests {
    @Test("a payload's timestamp is RFC 3339 in UTC, to the second")
    func timestamp() {
        #expect(WebhookOutbox.timestamp(1_760_000_000) == "2025-10-09T08:53:20Z")
    }

    @Test("event ids are unique and, from one process at one time, increase")
    func eventIDs() {
        let ids = (0..<1000).map { _ in WebhookOutbox.newID(now: 1_760_000_000) }
        #expect(Set(ids).count == ids.count)
        // Compared as SQLite compares text: byte by byte.
        let inOrder = zip(ids, ids.dropFirst()).allSatisfy { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        #expect(inOrder, "each id sorts after the one before")
        #expect(ids.allSatisfy { $0.hasPrefix("msg_") && $0.count == 4 + 16 + 14 }, "\(ids[0])")
        let later = WebhookOutbox.newID(now: 1_760_000_001)
        #expect(Array(ids[999].utf8).lexicographicallyPrecedes(Array(later.utf8)), "a later second sorts after")
    }
}
