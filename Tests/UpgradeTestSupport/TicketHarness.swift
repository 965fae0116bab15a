import Foundation
import Testing
import UpgradeAPI
import UpgradeEngine

/// A development server with an admin token file: `backend` may mint tickets, `support` may not.
package final class TicketHarness: Sendable {
    package let server: DevServer
    package let directory: URL
    package let backendToken: String
    package let supportToken: String

    package init(_ backend: Backend, environment: [String: String] = [:]) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tickets-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("admin-tokens").path
        backendToken = try AdminTokenFile.add(name: "backend", scopes: [.tickets], path: file, now: 1)
        supportToken = try AdminTokenFile.add(name: "support", scopes: [.audit, .accounts], path: file, now: 1)
        server = try DevServer(
            backend,
            environment: ["UPGRADE_ADMIN_TOKENS_FILE": file].merging(environment) { $1 }
        )
        try server.addAccount("plain", password: "pw-plain")
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    package func mint(
        _ username: String,
        secondFactorVerified: Bool? = nil,
        token: String? = nil
    ) async throws -> DevServer.Response {
        var body: [String: any Sendable] = ["username": username]
        if let secondFactorVerified { body["secondFactorVerified"] = secondFactorVerified }
        return try await server.post(
            "/v1/upgrade-tickets",
            body,
            headers: ["Authorization": "Bearer \(token ?? backendToken)"]
        )
    }

    package func ticket(_ username: String, secondFactorVerified: Bool? = nil) async throws -> String {
        let minted = try await mint(username, secondFactorVerified: secondFactorVerified)
        #expect(minted.status == 201, "\(String(decoding: minted.body, as: UTF8.self))")
        #expect(minted.headers["cache-control"] == "no-store")
        #expect(minted["expiresAt"] != nil)
        return try #require(minted["ticket"])
    }

    /// What the extension sends for an in-app upgrade; `password` nil leaves the field out.
    package func upgrade(_ username: String, ticket: String, password: String? = "") async throws -> DevServer.Response
    {
        var body: [String: any Sendable] = ["username": username, "ticket": ticket, "serviceIdentifier": "s"]
        if let password { body["password"] = password }
        return try await server.post("/v1/upgrades", body)
    }

    /// Every log line and the given bodies hold no admin token and none of `tickets`.
    package func expectNoSecrets(_ tickets: [String], bodies: [DevServer.Response] = []) {
        let logs = server.logs.lines.withLock { $0.joined(separator: "\n") }
        #expect(!logs.isEmpty)
        for secret in [backendToken, supportToken] + tickets {
            #expect(!logs.contains(secret), "a secret reached the log")
            for body in bodies { #expect(!String(decoding: body.body, as: UTF8.self).contains(secret)) }
        }
    }
}
