import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeAPI
@testable import UpgradeEngine

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `GET /metrics` outside `--dev`: its counters tell which usernames exist (a failed start queues a
/// webhook only for an account) and what a check cost, so on the API listener it needs an admin
/// token with the `metrics` scope; `UPGRADE_HEALTH_LISTEN`, the operator's listener, serves it
/// without one (docs/architecture.md §10.3).
@Suite("Metrics access")
struct MetricsAccessTests {
    static func get(_ url: String, token: String? = nil) async throws -> (status: Int, body: String) {
        var request = URLRequest(url: URL(string: url)!, timeoutInterval: 20)
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as! HTTPURLResponse).statusCode, String(decoding: data, as: UTF8.self))
    }

    @Test("a stranger gets 401, another scope 403, the metrics scope and the health listener the text")
    func tokenOrHealthListener() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("metrics-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let tokens = directory.appendingPathComponent("admin-tokens").path
        let scraper = try AdminTokenFile.add(name: "prometheus", scopes: [.metrics], path: tokens, now: 1)
        let support = try AdminTokenFile.add(name: "support", scopes: [.accounts, .audit], path: tokens, now: 1)
        let fixture = try await ServeFixture(
            database: "sqlite:" + directory.appendingPathComponent("metrics.db").path,
            environment: ["UPGRADE_ADMIN_TOKENS_FILE": tokens, "UPGRADE_HEALTH_LISTEN": "127.0.0.1:0"]
        )
        defer { fixture.stop() }
        let base = try await fixture.startServe()
        let output = try #require(fixture.servers.first).errors.text
        let range = try #require(
            output.range(of: #"health checks on http://127\.0\.0\.1:\d+"#, options: .regularExpression)
        )
        let health = String(output[range].dropFirst("health checks on ".count))

        let stranger = try await Self.get(base + "/metrics")
        #expect(stranger.status == 401 && stranger.body.contains("unauthorized"), "\(stranger)")
        #expect(!stranger.body.contains("password_hash"), "no counter in the refusal")
        let otherScope = try await Self.get(base + "/metrics", token: support)
        #expect(otherScope.status == 403 && otherScope.body.contains("insufficient-scope"), "\(otherScope)")
        let scraped = try await Self.get(base + "/metrics", token: scraper)
        #expect(scraped.status == 200 && scraped.body.contains("password_hashes_total"), "\(scraped.status)")
        let internalView = try await Self.get(health + "/metrics")
        #expect(
            internalView.status == 200 && internalView.body.contains("password_hashes_total"),
            "\(internalView.status)"
        )
        // The rest of the API is still not served there.
        #expect(try await Self.get(health + "/v1/apple/sign-in-nonce").status == 404)
    }
}
