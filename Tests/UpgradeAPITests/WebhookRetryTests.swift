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

    /// A store with one event of account `acct`, its `sequence`-th, and a sender to `url` recording
    /// what it did.
    static func outbox(
        to url: String,
        sequence: Int
    ) throws -> (store: SQLiteStore, sender: WebhookSender, events: EventLog, cleanup: () -> Void) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hooks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let store = try SQLiteStore(path: directory.appendingPathComponent("outbox.db").path)
        _ = try store.migrate(now: Self.start)
        try store.write { tx in
            for index in 1...sequence {
                try tx.insertWebhookEvent(
                    WebhookEventRecord(
                        id: "msg_\(index)",
                        accountID: "acct",
                        type: "password.changed",
                        payload:
                            #"{"type":"password.changed","timestamp":"2027-01-15T08:00:00Z","data":{"accountId":"acct"}}"#,
                        createdAt: Self.start,
                        nextAttemptAt: Self.start
                    )
                )
            }
            // All but the last were delivered before.
            for index in 1..<sequence {
                _ = try tx.claimDueWebhookEvents(
                    now: Self.start,
                    token: "t\(index)",
                    claimedUntil: Self.start + 30,
                    limit: 1
                )
                _ = try tx.finishWebhookEvent(id: "msg_\(index)", token: "t\(index)", now: Self.start)
            }
        }
        let events = EventLog()
        let sender = WebhookSender(
            store: store,
            endpoint: WebhookSender.Endpoint(url: url, secret: try WebhookSecret(text: Self.secret)),
            onEvent: { event in events.add(event) }
        )
        return (store, sender, events, { try? FileManager.default.removeItem(at: directory) })
    }

    static let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

    /// What a sender reported.
    final class EventLog: Sendable {
        private let list = Mutex<[WebhookSender.Event]>([])
        func add(_ event: WebhookSender.Event) { list.withLock { $0.append(event) } }
        var all: [WebhookSender.Event] { list.withLock { $0 } }
    }

    @Test("the body carries the account's sequence, signed with it; a 2xx with a body too long to read is a delivery")
    func sequenceAndLongAnswer() async throws {
        let long = String(repeating: "x", count: 100 * 1024)
        let receiver = ScriptedEndpoint([ScriptedEndpoint.json(#"{"ok":""# + long + #""}"#)])
        let server = try receiver.start()
        defer { server.shutdown() }
        let (store, sender, events, cleanup) = try Self.outbox(to: "http://127.0.0.1:\(server.port)/hook", sequence: 3)
        defer { cleanup() }
        let batch = try await sender.sendDue(clock: { Self.start + 1 })
        #expect(batch.claimed == 1 && batch.delivered == 1, "\(events.all)")
        let request = try #require(receiver.received.first)
        let body = String(decoding: request.body, as: UTF8.self)
        #expect(body.hasSuffix(#","sequence":3}"#), "\(body)")
        #expect(try JSONValue.parse(request.body)["sequence"] == .integer(3))
        // The signature covers the body as sent, sequence included.
        let id = try #require(request.headers["webhook-id"])
        let timestamp = try #require(request.headers["webhook-timestamp"].flatMap { Int64($0) })
        let expected = try WebhookSecrets(text: Self.secret).signature(id: id, timestamp: timestamp, body: request.body)
        #expect(request.headers["webhook-signature"] == expected)
        #expect(try store.read { try $0.webhookEvent(id: "msg_3") }?.deliveredAt != nil)
    }

    @Test("a Retry-After longer than the backoff is waited for, up to the backoff's longest wait")
    func retryAfterIsHonoured() async throws {
        for (header, least, most) in [("300", Int64(300), Int64(300)), ("999999", 3600, 3600), ("soon", 3, 5)] {
            let receiver = ScriptedEndpoint([
                ScriptedEndpoint.json("{}", status: 429, headers: [("Retry-After", header)])
            ])
            let server = try receiver.start()
            defer { server.shutdown() }
            let (_, sender, events, cleanup) = try Self.outbox(to: "http://127.0.0.1:\(server.port)/hook", sequence: 1)
            defer { cleanup() }
            _ = try await sender.sendDue(clock: { Self.start + 1 })
            guard case .deferred(_, _, let reason, let next) = try #require(events.all.first) else {
                Issue.record("expected a deferral")
                continue
            }
            #expect(reason == "HTTP 429")
            #expect(
                (Self.start + 1 + least...Self.start + 1 + most).contains(next),
                "\(header): \(next - Self.start - 1)"
            )
        }
    }
}
