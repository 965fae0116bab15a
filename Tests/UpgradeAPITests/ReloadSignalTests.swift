import Foundation
import Glibc
import Testing
import UpgradeAPI
import UpgradeTestSupport

@testable import AppleEmulator
@testable import UpgradeEngine

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `SIGHUP` to a real `upgrade-cli serve` process: it keeps serving, switches the Apple key (the
/// next call to Apple carries a client secret signed by the new key under its kid, which the
/// emulator verifies) and the admin tokens, and a bad file afterwards changes nothing.
@Suite("SIGHUP reloads a running serve")
struct ReloadSignalTests {
    static let newKeyID = "KEY7654321"

    static func admin(_ base: String, _ token: String) async throws -> Int {
        var request = URLRequest(url: URL(string: base + "/v1/admin/accounts/nobody")!, timeoutInterval: 20)
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    /// Upgrades `username` through the emulator; whether it completed.
    static func convert(_ fixture: ServeFixture, _ base: String, _ username: String) async throws -> Bool {
        try fixture.addAccount(username)
        let appleUser = try fixture.emulator.createUser(email: "\(username)@example.com")
        let started = try await fixture.start(base, username)
        let id = try #require(started.json["id"])
        let done = try await ServeFixture.send(
            "POST",
            base + "/v1/upgrades/\(id)/apple-credential",
            try fixture.credential(for: started, appleUser: appleUser)
        )
        return done.status == 200 && done.json["status"] == "completed"
    }

    static func eventually(_ condition: () async throws -> Bool) async rethrows -> Bool {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return try await condition()
    }

    @Test("SIGHUP switches the Apple key and admin tokens without a restart; a bad file then changes nothing")
    func sighup() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sighup-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let tokens = directory.appendingPathComponent("admin-tokens").path
        let oldToken = try AdminTokenFile.add(name: "old-ops", scopes: [.accounts], path: tokens, now: 1)
        let keyIDFile = directory.appendingPathComponent("apple-key-id").path
        try (ServeFixture.keyID + "\n").write(toFile: keyIDFile, atomically: true, encoding: .utf8)
        let database = "sqlite:" + directory.appendingPathComponent("upgrade.db").path
        let fixture = try await ServeFixture(
            database: database,
            environment: [
                "UPGRADE_ADMIN_TOKENS_FILE": tokens, "APPLE_KEY_ID": "", "APPLE_KEY_ID_FILE": keyIDFile,
            ]
        )
        defer { fixture.stop() }
        let base = try await fixture.startServe()
        let serve = try #require(fixture.servers.first)
        #expect(try await Self.convert(fixture, base, "alice"))
        #expect(fixture.apple.clientSecretKeyIDs.last == ServeFixture.keyID)
        #expect(try await Self.admin(base, oldToken) == 404)

        // The operator registers a new key with Apple, puts it and its id in place, swaps tokens.
        let newKey = P256PrivateKey()
        try fixture.emulator.registerKey(teamID: ServeFixture.teamID, keyID: Self.newKeyID, publicKey: newKey.publicKey)
        let keyFile = try #require(fixture.environment["APPLE_PRIVATE_KEY_FILE"])
        try writeOwnerOnly(newKey.pemRepresentation, to: keyFile)
        try (Self.newKeyID + "\n").write(toFile: keyIDFile, atomically: true, encoding: .utf8)
        let newToken = try AdminTokenFile.add(name: "new-ops", scopes: [.accounts], path: tokens, now: 2)
        try AdminTokenFile.remove(name: "old-ops", path: tokens)
        kill(serve.process.processIdentifier, SIGHUP)
        #expect(await Self.eventually { serve.errors.text.contains("configuration reloaded") })
        #expect(serve.process.isRunning, "SIGHUP stopped serve")
        let reloaded = serve.errors.text
        #expect(reloaded.contains("Apple key: \(Self.newKeyID) (was \(ServeFixture.keyID))"), "\(reloaded)")
        #expect(try await Self.admin(base, oldToken) == 401)
        #expect(try await Self.admin(base, newToken) == 404)
        #expect(try await Self.convert(fixture, base, "bob"))
        #expect(fixture.apple.clientSecretKeyIDs.last == Self.newKeyID, "\(fixture.apple.clientSecretKeyIDs)")

        // A token file others can read: refused whole, one line, the running configuration kept.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: tokens)
        try (ServeFixture.keyID + "\n").write(toFile: keyIDFile, atomically: true, encoding: .utf8)
        kill(serve.process.processIdentifier, SIGHUP)
        #expect(await Self.eventually { serve.errors.text.contains("reload refused") })
        #expect(serve.process.isRunning)
        let refusals = serve.errors.text.split(separator: "\n").filter { $0.contains("reload refused") }
        #expect(refusals.count == 1 && refusals[0].contains(tokens) && refusals[0].contains("chmod 600"))
        #expect(try await Self.admin(base, newToken) == 404)
        #expect(try await Self.convert(fixture, base, "carol"))
        #expect(fixture.apple.clientSecretKeyIDs.last == Self.newKeyID, "the key id file was not applied alone")
    }

    @Test("SIGHUP while serve is still starting (a slow database connect) does not end the process")
    func sighupDuringStartUp() throws {
        // A listener that never accepts: the kernel completes the handshake, and no answer comes,
        // so the connect waits out its connect_timeout.
        let listener = try LoopbackListener()
        let port = listener.port
        // Held open to the end of the test, not just to its last use.
        defer { withExtendedLifetime(listener) {} }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: try UpgradeCLI.executable())
        process.arguments = ["serve", "--dev"]
        process.environment = [
            "PATH": "/usr/bin:/bin",
            "UPGRADE_DB": "postgres://upgrade:secret@127.0.0.1:\(port)/upgrade?connect_timeout=4",
            "UPGRADE_LISTEN": "127.0.0.1:0", "UPGRADE_DEV_EMULATOR_PORT": "0",
        ]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        // Started as a service manager or a shell starts it: SIGHUP neither blocked nor ignored
        // (the mask survives exec, and this runner's threads may block it).
        var hangUp = sigset_t()
        var saved = sigset_t()
        sigemptyset(&hangUp)
        sigaddset(&hangUp, SIGHUP)
        pthread_sigmask(SIG_UNBLOCK, &hangUp, &saved)
        defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
        try process.run()
        Thread.sleep(forTimeInterval: 1.5)
        #expect(process.isRunning, "serve ended before the connect timed out")
        kill(process.processIdentifier, SIGHUP)
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit, "serve was ended by the signal: \(text)")
        #expect(process.terminationStatus == 2 && text.contains("UPGRADE_DB"), "\(text)")
        #expect(!text.contains("secret"))
    }
}
