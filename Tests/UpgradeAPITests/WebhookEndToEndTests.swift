import Foundation
import Testing
import UpgradeAPI
import UpgradeEngine
import UpgradeTestSupport

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
            (receiver, server, supportToken) = try WebhookReceiver.withServer(backend)
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
        // The sender records the refusal after the receiver answered it: wait for that write.
        let refusedID = receiver.refused[0]
        #expect(
            await WebhookReceiver.eventually {
                (try? harness.outbox(refusedID))?.map { $0.attempts >= 1 && $0.lastError != nil } == true
            }
        )
        let waiting = try #require(try harness.outbox(refusedID))
        #expect(waiting.deliveredAt == nil && waiting.attempts >= 1 && waiting.lastError == "HTTP 503")
        receiver.setDown(false)
        server.clock.advance(3600)  // past any backoff
        let total = expected.count + 2
        // Time moves on while waiting: an attempt that met the outage but ended after the advance was
        // deferred from the advanced time.
        #expect(
            await WebhookReceiver.eventually {
                server.clock.advance(60)
                return receiver.deliveries().verified.count >= total
            }
        )
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

    /// Runs the built `upgrade-cli` with `arguments` against the server's database.
    static func cli(_ server: DevServer, _ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
        let environment = ProcessInfo.processInfo.environment
        let result = try runCLI(arguments + ["--db", server.database.url], environment: environment)
        return (result.status, result.stdout, result.stderr)
    }

    @Test(
        "an event refused for 24 hours is given up, listed by 'webhooks status', and 'webhooks replay' sends it again with its id",
        arguments: Backend.all
    )
    func givenUpThenReplayed(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let server = harness.server
        let receiver = harness.receiver
        try server.addAccount("rita", password: "Old-password-1")
        let rita = try harness.accountID("rita")
        receiver.setDown(true)
        // A wrong password ends the upgrade failed: upgrade.failed, then the password change.
        let wrong = try await server.post(
            "/v1/upgrades",
            ["username": "rita", "password": "wrong-password", "serviceIdentifier": "s"]
        )
        #expect(wrong.status == 401)
        try await harness.changePassword("rita", from: "Old-password-1", to: "abcdEf-ghijK1-lmnoPq")
        #expect(await WebhookReceiver.eventually { receiver.refused.count >= 1 })
        // While it is retried, `webhooks status` says which event, how often and why.
        let retrying = try Self.cli(server, ["webhooks", "status"])
        #expect(retrying.out.contains("RETRYING SINCE"), "\(retrying.out)")
        #expect(retrying.out.contains(try #require(receiver.refused.first)) && retrying.out.contains("HTTP 503"))
        // Past every backoff, until an attempt 24 h after the first fails: given up.
        for _ in 0..<40 {
            let before = receiver.refused.count
            server.clock.advance(3600)
            _ = await WebhookReceiver.eventually(seconds: 5) { receiver.refused.count > before }
            if try server.application.webhooks.counts().failed > 0 { break }
        }
        let counts = try server.application.webhooks.counts()
        #expect(counts.failed == 1 && counts.pending == 1, "\(counts)")
        // The password change was not tried until the failed upgrade's event was given up.
        let refused = receiver.refused
        let failedID = try #require(refused.first)
        let firstOther = refused.firstIndex { $0 != failedID } ?? refused.count
        #expect(!refused[firstOther...].contains(failedID), "\(refused)")
        let failed = try #require(try harness.outbox(failedID))
        #expect(failed.type == "upgrade.failed" && failed.failedAt != nil && failed.lastError == "HTTP 503")
        #expect(failed.attempts >= 2)
        #expect(try #require(failed.failedAt) - (failed.firstAttemptAt ?? 0) >= 86_400)

        let status = try Self.cli(server, ["webhooks", "status"])
        #expect(status.status == 0, "\(status.err)")
        #expect(status.out.contains("failed     1") && status.out.contains(failedID) && status.out.contains("HTTP 503"))
        let metrics = String(decoding: try await server.get("/metrics").body, as: UTF8.self)
        #expect(
            metrics.contains("upgrade_webhooks_failed 1.0\n") && metrics.contains("upgrade_webhooks_failed_total 1\n")
        )

        // The receiver is back: the password change (no longer held back) arrives; the replay
        // sends the failed event again, same id. Its sequence is earlier, so replayed rows go first.
        receiver.setDown(false)
        server.clock.advance(3600)
        #expect(
            await WebhookReceiver.eventually {
                server.clock.advance(60)
                return receiver.deliveries().verified.count >= 1
            }
        )
        #expect(receiver.deliveries().verified.map(\.type) == ["password.changed"])
        let replay = try Self.cli(server, ["webhooks", "replay", "--since", "0"])
        #expect(replay.status == 0 && replay.out.hasPrefix("2 webhook event(s)"), "\(replay.out) \(replay.err)")
        server.clock.advance(3600)  // the CLI schedules with the real clock; the server's runs ahead
        #expect(await WebhookReceiver.eventually { receiver.deliveries().verified.count >= 3 })
        let verified = receiver.deliveries().verified
        #expect(verified.map(\.type) == ["password.changed", "upgrade.failed", "password.changed"])
        #expect(verified[1].id == failedID && verified.allSatisfy { $0.accountID == rita })
        // The receiver records a delivery before it answers, so the sender's commit may trail it.
        let settled = WebhookOutboxCounts(pending: 0, delivered: 2, failed: 0, oldestPendingAt: nil)
        #expect(await WebhookReceiver.eventually { (try? server.application.webhooks.counts()) == settled })

        let usage = try Self.cli(server, ["webhooks", "replay"])
        #expect(usage.status == 2 && usage.err.contains("--since"))
        let badTime = try Self.cli(server, ["webhooks", "replay", "--since", "yesterday"])
        #expect(badTime.status == 2 && badTime.err.contains("RFC 3339"))
    }

    @Test(
        "settings: a URL without a secret, a secret without a URL, plain http off loopback and an open secret file are refused"
    )
    func settings() throws {
        let receiver = try WebhookReceiver(lifetime: 5)
        defer { receiver.stop() }
        func problems(_ values: [String: String]) -> String {
            do {
                _ = try ServerSettings.load(
                    values.merging(["UPGRADE_DB": "sqlite:/nonexistent/x.db"]) { $1 },
                    development: true
                )
                return ""
            } catch {
                return error.message
            }
        }
        #expect(
            problems(["UPGRADE_WEBHOOK_URL": "https://backend.example.com/hooks"]).contains(
                "UPGRADE_WEBHOOK_SECRET_FILE: required"
            )
        )
        #expect(
            problems(["UPGRADE_WEBHOOK_SECRET_FILE": receiver.secretFile]).contains("UPGRADE_WEBHOOK_URL: required")
        )
        #expect(
            problems([
                "UPGRADE_WEBHOOK_URL": "http://backend.example.com/hooks",
                "UPGRADE_WEBHOOK_SECRET_FILE": receiver.secretFile,
            ])
            .contains("must be https://")
        )
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: receiver.secretFile)
        let open = problems(["UPGRADE_WEBHOOK_URL": receiver.url, "UPGRADE_WEBHOOK_SECRET_FILE": receiver.secretFile])
        #expect(open.contains("chmod 600") && !open.contains(receiver.secretText))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: receiver.secretFile)
        #expect(
            problems(["UPGRADE_WEBHOOK_URL": receiver.url, "UPGRADE_WEBHOOK_SECRET_FILE": receiver.secretFile]) == ""
        )
    }
}
