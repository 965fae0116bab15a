import Foundation
import Synchronization
import Testing

@testable import UpgradeEngine

/// The timing oracle: a wrong password costs what the account's stored hash costs (an imported
/// bcrypt 12 about 40 times the dummy check of an unknown username), so the time a refusal takes
/// tells who has an account. Every refused credential check therefore carries the instant before
/// which it may not be answered, the floor after the call began, whatever the account and its hash.
/// These tests check that instant, not the clock: the REST layer's event loop honours it (checked
/// over HTTP in UpgradeAPITests), and the latencies are measured in Benchmarks/.
@Suite("Refused credential checks are answered no sooner than the floor")
struct FailureFloorTests {
    let now = UpgradeHarness.now
    /// Longer than any check here takes even on a loaded machine, so none overruns it (which would
    /// raise it); nothing waits for it in these tests.
    static let floor = Duration.seconds(10)
    /// An imported bcrypt hash of cost 10 and a Django PBKDF2 hash of 600 000 iterations (the
    /// digests belong to no password), both far costlier than the dummy check.
    static let bcrypt10 = "$2b$10$GV7oqmKVW/S97lcGqiz7cuIlvV70W5zNF3ryK5m8gokOHiIXED0Wq"
    static let django600k = "pbkdf2_sha256$600000$saltsalt$" + String(repeating: "A", count: 43) + "="
    /// A stored hash over the limits (bcrypt 14): it cannot be checked at all.
    static let overLimits = "$2b$14$GV7oqmKVW/S97lcGqiz7cuIlvV70W5zNF3ryK5m8gokOHiIXED0Wq"

    /// A service on the harness's database with `floor` configured (nil: derived from the limits).
    static func service(_ h: UpgradeHarness, floor: Duration?) -> UpgradeService {
        var configuration = UpgradeServiceConfiguration(appleTeamID: UpgradeHarness.teamID)
        configuration.passwordHasher = try! PasswordHasher(parameters: UpgradeHarness.fastHash)
        configuration.failureFloor = floor
        return UpgradeService(
            store: h.store,
            passwords: h.service.passwords,
            secrets: h.secrets,
            identityTokens: h.service.identityTokens,
            apple: h.apple,
            configuration: configuration
        )
    }

    /// Runs `call`, which must fail, and checks that its answer is due exactly `floor` after the call
    /// began: no sooner than `floor` after the instant before it, no later than after the instant after.
    static func expectHeld(
        floor: Duration,
        _ what: Comment,
        _ call: () throws(ServiceFailure) -> Void
    ) -> ServiceFailure? {
        let before = ContinuousClock.now
        var caught: ServiceFailure?
        do { try call() } catch { caught = error }
        let after = ContinuousClock.now
        guard let failure = caught else {
            Issue.record("expected a refusal: \(what)")
            return nil
        }
        guard let notBefore = failure.notBefore else {
            Issue.record("\(failure.kind) carries no notBefore: \(what)")
            return failure
        }
        #expect(notBefore >= before.advanced(by: floor), "\(what)")
        #expect(notBefore <= after.advanced(by: floor), "\(what): measured from the call's start")
        return failure
    }

    /// Accounts of every kind a stranger might probe: imported legacy hashes, an unusable hash, an
    /// Apple-only account.
    static func accounts(_ h: UpgradeHarness) throws {
        try h.addAccount("bcrypt", password: "", storedHash: bcrypt10)
        try h.addAccount("django", password: "", storedHash: django600k)
        try h.addAccount("current", password: "right password")
        try h.store.write { tx in
            let unusable = AccountRecord(
                id: "unusable-id",
                username: "unusable",
                credentialKind: .password,
                createdAt: UpgradeHarness.now,
                updatedAt: UpgradeHarness.now
            )
            try tx.insertAccount(unusable)
            try tx.upsertPasswordCredential(
                PasswordCredentialRecord(
                    accountID: unusable.id,
                    hash: overLimits,
                    format: "bcrypt",
                    updatedAt: UpgradeHarness.now
                )
            )
            try tx.insertAccount(
                AccountRecord(
                    id: "apple-id",
                    username: "appleonly",
                    credentialKind: .appleOnly,
                    createdAt: UpgradeHarness.now,
                    updatedAt: UpgradeHarness.now
                )
            )
        }
    }

    static let usernames = ["nobody", "bcrypt", "django", "current", "unusable", "appleonly"]

    @Test("a wrong password for any kind of account and an unknown username are held to the same floor")
    func upgradeRefusals() throws {
        let h = try UpgradeHarness()
        try Self.accounts(h)
        let floor = Self.floor
        let service = Self.service(h, floor: floor)
        var answers: [String] = []
        for username in Self.usernames {
            let failure = Self.expectHeld(floor: floor, "upgrade, \(username)") { () throws(ServiceFailure) in
                _ = try service.start(username: username, password: "a guess", serviceIdentifier: "s", now: now)
            }
            answers.append("\(failure?.kind.name ?? "none") \(failure?.message ?? "")")
        }
        #expect(Set(answers).count == 1, "every refusal looks the same: \(answers)")
        // The stored hash that cannot be checked says why, in the audit trail only.
        let audit = try h.store.read { try $0.auditTrail(accountID: "unusable-id", limit: 10) }
        #expect(audit.contains { $0.detail["hash"] == "parameterOutOfBounds" })
    }

    @Test("the floor runs from the request's arrival, so a wait for a worker is inside it")
    func fromArrival() throws {
        let h = try UpgradeHarness()
        try Self.accounts(h)
        let floor = Self.floor
        let service = Self.service(h, floor: floor)
        // The request arrived a while ago and waited behind other checks for a worker.
        let received = ContinuousClock.now - .seconds(3)
        // A refusal holds its username until it is due (`CredentialCheckGate`): the password change
        // goes to another instance.
        let other = Self.service(h, floor: floor)
        for username in ["nobody", "bcrypt"] {
            var caught: ServiceFailure?
            do {
                _ = try service.start(
                    username: username,
                    password: "a guess",
                    serviceIdentifier: "s",
                    received: received,
                    now: now
                )
            } catch { caught = error }
            #expect(caught?.notBefore == received.advanced(by: floor), "upgrade, \(username)")
            caught = nil
            do {
                _ = try other.startPasswordChange(
                    username: username,
                    password: "a guess",
                    newPassword: "Another-Strong-Passw0rd",
                    serviceIdentifier: "s",
                    received: received,
                    now: now
                )
            } catch { caught = error }
            #expect(caught?.notBefore == received.advanced(by: floor), "password change, \(username)")
        }
    }

    @Test("a held legacy outage answer is still due when it leaves the service, whichever path decided it")
    func legacyOutageHeldByTheTimer() throws {
        // A legacy account's own call took the hold already: without a margin its answer was due at
        // once, about a millisecond before an unknown username's, which the event loop's timer wrote.
        let hold = Duration.milliseconds(1)
        let started = ContinuousClock.now - hold
        let failure = UpgradeService.legacyUnavailable(heldFor: hold, since: started)
        #expect(failure.notBefore == started.advanced(by: hold + UpgradeService.legacyHoldMargin))
        #expect(try #require(failure.notBefore) > ContinuousClock.now.advanced(by: .milliseconds(1)))
        #expect(UpgradeService.legacyUnavailable(heldFor: nil, since: started).notBefore == nil)
    }

    @Test("a wrong current password for a password change is held to the floor, known username or not")
    func passwordChangeRefusals() throws {
        let h = try UpgradeHarness()
        try Self.accounts(h)
        let floor = Self.floor
        let service = Self.service(h, floor: floor)
        for username in Self.usernames {
            let failure = Self.expectHeld(floor: floor, "password change, \(username)") { () throws(ServiceFailure) in
                _ = try service.startPasswordChange(
                    username: username,
                    password: "a guess",
                    newPassword: "Another-Strong-Passw0rd",
                    serviceIdentifier: "s",
                    now: now
                )
            }
            #expect(failure?.kind == .invalidCredentials)
        }
    }

    @Test("a refused ticket and a locked username are held to the floor too")
    func ticketsAndLocks() throws {
        let h = try UpgradeHarness()
        try Self.accounts(h)
        let floor = Self.floor
        let service = Self.service(h, floor: floor)
        for username in ["nobody", "current"] {
            _ = Self.expectHeld(floor: floor, "ticket, \(username)") { () throws(ServiceFailure) in
                _ = try service.start(
                    username: username,
                    password: "",
                    ticket: "not-a-ticket",
                    serviceIdentifier: "s",
                    now: now
                )
            }
        }
        // Ten failures lock the username (known or not); the lock's refusal is held like the rest.
        // The guesses run without a floor, or each would hold the username until its answer is due
        // (`CredentialCheckGate`).
        let unheld = Self.service(h, floor: .zero)
        for attempt in 0..<10 {
            _ = try? unheld.start(
                username: "django",
                password: "guess \(attempt)",
                serviceIdentifier: "s",
                now: now + 3600 * Int64(attempt)
            )
        }
        let locked = Self.expectHeld(floor: floor, "locked") { () throws(ServiceFailure) in
            _ = try service.start(
                username: "django",
                password: "a guess",
                serviceIdentifier: "s",
                now: now + 9 * 3600 + 1
            )
        }
        #expect(locked?.kind == .locked)
    }

    @Test("an account whose stored hash is over the limits gets a new password with a ticket, and signs in")
    func unusableHashIsReplacedByTicket() throws {
        let h = try UpgradeHarness()
        try Self.accounts(h)
        let service = Self.service(h, floor: Self.floor)
        let ticket = try service.issueTicket(username: "unusable", secondFactorVerified: false, issuedBy: "t", now: now)
        let change = try service.startPasswordChange(
            username: "unusable",
            password: "",
            ticket: ticket.ticket,
            newPassword: "Another-Strong-Passw0rd",
            serviceIdentifier: "s",
            now: now
        )
        #expect(change.status == .completed)
        let answer = try service.start(
            username: "unusable",
            password: "Another-Strong-Passw0rd",
            serviceIdentifier: "s",
            now: now + 1
        )
        #expect(answer.status == .awaitingAppleCredential)
    }

    @Test("successes are not held, nor are refusals that depend on the request alone")
    func successesAreNotHeld() throws {
        let h = try UpgradeHarness()
        try Self.accounts(h)
        let service = Self.service(h, floor: Self.floor)
        let answer = try service.start(
            username: "current",
            password: "right password",
            serviceIdentifier: "s",
            now: now
        )
        #expect(answer.status == .awaitingAppleCredential, "an answer, not a failure: nothing to hold")
        let validation = #expect(throws: ServiceFailure.self) {
            try service.start(username: "", password: "x", serviceIdentifier: "s", now: now)
        }
        #expect(validation?.kind == .validation)
        #expect(validation?.notBefore == nil)
        let policy = #expect(throws: ServiceFailure.self) {
            try service.startPasswordChange(
                username: "current",
                password: "right password",
                newPassword: "short",
                serviceIdentifier: "s",
                now: now
            )
        }
        #expect(policy?.kind == .passwordPolicy)
        #expect(policy?.notBefore == nil)
    }

    @Test("a check that overran the floor raises it for every refusal for a minute, up to four times")
    func floorRaisedAfterOverrun() {
        let tracker = FailureFloorTracker()
        let start = ContinuousClock.now
        let floor = Duration.milliseconds(100)
        #expect(tracker.floor(configured: floor, elapsed: .milliseconds(60), now: start) == (floor, false))
        // A loaded machine stretched a check to 300 ms: the next refusals wait 375 ms, quick or not.
        #expect(tracker.floor(configured: floor, elapsed: .milliseconds(300), now: start) == (.milliseconds(375), true))
        let later = start.advanced(by: .seconds(30))
        #expect(tracker.floor(configured: floor, elapsed: .milliseconds(20), now: later) == (.milliseconds(375), false))
        // A stall is not waited for beyond four times the floor.
        #expect(tracker.floor(configured: floor, elapsed: .seconds(9), now: later) == (.milliseconds(400), true))
        // A minute without an overrun: back to the floor.
        let quiet = later.advanced(by: .seconds(61))
        #expect(tracker.floor(configured: floor, elapsed: .milliseconds(20), now: quiet) == (floor, false))
        #expect(tracker.floor(configured: .zero, elapsed: .seconds(1), now: quiet) == (.zero, false), "off stays off")
    }

    @Test("the service reports an overrun and holds the next refusals longer than the configured floor")
    func serviceRaisesFloor() throws {
        let h = try UpgradeHarness()
        try Self.accounts(h)
        let overruns = Mutex<[Duration]>([])
        var configuration = UpgradeServiceConfiguration(appleTeamID: UpgradeHarness.teamID)
        configuration.passwordHasher = try PasswordHasher(parameters: UpgradeHarness.fastHash)
        // Far shorter than a bcrypt 10 check, which therefore overruns it.
        configuration.failureFloor = .milliseconds(1)
        configuration.onFailureFloorOverrun = { took in overruns.withLock { $0.append(took) } }
        let service = UpgradeService(
            store: h.store,
            passwords: h.service.passwords,
            secrets: h.secrets,
            identityTokens: h.service.identityTokens,
            apple: h.apple,
            configuration: configuration
        )
        #expect(throws: ServiceFailure.self) {
            try service.start(username: "bcrypt", password: "a guess", serviceIdentifier: "s", now: now)
        }
        let took = try #require(overruns.withLock { $0.first })
        #expect(took > .milliseconds(1))
        // The next refusal, however quick, is held to the raised floor (capped at four times 1 ms).
        _ = Self.expectHeld(floor: .milliseconds(4), "after an overrun") { () throws(ServiceFailure) in
            _ = try service.start(username: "nobody", password: "a guess", serviceIdentifier: "s", now: now)
        }
    }

    @Test("without a configured floor, the one derived from the limits applies; zero turns it off")
    func defaultAndZeroFloor() throws {
        let h = try UpgradeHarness()
        let derived = PasswordHashLimits.default.failureFloor
        #expect(derived > PasswordHashLimits.default.costliestCheck)
        _ = Self.expectHeld(floor: derived, "default floor") { () throws(ServiceFailure) in
            _ = try Self.service(h, floor: nil).start(
                username: "nobody",
                password: "a guess",
                serviceIdentifier: "s",
                now: now
            )
        }
        _ = Self.expectHeld(floor: .zero, "floor off") { () throws(ServiceFailure) in
            _ = try Self.service(h, floor: .zero).start(
                username: "nobody",
                password: "a guess",
                serviceIdentifier: "s",
                now: now
            )
        }
    }
}
