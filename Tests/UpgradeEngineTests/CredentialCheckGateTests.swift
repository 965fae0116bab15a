import Foundation
import Synchronization
import Testing

@testable import UpgradeEngine

/// Simultaneous guesses for one username: without a gate they all passed the lockout's read before
/// any failure was written and shared the CPU, so an account with a costly admitted hash answered
/// past the floor (and raised it for everyone). One check per username runs at a time, and the
/// username stays taken until that check's answer is due; the rest are refused `rate-limited` at
/// once, whatever the username holds. No test here depends on how fast anything runs: a refusal's
/// answer is due seconds after the call, far later than any of these calls take.
@Suite("One password check per username at a time")
struct CredentialCheckGateTests {
    let now = UpgradeHarness.now
    static let floor = Duration.seconds(10)

    /// Key derivations a service ran.
    final class Hashes: Sendable {
        private let count = Mutex(0)
        var value: Int { count.withLock { $0 } }
        func add() { count.withLock { $0 += 1 } }
    }

    /// A service on `h`'s database with `floor`, counting the key derivations it runs.
    static func service(_ h: UpgradeHarness, floor: Duration, hashes: Hashes) -> UpgradeService {
        var configuration = UpgradeServiceConfiguration(appleTeamID: UpgradeHarness.teamID)
        configuration.passwordHasher = try! PasswordHasher(parameters: UpgradeHarness.fastHash)
        configuration.failureFloor = floor
        var passwords = h.service.passwords
        passwords.onHashed = { _ in hashes.add() }
        return UpgradeService(
            store: h.store,
            passwords: passwords,
            secrets: h.secrets,
            identityTokens: h.service.identityTokens,
            apple: h.apple,
            configuration: configuration
        )
    }

    /// The failure `call` throws (nil if it does not).
    static func failure(_ call: () throws(ServiceFailure) -> Void) -> ServiceFailure? {
        do {
            try call()
            return nil
        } catch {
            return error
        }
    }

    @Test("the gate: taken while a check runs, then until its answer is due; a due answer frees it")
    func gate() {
        let gate = CredentialCheckGate()
        let start = ContinuousClock.now
        #expect(gate.enter("alice", now: start))
        #expect(!gate.enter("alice", now: start.advanced(by: .seconds(30))), "in flight, however long")
        #expect(gate.enter("bob", now: start), "another username is not held up")
        gate.leave("alice", due: start.advanced(by: .seconds(1)), now: start)
        #expect(!gate.enter("alice", now: start.advanced(by: .milliseconds(999))), "its answer is not due yet")
        #expect(gate.enter("alice", now: start.advanced(by: .seconds(1))), "due: free")
        gate.leave("alice", due: start, now: start)
        gate.leave("bob", due: start, now: start)
        #expect(gate.count == 0, "an answer due at once leaves nothing behind")
    }

    @Test("answered usernames are swept, so a spray of usernames does not grow the table")
    func sweep() {
        let gate = CredentialCheckGate()
        let start = ContinuousClock.now
        let count = CredentialCheckGate.minimumSweep * 3
        for index in 0..<count {
            let now = start.advanced(by: .milliseconds(index))
            #expect(gate.enter("user\(index)", now: now))
            gate.leave("user\(index)", due: now.advanced(by: .milliseconds(10)), now: now)
        }
        #expect(gate.count < CredentialCheckGate.minimumSweep, "\(gate.count) usernames kept")
        // One still in flight is never swept.
        #expect(gate.enter("running", now: start))
        for index in 0..<count { _ = gate.enter("late\(index)", now: start.advanced(by: .seconds(60))) }
        #expect(!gate.enter("running", now: start.advanced(by: .seconds(61))))
    }

    @Test(
        "four simultaneous wrong passwords: one is checked, three are refused at once, alike for any username",
        arguments: ["django", "nobody"]
    )
    func simultaneousGuesses(username: String) async throws {
        let h = try UpgradeHarness()
        try h.addAccount("django", password: "", storedHash: FailureFloorTests.django600k)
        let hashes = Hashes()
        let service = Self.service(h, floor: Self.floor, hashes: hashes)
        let now = self.now
        let failures = await withTaskGroup(of: ServiceFailure?.self) { group in
            for attempt in 0..<4 {
                group.addTask {
                    Self.failure { () throws(ServiceFailure) in
                        _ = try service.start(
                            username: username,
                            password: "guess \(attempt)",
                            serviceIdentifier: "s",
                            now: now
                        )
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let checked = failures.filter { $0?.kind == .invalidCredentials }
        let refused = failures.compactMap { $0 }.filter { $0.kind == .rateLimited }
        #expect(checked.count == 1, "\(failures.map { $0?.kind.name ?? "answer" })")
        #expect(refused.count == 3)
        #expect(hashes.value == 1, "one key derivation, not four")
        for failure in refused {
            #expect(failure.notBefore == nil, "refused at once, not held")
            #expect(failure.retryAfter == 10, "the floor, rounded up: the same for every username")
            #expect(failure.message == "another attempt for this username is in progress; retry in 10 s")
            #expect(failure.upgradeID == nil, "no upgrade was opened")
        }
        // Only the checked guess counts against the username; the refused ones left no trace.
        let throttle = try h.store.read { try $0.throttle(usernameKey: username) }
        #expect(throttle?.failures == 1)
        let audit = try h.store.read { try $0.auditEvents(AuditSearch()) }
        #expect(Set(audit.compactMap(\.upgradeID)).count == 1, "one upgrade opened and refused")
    }

    @Test("a refusal keeps the username until its answer is due; other usernames and tickets go on")
    func heldUntilDue() async throws {
        let h = try UpgradeHarness()
        try h.addAccount("alice", password: "right password")
        let hashes = Hashes()
        // Long enough that the calls below all run before the first answer is due, on any machine.
        let floor = Duration.seconds(3)
        let service = Self.service(h, floor: floor, hashes: hashes)
        let first = try #require(
            Self.failure { () throws(ServiceFailure) in
                _ = try service.start(username: "alice", password: "wrong", serviceIdentifier: "s", now: now)
            }
        )
        #expect(first.kind == .invalidCredentials)
        let due = try #require(first.notBefore)
        // The right password, a password change and a look-alike spelling all wait for that answer.
        let calls: [() throws(ServiceFailure) -> Void] = [
            { () throws(ServiceFailure) in
                _ = try service.start(username: "alice", password: "right password", serviceIdentifier: "s", now: now)
            },
            { () throws(ServiceFailure) in
                _ = try service.startPasswordChange(
                    username: "alice",
                    password: "right password",
                    newPassword: "Another-Strong-Passw0rd",
                    serviceIdentifier: "s",
                    now: now
                )
            },
            { () throws(ServiceFailure) in
                _ = try service.start(username: "ALICE", password: "right password", serviceIdentifier: "s", now: now)
            },
        ]
        for call in calls {
            let refused = Self.failure(call)
            #expect(refused?.kind == .rateLimited, "\(refused?.message ?? "answered")")
            #expect(refused?.retryAfter == 3)
        }
        #expect(ContinuousClock.now < due, "the calls above ran before the first answer was due")
        // Another username, and a ticket for this one (no hash to stretch), are not held up.
        #expect(
            Self.failure { () throws(ServiceFailure) in
                _ = try service.start(username: "bob", password: "wrong", serviceIdentifier: "s", now: now)
            }?.kind == .invalidCredentials
        )
        #expect(
            Self.failure { () throws(ServiceFailure) in
                _ = try service.start(
                    username: "alice",
                    password: "",
                    ticket: "not-a-ticket",
                    serviceIdentifier: "s",
                    now: now
                )
            }?.kind == .invalidTicket
        )
        // Once the answer is due the username is free.
        try await Task.sleep(until: due, clock: .continuous)
        let answer = try service.start(
            username: "alice",
            password: "right password",
            serviceIdentifier: "s",
            now: now + 2
        )
        #expect(answer.status == .awaitingAppleCredential)
    }

    @Test("an accepted password frees the username at once; with the floor off a refusal does too")
    func acceptedFreesAtOnce() throws {
        let h = try UpgradeHarness()
        try h.addAccount("alice", password: "right password")
        let hashes = Hashes()
        let service = Self.service(h, floor: Self.floor, hashes: hashes)
        for second in 0..<3 {
            let answer = try service.start(
                username: "alice",
                password: "right password",
                serviceIdentifier: "s",
                now: now + Int64(second)
            )
            #expect(answer.status == .awaitingAppleCredential)
        }
        let off = Self.service(h, floor: .zero, hashes: hashes)
        for second in 0..<2 {
            let refused = Self.failure { () throws(ServiceFailure) in
                _ = try off.start(
                    username: "carol",
                    password: "guess",
                    serviceIdentifier: "s",
                    now: now + Int64(second)
                )
            }
            #expect(refused?.kind == .invalidCredentials, "\(refused?.message ?? "answered")")
        }
        #expect(off.credentialChecks.count == 0)
    }
}
