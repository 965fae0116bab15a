import Foundation
import Glibc
import Testing

@testable import UpgradeAPI
@testable import UpgradeEngine

/// A throwaway cluster of this test's own (`Scripts/dev-postgres`), which it may crash and restart.
final class CrashablePostgres {
    let url: String
    let directory: String

    static var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Scripts/dev-postgres").path
    }

    init() throws {
        let output = try Self.run([])
        func value(_ name: String) -> String? {
            output.split(separator: "\n").first { $0.hasPrefix(name + "=") }.map {
                String($0.dropFirst(name.count + 1))
            }
        }
        url = try #require(value("UPGRADE_DB"), "Scripts/dev-postgres did not start a cluster")
        directory = try #require(value("UPGRADE_DEV_POSTGRES_DIR"))
        // The script trades durability for speed (synchronous_commit off): a crash would then lose
        // the last commits, which this test must find after the restart.
        let configuration = try PostgresConfiguration(url: url)
        try PostgresConnection(configuration).execute(
            "ALTER DATABASE \(configuration.database) SET synchronous_commit = on"
        )
    }

    /// Stops the server at once, as a crash would (`pg_ctl stop -m immediate`).
    func kill() throws { _ = try Self.run(["--kill", directory]) }
    func restart() throws { _ = try Self.run(["--restart", directory]) }
    /// Stops it and removes its files.
    func remove() { _ = try? Self.run(["--stop", directory]) }

    /// Runs the script through `system`, which waits for it by itself (its output to a file).
    @discardableResult
    static func run(_ arguments: [String]) throws -> String {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("dev-postgres-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: output) }
        let command = ([script] + arguments).map { "'\($0)'" }.joined(separator: " ")
        let status = system(command + " >'\(output.path)' 2>/dev/null </dev/null")
        guard status == 0 else {
            throw CocoaError(.executableLoad, userInfo: ["arguments": arguments.joined(separator: " ")])
        }
        return (try? String(contentsOf: output, encoding: .utf8)) ?? ""
    }
}

@Suite("Losing the database")
struct DatabaseLossAPITests {
    @Test("an unreachable database is 503 database-unavailable with Retry-After, from every service")
    func problems() {
        let failures = [
            APIProblem(ServiceFailure(.databaseUnavailable, "the database cannot be reached", cause: "storage x")),
            APIProblem(TransferFailure(.unavailable, "the database cannot be reached")),
            APIProblem(SignInFailure(TransferFailure(.unavailable, "the database cannot be reached"))),
            APIProblem(SignInFailure(.storeUnavailable, "the database cannot be reached")),
        ]
        for problem in failures {
            let response = problem.response
            #expect(response.status == 503)
            #expect(problem.slug == "database-unavailable")
            #expect(response.headers["Retry-After"] == "2")
            #expect(!String(decoding: response.body, as: UTF8.self).contains("storage x"))
        }
    }

    /// While PostgreSQL is down each API call answers quickly.
    static let answerBound = 10.0

    @Test(
        "PostgreSQL crashing mid-flow: 503 database-unavailable and /readyz 503 while it is down, then service resumes without a restart; nothing is half converted",
        .enabled(if: ServePostgres.isAvailable, .init(rawValue: ServePostgres.reason)),
        .timeLimit(.minutes(3))
    )
    func crashAndRecover() async throws {
        let postgres = try CrashablePostgres()
        defer { postgres.remove() }
        let fixture = try await ServeFixture(database: postgres.url, conversionTimeout: 2)
        defer { fixture.stop() }
        let alice = try fixture.addAccount("alice")
        let bob = try fixture.addAccount("bob")
        let aliceApple = try fixture.emulator.createUser(email: "alice@example.com")
        let bobApple = try fixture.emulator.createUser(email: "bob@example.com")
        let base = try await fixture.startServe()

        // Alice's upgrade is waiting for her Apple credential when the database goes away.
        let started = try await fixture.start(base, "alice")
        #expect(started.status == 201)
        let id = try #require(started.json["id"])
        let credential = try fixture.credential(for: started, appleUser: aliceApple)
        try postgres.kill()

        let whileDown = [
            try await ServeFixture.send("POST", base + "/v1/upgrades/\(id)/apple-credential", credential),
            try await ServeFixture.send("GET", base + "/v1/upgrades/\(id)"),
            try await fixture.start(base, "bob"),
            try await ServeFixture.send("POST", base + "/v1/upgrades/\(id)/cancel", ["reason": "userCanceled"]),
            try await ServeFixture.send("GET", base + "/v1/apple/credential-state?user=\(aliceApple)"),
        ]
        for answer in whileDown {
            #expect(answer.status == 503, "\(answer.json)")
            #expect(answer.problem == "database-unavailable")
            #expect(answer.retryAfter == "2")
            #expect(answer.seconds < Self.answerBound, "answered in \(answer.seconds) s")
        }
        let ready = try await ServeFixture.send("GET", base + "/readyz")
        #expect(ready.status == 503 && ready.problem == "not-ready")
        #expect(ready.seconds < Self.answerBound)
        #expect(try await ServeFixture.send("GET", base + "/healthz").status == 200)
        #expect(fixture.apple.codeExchanges == 0)

        // Back: the same serve process answers again, and Alice's upgrade completes with her credential.
        try postgres.restart()
        #expect(try await Self.waitUntilReady(base))
        let done = try await ServeFixture.send("POST", base + "/v1/upgrades/\(id)/apple-credential", credential)
        #expect(done.status == 200 && done.json["status"] == "completed", "\(done.status) \(done.json)")
        #expect(try fixture.store.read { try $0.account(id: alice.id) }?.credentialKind == .appleOnly)

        // Bob's database goes away while Apple exchanges his code: the conversion's commit fails.
        let bobStarted = try await fixture.start(base, "bob")
        let bobID = try #require(bobStarted.json["id"])
        let bobCredential = try fixture.credential(for: bobStarted, appleUser: bobApple)
        fixture.apple.hold()
        let submission = Task {
            try await ServeFixture.send("POST", base + "/v1/upgrades/\(bobID)/apple-credential", bobCredential)
        }
        for _ in 0..<500 where fixture.apple.held == 0 { try await Task.sleep(for: .milliseconds(20)) }
        #expect(fixture.apple.held == 1)
        try postgres.kill()
        fixture.apple.open()
        let failed = try await submission.value
        #expect(failed.status == 503 && failed.problem == "database-unavailable", "\(failed.json)")
        #expect(failed.retryAfter == "2")

        // Back again: nothing of the conversion happened. Once its claim lapses the upgrade is
        // interrupted, and a new upgrade converts the account.
        try postgres.restart()
        #expect(try await Self.waitUntilReady(base))
        #expect(try fixture.store.read { try $0.account(id: bob.id) }?.credentialKind == .password)
        #expect(try fixture.store.read { try $0.appleLink(accountID: bob.id) } == nil)
        #expect(try fixture.store.read { try $0.passwordCredential(accountID: bob.id) } != nil)
        try await Task.sleep(for: .seconds(3))
        let view = try await ServeFixture.send("GET", base + "/v1/upgrades/\(bobID)")
        #expect(view.json["status"] == "failed" && view.json["problem"] == "conversion-interrupted", "\(view.json)")
        let again = try await fixture.start(base, "bob")
        let finished = try await ServeFixture.send(
            "POST",
            base + "/v1/upgrades/\(again.json["id"] ?? "")/apple-credential",
            try fixture.credential(for: again, appleUser: bobApple)
        )
        #expect(finished.json["status"] == "completed", "\(finished.json)")
        #expect(try fixture.store.read { try $0.account(id: bob.id) }?.credentialKind == .appleOnly)
        #expect(fixture.servers.count == 1 && fixture.servers[0].process.isRunning, "never restarted")
    }

    /// Polls `/readyz` for up to 30 s.
    static func waitUntilReady(_ base: String) async throws -> Bool {
        for _ in 0..<150 {
            if try await ServeFixture.send("GET", base + "/readyz").status == 200 { return true }
            try await Task.sleep(for: .milliseconds(200))
        }
        return false
    }
}
