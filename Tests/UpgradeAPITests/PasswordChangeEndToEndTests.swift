import Foundation
import Testing
import UpgradeAPI
import UpgradeEngine
import UpgradeTestSupport

/// Strong-password changes over HTTP on loopback (`POST /v1/password-changes` and its step-up), on
/// every backend: the old password stops working at once and the new one works.
@Suite("REST API end to end: strong-password changes")
struct PasswordChangeEndToEndTests {
    static let oldPassword = "Old-password-1"
    static let newPassword = "abcdEf-ghijK1-lmnoPq"

    /// A development server with a `plain` account (no TOTP) and an admin token that may mint tickets.
    final class Harness: Sendable {
        let server: DevServer
        let directory: URL
        let backendToken: String

        init(_ backend: Backend, environment: [String: String] = [:]) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("pwc-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let file = directory.appendingPathComponent("admin-tokens").path
            backendToken = try AdminTokenFile.add(name: "backend", scopes: [.tickets], path: file, now: 1)
            server = try DevServer(
                backend,
                environment: ["UPGRADE_ADMIN_TOKENS_FILE": file].merging(environment) { $1 }
            )
            try server.addAccount("plain", password: PasswordChangeEndToEndTests.oldPassword)
        }

        deinit { try? FileManager.default.removeItem(at: directory) }

        /// What the extension sends; `password` nil leaves the field out.
        func change(
            _ username: String = "plain",
            password: String? = PasswordChangeEndToEndTests.oldPassword,
            ticket: String? = nil,
            newPassword: String = PasswordChangeEndToEndTests.newPassword
        ) async throws -> DevServer.Response {
            var body: [String: any Sendable] = [
                "username": username, "newPassword": newPassword, "serviceIdentifier": "example.com",
            ]
            if let password { body["password"] = password }
            if let ticket { body["ticket"] = ticket }
            return try await server.post("/v1/password-changes", body)
        }

        func stepUp(_ id: String, _ body: [String: any Sendable]) async throws -> DevServer.Response {
            try await server.post("/v1/password-changes/\(id)/step-up", body)
        }

        /// Starts an upgrade with `password`: how a client proves which password works now.
        func upgrade(_ username: String = "plain", password: String) async throws -> DevServer.Response {
            try await server.post(
                "/v1/upgrades",
                ["username": username, "password": password, "serviceIdentifier": "example.com"]
            )
        }

        func ticket(_ username: String = "plain", secondFactorVerified: Bool = false) async throws -> String {
            let minted = try await server.post(
                "/v1/upgrade-tickets",
                ["username": username, "secondFactorVerified": secondFactorVerified],
                headers: ["Authorization": "Bearer \(backendToken)"]
            )
            #expect(minted.status == 201)
            return try #require(minted["ticket"])
        }

        func accountID(_ username: String) throws -> String {
            try #require(try server.application.store.read { try $0.account(username: Username(username)) }?.id)
        }

        func auditEvents(_ username: String) throws -> [AuditEvent] {
            let id = try accountID(username)
            return try server.application.store.read { try $0.auditTrail(accountID: id, limit: 1000) }
        }

        func failures(_ username: String) throws -> Int {
            try server.application.store.read { try $0.throttle(usernameKey: username) }?.failures ?? 0
        }

        /// No log line, answer body or audit row of `username` holds any of `secrets`.
        func expectNoSecrets(_ secrets: [String], bodies: [DevServer.Response], username: String = "plain") throws {
            let logs = server.logs.lines.withLock { $0.joined(separator: "\n") }
            #expect(!logs.isEmpty)
            let audit = try auditEvents(username).map { "\($0.event) \($0.detail)" }.joined(separator: "\n")
            #expect(!audit.isEmpty)
            for secret in secrets + [backendToken] {
                #expect(!logs.contains(secret), "a secret reached the log")
                #expect(!audit.contains(secret), "a secret reached the audit trail")
                for body in bodies {
                    #expect(!String(decoding: body.body, as: UTF8.self).contains(secret), "a secret reached an answer")
                }
            }
        }
    }

    @Test("plain: completed at once; the old password is refused after, the new one works", arguments: Backend.all)
    func plain(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let changed = try await harness.change()
        #expect(changed.status == 201, "\(String(decoding: changed.body, as: UTF8.self))")
        #expect(changed["status"] == "completed" && changed["result"] == "success")
        #expect(changed["id"]?.hasPrefix("pwc_") == true)
        #expect(changed.headers["cache-control"] == "no-store")

        let old = try await harness.upgrade(password: Self.oldPassword)
        #expect(old.status == 401 && old.problem == "invalid-credentials")
        let again = try await harness.change(newPassword: "Another-password-2")
        #expect(again.status == 401 && again.problem == "invalid-credentials" && again["result"] == "failure")
        let new = try await harness.upgrade(password: Self.newPassword)
        #expect(new.status == 201 && new["status"] == "awaitingAppleCredential")

        let events = try harness.auditEvents("plain").map(\.event)
        #expect(events.contains("password.changed"))
        #expect(events.contains("passwordChange.passwordEvaluated"))
        try harness.expectNoSecrets(
            [Self.oldPassword, Self.newPassword, "Another-password-2"],
            bodies: [changed, old, again, new]
        )
    }

    enum Factor: String, CaseIterable, Sendable { case totp, recoveryCode }

    @Test(
        "with TOTP: twoFactorAuthRequired, a wrong code, then the code completes it",
        arguments: Backend.all,
        Factor.allCases
    )
    func withTOTP(_ backend: Backend, _ factor: Factor) async throws {
        let harness = try Harness(backend)
        let server = harness.server
        let demo = DevelopmentEnvironment.demoUsername
        let recovery = RecoveryCodes.generate(count: 2)
        let demoID = try harness.accountID(demo)
        try server.application.store.write {
            try $0.insertRecoveryCodes(accountID: demoID, codeHashes: recovery.map(RecoveryCodes.hash))
        }
        let started = try await harness.change(demo, password: DevelopmentEnvironment.demoPassword)
        #expect(started.status == 201)
        #expect(started["status"] == "stepUpRequired" && started["result"] == "twoFactorAuthRequired")
        #expect(started["expiresAt"] != nil)
        let id = try #require(started["id"])

        let wrong = try await harness.stepUp(id, factor == .totp ? ["code": "000000"] : ["recoveryCode": "wrong-code"])
        #expect(wrong.status == 401 && wrong.problem == "invalid-code")
        #expect(wrong["result"] == "twoFactorAuthRequired" && wrong["changeStatus"] == "stepUpRequired")
        #expect(wrong.json["attemptsRemaining"] as? Int == 4)
        #expect(wrong["id"] == id)

        let code: [String: any Sendable] = factor == .totp ? ["code": server.totpCode()] : ["recoveryCode": recovery[0]]
        let completed = try await harness.stepUp(id, code)
        #expect(completed.status == 200, "\(String(decoding: completed.body, as: UTF8.self))")
        #expect(completed["status"] == "completed" && completed["result"] == "success")
        // The change is over: a further code is refused without being checked.
        let late = try await harness.stepUp(id, ["recoveryCode": recovery[1]])
        #expect(late.status == 409 && late.problem == "not-allowed-in-state")

        let old = try await harness.upgrade(demo, password: DevelopmentEnvironment.demoPassword)
        #expect(old.status == 401 && old.problem == "invalid-credentials")
        let new = try await harness.upgrade(demo, password: Self.newPassword)
        #expect(new.status == 201 && new["status"] == "stepUpRequired")
        let audit = try harness.auditEvents(demo)
        #expect(
            audit.contains { $0.event == "passwordChange.stepUpEvaluated" && $0.detail["factor"] == factor.rawValue }
        )
        try harness.expectNoSecrets(
            [DevelopmentEnvironment.demoPassword, Self.newPassword] + recovery,
            bodies: [started, wrong, completed, late, old, new],
            username: demo
        )
    }

    @Test(
        "a rule broken: 422 password-policy naming it, nothing counted; the corrected try completes",
        arguments: Backend.all
    )
    func ruleBrokenThenCorrected(_ backend: Backend) async throws {
        let harness = try Harness(backend, environment: ["UPGRADE_CLIENT_THROTTLE": "1/600"])
        var bodies: [DevServer.Response] = []
        for (weak, rule) in [
            ("Short-1", "minlength: 12"), ("abcdefghijk1", "required: upper"), ("abcdefGHIJKL", "required: digit"),
        ] {
            let refused = try await harness.change(newPassword: weak)
            #expect(refused.status == 422 && refused.problem == "password-policy")
            #expect(refused["rule"] == rule)
            #expect(refused["detail"]?.hasSuffix("(\(rule))") == true)
            #expect(refused["result"] == "failure")
            #expect(refused["id"] == nil, "nothing was created")
            bodies.append(refused)
        }
        // A wrong current password with a weak new one: the rules answer first, the password is not checked.
        let unchecked = try await harness.change(password: "wrong-password", newPassword: "weak")
        #expect(unchecked.problem == "password-policy")
        #expect(try harness.failures("plain") == 0, "no failure counted")
        #expect(try !harness.auditEvents("plain").contains { $0.event.hasPrefix("passwordChange.") })

        // The corrected try is a new POST; with a client limit of one failure, none was counted.
        let corrected = try await harness.change()
        #expect(corrected.status == 201 && corrected["status"] == "completed")
        bodies.append(corrected)
        try harness.expectNoSecrets([Self.oldPassword, Self.newPassword, "Short-1", "abcdefGHIJKL"], bodies: bodies)
    }

    @Test(
        "allowed: unicode: spaces, controls or zero-width characters only are password-policy; length counts UTF-16",
        arguments: Backend.all
    )
    func unicodeRules(_ backend: Backend) async throws {
        let harness = try Harness(backend, environment: ["UPGRADE_PASSWORD_RULES": "minlength: 8; allowed: unicode"])
        var bodies: [DevServer.Response] = []
        for (blank, rule) in [
            (String(repeating: " ", count: 8), "not-only-white-space"),
            (String(repeating: "\u{3000}", count: 8), "not-only-white-space"),
            (String(repeating: "\u{200B}", count: 8), "visible-characters"),
            (String(repeating: "\u{7}", count: 8), "visible-characters"),
            ("\u{202E}drowssap", "visible-characters"),
        ] {
            let refused = try await harness.change(newPassword: blank)
            #expect(
                refused.status == 422 && refused.problem == "password-policy",
                "\(blank.unicodeScalars.map(\.value))"
            )
            #expect(refused["rule"] == rule)
            #expect(refused["id"] == nil, "nothing was created")
            bodies.append(refused)
        }
        #expect(try harness.failures("plain") == 0, "no failure counted")
        // Four emoji are eight UTF-16 code units: long enough, as Apple's tools count.
        let emoji = try await harness.change(newPassword: "😀😀😀😀")
        #expect(emoji.status == 201 && emoji["status"] == "completed")
        #expect(try await harness.upgrade(password: "😀😀😀😀").status == 201)
        try harness.expectNoSecrets([Self.oldPassword, "😀😀😀😀"], bodies: bodies + [emoji])
    }

    @Test(
        "equal to the current one is password-policy, on the password and the ticket path; the ticket stays unspent",
        arguments: Backend.all
    )
    func equalToCurrent(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let same = try await harness.change(newPassword: Self.oldPassword)
        #expect(same.status == 422 && same.problem == "password-policy")
        #expect(same["rule"] == "different-from-current")

        let ticket = try await harness.ticket()
        let sameByTicket = try await harness.change(password: "", ticket: ticket, newPassword: Self.oldPassword)
        #expect(sameByTicket.status == 422 && sameByTicket["rule"] == "different-from-current")
        // Unspent: the same ticket completes a change to another password, once.
        let byTicket = try await harness.change(password: nil, ticket: ticket)
        #expect(byTicket.status == 201 && byTicket["status"] == "completed")
        let reused = try await harness.change(password: nil, ticket: ticket, newPassword: "Third-password-3")
        #expect(reused.status == 401 && reused.problem == "invalid-ticket" && reused["result"] == "failure")
        #expect(try await harness.upgrade(password: Self.newPassword).status == 201)
        try harness.expectNoSecrets(
            [ticket, Self.oldPassword, Self.newPassword, "Third-password-3"],
            bodies: [same, sameByTicket, byTicket, reused]
        )
    }

    @Test("by ticket on a TOTP account: step-up unless the ticket says it was verified", arguments: Backend.all)
    func ticketWithTOTP(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let demo = DevelopmentEnvironment.demoUsername
        let unverified = try await harness.change(demo, password: nil, ticket: try await harness.ticket(demo))
        #expect(unverified.status == 201 && unverified["status"] == "stepUpRequired")
        // In the same second: changes are ordered by their transactions, not by their times.
        let verified = try await harness.change(
            demo,
            password: nil,
            ticket: try await harness.ticket(demo, secondFactorVerified: true)
        )
        #expect(verified.status == 201 && verified["status"] == "completed")
        // The second change superseded the first (an account has one open change), and its new password
        // replaced the one the first was started with: the first cannot complete.
        let stale = try await harness.stepUp(try #require(unverified["id"]), ["code": harness.server.totpCode()])
        #expect(stale.status == 409 && stale.problem == "not-allowed-in-state" && stale["changeStatus"] == "failed")
        #expect(try await harness.upgrade(demo, password: Self.newPassword).status == 201)
    }

    @Test("wrong password counts like an upgrade's: username lockout and client limit", arguments: Backend.all)
    func wrongPassword(_ backend: Backend) async throws {
        let harness = try Harness(backend, environment: ["UPGRADE_CLIENT_THROTTLE": "2/600"])
        for username in ["plain", "nobody"] {
            let wrong = try await harness.change(username, password: "Wrong-password-9")
            #expect(wrong.status == 401 && wrong.problem == "invalid-credentials")
            #expect(wrong["result"] == "failure" && wrong["changeStatus"] == "failed")
            #expect(try harness.failures(username) == 1)
        }
        let limited = try await harness.change()
        #expect(limited.status == 429 && limited.problem == "rate-limited")
    }

    @Test(
        "an Apple-only account: failure on the password path; its tickets ended with its password",
        arguments: Backend.all
    )
    func appleOnly(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let server = harness.server
        let ticket = try await harness.ticket()
        let started = try await harness.upgrade(password: Self.oldPassword)
        let converted = try await server.post(
            "/v1/upgrades/\(try #require(started["id"]))/apple-credential",
            try server.appleCredential(for: started)
        )
        #expect(converted["status"] == "completed")

        // Without a password there is nothing to check: the answer looks like a wrong password's.
        let byPassword = try await harness.change()
        #expect(byPassword.status == 401 && byPassword.problem == "invalid-credentials")
        #expect(byPassword["result"] == "failure")
        let byTicket = try await harness.change(password: nil, ticket: ticket)
        #expect(byTicket.status == 409 && byTicket.problem == "not-eligible")
        #expect(byTicket["result"] == "failure" && byTicket["changeStatus"] == "failed")
        try harness.expectNoSecrets([ticket, Self.oldPassword, Self.newPassword], bodies: [byPassword, byTicket])
    }

    @Test("malformed requests are 422 validation and change nothing")
    func validation() async throws {
        let harness = try Harness(.sqlite)
        let server = harness.server
        for body: [String: any Sendable] in [
            ["username": "plain", "password": Self.oldPassword, "serviceIdentifier": "s"],
            ["username": "plain", "password": Self.oldPassword, "newPassword": "", "serviceIdentifier": "s"],
            ["username": "plain", "newPassword": Self.newPassword, "serviceIdentifier": "s"],
            [
                "username": "plain", "password": "x", "ticket": "t", "newPassword": Self.newPassword,
                "serviceIdentifier": "s",
            ],
            [
                "username": "plain", "password": Self.oldPassword, "newPassword": String(repeating: "aB1", count: 400),
                "serviceIdentifier": "s",
            ],
            ["username": "plain", "password": Self.oldPassword, "newPassword": Self.newPassword, "extra": 1],
        ] {
            let answer = try await server.post("/v1/password-changes", body)
            #expect(answer.status == 422 && answer.problem == "validation", "\(body.keys.sorted())")
        }
        let stepUp = try await harness.stepUp("pwc_unknown", ["code": "123456", "recoveryCode": "x"])
        #expect(stepUp.status == 422)
        let unknown = try await harness.stepUp("pwc_unknown", ["code": "123456"])
        #expect(unknown.status == 404 && unknown.problem == "not-found")
        #expect(try await harness.upgrade(password: Self.oldPassword).status == 201, "the password is unchanged")
    }
}
