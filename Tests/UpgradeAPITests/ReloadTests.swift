import Foundation
import Testing
import UpgradeAPI
import UpgradeEngine
import UpgradeTestSupport

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Reloading the configuration in process (`UpgradeApplication.reload()`, what `SIGHUP` calls):
/// all or nothing, what it swaps, and requests in flight finishing under the configuration they
/// started with (README, "Reloading configuration: SIGHUP").
@Suite("Reload: all or nothing, swapped between requests")
struct ReloadTests {
    /// Writes `text` to `path` with `mode`, replacing the file.
    static func write(_ text: String, to path: String, mode: Int = 0o600) throws {
        try? FileManager.default.removeItem(atPath: path)
        #expect(
            FileManager.default.createFile(
                atPath: path,
                contents: Data(text.utf8),
                attributes: [.posixPermissions: mode]
            )
        )
    }

    static func newSecret() -> String { "whsec_" + Data(SecureRandom.bytes(32)).base64EncodedString() }

    static func admin(_ server: DevServer, _ token: String) async throws -> Int {
        try await server.send(
            "GET",
            "/v1/admin/accounts/nobody",
            body: nil,
            contentType: nil,
            headers: ["Authorization": "Bearer \(token)"]
        ).status
    }

    static func changePassword(
        _ server: DevServer,
        _ username: String,
        from old: String,
        to new: String
    ) async throws -> DevServer.Response {
        try await server.post(
            "/v1/password-changes",
            ["username": username, "password": old, "newPassword": new, "serviceIdentifier": "example.com"]
        )
    }

    @Test("a bad file keeps the whole running configuration and logs one line; a good reload swaps tokens and rules")
    func allOrNothing() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("reload-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let tokens = directory.appendingPathComponent("admin-tokens").path
        let rules = directory.appendingPathComponent("password-rules").path
        let webhookSecret = directory.appendingPathComponent("webhook-secret").path
        let oldToken = try AdminTokenFile.add(name: "old-ops", scopes: [.accounts], path: tokens, now: 1)
        try Self.write("# the default\n\(PasswordRules.defaultText)\n", to: rules)
        let secretText = Self.newSecret()
        try Self.write(secretText + "\n", to: webhookSecret)
        let server = try DevServer(
            environment: [
                "UPGRADE_ADMIN_TOKENS_FILE": tokens, "UPGRADE_PASSWORD_RULES_FILE": rules,
                // Nothing listens there: only the secrets matter here.
                "UPGRADE_WEBHOOK_URL": "http://127.0.0.1:9/hooks", "UPGRADE_WEBHOOK_SECRET_FILE": webhookSecret,
            ]
        )
        #expect(try await Self.admin(server, oldToken) == 404)

        // The new token file and stricter rules are fine, but the webhook secret file is readable by
        // others: nothing at all changes.
        let newToken = try AdminTokenFile.add(name: "new-ops", scopes: [.accounts], path: tokens, now: 2)
        try AdminTokenFile.remove(name: "old-ops", path: tokens)
        try Self.write("minlength: 40; required: lower; required: upper; required: digit;\n", to: rules)
        try Self.write(Self.newSecret() + "\n" + secretText + "\n", to: webhookSecret, mode: 0o644)
        let linesBefore = server.logs.lines.withLock { $0.count }
        guard case .refused(let problems) = server.application.reload() else {
            Issue.record("a group-readable secret file was accepted")
            return
        }
        #expect(problems.count == 1 && problems[0].contains(webhookSecret) && problems[0].contains("chmod 600"))
        let logged = server.logs.lines.withLock { Array($0[linesBefore...]) }
        #expect(logged.count == 1 && logged[0].contains("reload refused") && logged[0].contains(webhookSecret))
        #expect(!logged[0].contains(secretText.dropFirst(6).prefix(12)))
        #expect(try await Self.admin(server, oldToken) == 404)
        #expect(try await Self.admin(server, newToken) == 401)
        #expect(server.application.webhooks.endpoint?.secrets.count == 1)
        try server.addAccount("paul", password: "Old-password-1")
        let short = try await Self.changePassword(server, "paul", from: "Old-password-1", to: "abcdEf-ghijK1-lmnoPq")
        #expect(short.status == 201, "the start-up rules still apply: \(short.json)")

        // Fixed: everything swaps at once, and one line says what changed.
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: webhookSecret)
        guard case .applied(let summary) = server.application.reload() else {
            Issue.record("a valid configuration was refused")
            return
        }
        #expect(summary.contains("added new-ops") && summary.contains("removed old-ops"), "\(summary)")
        #expect(summary.contains("webhook secrets: 2 (were 1)") && summary.contains("password rules: changed"))
        let applied = server.logs.lines.withLock { $0.last ?? "" }
        #expect(applied.contains("configuration reloaded") && !applied.contains(secretText.dropFirst(6).prefix(12)))
        #expect(try await Self.admin(server, oldToken) == 401)
        #expect(try await Self.admin(server, newToken) == 404)
        #expect(server.application.webhooks.endpoint?.secrets.count == 2)
        let refused = try await Self.changePassword(server, "paul", from: "abcdEf-ghijK1-lmnoPq", to: "Short-pass-2")
        #expect(refused.status == 422 && refused.problem == "password-policy", "\(refused.json)")
        let long = "Long-enough-password-for-the-new-rules-42"
        #expect(try await Self.changePassword(server, "paul", from: "abcdEf-ghijK1-lmnoPq", to: long).status == 201)
    }

    @Test(
        "webhooks during a secret rotation verify at a receiver holding only the old secret, then only the new one"
    )
    func webhookRotation() async throws {
        let (receiver, server, _) = try WebhookReceiver.withServer(.sqlite)
        defer { receiver.stop() }
        let oldSecret = receiver.secretText
        let newSecret = Self.newSecret()
        try server.addAccount("paul", password: "Password-0-start")
        var password = "Password-0-start"
        var delivered = 0
        func change(_ step: Int) async throws {
            let next = "Password-\(step)-rotated"
            let changed = try await Self.changePassword(server, "paul", from: password, to: next)
            #expect(changed.status == 201)
            password = next
            delivered += 1
            let expected = delivered
            #expect(await WebhookReceiver.eventually { receiver.deliveries().verified.count >= expected })
            #expect(receiver.deliveries().bad == 0, "step \(step): a delivery did not verify")
        }
        try await change(1)  // server: old; receiver: old
        try Self.write("# rotating\n\(newSecret)\n\(oldSecret)\n", to: receiver.secretFile)
        #expect(server.application.reload() == .applied(summary: "admin tokens: 1; webhook secrets: 2 (were 1)"))
        try await change(2)  // server: new and old; receiver: old only
        try receiver.hold(newSecret)
        try await change(3)  // server: new and old; receiver: new only
        try Self.write(newSecret + "\n", to: receiver.secretFile)
        #expect(server.application.reload() == .applied(summary: "admin tokens: 1; webhook secrets: 1 (were 2)"))
        try await change(4)  // server: new; receiver: new
        let (verified, bad) = receiver.deliveries()
        #expect(verified.count == 4 && bad == 0)
    }

    @Test("a request in flight during a reload finishes under the configuration it started with")
    func inFlight() async throws {
        let password = "alice's legacy password"
        let legacy = try LegacySystem(table: ["alice": .init(password: password), "bob": .init(password: password)])
        defer { legacy.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("reload-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let tokens = directory.appendingPathComponent("admin-tokens").path
        let admin = try AdminTokenFile.add(name: "ops", scopes: [.provisioning], path: tokens, now: 1)
        // The server's copy of the legacy secret, which the reload changes; the legacy system keeps its own.
        let secretFile = directory.appendingPathComponent("legacy-secret").path
        try Self.write(legacy.secretText + "\n", to: secretFile)
        let server = try DevServer(
            environment: [
                "UPGRADE_ADMIN_TOKENS_FILE": tokens, "UPGRADE_LEGACY_VERIFY_URL": legacy.url,
                "UPGRADE_LEGACY_VERIFY_SECRET_FILE": secretFile, "UPGRADE_LEGACY_VERIFY_TIMEOUT": "8",
            ]
        )
        for username in ["alice", "bob"] {
            let provisioned = try await server.send(
                "PUT",
                "/v1/admin/accounts/\(username)",
                body: try JSONSerialization.data(withJSONObject: ["legacyPassword": true]),
                contentType: "application/json",
                headers: ["Authorization": "Bearer \(admin)"]
            )
            #expect(provisioned.status == 201)
        }
        try legacy.setMode(.stall, seconds: 2)
        async let started = server.post(
            "/v1/upgrades",
            ["username": "alice", "password": password, "serviceIdentifier": "example.com"]
        )
        // The legacy system holds alice's call; the server's secret changes under it.
        #expect(await WebhookReceiver.eventually { (try? legacy.requests().count) == 1 })
        try Self.write(Self.newSecret() + "\n", to: secretFile)
        #expect(server.application.reload() == .applied(summary: "admin tokens: 1; legacy-verify secrets: 1 (were 1)"))
        let alice = try await started
        #expect(alice.status == 201, "the call in flight was signed with the secret it started with: \(alice.json)")
        try legacy.setMode(.normal)
        let bob = try await server.post(
            "/v1/upgrades",
            ["username": "bob", "password": password, "serviceIdentifier": "example.com"]
        )
        #expect(bob.status == 503 && bob.problem == "legacy-unavailable", "later calls sign with the new secret")
        let requests = try legacy.requests()
        #expect(requests.map(\.verified) == [true, false], "\(requests)")
    }

    static func keyLine(_ id: String) -> String { "\(id) \(Data(SecureRandom.bytes(32)).base64EncodedString())" }

    /// A development server on a keyring file that lists one key, `k1`: the file, the key's line,
    /// and the server.
    struct KeyringServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("reload-\(UUID().uuidString)")
        let keys: String
        let old = ReloadTests.keyLine("k1")
        let server: DevServer

        init() throws {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            keys = directory.appendingPathComponent("keys").path
            try ReloadTests.write(old + "\n", to: keys)
            server = try DevServer(environment: ["UPGRADE_SECRET_KEY_FILE": keys])
        }

        func remove() { try? FileManager.default.removeItem(at: directory) }
    }

    @Test("a keyring that puts other key bytes under a running key's id is refused, and what it sealed still opens")
    func changedKeyUnderSameID() throws {
        let setup = try KeyringServer()
        defer { setup.remove() }
        let (keys, old, server) = (setup.keys, setup.old, setup.server)
        let sealed = server.application.secrets.seal([1, 2, 3], context: "totp-secret:x")

        // The id kept, the key regenerated: every value under k1 would stop opening.
        let replacement = Self.keyLine("k1")
        try Self.write(Self.keyLine("k2") + "\n" + replacement + "\n", to: keys)
        guard case .refused(let problems) = server.application.reload() else {
            Issue.record("a keyring that changed k1's key was accepted")
            return
        }
        #expect(problems.count == 1 && problems[0].contains("'k1'") && problems[0].contains("new id"), "\(problems)")
        for line in [old, replacement] { #expect(!problems[0].contains(line.dropFirst(3).prefix(12))) }
        #expect(server.application.secrets.keyIDs == ["k1"])
        #expect(try server.application.secrets.open(sealed, context: "totp-secret:x") == [1, 2, 3])

        // The new key under a new id, the old line kept: accepted.
        try Self.write(Self.keyLine("k2") + "\n" + old + "\n", to: keys)
        #expect(server.application.reload() == .applied(summary: "keyring: k2,k1, newest k2 (was k1)"))
        #expect(try server.application.secrets.open(sealed, context: "totp-secret:x") == [1, 2, 3])
    }

    @Test(
        "a serve instance records its keyring's ids at start and again at once on a reload, which keys reseal and /metrics read; its row goes when it stops"
    )
    func instanceRow() async throws {
        let setup = try KeyringServer()
        defer { setup.remove() }
        let (keys, old, server) = (setup.keys, setup.old, setup.server)
        let application = server.application
        func live() throws -> [ServeInstanceRecord] {
            try RunningKeyrings.live(store: application.store, now: Int64(Date().timeIntervalSince1970))
        }
        // Written before start() returned.
        var rows = try live()
        try #require(rows.count == 1, "\(rows)")
        #expect(rows[0].id == application.instance.id && rows[0].keyIDs == ["k1"])
        #expect(rows[0].pid == Int64(getpid()) && rows[0].listen == "127.0.0.1:\(application.server.port)")
        let now = Int64(Date().timeIntervalSince1970)
        let problem = try #require(RunningKeyrings.resealProblem(keyID: "k2", instances: rows, now: now))
        #expect(problem.hasPrefix("1 running serve instance(s) cannot open values sealed under key k2: "), "\(problem)")
        #expect(problem.contains("pid \(getpid()) on 127.0.0.1:\(application.server.port) (keyring k1; seen "))
        let before = String(decoding: try await server.get("/metrics").body, as: UTF8.self)
        #expect(before.contains("\nupgrade_keyring_info{newest=\"k1\",keys=\"k1\"} 1\n"), "\(before)")

        try Self.write(Self.keyLine("k2") + "\n" + old + "\n", to: keys)
        #expect(application.reload() == .applied(summary: "keyring: k2,k1, newest k2 (was k1)"))
        rows = try live()
        #expect(rows.map(\.keyIDs) == [["k2", "k1"]], "written by the reload, not the next heartbeat")
        #expect(RunningKeyrings.resealProblem(keyID: "k2", instances: rows, now: now) == nil)
        let after = String(decoding: try await server.get("/metrics").body, as: UTF8.self)
        #expect(after.contains("\nupgrade_keyring_info{newest=\"k2\",keys=\"k2,k1\"} 1\n"), "\(after)")
        #expect(!after.contains(old.dropFirst(3).prefix(12)), "ids only, never a key")

        application.stop()
        #expect(try live().isEmpty, "a clean stop deletes the row")
    }

    @Test("a reload adding a key whose id another instance recorded with other bytes is refused")
    func addedKeyWithOtherBytes() throws {
        let setup = try KeyringServer()
        defer { setup.remove() }
        let (keys, old, server) = (setup.keys, setup.old, setup.server)

        // Another instance rotated first, to its own k2, and recorded that key's check.
        let theirs = Self.keyLine("k2")
        try Self.write(theirs + "\n" + old + "\n", to: keys)
        let theirKeys = try SecretKeyFile.load(path: keys)
        #expect(try KeyChecks.verify(store: server.application.store, secrets: theirKeys, now: 1) == nil)

        let mine = Self.keyLine("k2")
        try Self.write(mine + "\n" + old + "\n", to: keys)
        guard case .refused(let problems) = server.application.reload() else {
            Issue.record("a k2 other than the one recorded was accepted")
            return
        }
        #expect(problems.count == 1 && problems[0].contains("key 'k2' is not the key that id named"), "\(problems)")
        #expect(!problems[0].contains(mine.dropFirst(3).prefix(12)))
        #expect(server.application.secrets.keyIDs == ["k1"])

        try Self.write(theirs + "\n" + old + "\n", to: keys)
        #expect(server.application.reload() == .applied(summary: "keyring: k2,k1, newest k2 (was k1)"))
    }

    @Test(
        "with the database down, a reload that keeps every key still rotates admin tokens; one that drops a key is refused",
        .enabled(if: ServePostgres.isAvailable, .init(rawValue: ServePostgres.reason)),
        .timeLimit(.minutes(2))
    )
    func reloadDuringDatabaseOutage() async throws {
        let postgres = try CrashablePostgres()
        defer { postgres.remove() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("reload-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keys = directory.appendingPathComponent("keys").path
        let old = Self.keyLine("k1")
        try Self.write(old + "\n", to: keys)
        let tokens = directory.appendingPathComponent("admin-tokens").path
        let leaked = try AdminTokenFile.add(name: "leaked", scopes: [.accounts], path: tokens, now: 1)
        let server = try DevServer(
            environment: [
                "UPGRADE_DB": postgres.url, "UPGRADE_SECRET_KEY_FILE": keys, "UPGRADE_ADMIN_TOKENS_FILE": tokens,
                // The throttle counts wrong tokens in the database; off, a wrong one is 401 without it.
                "UPGRADE_ADMIN_THROTTLE": "off",
            ]
        )
        #expect(try await Self.admin(server, leaked) == 404)
        try postgres.kill()

        // The leaked token is removed and a new key added in front: nothing stored can become
        // unopenable, so the database is not needed.
        try AdminTokenFile.remove(name: "leaked", path: tokens)
        try Self.write(Self.keyLine("k2") + "\n" + old + "\n", to: keys)
        guard case .applied(let summary) = server.application.reload() else {
            Issue.record("a reload that drops no key was refused while the database was down")
            return
        }
        #expect(summary.contains("removed leaked") && summary.contains("newest k2"), "\(summary)")
        #expect(try await Self.admin(server, leaked) == 401)

        // Dropping k1 needs the database's count: refused while it cannot be reached.
        try Self.write(Self.keyLine("k3") + "\n", to: keys)
        guard case .refused(let problems) = server.application.reload() else {
            Issue.record("a keyring that drops a key was accepted unchecked")
            return
        }
        #expect(problems.count == 1 && problems[0].contains("cannot check the keyring"), "\(problems)")
        #expect(server.application.secrets.keyIDs == ["k2", "k1"])
    }
}
