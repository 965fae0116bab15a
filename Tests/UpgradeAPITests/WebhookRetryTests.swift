import Foundation
import Synchronization
import Testing
import UpgradeEngine

/// When a failed delivery is tried again: a backoff after the attempt ended, whatever the attempt
/// cost. Time is a value the test hands the sender; the exchange itself is real (a receiver that
/// answers too late for the endpoint's timeout).
@Suite("Webhook retries")
struct WebhookRetryTests {
    static let start: Int64 = 1_800_000_000

    @Test("a timed-out attempt is tried again a backoff after it ended, not at once")
    func retryAfterTimeout() async throws {
        let receiver = try WebhookReceiver(lifetime: 30, delayMilliseconds: 3000)
        defer { receiver.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hooks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteStore(path: directory.appendingPathComponent("outbox.db").path)
        _ = try store.migrate(now: Self.start)
        try store.write { tx in
            try tx.insertWebhookEvent(
                WebhookEventRecord(
                    id: "msg_late",
                    accountID: nil,
                    type: "account.deleted",
                    payload: #"{"type":"account.deleted","timestamp":"2027-01-15T08:00:00Z","data":{}}"#,
                    createdAt: Self.start,
                    nextAttemptAt: Self.start
                )
            )
        }
        let events = Mutex<[WebhookSender.Event]>([])
        let sender = WebhookSender(
            store: store,
            // The real wait is cut short; the clock below says it took the production limit, 10 s.
            endpoint: WebhookSender.Endpoint(
                url: receiver.url,
                secret: try WebhookSecret(text: receiver.secretText),
                timeout: .milliseconds(200)
            ),
            onEvent: { event in events.withLock { $0.append(event) } }
        )
        // The first reading starts the batch; every later one is after the timed-out exchange.
        let readings = Mutex(0)
        let clock: @Sendable () -> Int64 = {
            readings.withLock { count in
                count += 1
                return count == 1 ? Self.start : Self.start + 10
            }
        }
        let first = try await sender.sendDue(clock: clock)
        #expect(first.claimed == 1 && first.delivered == 0 && first.undelivered == 1)
        let deferred = try #require(events.withLock { $0.first })
        guard case .deferred(let id, let attempts, let reason, let nextAttemptAt) = deferred else {
            Issue.record("expected a deferral, got \(deferred)")
            return
        }
        #expect(id == "msg_late" && attempts == 1)
        #expect(!reason.hasPrefix("HTTP"), "the attempt timed out: \(reason)")
        // 5 s less up to half of it at random, from the end of the attempt (start + 10).
        #expect((Self.start + 10 + 3...Self.start + 10 + 5).contains(nextAttemptAt), "\(nextAttemptAt - Self.start)")
        // So a batch when the attempt ended finds nothing due...
        #expect(try await sender.sendDue(clock: { Self.start + 10 }).claimed == 0)
        // ... and one at the scheduled time takes it again.
        #expect(try await sender.sendDue(clock: { nextAttemptAt }).claimed == 1)
    }
}
