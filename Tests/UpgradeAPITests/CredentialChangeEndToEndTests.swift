import Foundation
import Testing
import UpgradeAPI
import UpgradeEngine
import UpgradeTestSupport

/// The takeover a credential change must stop, over HTTP on every backend: someone who knows the old
/// password opens an upgrade (by password, or in-app by ticket, or with the TOTP step-up still to do),
/// the owner then changes the password, and the old upgrade must not finish: the account stays the
/// owner's, with the owner's new password (docs/architecture.md §4.4).
@Suite("REST API end to end: a credential change ends what the old credentials opened")
struct CredentialChangeEndToEndTests {
    static let oldPassword = "Old-password-1"
    static let newPassword = "abcdEf-ghijK1-lmnoPq"

    enum Opening: String, CaseIterable, Sendable {
        /// `POST /v1/upgrades` with the old password.
        case password
        /// An in-app upgrade by a ticket minted before the change.
        case ticket
        /// The TOTP account, by its old password: the step-up comes after the change.
        case totp
    }

    @Test("the old upgrade cannot finish after a completed password change", arguments: Backend.all, Opening.allCases)
    func takeoverAfterPasswordChange(_ backend: Backend, _ opening: Opening) async throws {
        let harness = try TicketHarness(backend)
        let server = harness.server
        try server.addAccount("victim", password: Self.oldPassword)
        let username = opening == .totp ? DevelopmentEnvironment.demoUsername : "victim"
        let oldPassword = opening == .totp ? DevelopmentEnvironment.demoPassword : Self.oldPassword

        // The attacker opens an upgrade with what the old credentials allow.
        let opened: DevServer.Response
        switch opening {
        case .password, .totp:
            opened = try await server.post(
                "/v1/upgrades",
                ["username": username, "password": oldPassword, "serviceIdentifier": "s"]
            )
        case .ticket:
            opened = try await harness.upgrade(username, ticket: try await harness.ticket(username))
        }
        #expect(opened.status == 201)
        let id = try #require(opened["id"])

        // The owner changes the password (a TOTP account completes it with a code).
        let changed = try await server.post(
            "/v1/password-changes",
            [
                "username": username, "password": oldPassword, "newPassword": Self.newPassword,
                "serviceIdentifier": "s",
            ]
        )
        var completed = changed
        if opening == .totp {
            #expect(changed["status"] == "stepUpRequired")
            completed = try await server.post(
                "/v1/password-changes/\(try #require(changed["id"]))/step-up",
                ["code": server.totpCode()]
            )
        }
        #expect(completed.status == 201 || completed.status == 200)
        #expect(completed["status"] == "completed")

        // The attacker goes on with the upgrade: refused, with a stable problem.
        let attempt: DevServer.Response
        if opening == .totp {
            server.clock.advance(30)
            attempt = try await server.post("/v1/upgrades/\(id)/step-up", ["code": server.totpCode()])
        } else {
            attempt = try await server.post(
                "/v1/upgrades/\(id)/apple-credential",
                try server.appleCredential(for: opened)
            )
        }
        #expect(attempt.status == 409 && attempt.problem == "credentials-changed")
        #expect(attempt["upgradeStatus"] == "failed" && attempt["result"] == "failure")
        let view = try await server.get("/v1/upgrades/\(id)")
        #expect(view["status"] == "failed")
        #expect(view["problem"] == "credentials-changed")

        // The account is the owner's: still a password account, whose new password works.
        let account = try #require(try server.application.store.read { try $0.account(username: Username(username)) })
        #expect(account.credentialKind == .password)
        #expect(try server.application.store.read { try $0.appleLink(accountID: account.id) } == nil)
        let withNew = try await server.post(
            "/v1/upgrades",
            ["username": username, "password": Self.newPassword, "serviceIdentifier": "s"]
        )
        #expect(withNew.status == 201)
        // The audit trail says why the upgrade ended.
        let ended = try server.application.store.read { try $0.auditTrail(accountID: account.id, limit: 1000) }
            .filter { $0.upgradeID == id && $0.event == "upgrade.credentialsChanged" }
        #expect(ended.count == 1)
        #expect(ended.first?.detail["cause"] == "password-changed")
        #expect(ended.first?.toStatus == "failed")
        harness.expectNoSecrets([], bodies: [attempt, view])
    }

    @Test("a ticket minted before a password change is void after it", arguments: Backend.all)
    func ticketVoidAfterChange(_ backend: Backend) async throws {
        let harness = try TicketHarness(backend)
        let server = harness.server
        try server.addAccount("victim", password: Self.oldPassword)
        let ticket = try await harness.ticket("victim")
        let changed = try await server.post(
            "/v1/password-changes",
            [
                "username": "victim", "password": Self.oldPassword, "newPassword": Self.newPassword,
                "serviceIdentifier": "s",
            ]
        )
        #expect(changed["status"] == "completed")
        let late = try await harness.upgrade("victim", ticket: ticket)
        #expect(late.status == 401 && late.problem == "invalid-ticket")
        harness.expectNoSecrets([ticket], bodies: [late])
    }
}
