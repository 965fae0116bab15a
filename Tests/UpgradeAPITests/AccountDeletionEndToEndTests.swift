import AppleEmulator
import Foundation
import Testing
import UpgradeAPI
import UpgradeEngine
import UpgradeTestSupport

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Account deletion over HTTP on loopback: `DELETE /v1/admin/accounts/{username}` deletes the account
/// and revokes its Apple refresh token at the development server's emulator, at once or, while the
/// emulator answers 429 and 503, later from `serve`'s revocation worker.
@Suite("REST API end to end: account deletion and Apple token revocation")
struct AccountDeletionEndToEndTests {
    final class Harness: Sendable {
        let server: DevServer
        let directory: URL
        /// Scope `accounts`.
        let supportToken: String
        /// Scope `tickets` only.
        let backendToken: String

        init(_ backend: Backend, revocationIntervalMilliseconds: Int = 5000) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("delete-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let file = directory.appendingPathComponent("admin-tokens").path
            supportToken = try AdminTokenFile.add(name: "support", scopes: [.accounts], path: file, now: 1)
            backendToken = try AdminTokenFile.add(name: "backend", scopes: [.tickets], path: file, now: 1)
            server = try DevServer(
                backend,
                environment: ["UPGRADE_ADMIN_TOKENS_FILE": file],
                revocationIntervalMilliseconds: revocationIntervalMilliseconds
            )
        }

        deinit { try? FileManager.default.removeItem(at: directory) }

        var emulator: AppleIDEmulator { server.development.emulator }

        /// A password account upgraded through the emulator; its id, Apple sub and the refresh token
        /// Apple issued (read back from the database, for the checks that it is revoked and never shown).
        /// `appleUser` is the emulator's user who signs in (the development user by default).
        func converted(
            _ username: String,
            appleUser: String? = nil
        ) async throws -> (accountID: String, sub: String, refreshToken: String) {
            try server.addAccount(username, password: "pw-\(username)")
            let started = try await server.post(
                "/v1/upgrades",
                ["username": username, "password": "pw-\(username)", "serviceIdentifier": "s"]
            )
            let id = try #require(started["id"])
            let completed = try await server.post(
                "/v1/upgrades/\(id)/apple-credential",
                try server.appleCredential(for: started, userID: appleUser)
            )
            #expect(completed["status"] == "completed")
            let link = try #require(
                try server.application.store.read { tx in
                    try tx.account(username: Username(username)).flatMap { try tx.appleLink(accountID: $0.id) }
                }
            )
            let sealed = try #require(link.refreshTokenCiphertext)
            let token = try (server.application.settings.secrets ?? SecretBox.developmentOnly()).open(
                sealed,
                context: UpgradeService.refreshTokenContext(accountID: link.accountID)
            )
            return (link.accountID, link.sub, String(decoding: token, as: UTF8.self))
        }

        func delete(_ username: String, token: String? = nil) async throws -> DevServer.Response {
            var headers: [String: String] = [:]
            if let token { headers["Authorization"] = "Bearer \(token)" }
            return try await server.send(
                "DELETE",
                "/v1/admin/accounts/\(username)",
                body: nil,
                contentType: nil,
                headers: headers
            )
        }

        /// One of the emulator's own endpoints over HTTP.
        func emulatorCall(
            _ method: String,
            _ path: String,
            _ body: [String: any Sendable]? = nil
        ) async throws -> [String: Any] {
            var request = URLRequest(url: server.development.baseURL.appendingPathComponent(path), timeoutInterval: 10)
            request.httpMethod = method
            if let body {
                request.httpBody = try JSONSerialization.data(withJSONObject: body)
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            }
            let (data, response) = try await URLSession.shared.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == 200, "\(String(decoding: data, as: UTF8.self))")
            return (try JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        }

        /// How often the emulator answered 200 to `/auth/revoke` for `token`, as `GET /emulator/revocations` says.
        func revocations(of token: String) async throws -> Int {
            let listed = try await emulatorCall("GET", "/emulator/revocations")["revocations"] as? [[String: Any]] ?? []
            let hash = Digest.sha256(token).hexString
            return listed.first { $0["tokenSha256"] as? String == hash }?["count"] as? Int ?? 0
        }

        func metric(_ name: String) async throws -> Double? {
            let text = String(decoding: try await server.get("/metrics").body, as: UTF8.self)
            return text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
                .flatMap { Double($0.split(separator: " ")[1]) }
        }

        /// No log line, body or audit row holds a refresh token, an admin token or a password.
        func expectNoSecrets(_ secrets: [String], bodies: [DevServer.Response], accountIDs: [String]) throws {
            let logs = server.logs.lines.withLock { $0.joined(separator: "\n") }
            #expect(!logs.isEmpty)
            let audit = try server.application.store.read { tx in
                try accountIDs.flatMap { try tx.auditTrail(accountID: $0, limit: 100) }
            }
            let auditText = audit.map { "\($0)" }.joined(separator: "\n")
            for secret in secrets + [supportToken, backendToken] {
                #expect(!logs.contains(secret), "a secret reached the log")
                #expect(!auditText.contains(secret), "a secret reached the audit trail")
                for body in bodies { #expect(!String(decoding: body.body, as: UTF8.self).contains(secret)) }
            }
        }
    }

    @Test("a converted account: deleted, its refresh token revoked at Apple exactly once", arguments: Backend.all)
    func convertedAccount(_ backend: Backend) async throws {
        let harness = try Harness(backend, revocationIntervalMilliseconds: 50)
        let server = harness.server
        let (accountID, sub, refreshToken) = try await harness.converted("alice")

        let deleted = try await harness.delete("alice", token: harness.supportToken)
        #expect(deleted.status == 200, "\(String(decoding: deleted.body, as: UTF8.self))")
        #expect(deleted["accountId"] == accountID && deleted.json["deleted"] as? Bool == true)
        #expect(deleted["appleRevocation"] == "done")
        #expect(deleted.headers["cache-control"] == "no-store")
        #expect(try await harness.revocations(of: refreshToken) == 1)

        // The worker's later passes find nothing to send.
        server.clock.advance(7200)
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await harness.revocations(of: refreshToken) == 1)
        #expect(harness.emulator.revocationCount(token: refreshToken) == 1)
        #expect(try await harness.metric("upgrade_apple_revocations_pending") == 0)
        #expect(try await harness.metric("upgrade_apple_revocations_sent_total") == 1)

        let state = try await server.get("/v1/apple/credential-state?user=\(sub)")
        #expect(state["state"] == "notFound")
        let again = try await harness.delete("alice", token: harness.supportToken)
        #expect(again.status == 404 && again.problem == "account-not-found")
        // The username is free again.
        try server.addAccount("alice", password: "another")

        let tombstone = try #require(
            try server.application.store.read { try $0.auditTrail(accountID: accountID, limit: 100) }.last
        )
        #expect(tombstone.event == "account.deleted")
        #expect(tombstone.detail == ["by": "support", "appleRevocation": "queued", "credentialKind": "appleOnly"])
        #expect(!"\(tombstone)".contains(sub) && !"\(tombstone)".contains("alice"))
        try harness.expectNoSecrets(
            [refreshToken, "pw-alice"],
            bodies: [deleted, again, state],
            accountIDs: [accountID]
        )
    }

    @Test("Apple answering 429, then 503: pending, then the worker revokes it once", arguments: Backend.all)
    func revocationWaitsThroughFaults(_ backend: Backend) async throws {
        let harness = try Harness(backend, revocationIntervalMilliseconds: 50)
        let server = harness.server
        let (accountID, _, refreshToken) = try await harness.converted("alice")
        let faults = try await harness.emulatorCall(
            "POST",
            "/emulator/faults",
            ["endpoint": "/auth/revoke", "statuses": [429, 503, 503]]
        )
        #expect(faults["pending"] as? [Int] == [429, 503, 503])

        let deleted = try await harness.delete("alice", token: harness.supportToken)
        #expect(deleted.status == 200 && deleted["appleRevocation"] == "pending")
        #expect(try await harness.metric("upgrade_apple_revocations_pending") == 1)
        #expect(try await harness.revocations(of: refreshToken) == 0)

        // Each retry falls due as the clock moves (the waits are 1, 2 and 4 s, less jitter); the
        // worker sends it on its next pass. Moved by seconds, not hours: the client secret is signed
        // with the real time and the emulator checks it against the moved one.
        var pending = 1
        for _ in 0..<60 where pending > 0 {
            server.clock.advance(5)
            try await Task.sleep(for: .milliseconds(100))
            pending = try server.application.store.read { try $0.pendingAppleRevocationCount() }
        }
        #expect(pending == 0)
        #expect(harness.emulator.pendingFaults(endpoint: AppleIDEmulator.revokePath).isEmpty)
        #expect(try await harness.revocations(of: refreshToken) == 1)
        #expect(try await harness.metric("upgrade_apple_revocations_pending") == 0)
        #expect(try await harness.metric("upgrade_apple_revocations_sent_total") == 1)
        #expect(try await harness.metric("upgrade_apple_revocation_retries_total") == 3)
        try harness.expectNoSecrets([refreshToken, "pw-alice"], bodies: [deleted], accountIDs: [accountID])
    }

    @Test("a password account: deleted with nothing to revoke; admin 401 missing, 401 wrong, 403 scope, 404 unknown")
    func passwordAccountAndRefusals() async throws {
        let harness = try Harness(.sqlite)
        let server = harness.server
        try server.addAccount("bob", password: "pw-bob")
        let missing = try await harness.delete("bob")
        #expect(missing.status == 401 && missing.problem == "unauthorized")
        #expect(missing.headers["www-authenticate"]?.hasPrefix("Bearer") == true)
        let wrong = try await harness.delete("bob", token: AdminToken.generate())
        #expect(wrong.status == 401 && wrong.problem == "unauthorized")
        let scope = try await harness.delete("bob", token: harness.backendToken)
        #expect(scope.status == 403 && scope.problem == "insufficient-scope")
        let unknown = try await harness.delete("nobody", token: harness.supportToken)
        #expect(unknown.status == 404 && unknown.problem == "account-not-found")
        let bob = try #require(try server.application.store.read { try $0.account(username: Username("bob")) })

        let deleted = try await harness.delete("BOB", token: harness.supportToken)
        #expect(deleted.status == 200)
        #expect(deleted["accountId"] == bob.id && deleted["appleRevocation"] == "none")
        #expect(try server.application.store.read { try $0.account(id: bob.id) } == nil)
        try harness.expectNoSecrets(
            ["pw-bob"],
            bodies: [missing, wrong, scope, unknown, deleted],
            accountIDs: [bob.id]
        )
    }
}

/// `upgrade-cli accounts delete` as a process, against a development server's database and emulator.
@Suite("upgrade-cli accounts delete")
struct AccountsDeleteCLITests {
    /// The development team's key as a `.p8` file, and the environment that points the CLI at the
    /// server's database and emulator.
    static func appleEnvironment(_ harness: AccountDeletionEndToEndTests.Harness) throws -> [String: String] {
        let keyFile = harness.directory.appendingPathComponent("AuthKey.p8")
        try writeOwnerOnly(harness.server.development.privateKey.pemRepresentation, to: keyFile.path)
        return [
            "UPGRADE_DB": harness.server.database.url,
            "APPLE_TEAM_ID": DevelopmentEnvironment.teamID, "APPLE_KEY_ID": DevelopmentEnvironment.keyID,
            "APPLE_PRIVATE_KEY_FILE": keyFile.path, "APPLE_CLIENT_IDS": DevelopmentEnvironment.clientID,
            "APPLE_BASE_URL": harness.server.development.baseURL.absoluteString,
        ]
    }

    @Test(
        "deletes and revokes at once; refuses without --yes off a terminal; unknown user exit 1",
        arguments: Backend.all
    )
    func deleteAndRevoke(_ backend: Backend) async throws {
        let harness = try AccountDeletionEndToEndTests.Harness(backend)
        let (accountID, _, refreshToken) = try await harness.converted("alice")
        let environment = try Self.appleEnvironment(harness)

        let refused = try runCLI(["accounts", "delete", "alice", "--dev"], environment: environment)
        #expect(refused.status == 2 && refused.stderr.hasPrefix("error: refusing to delete without --yes"))
        #expect(try harness.server.application.store.read { try $0.account(id: accountID) } != nil)

        let deleted = try runCLI(["accounts", "delete", "alice", "--yes", "--dev"], environment: environment)
        #expect(deleted.status == 0, "\(deleted.stderr)")
        #expect(deleted.stdout == "deleted account alice (id \(accountID)); appleRevocation: done\n")
        #expect(harness.emulator.revocationCount(token: refreshToken) == 1)
        #expect(try harness.server.application.store.read { try $0.account(id: accountID) } == nil)

        let unknown = try runCLI(["accounts", "delete", "alice", "--yes", "--dev"], environment: environment)
        #expect(unknown.status == 1 && unknown.stderr.contains("no account named 'alice'"))
        for output in [refused, deleted, unknown] {
            #expect(!(output.stdout + output.stderr).contains(refreshToken))
        }
    }

    @Test("without the Apple configuration: pending, said so; serve's worker revokes it later", arguments: Backend.all)
    func pendingUntilServeSendsIt(_ backend: Backend) async throws {
        let harness = try AccountDeletionEndToEndTests.Harness(backend, revocationIntervalMilliseconds: 50)
        let (accountID, _, refreshToken) = try await harness.converted("alice")
        // The worker must not race the CLI for this test's point: stop it while the CLI runs.
        harness.server.application.revocationWorker.stop()
        let deleted = try runCLI(
            ["accounts", "delete", "alice", "--yes"],
            environment: ["UPGRADE_DB": harness.server.database.url]
        )
        #expect(deleted.status == 0, "\(deleted.stderr)")
        #expect(deleted.stdout.hasPrefix("deleted account alice (id \(accountID)); appleRevocation: pending ("))
        #expect(harness.emulator.revocationCount(token: refreshToken) == 0)
        #expect(try harness.server.application.store.read { try $0.pendingAppleRevocationCount() } == 1)

        harness.server.application.revocationWorker.start()
        var pending = 1
        for _ in 0..<50 where pending > 0 {
            // The CLI queued it at the real time, which the server's test clock may trail.
            harness.server.clock.advance(1)
            try await Task.sleep(for: .milliseconds(100))
            pending = try harness.server.application.store.read { try $0.pendingAppleRevocationCount() }
        }
        #expect(pending == 0)
        #expect(harness.emulator.revocationCount(token: refreshToken) == 1)
    }
}
