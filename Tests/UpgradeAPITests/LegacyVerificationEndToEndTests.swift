import Foundation
import Testing
import UpgradeAPI
import UpgradeEngine
import UpgradeTestSupport

/// Lazy verification against a legacy login system (docs/legacy-verification.md) over HTTP on
/// loopback: the legacy system is `Tests/Fixtures/legacy/legacy_system.py`, written independently of
/// the server, which checks every request's signature with python's `standardwebhooks` and holds its
/// own bcrypt table.
@Suite("REST API end to end: passwords checked by the legacy login system")
struct LegacyVerificationEndToEndTests {
    static let alicePassword = "alice's legacy password"
    static let bobPassword = "bob's legacy password"

    final class Harness: Sendable {
        let legacy: LegacySystem
        let server: DevServer
        let directory: URL
        let admin: String

        init(
            _ backend: Backend,
            create: Bool = false,
            table: [String: LegacySystem.Entry]
        ) throws {
            legacy = try LegacySystem(table: table)
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("legacy-e2e-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let file = directory.appendingPathComponent("admin-tokens").path
            admin = try AdminTokenFile.add(name: "ops", scopes: [.provisioning, .audit, .accounts], path: file, now: 1)
            server = try DevServer(
                backend,
                environment: [
                    "UPGRADE_ADMIN_TOKENS_FILE": file,
                    "UPGRADE_LEGACY_VERIFY_URL": legacy.url,
                    "UPGRADE_LEGACY_VERIFY_SECRET_FILE": legacy.secretFile,
                    // The stall below lasts 30 s; the server gives up after one.
                    "UPGRADE_LEGACY_VERIFY_TIMEOUT": "1",
                    "UPGRADE_LEGACY_CREATE": create ? "on" : "off",
                ]
            )
        }

        deinit {
            legacy.stop()
            try? FileManager.default.removeItem(at: directory)
        }

        func provision(_ username: String, _ body: [String: any Sendable]) async throws -> DevServer.Response {
            try await server.send(
                "PUT",
                "/v1/admin/accounts/\(username)",
                body: try JSONSerialization.data(withJSONObject: body),
                contentType: "application/json",
                headers: ["Authorization": "Bearer \(admin)"]
            )
        }

        func start(_ username: String, _ password: String) async throws -> DevServer.Response {
            try await server.post(
                "/v1/upgrades",
                ["username": username, "password": password, "serviceIdentifier": "example.com"]
            )
        }

        func adminGet(_ path: String) async throws -> DevServer.Response {
            try await server.send(
                "GET",
                path,
                body: nil,
                contentType: nil,
                headers: ["Authorization": "Bearer \(admin)"]
            )
        }

        /// The stored password row and the username's failure count.
        func stored(_ username: String) throws -> (credential: PasswordCredentialRecord?, failures: Int) {
            try server.application.store.read { tx in
                let snapshot = try tx.passwordCheckSnapshot(username: try Username(username))
                return (snapshot.credential, snapshot.throttle?.failures ?? 0)
            }
        }

        /// The verified calls the legacy system answered with a verdict or an outage, in order.
        func calls() throws -> [LegacySystem.Request] {
            try legacy.requests().filter { $0.path != "/redirected" }
        }
    }

    static func text(_ response: DevServer.Response) -> String { String(decoding: response.body, as: UTF8.self) }

    @Test(
        "first check asks once and converts, the second does not ask; wrong, unknown and every outage store nothing",
        arguments: Backend.all
    )
    func lazyVerification(_ backend: Backend) async throws {
        // Each outage below is asked about, one right after the other: a legacy account's check is
        // asked within the pause after an outage too.
        let harness = try Harness(
            backend,
            table: [
                "alice": .init(password: Self.alicePassword, email: "alice@example.com"),
                "bob": .init(password: Self.bobPassword),
                "carol": .init(password: "carol's password"),
            ]
        )
        let server = harness.server
        #expect(try await harness.provision("alice", ["legacyPassword": true]).status == 201)
        #expect(try await harness.provision("bob", ["legacyPassword": true, "email": "bob@example.com"]).status == 201)
        #expect(try await harness.provision("carol", ["legacyPassword": true]).status == 201)
        // The username's delay and lock apply before the legacy system is asked: it never sees more
        // guesses than this server allows (three, then a delay with the default policy).
        var refusals: [String] = []
        for guess in 0..<6 {
            refusals.append(try await harness.start("carol", "guess \(guess)").problem ?? "none")
        }
        let asked = try harness.calls().filter { $0.username == "carol" }.count
        #expect(asked == refusals.filter { $0 == "invalid-credentials" }.count && asked < 6, "\(refusals)")
        #expect(refusals.contains("rate-limited") || refusals.contains("locked"), "\(refusals)")
        try harness.legacy.clearRequests()

        let overview = try await harness.adminGet("/v1/admin/accounts/alice")
        #expect(overview.json["legacyPassword"] as? Bool == true && overview.json["password"] as? Bool == true)
        let metrics = String(decoding: try await server.get("/metrics").body, as: UTF8.self)
        #expect(metrics.contains("upgrade_accounts_legacy_password 3.0"), "\(metrics)")

        // A wrong password: asked once, a wrong password like any other (counted), nothing stored.
        let wrong = try await harness.start("alice", "not the password")
        #expect(wrong.status == 401 && wrong.problem == "invalid-credentials", "\(Self.text(wrong))")
        var calls = try harness.calls()
        #expect(
            calls.count == 1 && calls[0].verified && calls[0].username == "alice" && calls[0].answered == "mismatch"
        )
        var stored = try harness.stored("alice")
        #expect(stored.credential?.isLegacy == true && stored.credential?.hash == "" && stored.failures == 1)

        // An unknown username is not asked about (UPGRADE_LEGACY_CREATE is off).
        let unknown = try await harness.start("nobody", "whatever")
        #expect(unknown.status == 401 && unknown.problem == "invalid-credentials")
        #expect(try harness.calls().count == 1)

        // Every outage: 503 legacy-unavailable with Retry-After, nothing counted, nothing stored.
        for (mode, seconds) in [
            (LegacySystem.Mode.status500, nil), (.redirect, nil), (.garbage, nil), (.badresult, nil), (.stall, 30.0),
        ] as [(LegacySystem.Mode, Double?)] {
            try harness.legacy.setMode(mode, seconds: seconds)
            let started = Date()
            let answer = try await harness.start("alice", Self.alicePassword)
            #expect(answer.status == 503 && answer.problem == "legacy-unavailable", "\(mode): \(Self.text(answer))")
            #expect(answer.headers["retry-after"] == "5", "\(mode)")
            // The stall is cut at the 1 s timeout, never waited out.
            #expect(Date().timeIntervalSince(started) < 10, "\(mode)")
            stored = try harness.stored("alice")
            #expect(stored.credential?.isLegacy == true && stored.failures == 1, "\(mode)")
        }
        calls = try harness.calls()
        // One call per outage (no retry after an answer), every one signed, no redirect followed.
        #expect(calls.count == 6, "\(calls)")
        #expect(calls.allSatisfy { $0.verified && $0.username == "alice" })
        #expect(try harness.legacy.requests().allSatisfy { !$0.redirectFollowed })
        #expect(!Self.text(try await harness.adminGet("/v1/admin/audit?limit=1000")).contains("legacy-unavailable"))

        // The right password: asked once, accepted, rehashed to argon2id in the same write; converts.
        try harness.legacy.setMode(.normal)
        let first = try await harness.start("alice", Self.alicePassword)
        #expect(first.status == 201 && first["result"] == "success", "\(Self.text(first))")
        calls = try harness.calls()
        #expect(calls.count == 7 && calls.last?.answered == "match")
        stored = try harness.stored("alice")
        #expect(stored.credential?.format == "argon2id" && stored.failures == 0)
        #expect(try PasswordVerifier().verify(password: Self.alicePassword, encodedHash: stored.credential?.hash ?? ""))

        // A second check is this server's own: the legacy system is not asked again.
        let second = try await harness.start("alice", Self.alicePassword)
        #expect(second.status == 201 && second["result"] == "success", "\(Self.text(second))")
        #expect(try harness.calls().count == 7)
        let completed = try await server.post(
            "/v1/upgrades/\(try #require(second["id"]))/apple-credential",
            try server.appleCredential(for: second)
        )
        #expect(completed.status == 200 && completed["status"] == "completed", "\(Self.text(completed))")

        let audit = Self.text(try await harness.adminGet("/v1/admin/audit?limit=1000"))
        #expect(audit.contains("\"passwordRehashedFrom\":\"legacy\""), "\(audit)")
        #expect(audit.contains("\"legacy\":\"mismatch\""))

        // A legacy system that does not listen at all: refused twice (one retry), then 503.
        harness.legacy.stop()
        let refused = try await harness.start("bob", Self.bobPassword)
        #expect(refused.status == 503 && refused.problem == "legacy-unavailable", "\(Self.text(refused))")
        stored = try harness.stored("bob")
        #expect(stored.credential?.isLegacy == true && stored.failures == 0)

        let after = String(decoding: try await server.get("/metrics").body, as: UTF8.self)
        #expect(after.contains("upgrade_accounts_legacy_password 2.0"))
        #expect(after.contains("upgrade_legacy_verify_calls_total{outcome=\"match\"} 1"))
        #expect(after.contains("upgrade_legacy_verify_calls_total{outcome=\"cannot-connect\"} 1"))
        #expect(after.contains("upgrade_legacy_verify_calls_total{outcome=\"timed-out\"} 1"))
        // The password never reaches a log line or an answer.
        let logs = server.logs.lines.withLock { $0.joined(separator: "\n") }
        for password in [Self.alicePassword, Self.bobPassword] {
            #expect(!logs.contains(password) && !audit.contains(password))
        }
    }

    @Test(
        "while the legacy system is down an unknown username gets the same 503 in the same time as a legacy account; the first answer ends it",
        arguments: Backend.all
    )
    func pausedAfterOutage(_ backend: Backend) async throws {
        let harness = try Harness(
            backend,
            table: ["alice": .init(password: Self.alicePassword), "bob": .init(password: Self.bobPassword)]
        )
        #expect(try await harness.provision("alice", ["legacyPassword": true]).status == 201)
        #expect(try await harness.provision("bob", ["legacyPassword": true]).status == 201)
        // Before any outage an unknown username is not asked about, and refused as a wrong password.
        let before = try await harness.start("nobody", "whatever")
        #expect(before.status == 401 && before.problem == "invalid-credentials", "\(Self.text(before))")

        // A stalled legacy system: alice's check is asked and times out (the 1 s timeout).
        try harness.legacy.setMode(.stall, seconds: 30)
        func timed(_ username: String, _ password: String) async throws -> (DevServer.Response, Duration) {
            let started = ContinuousClock.now
            let answer = try await harness.start(username, password)
            return (answer, ContinuousClock.now - started)
        }
        let (first, firstTook) = try await timed("alice", Self.alicePassword)
        #expect(first.status == 503 && first.problem == "legacy-unavailable", "\(Self.text(first))")
        #expect(firstTook >= .milliseconds(900), "cut at the timeout: \(firstTook)")
        #expect(try harness.calls().count == 1)
        // An unknown username is not asked; within the pause it gets the same 503, no sooner than
        // the outage took, as a legacy account's check does. Answered at once, or answered 401,
        // its answer would tell that it has no account.
        let (unknown, unknownTook) = try await timed("nobody", "whatever")
        #expect(unknown.status == 503 && unknown.problem == "legacy-unavailable", "\(Self.text(unknown))")
        #expect(unknown.headers["retry-after"] == "5")
        #expect(unknownTook >= .milliseconds(900), "held as long as the stalled check: \(unknownTook)")
        #expect(try harness.calls().count == 1)
        // Bob's check is asked, and stalls in turn.
        let (stalled, stalledTook) = try await timed("bob", Self.bobPassword)
        #expect(stalled.status == 503 && stalled.problem == "legacy-unavailable", "\(Self.text(stalled))")
        #expect(stalledTook >= .milliseconds(900))
        #expect(try harness.calls().count == 2)

        // Back up: the next check is asked and answered, which ends the pause at once.
        try harness.legacy.setMode(.normal)
        let back = try await harness.start("bob", Self.bobPassword)
        #expect(back.status == 201 && back["result"] == "success", "\(Self.text(back))")
        let after = try await harness.start("nobody", "whatever")
        #expect(after.status == 401 && after.problem == "invalid-credentials", "\(Self.text(after))")
        let calls = try harness.calls()
        #expect(calls.count == 3 && calls.last?.answered == "match", "\(calls)")
        let alice = try harness.stored("alice")
        #expect(alice.credential?.isLegacy == true && alice.failures == 0)
        let metrics = String(decoding: try await harness.server.get("/metrics").body, as: UTF8.self)
        #expect(metrics.contains("upgrade_legacy_verify_calls_total{outcome=\"timed-out\"} 2"), "\(metrics)")
        #expect(metrics.contains("upgrade_legacy_verify_calls_total{outcome=\"match\"} 1"), "\(metrics)")
        // One warning per call that ended in an outage.
        let warnings = harness.server.logs.lines.withLock { $0.filter { $0.contains("\"legacy-verify\"") } }
        #expect(warnings.count == 2, "\(warnings)")
    }

    @Test("the legacy system's URL is https, or http to a loopback address only, as the webhook URL")
    func legacyURL() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("legacy-url-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let secret = directory.appendingPathComponent("secret").path
        let text = "whsec_" + Data(SecureRandom.bytes(32)).base64EncodedString()
        #expect(
            FileManager.default.createFile(
                atPath: secret,
                contents: Data(text.utf8),
                attributes: [.posixPermissions: 0o600]
            )
        )
        func problems(_ url: String) -> String {
            do {
                _ = try ServerSettings.load(
                    [
                        "UPGRADE_DB": "sqlite:/nonexistent/x.db", "UPGRADE_LEGACY_VERIFY_URL": url,
                        "UPGRADE_LEGACY_VERIFY_SECRET_FILE": secret,
                    ],
                    development: true
                )
                return ""
            } catch {
                return error.message
            }
        }
        for accepted in ["https://login.example.com/verify", "http://127.0.0.1:9000/verify", "http://localhost/v"] {
            #expect(problems(accepted) == "", "\(accepted)")
        }
        // A host that merely starts with 127. is not loopback.
        for refused in ["http://login.example.com/verify", "http://127.example.com/verify", "ftp://h/x", "not a url"] {
            #expect(problems(refused).contains("UPGRADE_LEGACY_VERIFY_URL: "), "\(refused)")
        }
        #expect(!problems("https://u:pw@login.example.com/v").isEmpty)

        // The pause after an outage: whole seconds from 1 to 300, 30 when not set, else one line.
        func pause(_ text: String?) -> Result<Duration?, ServerSettingsError> {
            var environment = [
                "UPGRADE_DB": "sqlite:/nonexistent/x.db", "UPGRADE_LEGACY_VERIFY_URL": "https://login.example.com/v",
                "UPGRADE_LEGACY_VERIFY_SECRET_FILE": secret,
            ]
            environment["UPGRADE_LEGACY_VERIFY_OUTAGE_PAUSE"] = text
            return Result { () throws(ServerSettingsError) in
                try ServerSettings.load(environment, development: true).legacyVerify?.outagePause
            }
        }
        for (text, seconds) in [(nil, 30), ("1", 1), ("30", 30), ("300", 300)] as [(String?, Int64)] {
            #expect((try? pause(text).get()) == .seconds(seconds), "\(text ?? "unset")")
        }
        let line = "UPGRADE_LEGACY_VERIFY_OUTAGE_PAUSE: expected whole seconds from 1 to 300, e.g. 30 (the default)"
        for refused in ["0", "301", "1.5", "-1", "5s", "１", "99999999999999999999"] {
            guard case .failure(let error) = pause(refused) else {
                Issue.record("\(refused) accepted")
                continue
            }
            #expect(error.problems == [line], "\(refused): \(error.problems)")
        }
    }

    @Test(
        "UPGRADE_LEGACY_CREATE: an unknown username that matches is created with its profile; others are not",
        arguments: Backend.all
    )
    func createJustInTime(_ backend: Backend) async throws {
        let harness = try Harness(
            backend,
            create: true,
            table: ["newbie": .init(password: "newbie's password", email: "newbie@example.com", displayName: "New Bee")]
        )
        let wrong = try await harness.start("newbie", "not it")
        #expect(wrong.status == 401 && wrong.problem == "invalid-credentials")
        #expect(try harness.stored("newbie").credential == nil)
        let stranger = try await harness.start("stranger", "whatever")
        #expect(stranger.status == 401 && stranger.problem == "invalid-credentials")

        let created = try await harness.start("newbie", "newbie's password")
        #expect(created.status == 201 && created["result"] == "success", "\(Self.text(created))")
        let overview = try await harness.adminGet("/v1/admin/accounts/newbie")
        #expect(overview.status == 200, "\(Self.text(overview))")
        #expect(overview["email"] == "newbie@example.com" && overview["displayName"] == "New Bee")
        #expect(overview.json["legacyPassword"] as? Bool == false)
        #expect(try harness.stored("newbie").credential?.format == "argon2id")
        let calls = try harness.calls()
        #expect(calls.map(\.answered) == ["mismatch", "unknown", "match"], "\(calls)")

        // Known now: the next check is this server's own.
        #expect(try await harness.start("newbie", "newbie's password").status == 201)
        #expect(try harness.calls().count == 3)

        // An outage answers an unknown username as it would a known one.
        try harness.legacy.setMode(.status500)
        let down = try await harness.start("someone-else", "whatever")
        #expect(down.status == 503 && down.problem == "legacy-unavailable")
        #expect(try harness.stored("someone-else").credential == nil)
        // Each unknown username is asked, within the pause too: once the legacy system is back, its
        // verdict decides at once.
        let again = try await harness.start("yet-another", "whatever")
        #expect(again.status == 503 && again.problem == "legacy-unavailable")
        try harness.legacy.setMode(.normal)
        let back = try await harness.start("yet-another", "whatever")
        #expect(back.status == 401 && back.problem == "invalid-credentials", "\(Self.text(back))")
        #expect(try harness.calls().count == 6)
    }
}
