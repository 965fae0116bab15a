import Foundation
import Synchronization
import Testing
import UpgradeTestSupport

@testable import AppleEmulator
@testable import UpgradeEngine

/// `AccountDeletionService` and `AppleRevocationSender` against the Apple ID emulator: a converted
/// account's refresh token is queued in the deleting transaction and revoked at Apple once.
@Suite("Account deletion and Apple token revocation")
struct AccountDeletionTests {
    /// An account converted through the emulator, so its link holds a refresh token Apple issued.
    final class World: Sendable {
        let upgrade: UpgradeEmulatorTests.World
        let revoker: EmulatedAppleClient
        let deletions: AccountDeletionService
        /// What the senders reported (a class, because a Mutex cannot be captured).
        final class Events: Sendable {
            let list = Mutex<[AppleRevocationSender.Event]>([])
        }
        let events = Events()

        init(_ backend: Backend) throws {
            upgrade = try UpgradeEmulatorTests.World(backend: backend)
            let key = P256PrivateKey()
            try upgrade.emulator.registerKey(
                teamID: UpgradeEmulatorTests.teamID,
                keyID: "DELETE0001",
                publicKey: key.publicKey
            )
            revoker = try upgrade.emulator.client(
                teamID: UpgradeEmulatorTests.teamID,
                keyID: "DELETE0001",
                privateKey: key
            )
            deletions = AccountDeletionService(store: upgrade.harness.store)
        }

        var store: any UpgradeStore { upgrade.harness.store }
        var now: Int64 { upgrade.now }

        func sender(apple: (any AppleTokenRevoking)? = nil, withApple: Bool = true) -> AppleRevocationSender {
            let events = self.events
            return AppleRevocationSender(
                store: store,
                secrets: upgrade.harness.secrets,
                apple: withApple ? apple ?? revoker : nil,
                onEvent: { event in events.list.withLock { $0.append(event) } }
            )
        }

        /// Converts `username` and returns its account and the refresh token Apple issued.
        func converted(_ username: String) async throws -> (account: AccountRecord, refreshToken: String) {
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
            let sealed = try #require(
                try store.read { try $0.appleLink(accountID: account.id) }?.refreshTokenCiphertext
            )
            let token = try upgrade.harness.secrets.open(
                sealed,
                context: UpgradeService.refreshTokenContext(accountID: account.id)
            )
            return (account, String(decoding: token, as: UTF8.self))
        }
    }

    @Test("a converted account: deleted in one transaction, its refresh token revoked once", arguments: Backend.all)
    func convertedAccount(_ backend: Backend) async throws {
        let world = try World(backend)
        let (account, refreshToken) = try await world.converted("alice")
        let sub = try #require(try world.store.read { try $0.appleLink(accountID: account.id) }?.sub)

        let deletion = try world.deletions.delete(username: "alice", deletedBy: "support", now: world.now)
        #expect(deletion.accountID == account.id)
        let revocationID = try #require(deletion.revocationID)
        try world.store.read { tx throws in
            #expect(try tx.account(id: account.id) == nil)
            #expect(try tx.appleLink(sub: sub) == nil)
            let tombstone = try #require(try tx.auditTrail(accountID: account.id, limit: 50).last)
            #expect(tombstone.event == "account.deleted")
            #expect(tombstone.detail == ["by": "support", "appleRevocation": "queued", "credentialKind": "appleOnly"])
            let row = try #require(try tx.appleRevocation(id: revocationID))
            #expect(row.clientID == UpgradeEmulatorTests.clientID && row.accountID == account.id)
            #expect(!row.tokenCiphertext.isEmpty && row.doneAt == nil)
        }
        #expect(world.upgrade.emulator.revocationCount(token: refreshToken) == 0, "nothing is sent inside the deletion")

        let sender = world.sender()
        #expect(try await sender.attempt(id: revocationID, now: world.now) == .done)
        #expect(world.upgrade.emulator.revocationCount(token: refreshToken) == 1)
        // Done is done: neither another pass nor another attempt sends it again.
        #expect(try await sender.sendDue(now: world.now + 10_000) == (0, 0))
        #expect(try await sender.attempt(id: revocationID, now: world.now + 10_000) == .done)
        #expect(world.upgrade.emulator.revocationCount(token: refreshToken) == 1)
        #expect(try sender.pendingCount() == 0)
        let done = try #require(try world.store.read { try $0.appleRevocation(id: revocationID) })
        #expect(done.tokenCiphertext.isEmpty && done.attempts == 1 && done.lastError == nil)
        #expect(world.events.list.withLock { $0 } == [.revoked(id: revocationID, attempts: 1, note: nil)])
        #expect(
            world.upgrade.emulator.credentialState(forUserID: sub, clientID: UpgradeEmulatorTests.clientID)
                == .revoked,
            "Apple ended the app's authorization"
        )

        // The username is free again.
        try world.upgrade.harness.addAccount("alice", password: "new")
        #expect(try world.upgrade.harness.account("alice")?.id != account.id)
    }

    @Test("Apple answering 429, then 503: pending, retried with backoff, revoked once", arguments: Backend.all)
    func faultsThenRevoked(_ backend: Backend) async throws {
        let world = try World(backend)
        let (_, refreshToken) = try await world.converted("alice")
        try world.upgrade.emulator.injectFaults([429, 503, 503], endpoint: AppleIDEmulator.revokePath)
        let deletion = try world.deletions.delete(username: "alice", deletedBy: "support", now: world.now)
        let id = try #require(deletion.revocationID)
        let sender = world.sender()

        #expect(try await sender.attempt(id: id, now: world.now) == .pending)
        var row = try #require(try world.store.read { try $0.appleRevocation(id: id) })
        #expect(row.attempts == 1 && row.nextAttemptAt == world.now + 1 && row.claimToken == nil)
        #expect(row.lastError?.contains("429") == true, "\(row.lastError ?? "")")
        // Not due yet: a pass now sends nothing.
        #expect(try await sender.sendDue(now: world.now) == (0, 0))

        var now = world.now
        var passes = 0
        while row.doneAt == nil, passes < 10 {
            let previous = row
            now = row.nextAttemptAt
            _ = try await sender.sendDue(now: now)
            row = try #require(try world.store.read { try $0.appleRevocation(id: id) })
            if row.doneAt == nil {
                // Each wait is the doubled step less at most half of it.
                let step = Int64(1) << (row.attempts - 1)
                #expect((step - step / 2...step).contains(row.nextAttemptAt - now), "attempt \(row.attempts)")
                #expect(row.attempts == previous.attempts + 1)
            }
            passes += 1
        }
        #expect(row.doneAt == now && row.attempts == 4, "\(row)")
        #expect(world.upgrade.emulator.pendingFaults(endpoint: AppleIDEmulator.revokePath).isEmpty)
        #expect(world.upgrade.emulator.revocationCount(token: refreshToken) == 1)
        #expect(try sender.pendingCount() == 0)
        let deferred = world.events.list.withLock { $0 }.filter {
            if case .deferred = $0 { return true } else { return false }
        }
        #expect(deferred.count == 3)
        for event in world.events.list.withLock({ $0 }) { #expect(!"\(event)".contains(refreshToken)) }
    }

    @Test("a password account has nothing to revoke; an unknown username changes nothing", arguments: Backend.all)
    func passwordAccountAndUnknown(_ backend: Backend) throws {
        let world = try World(backend)
        let account = try world.upgrade.harness.addAccount("bob", password: "pw", recoveryCodes: ["a-b-c"])
        let deletion = try world.deletions.delete(username: "BOB", deletedBy: "cli", now: world.now)
        #expect(deletion == AccountDeletion(accountID: account.id, revocationID: nil))
        #expect(try world.store.read { try $0.passwordCredential(accountID: account.id) } == nil)
        #expect(
            try world.store.read { try $0.auditTrail(accountID: account.id, limit: 5) }.last?.detail["appleRevocation"]
                == "none"
        )
        #expect(try world.sender().pendingCount() == 0)

        #expect(throws: ServiceFailure.self) {
            try world.deletions.delete(username: "bob", deletedBy: "cli", now: world.now)
        }
        do {
            _ = try world.deletions.delete(username: "nobody", deletedBy: "cli", now: world.now)
        } catch {
            #expect(error.kind == .accountNotFound)
        }
        do {
            _ = try world.deletions.delete(username: "", deletedBy: "cli", now: world.now)
        } catch {
            #expect(error.kind == .validation)
        }
    }

    @Test("without an Apple client a revocation stays pending; a sender with one sends it", arguments: Backend.all)
    func noAppleClient(_ backend: Backend) async throws {
        let world = try World(backend)
        let (_, refreshToken) = try await world.converted("alice")
        let id = try #require(
            try world.deletions.delete(username: "alice", deletedBy: "cli", now: world.now).revocationID
        )
        let offline = world.sender(withApple: false)
        #expect(try await offline.attempt(id: id, now: world.now) == .pending)
        #expect(try await offline.sendDue(now: world.now) == (0, 0))
        #expect(try offline.pendingCount() == 1)
        #expect(try world.store.read { try $0.appleRevocation(id: id) }?.attempts == 0)
        #expect(try await world.sender().sendDue(now: world.now) == (1, 0))
        #expect(world.upgrade.emulator.revocationCount(token: refreshToken) == 1)
    }

    /// Answers `/auth/revoke` as scripted (an error per call, then 200s) and records each token sent.
    final class ScriptedRevoker: AppleTokenRevoking {
        let script: Mutex<[AppleEndpointError]>
        let sent = Mutex<[String]>([])
        init(_ script: [AppleEndpointError] = []) { self.script = Mutex(script) }

        func revokeRefreshToken(_ refreshToken: String, clientID: String) async throws(AppleEndpointError) {
            sent.withLock { $0.append(refreshToken) }
            if let error = script.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { throw error }
        }
    }

    /// Queues a revocation of `token` for a made-up deleted account, sealed as the deletion seals it.
    func queue(_ world: World, _ id: String, token: String) throws {
        let accountID = "deleted-\(id)"
        let sealed = world.upgrade.harness.secrets.seal(
            Array(token.utf8),
            context: UpgradeService.refreshTokenContext(accountID: accountID)
        )
        try world.store.write { tx in
            try tx.insertAppleRevocation(
                AppleRevocationRecord(
                    id: id,
                    accountID: accountID,
                    tokenCiphertext: sealed,
                    clientID: "com.example.app",
                    createdAt: world.now,
                    nextAttemptAt: world.now
                )
            )
        }
    }

    @Test("invalid_grant counts as done, with the reason; invalid_client is retried", arguments: Backend.all)
    func finalAnswers(_ backend: Backend) async throws {
        let world = try World(backend)
        let revoker = ScriptedRevoker([
            AppleEndpointError(code: .invalidGrant, httpStatus: 400, message: "expired"),
            AppleEndpointError(code: .invalidClient, httpStatus: 400, message: "client secret refused"),
        ])
        try queue(world, "r1", token: "rt-one")
        try queue(world, "r2", token: "rt-two")
        let sender = world.sender(apple: revoker)
        #expect(try await sender.sendDue(now: world.now) == (1, 1))
        let first = try #require(try world.store.read { try $0.appleRevocation(id: "r1") })
        #expect(first.doneAt == world.now && first.lastError?.hasPrefix("invalid_grant") == true)
        let second = try #require(try world.store.read { try $0.appleRevocation(id: "r2") })
        #expect(second.doneAt == nil && second.lastError?.hasPrefix("invalid_client (HTTP 400)") == true)
        #expect(try await sender.sendDue(now: second.nextAttemptAt) == (1, 0))
        #expect(revoker.sent.withLock { $0 } == ["rt-one", "rt-two", "rt-two"])
    }

    /// Apple answers an error only once its timeout ran out: the clock moves while it waits.
    final class SlowFailingRevoker: AppleTokenRevoking {
        let clock: Mutex<Int64>
        init(now: Int64) { clock = Mutex(now) }

        func revokeRefreshToken(_ refreshToken: String, clientID: String) async throws(AppleEndpointError) {
            clock.withLock { $0 += 10 }
            throw AppleEndpointError(code: .unavailable, httpStatus: nil, message: "timed out")
        }
    }

    @Test(
        "a failed revocation is due again a backoff after its attempt ended, not after it began",
        arguments: Backend.all
    )
    func backoffFromTheEnd(_ backend: Backend) async throws {
        let world = try World(backend)
        try queue(world, "r1", token: "rt-one")
        try queue(world, "r2", token: "rt-two")
        let revoker = SlowFailingRevoker(now: world.now)
        let sender = world.sender(apple: revoker)
        #expect(try await sender.sendDue(clock: { revoker.clock.withLock { $0 } }) == (0, 2))
        let first = try #require(try world.store.read { try $0.appleRevocation(id: "r1") })
        let second = try #require(try world.store.read { try $0.appleRevocation(id: "r2") })
        #expect(first.nextAttemptAt > world.now + 10, "the first attempt ended 10 s after the pass began")
        #expect(second.nextAttemptAt > world.now + 20, "the second one after waiting for the first")
        try queue(world, "r3", token: "rt-three")
        #expect(try await sender.attempt(id: "r3", clock: { revoker.clock.withLock { $0 } }) == .pending)
        let third = try #require(try world.store.read { try $0.appleRevocation(id: "r3") })
        #expect(third.nextAttemptAt > world.now + 30)
    }

    @Test("senders racing over one queue send each revocation once", arguments: Backend.all)
    func racingSenders(_ backend: Backend) async throws {
        let world = try World(backend)
        for index in 0..<8 { try queue(world, "r\(index)", token: "rt-\(index)") }
        let revoker = ScriptedRevoker()
        let senders = (0..<4).map { _ in world.sender(apple: revoker) }
        let now = world.now
        await withTaskGroup(of: Void.self) { group in
            for sender in senders {
                group.addTask { _ = try? await sender.sendDue(now: now) }
            }
        }
        #expect(revoker.sent.withLock { $0 }.sorted() == (0..<8).map { "rt-\($0)" }.sorted())
        #expect(try world.sender(apple: revoker).pendingCount() == 0)
    }

    @Test("backoff: doubles from 1 s, never below half the step, capped at an hour")
    func backoff() {
        let policy = AppleRevocationSender.Policy()
        let low: (ClosedRange<Int64>) -> Int64 = { $0.upperBound }
        let high: (ClosedRange<Int64>) -> Int64 = { $0.lowerBound }
        #expect(policy.backoff(failedAttempts: 1, random: high) == 1)
        #expect(policy.backoff(failedAttempts: 1, random: low) == 1)
        #expect(policy.backoff(failedAttempts: 2, random: high) == 2)
        #expect(policy.backoff(failedAttempts: 2, random: low) == 1)
        #expect(policy.backoff(failedAttempts: 5, random: high) == 16)
        #expect(policy.backoff(failedAttempts: 5, random: low) == 8)
        #expect(policy.backoff(failedAttempts: 13, random: high) == 3600)
        #expect(policy.backoff(failedAttempts: 1000, random: high) == 3600)
        #expect(policy.backoff(failedAttempts: 1000, random: low) == 1800)
    }
}

extension AppleRevocationSender {
    /// One pass over the queue at a fixed time.
    @discardableResult
    func sendDue(now: Int64) async throws(StorageError) -> (done: Int, deferred: Int) {
        try await sendDue(clock: { now })
    }

    /// Revocations not done yet.
    func pendingCount() throws(StorageError) -> Int {
        try store.readStorageErrors { try $0.pendingAppleRevocationCount() }
    }
}
