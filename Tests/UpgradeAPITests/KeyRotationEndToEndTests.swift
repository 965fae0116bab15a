import Foundation
import Glibc
import Synchronization
import Testing
import UpgradeTestSupport

@testable import UpgradeAPI
@testable import UpgradeEngine

/// The sealing key rotated end to end as README, "Rotating the sealing key", tells an operator: a
/// new key added in front of the old one and `serve` reloaded with SIGHUP, `keys reseal` killed twice
/// and run again to the end, the old key removed and `serve` reloaded again. TOTP step-ups and
/// deletions (whose Apple revocation opens the sealed refresh token) run before, during and after,
/// and none of them may fail.
@Suite("Rotating the sealing key under load")
struct KeyRotationEndToEndTests {
    /// TOTP accounts sealed under the old key before the rotation, and converted accounts whose
    /// refresh tokens are.
    static let totpAccounts = 60
    static let convertedAccounts = 24

    @Test(
        "add a key and SIGHUP, reseal killed twice, remove the old key and SIGHUP: every step-up and revocation works throughout",
        .timeLimit(.minutes(3)),
        arguments: Backend.all
    )
    func rotation(_ backend: Backend) async throws {
        let database: String
        var drop: (@Sendable () -> Void)?
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent(
            "siwa-rotation-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        switch backend {
        case .sqlite:
            database = "sqlite:" + scratch.appendingPathComponent("upgrade.db").path
        case .postgres:
            guard ServePostgres.isAvailable else { return }
            let created = try ServePostgres.createDatabase()
            database = created.url
            drop = created.drop
        }
        defer { drop?() }

        let tokens = scratch.appendingPathComponent("admin-tokens").path
        let support = try AdminTokenFile.add(name: "support", scopes: [.accounts], path: tokens, now: 1)
        let fixture = try await ServeFixture(database: database, environment: ["UPGRADE_ADMIN_TOKENS_FILE": tokens])
        defer { fixture.stop() }
        let keyFile = try #require(fixture.environment["UPGRADE_SECRET_KEY_FILE"])
        let oldKey = [UInt8](try Data(contentsOf: URL(fileURLWithPath: keyFile)))
        let newKey = SecureRandom.bytes(32)
        let oldBox = try SecretBox(key: oldKey)

        // Before: TOTP secrets sealed under the old key (id `0`: today's raw 32-byte file), and
        // conversions whose refresh tokens are sealed under it.
        let now = Int64(Date().timeIntervalSince1970)
        var totp: [(username: String, secret: [UInt8])] = []
        for index in 0..<Self.totpAccounts {
            let username = "totp\(index)"
            let account = try fixture.addAccount(username)
            let secret = SecureRandom.bytes(20)
            try fixture.store.write { tx in
                try tx.upsertTOTPEnrollment(
                    TOTPEnrollmentRecord(
                        accountID: account.id,
                        secretCiphertext: oldBox.seal(
                            secret,
                            context: UpgradeService.totpContext(accountID: account.id)
                        ),
                        algorithm: .sha1,
                        digits: 6,
                        period: 30,
                        lastAcceptedStep: nil,
                        createdAt: now
                    )
                )
            }
            totp.append((username, secret))
        }
        let base = try await fixture.startServe()
        let server = try #require(fixture.servers.first)
        var converted: [String] = []
        for index in 0..<Self.convertedAccounts {
            converted.append(try await Self.convert(fixture, base, "linked\(index)"))
        }
        #expect(try Self.keyIDs(fixture.store) == ["0"], "everything starts under key 0")

        let load = RotationLoad(base: base, support: support, totp: totp, converted: converted)
        // Before the rotation.
        try await load.round()

        // 1. The new key first, the old one still listed; serve reloaded.
        try Self.writeKeyring(keyFile, [("k2", newKey), ("0", oldKey)])
        try await Self.reload(server)
        try await load.round()
        converted.append(try await Self.convert(fixture, base, "linked-after-reload"))
        #expect(try Self.keyIDs(fixture.store).contains("k2"), "new values are sealed under the newest key")

        // 2. Reseal, killed twice, then to the end, with step-ups and deletions running meanwhile.
        let background = Task { try await load.run() }
        var kills = 0
        var finished = false
        var environment = fixture.environment
        environment["UPGRADE_SECRET_KEY_FILE"] = keyFile
        // A killed run's lease lapses after 2 s; until then a rerun says the job is already running.
        environment["UPGRADE_JOB_LEASE_SECONDS"] = "2"
        for _ in 0..<40 where !finished {
            let reseal = try ServeFixture.Running(
                [],
                command: ["keys", "reseal", "--batch", "2"],
                environment: environment
            )
            if kills < 2 {
                // Killed once it has committed a batch.
                let deadline = ContinuousClock.now + .seconds(20)
                while reseal.process.isRunning && !reseal.output.text.contains(" re-sealed")
                    && ContinuousClock.now < deadline
                {
                    try await Task.sleep(for: .milliseconds(2))
                }
                if reseal.process.isRunning {
                    kill(reseal.process.processIdentifier, SIGKILL)
                    reseal.process.waitUntilExit()
                    kills += 1
                    continue
                }
            }
            let status = await reseal.exitStatus()
            // Read to the end of both pipes: what the run wrote just before it exited may not
            // have been read yet when its exit is seen.
            let (output, errors) = (await reseal.output.all(), await reseal.errors.all())
            if status == 0 {
                finished = kills == 2
                #expect(finished, "the reseal ended before it could be killed twice")
                #expect(
                    output.contains("safe to remove from the keyring: 0"),
                    "\(output)"
                )
                break
            }
            // The lease of a killed run is still held until it lapses, or a value changed under
            // the reseal (a deletion queued a revocation): either way, run it again.
            #expect(
                errors.contains("already running") || output.contains("changed meanwhile"),
                "exit \(status.map(String.init) ?? "none") \(output) \(errors)"
            )
            try await Task.sleep(for: .milliseconds(500))
        }
        #expect(finished, "the reseal did not finish")
        load.stop()
        try await background.value
        #expect(try Self.keyIDs(fixture.store) == ["k2"], "nothing is left under the old key")

        // 3. The old key removed; serve reloaded; everything still opens.
        try Self.writeKeyring(keyFile, [("k2", newKey)])
        try await Self.reload(server)
        try await load.round()
        converted.append(try await Self.convert(fixture, base, "linked-after-removal"))
        let counts = load.counts
        #expect(counts.failures.isEmpty, "\(counts.failures.prefix(5))")
        #expect(counts.stepUps >= 4 && counts.deletions >= 4, "\(counts)")
        #expect(server.process.isRunning, "never restarted")
    }

    /// The key ids of every sealed value in the database.
    static func keyIDs(_ store: any UpgradeStore) throws -> Set<String> {
        Set(try store.read { try $0.sealedValueCounts() }.filter { $0.count > 0 }.map(\.keyID))
    }

    /// Replaces the keyring file (mode 0600) in one rename, as an operator's tooling would.
    static func writeKeyring(_ path: String, _ keys: [(String, [UInt8])]) throws {
        let text = keys.map { "\($0.0) \(Data($0.1).base64EncodedString())\n" }.joined()
        let temporary = path + ".new"
        _ = FileManager.default.createFile(
            atPath: temporary,
            contents: Data(text.utf8),
            attributes: [.posixPermissions: 0o600]
        )
        guard rename(temporary, path) == 0 else { throw POSIXError(.EIO) }
    }

    /// Sends SIGHUP and waits (up to 10 s) for `serve` to say it reloaded.
    static func reload(_ server: ServeFixture.Running) async throws {
        let before = server.errors.text.components(separatedBy: "configuration reloaded").count
        kill(server.process.processIdentifier, SIGHUP)
        let deadline = ContinuousClock.now + .seconds(10)
        while server.errors.text.components(separatedBy: "configuration reloaded").count == before {
            try #require(ContinuousClock.now < deadline, "serve did not reload: \(server.errors.text.suffix(500))")
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Converts a new password account through `base`; its username.
    static func convert(_ fixture: ServeFixture, _ base: String, _ username: String) async throws -> String {
        try fixture.addAccount(username)
        let appleUser = try fixture.emulator.createUser(email: "\(username)@example.com")
        let started = try await fixture.start(base, username)
        try #require(started.status == 201, "\(started)")
        let id = try #require(started.json["id"])
        let done = try await ServeFixture.send(
            "POST",
            base + "/v1/upgrades/\(id)/apple-credential",
            try fixture.credential(for: started, appleUser: appleUser)
        )
        try #require(done.status == 200 && done.json["status"] == "completed", "\(done)")
        return username
    }
}

/// Step-ups of the TOTP accounts and deletions of the converted ones, each account used once,
/// counted; any answer but the expected one is a failure.
final class RotationLoad: Sendable {
    struct Counts: Sendable, CustomStringConvertible {
        var stepUps = 0
        var deletions = 0
        var failures: [String] = []
        var description: String { "\(stepUps) step-ups, \(deletions) deletions, \(failures.count) failures" }
    }

    private struct State {
        var totp: [(username: String, secret: [UInt8])]
        var converted: [String]
        var counts = Counts()
        var stopped = false
    }

    let base: String
    let support: String
    private let state: Mutex<State>

    init(base: String, support: String, totp: [(username: String, secret: [UInt8])], converted: [String]) {
        self.base = base
        self.support = support
        state = Mutex(State(totp: totp, converted: converted))
    }

    var counts: Counts { state.withLock { $0.counts } }
    func stop() { state.withLock { $0.stopped = true } }

    /// One step-up and one deletion.
    func round() async throws {
        try await stepUp()
        try await delete()
    }

    /// Rounds until `stop()`, or until the accounts run out.
    func run() async throws {
        while !state.withLock({ $0.stopped }) {
            guard try await stepUp(), try await delete() else { return }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    private func fail(_ what: String) { state.withLock { $0.counts.failures.append(what) } }

    /// Starts an upgrade of an unused TOTP account and steps it up with its current code.
    @discardableResult
    func stepUp() async throws -> Bool {
        guard let (username, secret) = state.withLock({ $0.totp.popLast() }) else { return false }
        let started = try await ServeFixture.send(
            "POST",
            base + "/v1/upgrades",
            ["username": username, "password": "pw", "serviceIdentifier": "s"]
        )
        guard started.status == 201, started.json["status"] == "stepUpRequired", let id = started.json["id"] else {
            fail("\(username): start \(started.status) \(started.json)")
            return true
        }
        let counter = UInt64(Date().timeIntervalSince1970) / 30
        let code = TOTP.code(secret: secret, parameters: try TOTPParameters(), counter: counter)
        let stepped = try await ServeFixture.send("POST", base + "/v1/upgrades/\(id)/step-up", ["code": code])
        if stepped.status == 200 && stepped.json["status"] == "awaitingAppleCredential" {
            state.withLock { $0.counts.stepUps += 1 }
        } else {
            fail("\(username): step-up \(stepped.status) \(stepped.json)")
        }
        return true
    }

    /// Deletes an unused converted account; Apple's revocation must be done at once, which means
    /// its refresh token opened.
    @discardableResult
    func delete() async throws -> Bool {
        guard let username = state.withLock({ $0.converted.popLast() }) else { return false }
        let deleted = try await ServeFixture.send(
            "DELETE",
            base + "/v1/admin/accounts/\(username)",
            headers: ["Authorization": "Bearer \(support)"]
        )
        if deleted.status == 200 && deleted.json["appleRevocation"] == "done" {
            state.withLock { $0.counts.deletions += 1 }
        } else {
            fail("\(username): delete \(deleted.status) \(deleted.json)")
        }
        return true
    }
}
