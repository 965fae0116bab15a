import Foundation
import Synchronization
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// A change of an account's credentials ends, in its own transaction, every flow the earlier
/// credentials opened; a conversion already claimed is ordered by its own commit
/// (docs/architecture.md §4.4). On every backend.
@Suite("Credential changes end the flows the earlier credentials opened")
struct CredentialChangeTests {
    typealias H = UpgradeHarness
    let now = UpgradeHarness.now
    static let oldPassword = "Old-password-1"
    static let newPassword = "abcdEf-ghijK1-lmnoPq"
    static let totpSecret = Array("12345678901234567890".utf8)

    /// The service of a harness, for a hook that runs while one of its calls is under way.
    final class ServiceBox: Sendable {
        let service = Mutex<UpgradeService?>(nil)
        let outcome = Mutex<String?>(nil)
    }

    func credential(_ answer: UpgradeAnswer) -> UpgradeService.AppleCredential {
        UpgradeService.AppleCredential(
            identityToken: H.identityToken(nonce: answer.nonce),
            authorizationCode: "c." + SecureRandom.token(),
            state: answer.state ?? ""
        )
    }

    func code(at time: Int64) -> String {
        TOTP.code(secret: Self.totpSecret, parameters: .standard, counter: UInt64(time / 30))
    }

    @Test(
        "a password change committed while a conversion waits on Apple wins: the conversion fails, nothing is linked",
        arguments: Backend.all
    )
    func passwordChangeDuringConversion(_ backend: Backend) async throws {
        let box = ServiceBox()
        let now = self.now
        let h = try UpgradeHarness(
            backend: backend,
            onEffect: { effect, _ in
                guard case .exchangeAuthorizationCode = effect, let service = box.service.withLock({ $0 }) else {
                    return
                }
                // The claim has committed; the owner's change commits before the conversion does.
                let answer = try? service.startPasswordChange(
                    username: "alice",
                    password: Self.oldPassword,
                    newPassword: Self.newPassword,
                    serviceIdentifier: "example.com",
                    now: now + 2
                )
                box.outcome.withLock { $0 = answer?.status.rawValue }
            }
        )
        box.service.withLock { $0 = h.service }
        // The box holds the service, whose effect hook holds the box: broken at the end.
        defer { box.service.withLock { $0 = nil } }
        let alice = try h.addAccount("alice", password: Self.oldPassword)
        let started = try h.service.start(
            username: "alice",
            password: Self.oldPassword,
            serviceIdentifier: "example.com",
            now: now
        )
        let failure = await #expect(throws: ServiceFailure.self) {
            try await h.service.submitAppleCredential(id: started.id, credential(started), now: now + 1)
        }
        #expect(failure?.kind == .credentialsChanged)
        #expect(failure?.status == .failed)
        #expect(box.outcome.withLock { $0 } == "completed", "the password change completed during the conversion")
        let (account, link, password) = try h.store.read { tx in
            (
                try tx.account(id: alice.id), try tx.appleLink(accountID: alice.id),
                try tx.passwordCredential(accountID: alice.id)
            )
        }
        #expect(account?.credentialKind == .password)
        #expect(link == nil)
        #expect(try PasswordVerifier().verify(password: Self.newPassword, encodedHash: try #require(password).hash))
        let view = try h.service.view(id: started.id, now: now + 3)
        #expect(view.status == .failed)
        #expect(view.problem == .credentialsChanged)
    }

    @Test("a conversion committed first wins: the password change then finds no password", arguments: Backend.all)
    func conversionBeforePasswordChange(_ backend: Backend) async throws {
        let h = try UpgradeHarness(backend: backend)
        _ = try h.addAccount("alice", password: Self.oldPassword)
        let started = try h.service.start(
            username: "alice",
            password: Self.oldPassword,
            serviceIdentifier: "example.com",
            now: now
        )
        let done = try await h.service.submitAppleCredential(id: started.id, credential(started), now: now + 1)
        #expect(done.status == .completed)
        let failure = #expect(throws: ServiceFailure.self) {
            try h.service.startPasswordChange(
                username: "alice",
                password: Self.oldPassword,
                newPassword: Self.newPassword,
                serviceIdentifier: "example.com",
                now: now + 2
            )
        }
        #expect(failure?.kind == .invalidCredentials)
    }

    @Test(
        "a completed password change ends the account's open upgrades, step-ups and other changes, and its tickets",
        arguments: Backend.all
    )
    func completedChangeEndsEverything(_ backend: Backend) async throws {
        let h = try UpgradeHarness(backend: backend)
        let bob = try h.addAccount("bob", password: Self.oldPassword, totpSecret: Self.totpSecret)
        let upgrade = try h.service.start(
            username: "bob",
            password: Self.oldPassword,
            serviceIdentifier: "example.com",
            now: now
        )
        #expect(upgrade.status == .stepUpRequired)
        let ticket = try h.service.issueTicket(username: "bob", secondFactorVerified: true, issuedBy: "t", now: now)
        let change = try h.service.startPasswordChange(
            username: "bob",
            password: Self.oldPassword,
            newPassword: Self.newPassword,
            serviceIdentifier: "example.com",
            now: now + 1
        )
        #expect(change.status == .stepUpRequired)
        let completed = try h.service.stepUpPasswordChange(id: change.id, code: .totp(code(at: now + 1)), now: now + 1)
        #expect(completed.status == .completed)

        // The upgrade the old password opened: its step-up is refused with the stable problem.
        let stepUp = #expect(throws: ServiceFailure.self) {
            try h.service.stepUp(id: upgrade.id, code: .totp(code(at: now + 31)), now: now + 31)
        }
        #expect(stepUp?.kind == .credentialsChanged)
        #expect(stepUp?.status == .failed)
        // The ticket minted before the change is void.
        let byTicket = #expect(throws: ServiceFailure.self) {
            try h.service.start(
                username: "bob",
                password: "",
                ticket: ticket.ticket,
                serviceIdentifier: "example.com",
                now: now + 32
            )
        }
        #expect(byTicket?.kind == .invalidTicket)
        let ended = try h.store.read { try $0.auditTrail(accountID: bob.id, limit: 100) }
            .filter { $0.event == "upgrade.credentialsChanged" }
        #expect(ended.map(\.upgradeID) == [upgrade.id])
        #expect(ended.first?.detail["cause"] == "password-changed")
    }

    @Test("two TOTP password changes: the newer supersedes the older, in the same second", arguments: Backend.all)
    func twoChangesInOneSecond(_ backend: Backend) throws {
        let h = try UpgradeHarness(backend: backend)
        _ = try h.addAccount("bob", password: Self.oldPassword, totpSecret: Self.totpSecret)
        func start(_ newPassword: String) throws -> PasswordChangeAnswer {
            try h.service.startPasswordChange(
                username: "bob",
                password: Self.oldPassword,
                newPassword: newPassword,
                serviceIdentifier: "example.com",
                now: now
            )
        }
        let first = try start(Self.newPassword)
        let second = try start("Second-password-22")
        let stale = #expect(throws: ServiceFailure.self) {
            try h.service.stepUpPasswordChange(id: first.id, code: .totp(code(at: now)), now: now)
        }
        #expect(stale?.passwordChangeStatus == .failed)
        let done = try h.service.stepUpPasswordChange(id: second.id, code: .totp(code(at: now)), now: now)
        #expect(done.status == .completed)
        let bob = try #require(try h.account("bob"))
        let hash = try #require(try h.store.read { try $0.passwordCredential(accountID: bob.id) })
        #expect(try PasswordVerifier().verify(password: "Second-password-22", encodedHash: hash.hash))
    }

    @Test(
        "an import that replaces a password or TOTP ends the flows the earlier credentials opened",
        arguments: Backend.all
    )
    func importUpdateEndsFlows(_ backend: Backend) async throws {
        let h = try UpgradeHarness(backend: backend)
        let alice = try h.addAccount("alice", password: Self.oldPassword)
        try h.addAccount("carol", password: Self.oldPassword)
        let upgrade = try h.service.start(
            username: "alice",
            password: Self.oldPassword,
            serviceIdentifier: "example.com",
            now: now
        )
        let untouched = try h.service.start(
            username: "carol",
            password: Self.oldPassword,
            serviceIdentifier: "example.com",
            now: now
        )
        let hash = PasswordRehashTests.legacy[0].hash
        var options = AccountImporterTests.options()
        options.onConflict = .update
        let (reports, _) = try AccountImporterTests.run(
            h.store,
            "{\"username\": \"alice\", \"passwordHash\": \"\(hash)\"}\n",
            options: options
        )
        #expect(reports.map(\.action) == [.updated])
        let failure = await #expect(throws: ServiceFailure.self) {
            try await h.service.submitAppleCredential(
                id: upgrade.id,
                credential(upgrade),
                now: AccountImporterTests.now + 1
            )
        }
        #expect(failure?.kind == .credentialsChanged)
        let ended = try h.store.read { try $0.auditTrail(accountID: alice.id, limit: 100) }
            .filter { $0.event == "upgrade.credentialsChanged" }
        #expect(ended.first?.detail["cause"] == "import-updated")
        // Another account's upgrade stays open.
        #expect(try h.service.view(id: untouched.id, now: now + 1).status == .awaitingAppleCredential)
    }
}
