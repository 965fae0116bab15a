import Foundation
import Testing
import UpgradeAPI
import UpgradeEngine
import UpgradeTestSupport

/// Admin tokens with an expiry (`admin tokens add --expires-in/--expires-at`): past it, a token is
/// refused over HTTP exactly as a wrong one is, and only the server's log names it.
@Suite("Admin token expiry")
struct AdminTokenExpiryTests {
    @Test("an expired token gets the same 401 as a wrong one; the log names it, never the token")
    func expiredLikeWrong() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("expiry-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("admin-tokens").path
        let start = Int64(Date().timeIntervalSince1970)
        let expiring = try AdminTokenFile.add(
            name: "contractor",
            scopes: [.accounts],
            path: file,
            now: start,
            expiresAt: start + 3600
        )
        let lasting = try AdminTokenFile.add(name: "ops", scopes: [.accounts], path: file, now: start)
        let server = try DevServer(environment: ["UPGRADE_ADMIN_TOKENS_FILE": file, "UPGRADE_ADMIN_THROTTLE": "off"])
        func get(_ token: String) async throws -> DevServer.Response {
            try await server.send(
                "GET",
                "/v1/admin/accounts/nobody",
                body: nil,
                contentType: nil,
                headers: ["Authorization": "Bearer \(token)"]
            )
        }
        #expect(try await get(expiring).status == 404)
        server.clock.advance(3600)
        let expired = try await get(expiring)
        let wrong = try await get(AdminToken.generate())
        #expect(expired.status == 401 && wrong.status == 401)
        #expect(expired.body == wrong.body, "the answer tells an expired token from a wrong one")
        #expect(expired.headers["www-authenticate"] == wrong.headers["www-authenticate"])
        #expect(try await get(lasting).status == 404)
        let lines = server.logs.lines.withLock { $0 }
        #expect(lines.contains { $0.contains("expired-token contractor") })
        #expect(!lines.contains { $0.contains(expiring) })

        // The last uses are in the database: `list --db` shows them, the expired token's too.
        let listed = try runCLI(["admin", "tokens", "list", "--file", file, "--db", server.database.url])
        #expect(listed.status == 0, "\(listed.stderr)")
        let rows = listed.stdout.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
        let format = { (seconds: Int64) in AdminTokensListFormat.format(seconds) }
        #expect(rows.first { $0[0] == "contractor" }?.last == format(server.clock.now - 3600), "\(listed.stdout)")
        #expect(rows.first { $0[0] == "ops" }?.last == format(server.clock.now), "\(listed.stdout)")
    }

    /// The list's time format: RFC 3339 in UTC.
    enum AdminTokensListFormat {
        static func format(_ seconds: Int64) -> String {
            let formatter = ISO8601DateFormatter()
            formatter.timeZone = TimeZone(identifier: "UTC")
            return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
        }
    }

    @Test("a file written before expiries still parses; add --expires-in writes one and list shows it")
    func fileAndCommands() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("expiry-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("admin-tokens").path
        let hash = String(repeating: "ab", count: 32)
        #expect(
            FileManager.default.createFile(
                atPath: file,
                contents: Data("# an older file\nbackend tickets 1700000000 \(hash)\n".utf8),
                attributes: [.posixPermissions: 0o600]
            )
        )
        let old = try AdminTokenFile.load(path: file)
        #expect(old.tokens.count == 1 && old.tokens[0].expiresAt == nil)

        let added = try runCLI([
            "admin", "tokens", "add", "temp", "--scopes", "audit", "--expires-in", "2h", "--file", file,
        ])
        #expect(added.status == 0, "\(added.stderr)")
        let tokens = try AdminTokenFile.load(path: file).tokens
        let temp = try #require(tokens.first { $0.name == "temp" })
        let now = Int64(Date().timeIntervalSince1970)
        #expect(try #require(temp.expiresAt) - now > 7000 && temp.expiresAt! - now <= 7200)
        let listed = try runCLI(["admin", "tokens", "list", "--file", file])
        #expect(listed.status == 0)
        #expect(listed.stdout.contains("backend\ttickets\t2023-11-14T22:13:20Z\tnever\tunknown"), "\(listed.stdout)")
        #expect(listed.stderr.contains("last used is unknown without a database"))
        #expect(listed.stdout.contains("temp\taudit\t"))

        let past = try runCLI(
            [
                "admin", "tokens", "add", "late", "--scopes", "audit", "--expires-at", "2001-01-01T00:00:00Z", "--file",
                file,
            ]
        )
        #expect(past.status == 2 && past.stderr.contains("in the future"))
        let bad = try runCLI([
            "admin", "tokens", "add", "late", "--scopes", "audit", "--expires-in", "soon", "--file", file,
        ])
        #expect(bad.status == 2 && bad.stderr.contains("--expires-in"))
    }
}
