import Foundation
import Glibc
import Synchronization
import Testing
import UpgradeAPI
import UpgradeTestSupport

@testable import AppleEmulator
@testable import UpgradeEngine

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The PostgreSQL cluster named by `UPGRADE_TEST_POSTGRES` (started with `Scripts/dev-postgres`).
enum ServePostgres {
    static let url: String? = ProcessInfo.processInfo.environment["UPGRADE_TEST_POSTGRES"].flatMap {
        $0.isEmpty ? nil : $0
    }
    static var isAvailable: Bool { url != nil }
    static let reason =
        "UPGRADE_TEST_POSTGRES is not set: start a cluster with Scripts/dev-postgres and export its URL as UPGRADE_TEST_POSTGRES"

    /// A database of its own on the test cluster, for processes; `drop` removes it.
    static func createDatabase() throws -> (url: String, drop: @Sendable () -> Void) {
        let configuration = try PostgresConfiguration(url: try #require(url))
        let name = "serve_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        try PostgresConnection(configuration).execute("CREATE DATABASE \(name)")
        let text =
            "postgres://\(configuration.user ?? ""):\(configuration.password ?? "")@\(configuration.endpoint)/\(name)"
        return (
            text, { try? PostgresConnection(configuration).execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)") }
        )
    }
}

/// Apple's endpoints (the in-process emulator) as `serve` reaches them: counts authorization-code
/// exchanges, and can hold them until the test lets them through.
final class CountingApple: HTTPHandler {
    let emulatorHandler: AppleIDEmulatorHandler
    private let state = Mutex((exchanges: 0, holding: false, held: 0, keyIDs: [String]()))
    private let release = DispatchSemaphore(value: 0)

    init(_ emulator: AppleIDEmulator) {
        emulatorHandler = AppleIDEmulatorHandler(emulator: emulator)
    }

    /// Requests to `/auth/token` with `grant_type=authorization_code`.
    var codeExchanges: Int { state.withLock { $0.exchanges } }
    /// Exchanges waiting now.
    var held: Int { state.withLock { $0.held } }

    func hold() { state.withLock { $0.holding = true } }

    /// The `kid` of each client secret sent to `/auth/token`, in order.
    var clientSecretKeyIDs: [String] { state.withLock { $0.keyIDs } }

    /// The `kid` in the header of the form's `client_secret`, if there is one.
    static func clientSecretKeyID(_ body: [UInt8]) -> String? {
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") where pair.hasPrefix("client_secret=") {
            let value = pair.dropFirst("client_secret=".count).removingPercentEncoding ?? ""
            guard var header = value.split(separator: ".").first.map(String.init) else { return nil }
            header = header.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            header += String(repeating: "=", count: (4 - header.count % 4) % 4)
            guard let data = Data(base64Encoded: header),
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            else { return nil }
            return object["kid"] as? String
        }
        return nil
    }

    /// Lets held exchanges and later ones through.
    func open() {
        let waiting = state.withLock { state -> Int in
            state.holding = false
            return state.held
        }
        for _ in 0..<waiting { release.signal() }
    }

    func handle(_ request: HTTPRequest) throws -> HTTPResponse {
        if request.path == "/auth/token", let keyID = Self.clientSecretKeyID(request.body) {
            state.withLock { $0.keyIDs.append(keyID) }
        }
        if request.path == "/auth/token", String(decoding: request.body, as: UTF8.self).contains("authorization_code") {
            let holding = state.withLock { state -> Bool in
                state.exchanges += 1
                if state.holding { state.held += 1 }
                return state.holding
            }
            if holding {
                // Bounded, so a failing test cannot hang the run.
                _ = release.wait(timeout: .now() + 20)
                state.withLock { $0.held -= 1 }
            }
        }
        return try emulatorHandler.handle(request)
    }
}

/// `upgrade-cli serve` processes on one database, against one in-process Apple emulator, with the
/// key files they share. `stop()` kills every process and removes the files; call it in a `defer`.
final class ServeFixture {
    typealias Running = EmulatorCommandHTTPTests.Running
    static let teamID = "TEAMA12345"
    static let keyID = "KEY1234567"
    static let clientID = "com.example.app"

    let directory: URL
    let emulator = AppleIDEmulator()
    let apple: CountingApple
    let appleServer: HTTPServer
    let environment: [String: String]
    let store: any UpgradeStore
    private(set) var servers: [Running] = []

    struct Answer: Sendable {
        let status: Int
        let json: [String: String]
        let retryAfter: String?
        let seconds: Double
        var problem: String? { json["type"].flatMap { $0.split(separator: "/").last.map(String.init) } }
    }

    /// Migrates `database` with `upgrade-cli db migrate`, once, as an operator would.
    init(database: String, conversionTimeout: Int64 = 120, environment extra: [String: String] = [:]) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try emulator.addTeam(Self.teamID)
        let appleKey = P256PrivateKey()
        try emulator.registerKey(teamID: Self.teamID, keyID: Self.keyID, publicKey: appleKey.publicKey)
        try emulator.addApp(clientID: Self.clientID, teamID: Self.teamID)
        apple = CountingApple(emulator)
        var appleConfiguration = HTTPServer.Configuration()
        appleConfiguration.port = 0
        appleConfiguration.workerCount = 24
        appleConfiguration.onEvent = { _ in }
        appleServer = HTTPServer(configuration: appleConfiguration, handler: apple)
        try appleServer.start()

        let keyFile = directory.appendingPathComponent("apple.p8").path
        try writeOwnerOnly(appleKey.pemRepresentation, to: keyFile)
        let secretFile = directory.appendingPathComponent("secret.key").path
        _ = FileManager.default.createFile(
            atPath: secretFile,
            contents: Data(SecureRandom.bytes(32)),
            attributes: [.posixPermissions: 0o600]
        )
        environment = [
            "UPGRADE_DB": database, "UPGRADE_LISTEN": "127.0.0.1:0",
            "APPLE_BASE_URL": "http://127.0.0.1:\(appleServer.port)", "APPLE_CLIENT_IDS": Self.clientID,
            "APPLE_TEAM_ID": Self.teamID, "APPLE_KEY_ID": Self.keyID, "APPLE_PRIVATE_KEY_FILE": keyFile,
            "UPGRADE_SECRET_KEY_FILE": secretFile, "UPGRADE_CLIENT_THROTTLE": "off",
            "UPGRADE_CONVERSION_TIMEOUT": String(conversionTimeout),
        ].merging(extra) { $1 }
        let migrate = try Running([], command: ["db", "migrate"], environment: environment)
        let migrated = await migrate.exitStatus()
        store = try DatabaseLocation.parse(database).open()
        guard migrated == 0 else {
            Issue.record("db migrate failed: \(migrate.errors.text)")
            throw CancellationError()
        }
    }

    /// Starts one more `serve`; its base URL once it listens.
    func startServe() async throws -> String {
        let server = try Running([], command: ["serve"], environment: environment)
        servers.append(server)
        return try await ConversionCrashTests.listening(server)
    }

    /// Kills every process started here, stops Apple and removes the files.
    func stop() {
        for server in servers where server.process.isRunning {
            kill(server.process.processIdentifier, SIGKILL)
            server.process.waitUntilExit()
        }
        apple.open()
        appleServer.shutdown()
        appleServer.wait()
        try? FileManager.default.removeItem(at: directory)
    }

    /// A password account, with an Apple user of its own in the emulator unless one is given.
    @discardableResult
    func addAccount(_ username: String, password: String = "pw") throws -> AccountRecord {
        let hash = try PasswordHasher(parameters: .init(memoryKiB: 256, iterations: 1)).hash(password: password)
        let now = Int64(Date().timeIntervalSince1970)
        let account = AccountRecord(
            id: UUID().uuidString.lowercased(),
            username: username,
            credentialKind: .password,
            createdAt: now,
            updatedAt: now
        )
        try store.write { tx in
            try tx.insertAccount(account)
            try tx.upsertPasswordCredential(
                PasswordCredentialRecord(accountID: account.id, hash: hash, format: "argon2id", updatedAt: now)
            )
        }
        return account
    }

    /// `POST /v1/upgrades` for `username`; the answer (with `id`, `state`, `nonce` when it started).
    func start(_ base: String, _ username: String, password: String = "pw") async throws -> Answer {
        try await Self.send(
            "POST",
            base + "/v1/upgrades",
            ["username": username, "password": password, "serviceIdentifier": "s"]
        )
    }

    /// What the extension sends after Apple's sheet: a credential for `appleUser` bound to the upgrade;
    /// its `user` is the team-scoped `sub`.
    func credential(for started: Answer, appleUser: String) throws -> [String: String] {
        let sheet = try emulator.authorize(
            userID: appleUser,
            clientID: Self.clientID,
            nonce: started.json["nonce"],
            state: started.json["state"],
            emailMode: .hidden
        )
        return [
            "identityToken": sheet.identityToken, "authorizationCode": sheet.authorizationCode,
            "state": started.json["state"] ?? "", "user": sheet.user,
        ]
    }

    /// One request, with a 30 s limit; how long it took in `seconds`.
    static func send(
        _ method: String,
        _ url: String,
        _ body: [String: String]? = nil,
        headers: [String: String] = [:]
    ) async throws -> Answer {
        var request = URLRequest(url: URL(string: url)!, timeoutInterval: 30)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let body {
            request.httpBody = try JSONSerialization.data(withJSONObject: body)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let started = ContinuousClock.now
        let (data, response) = try await URLSession.shared.data(for: request)
        let elapsed = ContinuousClock.now - started
        let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        let http = response as? HTTPURLResponse
        return Answer(
            status: http?.statusCode ?? 0,
            json: object.compactMapValues { $0 as? String },
            retryAfter: http?.value(forHTTPHeaderField: "Retry-After"),
            seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        )
    }
}
