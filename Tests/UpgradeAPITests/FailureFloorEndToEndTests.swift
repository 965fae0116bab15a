import Foundation
import Testing
import UpgradeAPI
import UpgradeEngine
import UpgradeTestSupport

/// The timing oracle over HTTP: a wrong password for an imported account with a legacy hash cost that
/// hash's full price (bcrypt 12 about 200 ms), an unknown username the dummy argon2id check (26 ms), so
/// a stranger could tell which usernames exist. Every refused check is now answered no sooner than
/// `UPGRADE_FAILURE_FLOOR_MS` after it began. Only lower bounds are asserted, which a correct server
/// always meets; the latencies themselves are compared in Benchmarks/ (`failed-checks`).
@Suite("Refused credential checks over HTTP")
struct FailureFloorEndToEndTests {
    static let floor = Duration.milliseconds(400)

    /// Imported accounts: bcrypt cost 10 and Django PBKDF2-SHA256 with 600 000 iterations (digests
    /// of no password), as `accounts import` stores them.
    static func importAccounts(_ server: DevServer) throws {
        let hashes = [
            ("imported-bcrypt", "$2b$10$GV7oqmKVW/S97lcGqiz7cuIlvV70W5zNF3ryK5m8gokOHiIXED0Wq", "bcrypt"),
            (
                "imported-django", "pbkdf2_sha256$600000$saltsalt$" + String(repeating: "A", count: 43) + "=",
                "pbkdf2-sha256"
            ),
        ]
        try server.application.store.write { tx in
            for (username, hash, format) in hashes {
                let account = AccountRecord(
                    id: UUID().uuidString.lowercased(),
                    username: username,
                    credentialKind: .password,
                    createdAt: server.clock.now,
                    updatedAt: server.clock.now
                )
                try tx.insertAccount(account)
                try tx.upsertPasswordCredential(
                    PasswordCredentialRecord(
                        accountID: account.id,
                        hash: hash,
                        format: format,
                        updatedAt: server.clock.now
                    )
                )
            }
        }
    }

    /// The answer and how long it took, from before the request was sent.
    static func timed(
        _ server: DevServer,
        _ path: String,
        _ body: [String: any Sendable]
    ) async throws -> (DevServer.Response, Duration) {
        let sent = ContinuousClock.now
        let response = try await server.post(path, body)
        return (response, ContinuousClock.now - sent)
    }

    @Test("a wrong password for imported bcrypt and PBKDF2 accounts and an unknown username all take the floor")
    func upgrades() async throws {
        let server = try DevServer(environment: ["UPGRADE_FAILURE_FLOOR_MS": "400"])
        try Self.importAccounts(server)
        var bodies: Set<String> = []
        for username in ["imported-bcrypt", "imported-django", "nobody-here", DevelopmentEnvironment.demoUsername] {
            let (answer, elapsed) = try await Self.timed(
                server,
                "/v1/upgrades",
                ["username": username, "password": "a wrong guess", "serviceIdentifier": "example.com"]
            )
            #expect(answer.status == 401, "\(username)")
            #expect(answer.problem == "invalid-credentials", "\(username)")
            #expect(elapsed >= Self.floor, "\(username): answered \(elapsed) after sending, before the floor")
            var json = answer.json
            json["id"] = nil
            bodies.insert(String(describing: json.sorted { $0.key < $1.key }))
        }
        #expect(bodies.count == 1, "apart from the upgrade's id the refusals are the same: \(bodies)")
        let metrics = String(decoding: try await server.get("/metrics").body, as: UTF8.self)
        #expect(metrics.contains("\ncredential_failures_held_total 4\n"))
        #expect(metrics.contains("\ncredential_failure_floor_overruns_total "))
    }

    @Test("a wrong current password for a password change takes the floor too, known username or not")
    func passwordChanges() async throws {
        let server = try DevServer(environment: ["UPGRADE_FAILURE_FLOOR_MS": "400"])
        try Self.importAccounts(server)
        for username in ["imported-django", "nobody-here"] {
            let (answer, elapsed) = try await Self.timed(
                server,
                "/v1/password-changes",
                [
                    "username": username, "password": "a wrong guess", "newPassword": "Another-Strong-Passw0rd",
                    "serviceIdentifier": "example.com",
                ]
            )
            #expect(answer.problem == "invalid-credentials", "\(username)")
            #expect(elapsed >= Self.floor, "\(username): answered \(elapsed) after sending, before the floor")
        }
    }

    /// `password_hashes_total` as the server counts it.
    static func hashes(_ server: DevServer) async throws -> Int {
        let metrics = String(decoding: try await server.get("/metrics").body, as: UTF8.self)
        let line = metrics.split(separator: "\n").first { $0.hasPrefix("password_hashes_total ") }
        return Int(line?.split(separator: " ").last ?? "") ?? -1
    }

    @Test("simultaneous wrong passwords for one username: one is checked, the others answer 429 at once")
    func simultaneousGuesses() async throws {
        // Four at once for an account with a costly admitted hash used to share the CPU, overrun the
        // floor and answer later than an unknown username's; now they cannot run together.
        let server = try DevServer(environment: ["UPGRADE_FAILURE_FLOOR_MS": "400"])
        try Self.importAccounts(server)
        for username in ["imported-django", "nobody-here"] {
            let before = try await Self.hashes(server)
            let answers = try await withThrowingTaskGroup(of: (DevServer.Response, Duration).self) { group in
                for attempt in 0..<4 {
                    group.addTask {
                        try await Self.timed(
                            server,
                            "/v1/upgrades",
                            ["username": username, "password": "guess \(attempt)", "serviceIdentifier": "example.com"]
                        )
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let checked = answers.filter { $0.0.problem == "invalid-credentials" }
            let refused = answers.filter { $0.0.status == 429 && $0.0.problem == "rate-limited" }
            #expect(checked.count == 1 && refused.count == 3, "\(username): \(answers.map { $0.0.status })")
            #expect(checked.allSatisfy { $0.1 >= Self.floor }, "\(username): the checked one still takes the floor")
            for (answer, _) in refused {
                #expect(answer.headers["retry-after"] == "1", "\(username)")
                #expect(answer.json["upgradeId"] == nil && answer.json["id"] == nil, "\(username): nothing opened")
            }
            #expect(try await Self.hashes(server) - before == 1, "\(username): one key derivation")
        }
    }

    @Test("UPGRADE_FAILURE_FLOOR_MS: a default derived from the hash limits, and one clear line for a bad value")
    func settings() throws {
        let base = ["UPGRADE_DB": "sqlite:unused.db", "UPGRADE_LISTEN": "127.0.0.1:8080"]
        #expect(try ServerSettings.load(base, development: true).failureFloor == nil)
        #expect(
            ServerSettings.defaultFailureFloorMilliseconds
                == PasswordHashLimits.default.failureFloor.components.seconds * 1000
                + PasswordHashLimits.default.failureFloor.components.attoseconds / 1_000_000_000_000_000
        )
        let set = try ServerSettings.load(base.merging(["UPGRADE_FAILURE_FLOOR_MS": "250"]) { $1 }, development: true)
        #expect(set.failureFloor == .milliseconds(250))
        for bad in ["-1", "10001", "0.5", "soon", "1e3"] {
            do {
                _ = try ServerSettings.load(base.merging(["UPGRADE_FAILURE_FLOOR_MS": bad]) { $1 }, development: true)
                Issue.record("\(bad) was accepted")
            } catch {
                #expect(error.problems.count == 1, "\(bad)")
                #expect(
                    error.problems.first?.hasPrefix("UPGRADE_FAILURE_FLOOR_MS: expected whole milliseconds") == true
                )
            }
        }
    }
}
