import Foundation
import Testing
import UpgradeAPI
import UpgradeEngine

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Signed webhooks from the development server to a loopback receiver that verifies each delivery
/// with python's `standardwebhooks`: a conversion, password changes, an Apple notification and a
/// deletion each arrive once, in order per account, also across a receiver outage.
@Suite("Webhooks end to end: signed, once per change, in order per account")
struct WebhookEndToEndTests {
    final class Harness: Sendable {
        let receiver: WebhookReceiver
        let server: DevServer
        let supportToken: String

        init(_ backend: Backend) throws {
            receiver = try WebhookReceiver()
            let tokens = receiver.directory.appendingPathComponent("admin-tokens").path
            supportToken = try AdminTokenFile.add(name: "support", scopes: [.accounts], path: tokens, now: 1)
            server = try DevServer(
                backend,
                environment: [
                    "UPGRADE_ADMIN_TOKENS_FILE": tokens, "UPGRADE_WEBHOOK_URL": receiver.url,
                    "UPGRADE_WEBHOOK_SECRET_FILE": receiver.secretFile,
                ],
                webhookIntervalMilliseconds: 50
            )
        }

        deinit { receiver.stop() }

        func accountID(_ username: String) throws -> String {
            try #require(try server.application.store.read { try $0.account(username: Username(username))?.id })
        }

        /// A password account upgraded through the emulator; its Apple sub.
        func convert(_ username: String) async throws -> String {
            try server.addAccount(username, password: "pw-\(username)")
            let started = try await server.post(
                "/v1/upgrades",
                ["username": username, "password": "pw-\(username)", "serviceIdentifier": "s"]
            )
            let id = try #require(started["id"])
            let completed = try await server.post(
                "/v1/upgrades/\(id)/apple-credential",
                try server.appleCredential(for: started)
            )
            #expect(completed["status"] == "completed")
            return try #require(
                try server.application.store.read { try $0.appleLink(accountID: accountID(username))?.sub }
            )
        }

        func changePassword(_ username: String, from old: String, to new: String) async throws {
            let changed = try await server.post(
                "/v1/password-changes",
                ["username": username, "password": old, "newPassword": new, "serviceIdentifier": "example.com"]
            )
            #expect(changed.status == 201 && changed["status"] == "completed")
        }

        /// Every event the outbox holds for `accountIDs`, in account order, by reading the ids the
        /// receiver saw back from the store; and that nothing is left pending.
        func outbox(_ id: String) throws -> WebhookEventRecord? {
            try server.application.store.read { try $0.webhookEvent(id: id) }
        }
    }

    @Test(
        "each change's event arrives once, signed, in order per account, also after a receiver outage",
        arguments: Backend.all
    )
    func deliveredOnceInOrder(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let server = harness.server
        let receiver = harness.receiver

        let sub = try await harness.convert("wanda")
        let wanda = try harness.accountID("wanda")
        let notified = try server.application.transfers.handleNotification(
            type: "consent-revoked",
            sub: sub,
            email: nil,
            isPrivateEmail: nil,
            now: server.clock.now
        )
        #expect(notified.outcome == .changed)
        try server.addAccount("paul", password: "Old-password-1")
        let paul = try harness.accountID("paul")
        try await harness.changePassword("paul", from: "Old-password-1", to: "abcdEf-ghijK1-lmnoPq")
        let deleted = try await server.send(
            "DELETE",
            "/v1/admin/accounts/wanda",
            body: nil,
            contentType: nil,
            headers: ["Authorization": "Bearer \(harness.supportToken)"]
        )
        #expect(deleted.status == 200 || deleted.status == 204)
        let expected: [(String, String)] = [
            (wanda, "account.converted"), (wanda, "apple.consent-revoked"), (wanda, "account.deleted"),
            (paul, "password.changed"),
        ]
        #expect(await WebhookReceiver.eventually { receiver.deliveries().verified.count >= expected.count })

        // An outage: paul's next two events wait; the second is not tried before the first is delivered.
        receiver.setDown(true)
        try await harness.changePassword("paul", from: "abcdEf-ghijK1-lmnoPq", to: "Third-password-3x")
        try await harness.changePassword("paul", from: "Third-password-3x", to: "Fourth-password-4y")
        #expect(await WebhookReceiver.eventually { !receiver.refused.isEmpty })
        let waiting = try #require(try harness.outbox(receiver.refused[0]))
        #expect(waiting.deliveredAt == nil && waiting.attempts >= 1 && waiting.lastError == "HTTP 503")
        receiver.setDown(false)
        server.clock.advance(3600)  // past any backoff
        let total = expected.count + 2
        #expect(await WebhookReceiver.eventually { receiver.deliveries().verified.count >= total })
        #expect(
            await WebhookReceiver.eventually {
                (try? server.application.webhooks.counts().pending) == 0
            }
        )

        let (verified, bad) = receiver.deliveries()
        #expect(bad == 0, "a delivery's signature did not verify")
        #expect(verified.count == total, "\(verified)")
        #expect(Set(verified.map(\.id)).count == verified.count, "an event was delivered twice")
        #expect(Set(receiver.refused).count == 1, "paul's later event was tried while an earlier one was pending")
        for account in [wanda, paul] {
            let types = verified.filter { $0.accountID == account }.map(\.type)
            #expect(
                types == expected.filter { $0.0 == account }.map(\.1)
                    + (account == paul ? ["password.changed", "password.changed"] : [])
            )
            // Arrival order is commit order.
            let sequences = try verified.filter { $0.accountID == account }.map {
                try harness.outbox($0.id)?.accountSequence
            }
            #expect(sequences == sequences.sorted { ($0 ?? 0) < ($1 ?? 0) })
        }
        let counts = try server.application.webhooks.counts()
        #expect(counts.delivered == total && counts.failed == 0)
        let metrics = String(decoding: try await server.get("/metrics").body, as: UTF8.self)
        #expect(metrics.contains("upgrade_webhooks_delivered_total \(total)\n"))
        #expect(metrics.contains("upgrade_webhooks_pending 0.0\n"))
        #expect(metrics.contains("upgrade_webhook_retries_total "))
    }
}
