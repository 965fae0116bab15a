import Foundation
import Testing

@testable import UpgradeEngine

@Suite("Webhook outbox: event ids and timestamps")
struct WebhookOutboxTests {
    @Test("timestamps are RFC 3339 in UTC, as Foundation's ISO 8601 format writes them")
    func timestamps() {
        var generator = SystemRandomNumberGenerator()
        let edges: [Int64] = [
            -86_401, -1, 0, 59, 86_399, 86_400, 951_782_400, 951_868_799, 978_307_200, 1_709_164_800,
            1_760_000_000, 4_107_542_400, 253_402_300_799,
        ]
        let seconds = edges + (0..<2000).map { _ in Int64.random(in: 0...253_402_300_799, using: &generator) }
        for value in seconds {
            let expected = Date(timeIntervalSince1970: TimeInterval(value)).formatted(.iso8601)
            #expect(WebhookOutbox.timestamp(value) == expected, "\(value)")
        }
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
