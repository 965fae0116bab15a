import Foundation
import Testing
import UpgradeAPI
import UpgradeEngine

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
            #expect(try await harness.upgrade("plain", ticket: ticket).status == 201)
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
}
