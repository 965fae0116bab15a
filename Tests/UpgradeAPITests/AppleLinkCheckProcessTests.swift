import Foundation
import Testing
import UpgradeAPI

@testable import AppleEmulator
@testable import UpgradeEngine

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The daily Apple link check in two `upgrade-cli serve` processes on one PostgreSQL database, with
/// the period shortened to 10 s: a consent revocation whose notification was lost is caught by the
/// next check, once, and each link is checked at most once per period across both instances.
@Suite(
    "The Apple link check on two serve instances",
    .enabled(if: ServePostgres.isAvailable, .init(rawValue: ServePostgres.reason))
)
struct AppleLinkCheckProcessTests {
    static let period: Int64 = 10

    @Test(
        "a silent revocation is caught within one period, the link revoked once; every link checked once per period",
        .timeLimit(.minutes(2))
    )
    func silentRevocationOnTwoInstances() async throws {
        let database = try ServePostgres.createDatabase()
        defer { database.drop() }
        let tokens = FileManager.default.temporaryDirectory.appendingPathComponent("tokens-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: tokens) }
        let scraper = try AdminTokenFile.add(name: "prometheus", scopes: [.metrics], path: tokens, now: 1)
        let fixture = try await ServeFixture(
            database: database.url,
            environment: [
                "UPGRADE_APPLE_LINK_CHECK_SECONDS": String(Self.period), "UPGRADE_ADMIN_TOKENS_FILE": tokens,
            ]
        )
        defer { fixture.stop() }
        let bases = [try await fixture.startServe(), try await fixture.startServe()]

        // Three accounts converted through the two instances, each with an Apple user of its own.
        var accounts: [(account: AccountRecord, appleUser: String)] = []
        for (index, name) in ["alice", "bob", "carol"].enumerated() {
            let account = try fixture.addAccount(name)
            let appleUser = try fixture.emulator.createUser(email: "\(name)@example.com")
            let started = try await fixture.start(bases[index % 2], name)
            let id = try #require(started.json["id"])
            let done = try await ServeFixture.send(
                "POST",
                bases[(index + 1) % 2] + "/v1/upgrades/\(id)/apple-credential",
                try fixture.credential(for: started, appleUser: appleUser)
            )
            #expect(done.status == 200 && done.json["status"] == "completed", "\(done.status) \(done.json)")
            accounts.append((account, appleUser))
        }
        let linkedAt = ContinuousClock.now

        // Alice revokes; Apple's notification never arrives.
        let alice = accounts[0]
        try fixture.emulator.revokeConsent(userID: alice.appleUser, clientID: ServeFixture.clientID, notify: false)
        #expect(fixture.emulator.drainNotifications().isEmpty)
        let revokedAt = ContinuousClock.now
        var caughtAfter: Duration?
        while ContinuousClock.now - revokedAt < .seconds(Self.period + 10) {
            if try fixture.store.read({ try $0.appleLink(accountID: alice.account.id) })?.status == .revoked {
                caughtAfter = ContinuousClock.now - revokedAt
                break
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        let caught = try #require(caughtAfter, "the check did not end the link")
        let caughtAtSecond = Int64(Date().timeIntervalSince1970)
        // One period, plus a pass interval and the time a check takes on a loaded machine.
        #expect(caught < .seconds(Self.period + 4), "caught after \(caught)")

        // Let the checks run for three periods since the links were made, then count.
        try await Task.sleep(until: linkedAt + .seconds(Self.period * 3 + 2))
        for server in fixture.servers {
            #expect(server.process.isRunning, "serve kept running: \(server.errors.text)")
        }

        let ended = try #require(try fixture.store.read { try $0.appleLink(accountID: alice.account.id) })
        #expect(ended.status == .revoked && ended.refreshTokenCiphertext == nil)
        let audit = try fixture.store.read { try $0.auditTrail(accountID: alice.account.id, limit: 50) }
            .filter { $0.event == "transfer.consentRevoked" }
        #expect(audit.count == 1, "one audit row: \(audit)")
        #expect(audit.first?.detail["source"] == "linkCheck")
        let events = try Self.webhookEvents(fixture.store, accountID: alice.account.id)
        #expect(events.filter { $0 == "apple.consent-revoked" }.count == 1, "one webhook event: \(events)")

        // Alice's link was checked until Apple said invalid_grant, then never again.
        let aliceTimes = fixture.emulator.refreshCheckTimes(userID: alice.appleUser)
        #expect(!aliceTimes.isEmpty && aliceTimes.allSatisfy { $0 <= caughtAtSecond }, "\(aliceTimes)")

        // Each link: at least once per period, never twice within one, however many instances.
        let window = Int64((ContinuousClock.now - linkedAt).components.seconds)
        for (account, appleUser) in accounts.dropFirst() {
            let times = fixture.emulator.refreshCheckTimes(userID: appleUser)
            #expect(times.count >= 2, "\(account.username) checked \(times.count) times in \(window) s")
            #expect(times.count <= Int(window / Self.period) + 1, "\(account.username): \(times)")
            for (earlier, later) in zip(times, times.dropFirst()) {
                #expect(later - earlier >= Self.period, "\(account.username) checked twice within a period: \(times)")
            }
            let link = try #require(try fixture.store.read { try $0.appleLink(accountID: account.id) })
            #expect(link.status == .linked && link.refreshTokenCiphertext != nil)
        }

        // The metrics of both instances: checks by outcome, summed, match Apple's count (give or
        // take a check in flight while they are read).
        let callsBefore = accounts.map { fixture.emulator.refreshChecks(userID: $0.appleUser) }.reduce(0, +)
        var valid = 0
        var revoked = 0
        for base in bases {
            let text = try await Self.metrics(base, token: scraper)
            valid += Self.counter(text, "upgrade_apple_link_checks_total{outcome=\"valid\"}")
            revoked += Self.counter(text, "upgrade_apple_link_checks_total{outcome=\"revoked\"}")
            #expect(text.contains("upgrade_apple_link_check_oldest_due_age_seconds "))
        }
        let calls = accounts.map { fixture.emulator.refreshChecks(userID: $0.appleUser) }.reduce(0, +)
        #expect(revoked == 1)
        #expect(
            (callsBefore - 1...calls).contains(valid + revoked),
            "every call to Apple was one check: \(valid) valid, \(revoked) revoked, \(callsBefore)-\(calls) calls"
        )
    }

    /// The types of the webhook events queued for `accountID`, in the order a sender delivers them
    /// (an account's next event is claimable once the one before it is delivered).
    static func webhookEvents(_ store: any UpgradeStore, accountID: String) throws -> [String] {
        var types: [String] = []
        for round in 0..<50 {
            let claimed = try store.write {
                try $0.claimDueWebhookEvents(now: .max - 1000, token: "t\(round)", claimedUntil: .max, limit: 1000)
            }
            if claimed.isEmpty { break }
            for event in claimed {
                _ = try store.write { try $0.finishWebhookEvent(id: event.id, token: "t\(round)", now: 1) }
            }
            types += claimed.filter { $0.accountID == accountID }.map(\.type)
        }
        return types
    }

    static func metrics(_ base: String, token: String) async throws -> String {
        var request = URLRequest(url: URL(string: base + "/metrics")!)
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        let (data, _) = try await URLSession.shared.data(for: request)
        return String(decoding: data, as: UTF8.self)
    }

    static func counter(_ text: String, _ series: String) -> Int {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Int(Double(line.dropFirst(series.count + 1)) ?? 0)
        }
        return 0
    }
}
