import AppleEmulator
import Foundation
import Glibc
import Synchronization
import Testing
import UpgradeAPI
import UpgradeEngine
import UpgradeTestSupport

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Apple's endpoints (the emulator) with a token endpoint the test can hold, so that a server's
/// conversions stay in flight until the test kills it.
final class HoldingApple: HTTPHandler {
    let emulatorHandler: AppleIDEmulatorHandler
    private let holding = Mutex(true)
    private let held = Mutex(0)
    private let release = DispatchSemaphore(value: 0)

    init(_ emulator: AppleIDEmulator) {
        emulatorHandler = AppleIDEmulatorHandler(emulator: emulator)
    }

    /// Code exchanges that arrived while held.
    var heldCount: Int { held.withLock { $0 } }

    /// Lets every held exchange and every later one through.
    func open() {
        let waiting = holding.withLock { holding -> Bool in
            defer { holding = false }
            return holding
        }
        if waiting { for _ in 0..<64 { release.signal() } }
    }

    func handle(_ request: HTTPRequest) throws -> HTTPResponse {
        if request.path == "/auth/token", holding.withLock({ $0 }) {
            held.withLock { $0 += 1 }
            // Bounded, so a failing test cannot hang the run.
            _ = release.wait(timeout: .now() + 20)
        }
        return try emulatorHandler.handle(request)
    }
}

/// A real `upgrade-cli serve` process killed with SIGKILL while conversions are in flight: nothing is
/// half converted, and after the restart every such upgrade ends `failed(conversion-interrupted)`,
/// the same for `GET`, the credential call and `cancel`; the account upgrades with a new attempt.
@Suite("Conversions interrupted by kill -9")
struct ConversionCrashTests {
    typealias Running = EmulatorCommandHTTPTests.Running
    static let teamID = "TEAMA12345"
    static let keyID = "KEY1234567"
    static let clientID = "com.example.app"
    static let conversionTimeout: Int64 = 2

    struct Answer: Sendable {
        let status: Int
        let json: [String: String]
        var problem: String? { json["type"].flatMap { $0.split(separator: "/").last.map(String.init) } }
    }

    static func send(_ method: String, _ url: String, _ body: [String: String]?) async throws -> Answer {
        var request = URLRequest(url: URL(string: url)!, timeoutInterval: 30)
        request.httpMethod = method
        if let body {
            request.httpBody = try JSONSerialization.data(withJSONObject: body)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        return Answer(
            status: (response as? HTTPURLResponse)?.statusCode ?? 0,
            json: object.compactMapValues { $0 as? String }
        )
    }

    /// Waits up to 30 s for `serve` to print where it listens; the base URL.
    static func listening(_ server: Running) async throws -> String {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let range = server.errors.text.range(
                of: #"listening on (http://127\.0\.0\.1:\d+)"#,
                options: .regularExpression
            ) {
                return String(server.errors.text[range].dropFirst("listening on ".count))
            }
            guard server.process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("serve did not start: \(server.errors.text)")
        throw CancellationError()
    }

    static func statuses(_ store: SQLiteStore, _ ids: [String]) throws -> [String] {
        try store.read { tx in try ids.map { try tx.upgradeSession(id: $0)?.status ?? "missing" } }
    }

    @Test(
        "kill -9 mid-conversion: after restart each upgrade is failed(conversion-interrupted), the accounts unchanged"
    )
    func killedMidConversion() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-crash-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        // Apple: the emulator, its token endpoint held.
        let emulator = AppleIDEmulator()
        try emulator.addTeam(Self.teamID)
        let appleKey = P256PrivateKey()
        try emulator.registerKey(teamID: Self.teamID, keyID: Self.keyID, publicKey: appleKey.publicKey)
        try emulator.addApp(clientID: Self.clientID, teamID: Self.teamID)
        let apple = HoldingApple(emulator)
        var appleConfiguration = HTTPServer.Configuration()
        appleConfiguration.port = 0
        appleConfiguration.workerCount = 24
        appleConfiguration.onEvent = { _ in }
        let appleServer = HTTPServer(configuration: appleConfiguration, handler: apple)
        try appleServer.start()
        defer {
            apple.open()
            appleServer.shutdown()
            appleServer.wait()
        }

        let keyFile = directory.appendingPathComponent("apple.p8").path
        try writeOwnerOnly(appleKey.pemRepresentation, to: keyFile)
        let secretFile = directory.appendingPathComponent("secret.key").path
        _ = FileManager.default.createFile(
            atPath: secretFile,
            contents: Data(SecureRandom.bytes(32)),
            attributes: [.posixPermissions: 0o600]
        )
        let databasePath = directory.appendingPathComponent("upgrade.db").path
        let environment = [
            "UPGRADE_DB": "sqlite:" + databasePath, "UPGRADE_LISTEN": "127.0.0.1:0",
            "APPLE_BASE_URL": "http://127.0.0.1:\(appleServer.port)", "APPLE_CLIENT_IDS": Self.clientID,
            "APPLE_TEAM_ID": Self.teamID, "APPLE_KEY_ID": Self.keyID, "APPLE_PRIVATE_KEY_FILE": keyFile,
            "UPGRADE_SECRET_KEY_FILE": secretFile, "UPGRADE_CLIENT_THROTTLE": "off",
            "UPGRADE_CONVERSION_TIMEOUT": String(Self.conversionTimeout),
        ]
        let migrate = try Running([], command: ["db", "migrate"], environment: environment)
        #expect(await migrate.exitStatus() == 0)

        // Twenty password accounts, each with an Apple user of its own.
        let count = 20
        let store = try SQLiteStore(path: databasePath)
        let hash = try PasswordHasher(parameters: .init(memoryKiB: 256, iterations: 1)).hash(password: "pw")
        let now = Int64(Date().timeIntervalSince1970)
        var appleUsers: [String] = []
        for index in 0..<count {
            appleUsers.append(try emulator.createUser(email: "user\(index)@example.com"))
            try store.write { tx in
                let account = AccountRecord(
                    id: UUID().uuidString.lowercased(),
                    username: "user\(index)",
                    credentialKind: .password,
                    createdAt: now,
                    updatedAt: now
                )
                try tx.insertAccount(account)
                try tx.upsertPasswordCredential(
                    PasswordCredentialRecord(accountID: account.id, hash: hash, format: "argon2id", updatedAt: now)
                )
            }
        }

        var server = try Running([], command: ["serve"], environment: environment)
        var base = try await Self.listening(server)
        var ids: [String] = []
        var credentials: [[String: String]] = []
        for index in 0..<count {
            let started = try await Self.send(
                "POST",
                base + "/v1/upgrades",
                ["username": "user\(index)", "password": "pw", "serviceIdentifier": "s"]
            )
            #expect(started.status == 201)
            let sheet = try emulator.authorize(
                userID: appleUsers[index],
                clientID: Self.clientID,
                nonce: started.json["nonce"],
                state: started.json["state"],
                emailMode: .hidden
            )
            ids.append(try #require(started.json["id"]))
            credentials.append([
                "identityToken": sheet.identityToken, "authorizationCode": sheet.authorizationCode,
                "state": started.json["state"] ?? "",
            ])
        }

        // Twenty credential submissions at once; Apple holds every exchange, so each stays claimed.
        let submissions = zip(ids, credentials).map { (url: base + "/v1/upgrades/\($0)/apple-credential", body: $1) }
        let inFlight = Task {
            await withTaskGroup(of: Void.self) { group in
                for submission in submissions {
                    group.addTask { _ = try? await Self.send("POST", submission.url, submission.body) }
                }
            }
        }
        // The server runs as many conversions at once as it has threads for handlers; the rest wait in
        // its queue. Kill it once the claimed ones stop growing.
        var claimed: [String] = []
        var stableSince = ContinuousClock.now
        let claimDeadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < claimDeadline {
            let now = try zip(ids, Self.statuses(store, ids)).filter { $0.1 == "converting" }.map(\.0)
            if now.count != claimed.count {
                claimed = now
                stableSince = ContinuousClock.now
            } else if !claimed.isEmpty && ContinuousClock.now - stableSince > .milliseconds(750) {
                break
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(claimed.count >= 2, "several conversions were in flight: \(claimed.count)")
        #expect(apple.heldCount == claimed.count, "each claimed conversion is waiting for Apple")
        kill(server.process.processIdentifier, SIGKILL)
        server.process.waitUntilExit()
        #expect(server.process.terminationReason == .uncaughtSignal)
        await inFlight.value

        // Nothing half done: the claimed ones still converting, the others untouched, every account still
        // a password account without an Apple link.
        let unclaimed = ids.filter { !claimed.contains($0) }
        #expect(try Self.statuses(store, claimed).allSatisfy { $0 == "converting" })
        #expect(try Self.statuses(store, unclaimed).allSatisfy { $0 == "awaitingAppleCredential" })
        let accounts = try store.read { tx in
            try (0..<count).compactMap { try tx.account(username: Username("user\($0)")) }
        }
        #expect(accounts.count == count && accounts.allSatisfy { $0.credentialKind == .password })
        #expect(try store.read { tx in try accounts.allSatisfy { try tx.appleLink(accountID: $0.id) == nil } })

        // Restarted once the claims have lapsed: the start-up sweep fails them before the first request.
        apple.open()
        try await Task.sleep(for: .seconds(Self.conversionTimeout + 1))
        server = try Running([], command: ["serve"], environment: environment)
        defer { _ = kill(server.process.processIdentifier, SIGKILL) }
        base = try await Self.listening(server)
        #expect(try Self.statuses(store, claimed).allSatisfy { $0 == "failed" })
        #expect(try Self.statuses(store, unclaimed).allSatisfy { $0 == "awaitingAppleCredential" })
        let trails = try store.read { tx in try claimed.map { try tx.auditTrail(upgradeID: $0, limit: 20) } }
        #expect(trails.allSatisfy { $0.last?.detail["problem"] == "conversion-interrupted" })

        // GET, the same credential again, and cancel all say the upgrade failed for good.
        for id in claimed {
            let credential = credentials[ids.firstIndex(of: id)!]
            let view = try await Self.send("GET", base + "/v1/upgrades/\(id)", nil)
            #expect(view.json["status"] == "failed")
            #expect(view.json["problem"] == "conversion-interrupted")
            let retried = try await Self.send("POST", base + "/v1/upgrades/\(id)/apple-credential", credential)
            #expect(retried.status == 409)
            #expect(retried.problem == "conversion-interrupted")
            #expect(retried.json["upgradeStatus"] == "failed")
            #expect(retried.json["detail"]?.contains("start a new") == true)
            let cancelled = try await Self.send("POST", base + "/v1/upgrades/\(id)/cancel", ["reason": "userCanceled"])
            #expect(cancelled.status == 409)
            #expect(cancelled.problem == "not-allowed-in-state")
            #expect(cancelled.json["upgradeStatus"] == "failed")
        }
        // An upgrade the killed server never claimed completes with its credential as it was.
        if let waiting = unclaimed.first {
            let credential = credentials[ids.firstIndex(of: waiting)!]
            let finished = try await Self.send("POST", base + "/v1/upgrades/\(waiting)/apple-credential", credential)
            #expect(finished.json["status"] == "completed")
        }

        // A new upgrade of an interrupted account goes through.
        let index = ids.firstIndex(of: try #require(claimed.first))!
        let again = try await Self.send(
            "POST",
            base + "/v1/upgrades",
            ["username": "user\(index)", "password": "pw", "serviceIdentifier": "s"]
        )
        let sheet = try emulator.authorize(
            userID: appleUsers[index],
            clientID: Self.clientID,
            nonce: again.json["nonce"],
            state: again.json["state"],
            emailMode: .hidden
        )
        let done = try await Self.send(
            "POST",
            base + "/v1/upgrades/\(again.json["id"] ?? "")/apple-credential",
            [
                "identityToken": sheet.identityToken, "authorizationCode": sheet.authorizationCode,
                "state": again.json["state"] ?? "",
            ]
        )
        #expect(done.json["status"] == "completed")
        #expect(await server.stop() == 0)
    }
}
