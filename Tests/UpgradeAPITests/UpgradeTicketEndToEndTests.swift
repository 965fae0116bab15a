import Foundation
import Testing
import UpgradeAPI
import UpgradeEngine
import UpgradeTestSupport

/// In-app upgrades over HTTP on loopback: the app's backend mints a ticket with an admin token
/// (`POST /v1/upgrade-tickets`), the extension spends it with an empty password.
@Suite("REST API end to end: in-app upgrades by ticket")
struct UpgradeTicketEndToEndTests {
    typealias Harness = TicketHarness

    @Test("without TOTP: ticket, empty password, state and nonce, completed", arguments: Backend.all)
    func withoutTOTP(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let ticket = try await harness.ticket("plain")
        #expect(ticket.hasPrefix("siwa_ticket_") && ticket.utf8.count >= 12 + 22)
        let started = try await harness.upgrade("plain", ticket: ticket)
        #expect(started.status == 201)
        #expect(started["status"] == "awaitingAppleCredential" && started["result"] == "success")
        let id = try #require(started["id"])
        let completed = try await harness.server.post(
            "/v1/upgrades/\(id)/apple-credential",
            try harness.server.appleCredential(for: started)
        )
        #expect(completed["status"] == "completed")
        // The account is Apple-only now: no ticket for it.
        let again = try await harness.mint("plain")
        #expect(again.status == 409 && again.problem == "not-eligible")
        harness.expectNoSecrets([ticket], bodies: [started, completed, again])
    }

    @Test("with TOTP: step-up unless the ticket says the second factor was verified", arguments: Backend.all)
    func withTOTP(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let demo = DevelopmentEnvironment.demoUsername
        // An absent password is an empty one.
        let first = try await harness.upgrade(demo, ticket: try await harness.ticket(demo), password: nil)
        #expect(first.status == 201)
        #expect(first["status"] == "stepUpRequired" && first["result"] == "twoFactorAuthRequired")
        #expect(first["state"] == nil)
        let id = try #require(first["id"])
        let stepped = try await harness.server.post(
            "/v1/upgrades/\(id)/step-up",
            ["code": harness.server.totpCode()]
        )
        #expect(stepped["status"] == "awaitingAppleCredential" && stepped["nonce"] != nil)

        let verified = try await harness.upgrade(
            demo,
            ticket: try await harness.ticket(demo, secondFactorVerified: true)
        )
        #expect(verified.status == 201)
        #expect(verified["status"] == "awaitingAppleCredential" && verified["result"] == "success")
        let completed = try await harness.server.post(
            "/v1/upgrades/\(try #require(verified["id"]))/apple-credential",
            try harness.server.appleCredential(for: verified)
        )
        #expect(completed["status"] == "completed")
    }

    enum Failure: String, CaseIterable, Sendable {
        case wrong, expired, reused, otherAccount, withPassword, neither
    }

    @Test(
        "each ticket failure: 401 invalid-ticket with result failure, or 422 validation",
        arguments: Backend.all,
        Failure.allCases
    )
    func ticketFailure(_ backend: Backend, _ failure: Failure) async throws {
        let harness = try Harness(backend)
        let server = harness.server
        let ticket = try await harness.ticket("plain")
        let answer: DevServer.Response
        switch failure {
        case .wrong:
            answer = try await harness.upgrade("plain", ticket: UpgradeService.ticketPrefix + SecureRandom.token())
        case .expired:
            server.clock.advance(300)
            answer = try await harness.upgrade("plain", ticket: ticket)
        case .reused:
            // Spent on an upgrade the user cancelled: never again.
            let first = try await harness.upgrade("plain", ticket: ticket)
            #expect(first.status == 201)
            let cancelled = try await server.post(
                "/v1/upgrades/\(try #require(first["id"]))/cancel",
                ["reason": "userCanceled"]
            )
            #expect(cancelled["status"] == "cancelled")
            answer = try await harness.upgrade("plain", ticket: ticket)
        case .otherAccount:
            answer = try await harness.upgrade(DevelopmentEnvironment.demoUsername, ticket: ticket)
            // Refused for another account, it still works for its own.
            #expect(try await harness.upgrade("plain", ticket: ticket).status == 201)
        case .withPassword:
            answer = try await harness.upgrade("plain", ticket: ticket, password: "pw-plain")
        case .neither:
            answer = try await server.post(
                "/v1/upgrades",
                ["username": "plain", "password": "", "serviceIdentifier": "s"]
            )
        }
        switch failure {
        case .withPassword, .neither:
            #expect(answer.status == 422 && answer.problem == "validation")
        default:
            #expect(answer.status == 401)
            #expect(answer.problem == "invalid-ticket")
            #expect(answer["upgradeStatus"] == "failed")
        }
        #expect(answer["result"] == "failure")
        #expect(answer.headers["content-type"] == "application/problem+json")
        harness.expectNoSecrets([ticket], bodies: [answer])
    }

    @Test("wrong tickets count against the client like wrong passwords", arguments: Backend.all)
    func wrongTicketsAreThrottled(_ backend: Backend) async throws {
        let harness = try Harness(backend, environment: ["UPGRADE_CLIENT_THROTTLE": "3/600"])
        let ticket = try await harness.ticket("plain")
        for _ in 0..<3 {
            let wrong = try await harness.upgrade("plain", ticket: UpgradeService.ticketPrefix + SecureRandom.token())
            #expect(wrong.problem == "invalid-ticket")
        }
        let limited = try await harness.upgrade("plain", ticket: ticket)
        #expect(limited.status == 429 && limited.problem == "rate-limited")
    }

    @Test(
        "over HTTP: wrong passwords or wrong admin tokens from the backend's address never lock out its valid token",
        arguments: Backend.all
    )
    func validAdminTokenIsNeverThrottled(_ backend: Backend) async throws {
        let harness = try Harness(
            backend,
            environment: ["UPGRADE_CLIENT_THROTTLE": "3/600", "UPGRADE_ADMIN_THROTTLE": "3/600"]
        )
        let server = harness.server
        // A neighbour behind the same address spends the end-user allowance...
        for index in 0..<3 {
            let wrong = try await server.post(
                "/v1/upgrades",
                ["username": "stranger\(index)", "password": "guess", "serviceIdentifier": "s"]
            )
            #expect(wrong.problem == "invalid-credentials")
        }
        let spent = try await server.post(
            "/v1/upgrades",
            ["username": "plain", "password": "pw-plain", "serviceIdentifier": "s"]
        )
        #expect(spent.status == 429 && spent.problem == "rate-limited")
        // ... which is not the admin tokens' count.
        #expect(try await harness.mint("plain").status == 201)

        // Wrong admin tokens are limited on their own count...
        for _ in 0..<3 {
            let wrong = try await harness.mint("plain", token: AdminToken.generate())
            #expect(wrong.status == 401 && wrong.problem == "unauthorized")
        }
        let limited = try await harness.mint("plain", token: AdminToken.generate())
        #expect(limited.status == 429 && limited.problem == "rate-limited")
        #expect(limited.headers["retry-after"] == "200")
        // ... while the valid tokens still pass, and an insufficient scope is still 403, not 429.
        for _ in 0..<5 { #expect(try await harness.mint("plain").status == 201) }
        let scope = try await harness.mint("plain", token: harness.supportToken)
        #expect(scope.status == 403 && scope.problem == "insufficient-scope")
        let audit = try await server.send(
            "GET",
            "/v1/admin/audit?limit=1",
            body: nil,
            contentType: nil,
            headers: ["Authorization": "Bearer \(harness.supportToken)"]
        )
        #expect(audit.status == 200)
        // Wrong tokens did not spend the end-user count: after the wait for the three wrong
        // passwords, the owner's password is checked again.
        server.clock.advance(200)
        let owner = try await server.post(
            "/v1/upgrades",
            ["username": "plain", "password": "pw-plain", "serviceIdentifier": "s"]
        )
        #expect(owner.status == 201)
        harness.expectNoSecrets([], bodies: [limited, scope])
    }

    @Test("minting: unknown username 404, a bad body 422; admin 401 missing, 401 wrong, 403 without the scope")
    func minting() async throws {
        let harness = try Harness(.sqlite)
        let server = harness.server
        let unknown = try await harness.mint("nobody")
        #expect(unknown.status == 404 && unknown.problem == "account-not-found")
        let bad = try await server.post(
            "/v1/upgrade-tickets",
            ["username": "plain", "secondFactorVerified": "yes"],
            headers: ["Authorization": "Bearer \(harness.backendToken)"]
        )
        #expect(bad.status == 422 && bad.problem == "validation")

        let missing = try await server.post("/v1/upgrade-tickets", ["username": "plain"])
        #expect(missing.status == 401 && missing.problem == "unauthorized")
        #expect(missing.headers["www-authenticate"]?.hasPrefix("Bearer") == true)
        let wrong = try await harness.mint("plain", token: AdminToken.generate())
        #expect(wrong.status == 401 && wrong.problem == "unauthorized")
        #expect(wrong.headers["www-authenticate"]?.contains("invalid_token") == true)
        let scope = try await harness.mint("plain", token: harness.supportToken)
        #expect(scope.status == 403 && scope.problem == "insufficient-scope")
        harness.expectNoSecrets([], bodies: [unknown, bad, missing, wrong, scope])
    }

    enum SilentEnd: String, CaseIterable, Sendable {
        /// The silent call's upgrade is left as it is (waiting for the step-up).
        case leftOpen
        /// The extension cancelled it with `userInteractionRequired` before the system called the UI.
        case userInteractionRequired
    }

    @Test(
        "TOTP in-app upgrade: the silent call, then the interactive call with the same ticket, completes",
        arguments: Backend.all,
        SilentEnd.allCases
    )
    func silentThenInteractive(_ backend: Backend, _ silentEnd: SilentEnd) async throws {
        let harness = try Harness(backend)
        let server = harness.server
        let demo = DevelopmentEnvironment.demoUsername
        let ticket = try await harness.ticket(demo)
        // The extension's first, silent call: a second factor is needed.
        let silent = try await harness.upgrade(demo, ticket: ticket)
        #expect(silent.status == 201 && silent["result"] == "twoFactorAuthRequired")
        let silentID = try #require(silent["id"])
        if silentEnd == .userInteractionRequired {
            let cancelled = try await server.post(
                "/v1/upgrades/\(silentID)/cancel",
                ["reason": "userInteractionRequired"]
            )
            #expect(cancelled["status"] == "cancelled")
        }
        // The system calls the UI path, which sends the same ticket again.
        let interactive = try await harness.upgrade(demo, ticket: ticket)
        #expect(interactive.status == 201, "\(String(decoding: interactive.body, as: UTF8.self))")
        #expect(interactive["status"] == "stepUpRequired" && interactive["result"] == "twoFactorAuthRequired")
        let id = try #require(interactive["id"])
        #expect(id != silentID)
        // The silent call's upgrade cannot be used beside it.
        let old = try await server.post("/v1/upgrades/\(silentID)/step-up", ["code": server.totpCode()])
        #expect(old.status == 409)
        let stepped = try await server.post("/v1/upgrades/\(id)/step-up", ["code": server.totpCode()])
        #expect(stepped["status"] == "awaitingAppleCredential")
        let completed = try await server.post(
            "/v1/upgrades/\(id)/apple-credential",
            try server.appleCredential(for: stepped)
        )
        #expect(completed["status"] == "completed")
        // Never a second conversion: the ticket is void once its upgrade completed.
        let again = try await harness.upgrade(demo, ticket: ticket)
        #expect(again.status == 401 && again.problem == "invalid-ticket")
        harness.expectNoSecrets([ticket], bodies: [silent, interactive, old, stepped, completed, again])
    }

    enum Presentation: String, CaseIterable, Sendable {
        /// After the upgrade it was spent on was cancelled by the user.
        case afterUserCanceled
        /// After its upgrade failed (too many wrong codes).
        case afterFailure
        /// After its five minutes, with its upgrade still open.
        case afterExpiry
        /// For a password change, when it was spent on an upgrade.
        case forAnotherKindOfFlow
        /// Two interactive calls at once: one upgrade stays open.
        case twiceAtOnce
    }

    @Test(
        "a ticket presented again is refused once its upgrade ended otherwise, after 5 minutes, or for another flow",
        arguments: Backend.all,
        Presentation.allCases
    )
    func presentedAgain(_ backend: Backend, _ presentation: Presentation) async throws {
        let harness = try Harness(backend)
        let server = harness.server
        let demo = DevelopmentEnvironment.demoUsername
        let ticket = try await harness.ticket(demo)
        let silent = try await harness.upgrade(demo, ticket: ticket)
        let silentID = try #require(silent["id"])
        var answers: [DevServer.Response] = []
        switch presentation {
        case .afterUserCanceled:
            _ = try await server.post("/v1/upgrades/\(silentID)/cancel", ["reason": "userCanceled"])
            answers = [try await harness.upgrade(demo, ticket: ticket)]
        case .afterFailure:
            for _ in 0..<5 {
                _ = try await server.post("/v1/upgrades/\(silentID)/step-up", ["code": "000000"])
                server.clock.advance(31)
            }
            #expect(try await server.get("/v1/upgrades/\(silentID)")["status"] == "failed")
            answers = [try await harness.upgrade(demo, ticket: ticket)]
        case .afterExpiry:
            server.clock.advance(300)
            answers = [try await harness.upgrade(demo, ticket: ticket)]
        case .forAnotherKindOfFlow:
            answers = [
                try await server.post(
                    "/v1/password-changes",
                    [
                        "username": demo, "password": "", "ticket": ticket, "newPassword": "abcdEf-ghijK1-lmnoPq",
                        "serviceIdentifier": "s",
                    ]
                )
            ]
        case .twiceAtOnce:
            async let first = harness.upgrade(demo, ticket: ticket)
            async let second = harness.upgrade(demo, ticket: ticket)
            let both = try await [first, second]
            // Each either took the ticket over (the later superseding the earlier) or lost the race
            // for it: never two open upgrades.
            #expect(both.allSatisfy { $0.status == 201 || ($0.status == 401 && $0.problem == "invalid-ticket") })
            let store = server.application.store
            let account = try #require(try store.read { try $0.account(username: Username(demo)) })
            #expect(try store.read { try $0.openUpgradeSessions(accountID: account.id, limit: 10) }.count == 1)
            harness.expectNoSecrets([ticket], bodies: both)
            return
        }
        for answer in answers {
            #expect(answer.status == 401 && answer.problem == "invalid-ticket")
            #expect(answer["result"] == "failure")
        }
        harness.expectNoSecrets([ticket], bodies: answers)
    }

    @Test(
        "TOTP in-app password change: the silent call, then the interactive call with the same ticket, completes",
        arguments: Backend.all,
        SilentEnd.allCases
    )
    func passwordChangeSilentThenInteractive(_ backend: Backend, _ silentEnd: SilentEnd) async throws {
        let harness = try Harness(backend)
        let server = harness.server
        let demo = DevelopmentEnvironment.demoUsername
        let ticket = try await harness.ticket(demo)
        func change() async throws -> DevServer.Response {
            try await server.post(
                "/v1/password-changes",
                [
                    "username": demo, "password": "", "ticket": ticket, "newPassword": "abcdEf-ghijK1-lmnoPq",
                    "serviceIdentifier": "s",
                ]
            )
        }
        let silent = try await change()
        #expect(silent.status == 201 && silent["status"] == "stepUpRequired")
        if silentEnd == .userInteractionRequired {
            let path = "/v1/password-changes/\(try #require(silent["id"]))/cancel"
            let cancelled = try await server.post(path, ["reason": "userInteractionRequired"])
            #expect(cancelled.status == 200 && cancelled["status"] == "cancelled" && cancelled["result"] == "failure")
            let again = try await server.post(path, ["reason": "userCanceled"])
            #expect(again.status == 200 && again["status"] == "cancelled", "a second cancel answers the same")
        }
        let interactive = try await change()
        #expect(interactive.status == 201 && interactive["status"] == "stepUpRequired")
        let old = try await server.post(
            "/v1/password-changes/\(try #require(silent["id"]))/step-up",
            ["code": server.totpCode()]
        )
        #expect(old.status == 409, "superseded by the interactive call, or cancelled")
        #expect(old["changeStatus"] == (silentEnd == .leftOpen ? "failed" : "cancelled"))
        let stepped = try await server.post(
            "/v1/password-changes/\(try #require(interactive["id"]))/step-up",
            ["code": server.totpCode()]
        )
        #expect(stepped["status"] == "completed")
        let again = try await change()
        #expect(again.status == 401 && again.problem == "invalid-ticket")
        // A completed change cannot be cancelled.
        let late = try await server.post(
            "/v1/password-changes/\(try #require(interactive["id"]))/cancel",
            ["reason": "userCanceled"]
        )
        #expect(late.status == 409 && late.problem == "not-allowed-in-state" && late["changeStatus"] == "completed")
        harness.expectNoSecrets([ticket], bodies: [silent, interactive, old, stepped, again, late])
    }

    @Test("a password change cancelled by the user leaves its ticket spent", arguments: Backend.all)
    func passwordChangeCancelledByTheUser(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let server = harness.server
        let demo = DevelopmentEnvironment.demoUsername
        let ticket = try await harness.ticket(demo)
        let body: [String: any Sendable] = [
            "username": demo, "password": "", "ticket": ticket, "newPassword": "abcdEf-ghijK1-lmnoPq",
            "serviceIdentifier": "s",
        ]
        let silent = try await server.post("/v1/password-changes", body)
        let id = try #require(silent["id"])
        let cancelled = try await server.post("/v1/password-changes/\(id)/cancel", ["reason": 1])
        #expect(cancelled["status"] == "cancelled")
        let stepUp = try await server.post("/v1/password-changes/\(id)/step-up", ["code": server.totpCode()])
        #expect(stepUp.status == 409 && stepUp["changeStatus"] == "cancelled")
        let again = try await server.post("/v1/password-changes", body)
        #expect(again.status == 401 && again.problem == "invalid-ticket")
        let bad = try await server.post("/v1/password-changes/\(id)/cancel", ["reason": "because"])
        #expect(bad.status == 422 && bad.problem == "validation")
        let unknown = try await server.post("/v1/password-changes/pwc_nope/cancel", ["reason": 1])
        #expect(unknown.status == 404)
        harness.expectNoSecrets([ticket], bodies: [silent, cancelled, stepUp, again, bad, unknown])
    }

}
