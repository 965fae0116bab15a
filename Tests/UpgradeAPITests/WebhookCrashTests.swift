import Foundation
import Glibc
import Testing
import UpgradeAPI
import UpgradeTestSupport

@testable import AppleEmulator
@testable import UpgradeEngine

/// `upgrade-cli serve` delivering webhooks is killed with SIGKILL while deliveries are in flight,
/// after a receiver outage, and started again: every change's event reaches the receiver (python's
/// `standardwebhooks` verifying each), a duplicate only with its own `webhook-id`, and each
/// account's events first arrive in commit order.
@Suite("Webhooks survive a receiver outage and a serve killed with SIGKILL")
struct WebhookCrashTests {
    static let accounts = 8
    static let togglesPerAccount = 4

    @Test("each event at least once, duplicates only by webhook-id, in order per account", arguments: Backend.all)
    func killedWhileDelivering(_ backend: Backend) async throws {
        let receiver = try WebhookReceiver(lifetime: 240, delayMilliseconds: 40)
        defer { receiver.stop() }
        let database = try ServerDatabase(backend)
        let fixture = try await ServeFixture(
            database: database.url,
            environment: ["UPGRADE_WEBHOOK_URL": receiver.url, "UPGRADE_WEBHOOK_SECRET_FILE": receiver.secretFile]
        )
        defer { fixture.stop() }

        // Linked accounts whose Hide My Email forwarding Apple's notifications toggle: one event each.
        var subs: [String] = []
        for index in 0..<Self.accounts {
            let account = try fixture.addAccount("user\(index)")
            let sub = "001.\(index).crash"
            try fixture.store.write { tx in
                try tx.insertAppleLink(
                    AppleLinkRecord(
                        accountID: account.id,
                        sub: sub,
                        teamID: ServeFixture.teamID,
                        clientID: ServeFixture.clientID,
                        email: nil,
                        isPrivateEmail: nil,
                        refreshTokenCiphertext: nil,
                        status: .linked,
                        linkedAt: 1,
                        updatedAt: 1
                    )
                )
            }
            subs.append(sub)
        }
        let transfers = TransferService(
            store: fixture.store,
            apple: EmulatedAppleClient(
                emulator: fixture.emulator,
                teamID: ServeFixture.teamID,
                keyID: ServeFixture.keyID,
                privateKey: P256PrivateKey()
            ),
            configuration: TransferServiceConfiguration(teamID: ServeFixture.teamID)
        )
        var eventTime: Int64 = 1_000
        func toggle(round: Int) throws {
            for sub in subs {
                eventTime += 1
                let result = try transfers.handleNotification(
                    type: round.isMultiple(of: 2) ? "email-disabled" : "email-enabled",
                    sub: sub,
                    email: "relay\(round)@privaterelay.appleid.com",
                    isPrivateEmail: true,
                    eventTime: eventTime,
                    now: Int64(Date().timeIntervalSince1970)
                )
                #expect(result.outcome == .changed)
            }
        }

        // An outage first: the first events are refused, then delivered once it ends.
        receiver.setDown(true)
        try toggle(round: 0)
        _ = try await fixture.startServe()
        #expect(await WebhookReceiver.eventually { receiver.refused.count >= 2 })
        receiver.setDown(false)
        try toggle(round: 1)
        // Killed while deliveries are in flight (each takes the receiver 40 ms).
        #expect(await WebhookReceiver.eventually { receiver.deliveries().verified.count >= 3 })
        let killed = try #require(fixture.servers.last)
        kill(killed.process.processIdentifier, SIGKILL)
        killed.process.waitUntilExit()
        for round in 2..<Self.togglesPerAccount { try toggle(round: round) }
        // The claims the killed process held lapse 30 s after it took them: move them back by
        // that much, as if the time had passed, rather than wait (nothing else holds a claim now).
        let lapsed = WebhookSender.Policy().claimSeconds
        let moved = try fixture.store.write { tx in
            try (tx as! any SQLTransaction).rows(
                "UPDATE webhook_outbox SET claimed_until = claimed_until - $1 WHERE claimed_until IS NOT NULL RETURNING id",
                [.integer(lapsed)]
            ).count
        }
        #expect(moved <= 50, "at most the killed sender's batches")
        _ = try await fixture.startServe()

        let total = Self.accounts * Self.togglesPerAccount
        // A failed attempt waits its backoff.
        #expect(
            await WebhookReceiver.eventually(seconds: 90) {
                Set(receiver.deliveries().verified.map(\.id)).count >= total
            }
        )
        let (verified, bad) = receiver.deliveries()
        #expect(bad == 0, "a delivery's signature did not verify")
        // The receiver counts a delivery when it arrives; the sender marks it delivered only once the
        // answer is back, a moment later.
        var counts = try fixture.store.read { try $0.webhookOutboxCounts() }
        let settled = try await WebhookReceiver.eventually(seconds: 10) {
            counts = try fixture.store.read { try $0.webhookOutboxCounts() }
            return counts.pending == 0 && counts.failed == 0
        }
        #expect(settled && counts.delivered == total, "\(counts)")
        var firstArrival: [String: Int] = [:]
        for (index, delivery) in verified.enumerated() where firstArrival[delivery.id] == nil {
            firstArrival[delivery.id] = index
        }
        #expect(firstArrival.count == total)
        // Duplicates: only events in flight at the kill, each with its own id (at most one batch).
        #expect(verified.count - total <= 50)
        var byAccount: [String: [(sequence: Int64, arrival: Int)]] = [:]
        for (id, arrival) in firstArrival {
            let event = try #require(try fixture.store.read { try $0.webhookEvent(id: id) })
            #expect(event.type == "apple.email-changed")
            byAccount[event.accountID ?? "", default: []].append((event.accountSequence ?? 0, arrival))
        }
        #expect(byAccount.count == Self.accounts)
        for (account, events) in byAccount {
            let bySequence = events.sorted { $0.sequence < $1.sequence }.map(\.arrival)
            #expect(bySequence == bySequence.sorted(), "account \(account): events arrived out of commit order")
            #expect(events.count == Self.togglesPerAccount)
        }
    }
}
