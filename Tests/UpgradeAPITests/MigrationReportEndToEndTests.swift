import Foundation
import Testing
import UpgradeEngine
import UpgradeTestSupport

/// `GET /v1/admin/report` over HTTP after a scripted set of upgrades, and `upgrade-cli report --json`
/// on the same database: the same document, and the counts the script made.
@Suite("REST API end to end: the migration report")
struct MigrationReportEndToEndTests {
    typealias Harness = TicketHarness

    func report(_ harness: Harness, _ query: String = "", token: String? = nil) async throws -> DevServer.Response {
        try await harness.server.send(
            "GET",
            "/v1/admin/report" + query,
            body: nil,
            contentType: nil,
            headers: ["Authorization": "Bearer \(token ?? harness.supportToken)"]
        )
    }

    func start(
        _ harness: Harness,
        _ username: String,
        password: String,
        entry: String?
    ) async throws -> DevServer.Response {
        var body: [String: any Sendable] = ["username": username, "password": password, "serviceIdentifier": "s"]
        if let entry { body["entry"] = entry }
        return try await harness.server.post("/v1/upgrades", body)
    }

    @Test("the API's document equals the CLI's, and both hold the script's counts", arguments: Backend.all)
    func sameDocument(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let server = harness.server
        // One completed (silent), one cancelled by each ASExtensionError reason (with UI), one wrong password.
        let completed = try await start(harness, "plain", password: "pw-plain", entry: "silent")
        #expect(completed.status == 201, "\(String(decoding: completed.body, as: UTF8.self))")
        let id = try #require(completed["id"])
        let converted = try await server.post(
            "/v1/upgrades/\(id)/apple-credential",
            try server.appleCredential(for: completed)
        )
        #expect(converted["status"] == "completed")
        for reason in ASExtensionErrorCode.allCases {
            try server.addAccount("cancel-\(reason.name.lowercased())", password: "pw")
            let started = try await start(
                harness,
                "cancel-\(reason.name.lowercased())",
                password: "pw",
                entry: "withUI"
            )
            let cancelled = try await server.post(
                "/v1/upgrades/\(try #require(started["id"]))/cancel",
                ["reason": reason.name]
            )
            #expect(cancelled.status == 200, "\(String(decoding: cancelled.body, as: UTF8.self))")
        }
        #expect(try await start(harness, "plain", password: "wrong", entry: nil).status == 401)
        #expect(try await start(harness, "plain", password: "wrong", entry: "sideways").status == 422)

        let until = server.clock.now + 1
        let answer = try await report(harness, "?until=\(until)")
        #expect(answer.status == 200, "\(String(decoding: answer.body, as: UTF8.self))")
        #expect(answer.headers["cache-control"] == "no-store" && answer.headers["content-type"] == "application/json")
        let api = try #require(MigrationReport(jsonDocument: String(decoding: answer.body, as: UTF8.self)))
        let total = api.upgrades.total
        #expect(total.started == 2 + ASExtensionErrorCode.allCases.count)
        #expect(total.completed == 1 && total.failed == ["invalid-credentials": 1])
        #expect(total.cancelled == Dictionary(uniqueKeysWithValues: ASExtensionErrorCode.allCases.map { ($0.name, 1) }))
        #expect(api.upgrades.byEntry["silent"]?.completed == 1)
        #expect(api.upgrades.byEntry["withUI"]?.cancelled.values.reduce(0, +) == ASExtensionErrorCode.allCases.count)
        #expect(api.upgrades.byEntry["unknown"]?.failed == ["invalid-credentials": 1])
        #expect(api.accounts.appleOnly >= 1)

        let cli = try runCLI(
            ["report", "--json", "--until", String(until)],
            environment: ["UPGRADE_DB": server.database.url]
        )
        #expect(cli.status == 0, "\(cli.stderr)")
        var fromCLI = try #require(MigrationReport(jsonDocument: cli.stdout))
        // The two read at their own clocks; everything else is the same document.
        fromCLI.generatedAt = api.generatedAt
        #expect(fromCLI == api)
        #expect(fromCLI.jsonDocument == String(decoding: answer.body, as: UTF8.self))

        let table = try runCLI(["report", "--until", String(until)], environment: ["UPGRADE_DB": server.database.url])
        #expect(table.status == 0 && table.stdout.contains("upgrades") && table.stdout.contains("userCanceled=1"))

        // The gauges a dashboard alerts on.
        let metrics = String(decoding: try await server.get("/metrics").body, as: UTF8.self)
        #expect(metrics.contains("upgrade_accounts_apple_only \(Double(api.accounts.appleOnly))"), "\(metrics)")
        #expect(metrics.contains("upgrade_accounts_password \(Double(api.accounts.password))"))
    }

    @Test("a bad window: one line and exit 2 from the CLI, a validation problem from the API", arguments: Backend.all)
    func badWindow(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let url = harness.server.database.url
        for arguments in [
            ["--since", "yesterday"], ["--until", "2026-13-01T00:00:00Z"], ["--since", "200", "--until", "100"],
        ] {
            let cli = try runCLI(["report"] + arguments, environment: ["UPGRADE_DB": url])
            #expect(cli.status == 2, "\(arguments)")
            #expect(cli.stdout.isEmpty && cli.stderr.split(separator: "\n").count == 1, "\(cli.stderr)")
        }
        for query in [
            "?since=yesterday", "?until=2026-13-01T00:00:00Z", "?since=200&until=100", "?window=1", "?since=1&since=2",
        ] {
            let answer = try await report(harness, query)
            #expect(answer.status == 422 && answer.problem == "validation", "\(query)")
        }
        // The scope is `audit`: a token without it is refused before the query is read.
        let refused = try await report(harness, "?since=yesterday", token: harness.backendToken)
        #expect(refused.status == 403)
        #expect(try await report(harness, "", token: "not-a-token").status == 401)
    }
}
