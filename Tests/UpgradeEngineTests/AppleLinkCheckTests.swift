import Foundation
import Synchronization
import Testing
import UpgradeTestSupport

@testable import AppleEmulator
@testable import UpgradeEngine

/// `AppleLinkChecker` against the Apple ID emulator and a scripted Apple: the outcomes of a check,
/// at most one check per link per period, and the pause after Apple's errors.
@Suite("The daily Apple link check")
struct AppleLinkCheckTests {
    static let period: Int64 = 1000

    /// An emulator world whose accounts convert with real refresh tokens, and a checker on it.
    final class World: Sendable {
        let upgrade: UpgradeEmulatorTests.World
        let client: EmulatedAppleClient
        let transfers: TransferService
        final class Events: Sendable {
            let list = Mutex<[AppleLinkChecker.Event]>([])
        }
        let events = Events()

        init(_ backend: Backend) throws {
            upgrade = try UpgradeEmulatorTests.World(backend: backend)
            let key = P256PrivateKey()
            try upgrade.emulator.registerKey(
                teamID: UpgradeEmulatorTests.teamID,
                keyID: "CHECK00001",
                publicKey: key.publicKey
            )
            client = try upgrade.emulator.client(
                teamID: UpgradeEmulatorTests.teamID,
                keyID: "CHECK00001",
                privateKey: key
            )
            transfers = TransferService(
                store: upgrade.harness.store,
                apple: client,
                configuration: TransferServiceConfiguration(teamID: UpgradeEmulatorTests.teamID)
            )
        }

        var store: any UpgradeStore { upgrade.harness.store }
        var now: Int64 { upgrade.now }

        func checker(
            apple: (any AppleRefreshTokenValidating)? = nil,
            configure: (inout AppleLinkChecker.Policy) -> Void = { _ in }
        ) -> AppleLinkChecker {
            var policy = AppleLinkChecker.Policy()
            policy.periodSeconds = AppleLinkCheckTests.period
            policy.checksPerSecond = 1000
            configure(&policy)
            let events = self.events
            return AppleLinkChecker(
                store: store,
                secrets: upgrade.harness.secrets,
                apple: apple ?? client,
                transfers: transfers,
                policy: policy,
                onEvent: { event in events.list.withLock { $0.append(event) } }
            )
        }

        /// One pass at the world's time.
        @discardableResult
        func pass(_ checker: AppleLinkChecker) async throws -> AppleLinkChecker.PassSummary {
            let clock = upgrade.clock
            return try await checker.checkDue(clock: { clock.value.withLock { $0 } })
        }

        /// Converts `username` for the world's Apple user.
        func converted(_ username: String) async throws -> AccountRecord {
            let account = try upgrade.harness.addAccount(username, password: "pw-\(username)")
            let started = try upgrade.service.start(
                username: username,
                password: "pw-\(username)",
                serviceIdentifier: "s",
                now: now
            )
            _ = try await upgrade.service.submitAppleCredential(
                id: started.id,
                try upgrade.authorize(started),
                now: now
            )
            return account
        }

        /// A link with `token` sealed as a conversion seals it, for a scripted Apple.
        func linked(_ username: String, token: String) throws -> AccountRecord {
            let account = try upgrade.harness.addAccount(username, password: "pw")
            let sealed = upgrade.harness.secrets.seal(
                Array(token.utf8),
                context: UpgradeService.refreshTokenContext(accountID: account.id)
            )
            try store.write { tx in
                try tx.insertAppleLink(
                    AppleLinkRecord(
                        accountID: account.id,
                        sub: "001.\(username)",
                        teamID: UpgradeEmulatorTests.teamID,
                        clientID: UpgradeEmulatorTests.clientID,
                        email: nil,
                        isPrivateEmail: nil,
                        refreshTokenCiphertext: sealed,
                        status: .linked,
                        linkedAt: now,
                        updatedAt: now
                    )
                )
            }
            return account
        }
    }

    /// Every webhook event of `type` in the outbox.
    static func webhookEvents(_ store: any UpgradeStore, type: WebhookEventType) throws -> [WebhookEventRecord] {
        try TransferWebhookTests.delivered(store).filter { $0.type == type.rawValue }
    }

    @Test(
        "valid once per period; a silent revocation is caught by the next check and ends the link as a notification would",
        arguments: Backend.all
    )
    func silentRevocationCaught(_ backend: Backend) async throws {
        let world = try World(backend)
        let alice = try await world.converted("alice")
        let checker = world.checker()
        let userID = world.upgrade.userID

        // First pass: scheduled within the period, by the account id's hash.
        let first = try await world.pass(checker)
        #expect(first.scheduled == 1)
        let due = try #require(try world.store.read { try $0.appleLinkCheck(accountID: alice.id) }?.dueAt)
        #expect(due == checker.policy.firstDue(accountID: alice.id, now: world.now))
        #expect((world.now..<world.now + Self.period).contains(due))

        world.upgrade.advance(Self.period)
        #expect(try await world.pass(checker).checked == [.valid: 1])
        #expect(world.upgrade.emulator.refreshChecks(userID: userID) == 1)
        let checked = try #require(try world.store.read { try $0.appleLinkCheck(accountID: alice.id) })
        #expect(checked.checkedAt == world.now && checked.dueAt == world.now + Self.period && checked.claimToken == nil)
        let link = try #require(try world.store.read { try $0.appleLink(accountID: alice.id) })
        #expect(link.status == .linked && link.refreshTokenCiphertext != nil, "a valid check changes nothing else")

        // At most once per period.
        world.upgrade.advance(Self.period - 1)
        #expect(try await world.pass(checker).checked.isEmpty)
        #expect(world.upgrade.emulator.refreshChecks(userID: userID) == 1)

        // The user revokes; the notification is lost.
        try world.upgrade.emulator.revokeConsent(userID: userID, clientID: UpgradeEmulatorTests.clientID, notify: false)
        #expect(world.upgrade.emulator.drainNotifications().isEmpty)
        world.upgrade.advance(1)
        #expect(try await world.pass(checker).checked == [.revoked: 1])
        #expect(world.upgrade.emulator.refreshChecks(userID: userID) == 2)

        let ended = try #require(try world.store.read { try $0.appleLink(accountID: alice.id) })
        #expect(ended.status == .revoked && ended.refreshTokenCiphertext == nil)
        let audit = try world.store.read { try $0.auditTrail(accountID: alice.id, limit: 50) }
            .filter { $0.event == "transfer.consentRevoked" }
        #expect(audit.count == 1)
        #expect(audit.first?.detail["source"] == "linkCheck" && audit.first?.toStatus == "revoked")
        let webhooks = try Self.webhookEvents(world.store, type: .appleConsentRevoked)
        #expect(webhooks.count == 1 && webhooks.first?.accountID == alice.id)
        #expect(
            world.events.list.withLock { $0 }.contains {
                if case .checked(alice.id, .revoked, true, nil, _) = $0 { return true }
                return false
            }
        )

        // An ended link is never checked again.
        world.upgrade.advance(Self.period * 3)
        #expect(try await world.pass(checker).checked.isEmpty)
        #expect(world.upgrade.emulator.refreshChecks(userID: userID) == 2)
    }

    @Test("a link a notification ended first is left alone: one audit row, one webhook event", arguments: Backend.all)
    func notificationFirst(_ backend: Backend) async throws {
        let world = try World(backend)
        let alice = try await world.converted("alice")
        let checker = world.checker()
        try await world.pass(checker)
        let sub = try #require(try world.store.read { try $0.appleLink(accountID: alice.id) }?.sub)
        // The notification arrives; then a check of the (stale) claim answers invalid_grant too.
        _ = try world.transfers.handleNotification(
            type: "consent-revoked",
            sub: sub,
            email: nil,
            isPrivateEmail: nil,
            now: world.now
        )
        let again = try world.transfers.revokeAfterLinkCheck(accountID: alice.id, now: world.now)
        #expect(again.outcome == .unchanged)
        world.upgrade.advance(Self.period)
        #expect(try await world.pass(checker).checked.isEmpty, "an ended link is not checked")
        let audit = try world.store.read { try $0.auditTrail(accountID: alice.id, limit: 50) }
            .filter { $0.event == "transfer.consentRevoked" }
        #expect(audit.count == 1 && audit.first?.detail["source"] == "notification")
        #expect(try Self.webhookEvents(world.store, type: .appleConsentRevoked).count == 1)
    }

    /// Apple as a script: answers each call with the next error, or 200 when none is left.
    final class ScriptedApple: AppleRefreshTokenValidating {
        let script: Mutex<[AppleEndpointError]>
        let calls = Mutex<[String]>([])
        init(_ script: [AppleEndpointError]) { self.script = Mutex(script) }

        func validateRefreshToken(_ refreshToken: String, clientID: String) async throws(AppleEndpointError) {
            calls.withLock { $0.append(refreshToken) }
            if let error = script.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { throw error }
        }
    }

    @Test(
        "Apple's errors change nothing but the schedule: the link waits a backoff, the instance pauses at least Retry-After",
        arguments: Backend.all
    )
    func errorsBackOff(_ backend: Backend) async throws {
        let world = try World(backend)
        let apple = ScriptedApple([
            AppleEndpointError(code: .unavailable, httpStatus: nil, message: "HTTP 429", retryAfter: .seconds(300)),
            AppleEndpointError(code: .invalidClient, httpStatus: 400, message: "client secret refused"),
        ])
        let accounts = [try world.linked("alice", token: "rt-alice"), try world.linked("bob", token: "rt-bob")]
        let checker = world.checker(apple: apple)
        try await world.pass(checker)
        world.upgrade.advance(Self.period)
        let start = world.now

        // The first call meets the 429: that link is deferred, the other released, the instance paused.
        let first = try await world.pass(checker)
        #expect(first.checked == [.error: 1] && first.paused)
        #expect(apple.calls.withLock { $0.count } == 1)
        let pauses = world.events.list.withLock { $0 }.compactMap { event -> Int64? in
            if case .paused(let until, _) = event { return until }
            return nil
        }
        #expect(pauses.count == 1 && (pauses.first ?? 0) >= start + 300, "at least Retry-After")
        let checks = try accounts.map { account in
            try #require(try world.store.read { try $0.appleLinkCheck(accountID: account.id) })
        }
        let failed = try #require(checks.first { $0.failures == 1 })
        let released = try #require(checks.first { $0.failures == 0 })
        #expect(failed.lastError?.hasPrefix("unavailable") == true && (failed.dueAt ?? 0) >= start + 300)
        #expect(released.claimToken == nil && released.dueAt == pauses.first, "the rest wait for the pause")
        for account in accounts {
            let link = try #require(try world.store.read { try $0.appleLink(accountID: account.id) })
            #expect(link.status == .linked && link.refreshTokenCiphertext != nil, "nothing else changed")
        }

        // Paused: no call at all.
        world.upgrade.advance(200)
        #expect(try await world.pass(checker).paused)
        #expect(apple.calls.withLock { $0.count } == 1)

        // After the pause: the next error pauses again (longer); then Apple answers 200.
        world.upgrade.advance(101)
        let second = try await world.pass(checker)
        #expect(second.checked == [.error: 1] && second.paused)
        world.upgrade.advance(Self.period)
        let third = try await world.pass(checker)
        #expect(third.checked == [.valid: 2], "\(third)")
        #expect(apple.calls.withLock { $0.count } == 4)
        for account in accounts {
            let check = try #require(try world.store.read { try $0.appleLinkCheck(accountID: account.id) })
            #expect(check.failures == 0 && check.checkedAt == world.now && check.dueAt == world.now + Self.period)
        }
    }

    @Test(
        "a pass cut short after a full batch says links may still be due, so the next starts at once; one that ran out does not",
        arguments: Backend.all
    )
    func passCutShort(_ backend: Backend) async throws {
        let world = try World(backend)
        let apple = ScriptedApple([])
        for name in ["alice", "bob", "carol"] { _ = try world.linked(name, token: "rt-\(name)") }
        let checker = world.checker(apple: apple) {
            $0.batchSize = 1
            $0.passSeconds = 0
        }
        #expect(try await world.pass(checker).scheduled == 3)
        world.upgrade.advance(Self.period)
        var passes: [AppleLinkChecker.PassSummary] = []
        for _ in 0..<4 { passes.append(try await world.pass(checker)) }
        #expect(passes.map { $0.checked[.valid, default: 0] } == [1, 1, 1, 0])
        #expect(passes.map(\.more) == [true, true, true, false])
    }

    @Test("the first checks of many links spread over the period")
    func firstChecksSpread() {
        var policy = AppleLinkChecker.Policy()
        policy.periodSeconds = 86_400
        var buckets = [Int](repeating: 0, count: 24)
        for index in 0..<24_000 {
            let offset = policy.firstDue(accountID: UUID().uuidString.lowercased() + "\(index)", now: 0)
            #expect((0..<86_400).contains(offset))
            buckets[Int(offset / 3600)] += 1
        }
        // 1000 a bucket on average; a hash spreads them within a few standard deviations (about 31).
        #expect(buckets.allSatisfy { (800...1200).contains($0) }, "\(buckets)")
    }

    @Test("the backoff of a failing link starts at a 96th of the period and never passes it")
    func linkBackoff() {
        var policy = AppleLinkChecker.Policy()
        policy.periodSeconds = 86_400
        #expect(policy.linkBackoff(failures: 1, random: { $0.lowerBound }) == 900)
        #expect(policy.linkBackoff(failures: 30, random: { $0.lowerBound }) == 86_400)
        policy.periodSeconds = 10
        #expect(policy.linkBackoff(failures: 1, random: { $0.lowerBound }) == 1)
        #expect(policy.linkBackoff(failures: 30, random: { $0.lowerBound }) == 10)
        #expect(policy.pause(errors: 1, retryAfter: nil, random: { $0.lowerBound }) == 5)
        #expect(policy.pause(errors: 1, retryAfter: 60, random: { $0.lowerBound }) == 60)
        #expect(policy.pause(errors: 40, retryAfter: nil, random: { $0.lowerBound }) == 900)
    }

    @Test("at the default rate the policy is the default one")
    func defaultRatePolicy() {
        #expect(AppleLinkChecker.Policy(checksPerSecond: 10) == AppleLinkChecker.Policy())
        #expect(AppleLinkChecker.Policy(checksPerSecond: 1000).batchSize == 20)
        #expect(AppleLinkChecker.Policy(checksPerSecond: 1000).claimSeconds == 120)
    }

    @Test(
        "at a slower rate a batch's paced checks and their answers end before its claim does",
        arguments: [0.001, 0.01, 0.1, 0.17, 0.5, 0.67, 1, 2.5, 10, 1000]
    )
    func claimOutlastsPacedBatch(_ rate: Double) {
        let policy = AppleLinkChecker.Policy(checksPerSecond: rate)
        #expect(policy.checksPerSecond == rate)
        #expect((1...20).contains(policy.batchSize))
        // Each check of the batch may wait its slot, then take up to 5 s with Apple.
        let worstCase = Double(policy.batchSize) / rate + Double(policy.batchSize) * 5
        #expect(worstCase <= Double(policy.claimSeconds), "\(rate)/s: \(policy.batchSize) in \(policy.claimSeconds) s")
        #expect(policy.claimSeconds >= 120)
    }
}
