import Foundation
import Synchronization
import Testing

@testable import UpgradeEngine

/// A store whose next writes fail, as a busy or failing database would, to prove what the service does
/// when it cannot record an outcome.
final class FlakyStore: UpgradeStore, Sendable {
    let base: any UpgradeStore
    /// Writes to let through, then writes to fail.
    private let script = Mutex((pass: 0, fail: 0))
    /// Every call fails with `unavailable`, as with a database server that cannot be reached.
    private let down = Mutex(false)

    init(_ base: any UpgradeStore) { self.base = base }

    /// After `pass` more write transactions succeed, the next `count` fail with `busy` before running.
    func failWrites(_ count: Int, after pass: Int = 0) { script.withLock { $0 = (pass, count) } }
    var pendingFailures: Int { script.withLock { $0.fail } }
    /// The database server goes away (`true`) or comes back.
    func setDown(_ value: Bool) { down.withLock { $0 = value } }

    private func reachable() throws(StorageError) {
        if down.withLock({ $0 }) { throw StorageError(.unavailable, "cannot connect to the database (scripted)") }
    }

    func migrate(now: Int64) throws(StorageError) -> [MigrationStatus] { try base.migrate(now: now) }
    func migrationStatus() throws(StorageError) -> [MigrationStatus] { try base.migrationStatus() }
    func ping() throws(StorageError) {
        try reachable()
        try base.ping()
    }
    func read<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        try reachable()
        return try base.read(body)
    }
    func write<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        try reachable()
        let fail = script.withLock { script -> Bool in
            if script.pass > 0 {
                script.pass -= 1
                return false
            }
            guard script.fail > 0 else { return false }
            script.fail -= 1
            return true
        }
        if fail { throw StorageError(.busy, "the database is locked (scripted)") }
        return try base.write(body)
    }
}

/// Upgrades left in `converting` by a server that stopped, or that could not record the outcome,
/// end as `failed(conversion-interrupted)`: once their claim lapses, for whoever touches them first.
@Suite("Interrupted conversions")
struct ConversionInterruptionTests {
    typealias H = UpgradeHarness
    let now = UpgradeHarness.now

    /// An upgrade claimed for conversion by a request that then died: `converting`, nothing else done.
    func abandonedConversion(_ h: UpgradeHarness, _ username: String = "alice") throws -> (String, Int64) {
        try h.addAccount(username, password: "pw")
        let started = try h.service.start(username: username, password: "pw", serviceIdentifier: "s", now: now)
        let record = try h.service.load(started.id)
        var machine = try h.service.restore(record)
        _ = try h.service.commit(
            .appleCredentialEvaluated(.verified(sub: "001.abandoned.1")),
            detail: [:],
            record: record,
            machine: &machine,
            now: now + 1
        )
        #expect(machine.status == .converting)
        return (started.id, try #require(machine.deadline))
    }

    func failure(_ body: () async throws -> some Any) async -> ServiceFailure? {
        do {
            _ = try await body()
            Issue.record("expected a failure")
            return nil
        } catch {
            return error as? ServiceFailure
        }
    }

    func credential(state: String = "s") -> UpgradeService.AppleCredential {
        .init(identityToken: H.identityToken(nonce: "n"), authorizationCode: "c.1", state: state)
    }

    enum Toucher: String, CaseIterable, Sendable { case view, credential, cancel, stepUp }

    @Test(
        "after its claim lapses, the first call to touch it fails it as interrupted; every call then agrees",
        arguments: Toucher.allCases
    )
    func touchedAfterLapse(first: Toucher) async throws {
        let h = try UpgradeHarness()
        let (id, deadline) = try abandonedConversion(h)
        let service = h.service
        switch first {
        case .view:
            let view = try service.view(id: id, now: deadline)
            #expect(view.status == .failed)
            #expect(view.problem == .conversionInterrupted)
            #expect(view.result == .failure)
        case .credential:
            let answer = await failure { try await service.submitAppleCredential(id: id, credential(), now: deadline) }
            #expect(answer?.kind == .conversionInterrupted)
            #expect(answer?.status == .failed)
            #expect(answer?.message.contains("start a new upgrade") == true)
        case .cancel:
            let answer = await failure { try service.cancel(id: id, reason: .userCanceled, now: deadline) }
            #expect(answer?.kind == .conversionInterrupted)
            #expect(answer?.status == .failed)
        case .stepUp:
            let answer = await failure { try service.stepUp(id: id, code: .totp("123456"), now: deadline) }
            #expect(answer?.kind == .conversionInterrupted)
        }
        // Stored once, with its audit row.
        let trail = try h.store.read { try $0.auditTrail(upgradeID: id, limit: 20) }
        #expect(trail.filter { $0.detail["problem"] == "conversion-interrupted" }.count == 1)
        #expect(trail.last?.fromStatus == "converting" && trail.last?.toStatus == "failed")
        // Every later call agrees: failed, conversion-interrupted, final.
        #expect(try service.view(id: id, now: deadline + 5).problem == .conversionInterrupted)
        let again = await failure { try await service.submitAppleCredential(id: id, credential(), now: deadline + 5) }
        #expect(again?.kind == .conversionInterrupted)
        #expect(again?.status == .failed)
        let cancel = await failure { try service.cancel(id: id, reason: .userCanceled, now: deadline + 5) }
        #expect(cancel?.kind == .notAllowedInState)
        #expect(cancel?.status == .failed)
        #expect(cancel?.message.contains("interrupted") == true)
        // The account never changed.
        #expect(try h.account("alice")?.credentialKind == .password)
        #expect(try h.store.read { try $0.auditTrail(upgradeID: id, limit: 20) }.count == trail.count)
    }

    @Test("before its claim lapses a conversion is left alone")
    func notBeforeLapse() throws {
        let h = try UpgradeHarness()
        let (id, deadline) = try abandonedConversion(h)
        #expect(try h.service.view(id: id, now: deadline - 1).status == .converting)
        #expect(try h.service.failInterruptedConversions(now: deadline - 1) == 0)
        #expect(try h.service.load(id).status == "converting")
    }

    @Test("the start-up sweep fails every lapsed conversion and nothing else")
    func startUpSweep() throws {
        let h = try UpgradeHarness()
        var abandoned: [String] = []
        var deadline: Int64 = 0
        for index in 0..<3 {
            let (id, lapse) = try abandonedConversion(h, "user\(index)")
            abandoned.append(id)
            deadline = lapse
        }
        try h.addAccount("open", password: "pw")
        let open = try h.service.start(username: "open", password: "pw", serviceIdentifier: "s", now: deadline - 10)
        #expect(try h.service.failInterruptedConversions(now: deadline) == 3)
        for id in abandoned {
            #expect(try h.service.load(id).status == "failed")
            #expect(try h.service.view(id: id, now: deadline).problem == .conversionInterrupted)
        }
        #expect(try h.service.load(open.id).status == "awaitingAppleCredential")
        #expect(try h.service.failInterruptedConversions(now: deadline + 1) == 0, "a second sweep finds nothing")
    }

    @Test("a failed Apple exchange ends the upgrade failed even when the first writes of that outcome fail")
    func failedExchangeRecordedDespiteBusyDatabase() async throws {
        let apple = ScriptedAppleEndpoint()
        apple.fail(with: .invalidGrant)
        let h = try UpgradeHarness(apple: apple)
        let flaky = FlakyStore(h.store)
        let service = UpgradeService(
            store: flaky,
            passwords: PasswordVerifier(dummyParameters: H.fastHash),
            secrets: h.secrets,
            identityTokens: IdentityTokenVerifier(
                keys: try JWKSet(keys: [(H.keyID, H.appleKey.publicKey)]),
                policy: try IdentityTokenPolicy(allowedAudiences: [H.clientID])
            ),
            apple: apple,
            configuration: UpgradeServiceConfiguration(appleTeamID: H.teamID)
        )
        try h.addAccount("alice", password: "pw")
        let started = try service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: now)
        let request = UpgradeService.AppleCredential(
            identityToken: H.identityToken(nonce: started.nonce),
            authorizationCode: "c.1",
            state: started.state ?? ""
        )
        // The claim commits; then Apple refuses the code, and the database is busy twice.
        flaky.failWrites(2, after: 1)
        let answer = await failure { try await service.submitAppleCredential(id: started.id, request, now: now + 1) }
        #expect(answer?.kind == .invalidAuthorizationCode)
        #expect(answer?.status == .failed)
        #expect(flaky.pendingFailures == 0, "both scripted failures were met and retried past")
        #expect(try service.load(started.id).status == "failed")
        #expect(try service.view(id: started.id, now: now + 2).problem == .appleExchangeFailed)
    }

    @Test("starting an upgrade cancels the account's older open ones, audited; others' upgrades are untouched")
    func olderOpenUpgradesSuperseded() async throws {
        let h = try UpgradeHarness()
        try h.addAccount("alice", password: "pw")
        try h.addAccount("bob", password: "pw")
        let bob = try h.service.start(username: "bob", password: "pw", serviceIdentifier: "s", now: now)
        var ids: [String] = []
        for step in 0..<5 {
            ids.append(
                try h.service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: now + Int64(step))
                    .id
            )
        }
        let accountID = try #require(try h.account("alice")).id
        let open = try h.store.read { try $0.openUpgradeSessions(accountID: accountID, limit: 100) }
        #expect(open.map(\.id) == [ids.last!], "one open upgrade per account")
        for id in ids.dropLast() {
            let view = try h.service.view(id: id, now: now + 10)
            #expect(view.status == .cancelled)
            #expect(view.history.last?.event == "upgrade.superseded")
        }
        let trail = try h.store.read { try $0.auditTrail(upgradeID: ids[0], limit: 10) }
        #expect(trail.last?.detail["supersededBy"] == ids[1])
        #expect(try h.service.load(bob.id).status == "awaitingAppleCredential")
        // A wrong password supersedes nothing.
        _ = await failure {
            try h.service.start(username: "alice", password: "nope", serviceIdentifier: "s", now: now + 20)
        }
        #expect(try h.service.load(ids.last!).status == "awaitingAppleCredential")
        // The superseded upgrade's credential is refused; the newest one completes.
        let newest = try h.service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: now + 21)
        let stale = await failure {
            try await h.service.submitAppleCredential(
                id: ids.last!,
                .init(identityToken: H.identityToken(nonce: "x"), authorizationCode: "c.1", state: "s"),
                now: now + 22
            )
        }
        #expect(stale?.kind == .notAllowedInState)
        let done = try await h.service.submitAppleCredential(
            id: newest.id,
            .init(
                identityToken: H.identityToken(nonce: newest.nonce),
                authorizationCode: "c.2",
                state: newest.state ?? ""
            ),
            now: now + 22
        )
        #expect(done.status == .completed)
    }

    @Test("cancel on a failed or expired upgrade is not-allowed-in-state; on a cancelled one it answers the same again")
    func cancelAfterTheEnd() async throws {
        let h = try UpgradeHarness()
        try h.addAccount("alice", password: "pw")
        let failed = await failure {
            try h.service.start(username: "alice", password: "wrong", serviceIdentifier: "s", now: now)
        }
        let failedID = try #require(failed?.upgradeID)
        let refused = await failure { try h.service.cancel(id: failedID, reason: .userCanceled, now: now + 1) }
        #expect(refused?.kind == .notAllowedInState)
        #expect(refused?.status == .failed)
        #expect(refused?.message.contains("username or password") == true)

        let started = try h.service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: now + 2)
        let late = await failure { try h.service.cancel(id: started.id, reason: .userCanceled, now: now + 2 + 300) }
        #expect(late?.kind == .upgradeExpired, "the cancel that finds it late expires it")
        let afterExpiry = await failure { try h.service.cancel(id: started.id, reason: .userCanceled, now: now + 400) }
        #expect(afterExpiry?.kind == .notAllowedInState)
        #expect(afterExpiry?.status == .expired)

        let other = try h.service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: now + 500)
        let cancelled = try h.service.cancel(id: other.id, reason: .userCanceled, now: now + 501)
        #expect(cancelled.status == .cancelled)
        #expect(try h.service.cancel(id: other.id, reason: .userCanceled, now: now + 502) == cancelled)
    }
}

@Suite("Failures keep their cause")
struct FailureCauseTests {
    @Test(
        "a storage failure reaches the caller with the storage error as its cause, and the client message says nothing of it"
    )
    func storageCause() throws {
        let h = try UpgradeHarness()
        let flaky = FlakyStore(h.store)
        let service = UpgradeService(
            store: flaky,
            passwords: PasswordVerifier(dummyParameters: UpgradeHarness.fastHash),
            secrets: h.secrets,
            identityTokens: IdentityTokenVerifier(
                keys: try JWKSet(keys: [(UpgradeHarness.keyID, UpgradeHarness.appleKey.publicKey)]),
                policy: try IdentityTokenPolicy(allowedAudiences: [UpgradeHarness.clientID])
            ),
            apple: h.apple,
            configuration: UpgradeServiceConfiguration(appleTeamID: UpgradeHarness.teamID)
        )
        try h.addAccount("alice", password: "pw")
        flaky.failWrites(1)
        let error = #expect(throws: ServiceFailure.self) {
            try service.start(username: "alice", password: "pw", serviceIdentifier: "s", now: UpgradeHarness.now)
        }
        #expect(error?.kind == .internalError)
        #expect(error?.cause == "storage busy: the database is locked (scripted)")
        #expect(error?.message.contains("locked") == false, "the client is not told the storage detail")
    }
}
