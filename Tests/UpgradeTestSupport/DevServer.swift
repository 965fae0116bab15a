import AppleEmulator
import Foundation
import Synchronization
import UpgradeAPI
import UpgradeEngine

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The development server (in-process Apple emulator, demo account) on an ephemeral loopback port,
/// with a clock the test moves, on a fresh database of the given backend, or on another server's
/// (`database`), as several instances share one. Stops when released, and the database is removed
/// once no server holds it.
package final class DevServer: Sendable {
    package final class Clock: Sendable {
        package let value = Mutex<Int64>(Int64(Date().timeIntervalSince1970))
        package var now: Int64 { value.withLock { $0 } }
        package func advance(_ seconds: Int64) { value.withLock { $0 += seconds } }
    }

    package struct Response: Sendable {
        package let status: Int
        package let body: Data
        package let headers: [String: String]

        package init(status: Int, body: Data, headers: [String: String]) {
            self.status = status
            self.body = body
            self.headers = headers
        }

        package var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]
        }
        package subscript(_ key: String) -> String? { json[key] as? String }
        /// The last segment of a problem's `type`.
        package var problem: String? { self["type"].flatMap { $0.split(separator: "/").last.map(String.init) } }
    }

    package let clock = Clock()
    package final class LogCapture: Sendable {
        package let lines = Mutex<[String]>([])
    }

    /// Every log line the server wrote, in order.
    package let logs = LogCapture()
    package let database: ServerDatabase
    package let application: UpgradeApplication
    package let base: String

    package init(
        _ backend: Backend = .sqlite,
        database shared: ServerDatabase? = nil,
        environment: [String: String] = [:],
        revocationIntervalMilliseconds: Int = 5000,
        webhookIntervalMilliseconds: Int = 1000,
        configureServer: (inout HTTPServer.Configuration) -> Void = { _ in }
    ) throws {
        database = try shared ?? ServerDatabase(backend)
        let settings = try ServerSettings.load(
            [
                "UPGRADE_DB": database.url,
                "UPGRADE_LISTEN": "127.0.0.1:0", "UPGRADE_DEV_EMULATOR_PORT": "0",
                // Refusals answered at once, so tests that fail many checks stay quick; the tests of
                // the floor set their own.
                "UPGRADE_FAILURE_FLOOR_MS": "0",
            ].merging(environment) { _, given in given },
            development: true
        )
        let clock = self.clock
        let logs = self.logs
        application = try UpgradeApplication(
            settings: settings,
            development: DevelopmentEmulator.self,
            log: RequestLog(write: { line in logs.lines.withLock { $0.append(line) } }),
            clock: { clock.now },
            revocationIntervalMilliseconds: revocationIntervalMilliseconds,
            webhookIntervalMilliseconds: webhookIntervalMilliseconds,
            configureServer: configureServer
        )
        do {
            try application.start()
        } catch {
            // deinit does not run for an instance whose init failed: stop the emulator here.
            application.stop()
            throw error
        }
        base = "http://127.0.0.1:\(application.server.port)"
    }

    deinit { application.stop() }

    package var development: DevelopmentEmulator { application.development as! DevelopmentEmulator }

    package func get(_ path: String) async throws -> Response {
        try await send("GET", path, body: nil, contentType: nil)
    }

    package func post(
        _ path: String,
        _ body: [String: any Sendable],
        contentType: String = "application/json",
        headers: [String: String] = [:]
    ) async throws -> Response {
        try await send(
            "POST",
            path,
            body: try JSONSerialization.data(withJSONObject: body),
            contentType: contentType,
            headers: headers
        )
    }

    package func send(
        _ method: String,
        _ path: String,
        body: Data?,
        contentType: String?,
        headers extra: [String: String] = [:]
    ) async throws -> Response {
        var request = URLRequest(url: URL(string: base + path)!, timeoutInterval: 20)
        request.httpMethod = method
        request.httpBody = body
        if let contentType { request.setValue(contentType, forHTTPHeaderField: "Content-Type") }
        for (name, value) in extra { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        var headers: [String: String] = [:]
        for (key, value) in http.allHeaderFields {
            if let key = key as? String, let value = value as? String { headers[key.lowercased()] = value }
        }
        return Response(status: http.statusCode, body: data, headers: headers)
    }

    /// A fresh nonce from `POST /v1/apple/sign-in/nonce`.
    package func signInNonce() async throws -> String {
        let issued = try await post("/v1/apple/sign-in/nonce", [:])
        guard issued.status == 201, let nonce = issued["nonce"] else {
            throw URLError(.badServerResponse)
        }
        return nonce
    }

    /// A password account without TOTP.
    package func addAccount(_ username: String, password: String) throws {
        let hash = try PasswordHasher(parameters: .init(memoryKiB: 256, iterations: 1)).hash(password: password)
        try application.store.write { tx in
            let account = AccountRecord(
                id: UUID().uuidString.lowercased(),
                username: username,
                credentialKind: .password,
                createdAt: clock.now,
                updatedAt: clock.now
            )
            try tx.insertAccount(account)
            try tx.upsertPasswordCredential(
                PasswordCredentialRecord(accountID: account.id, hash: hash, format: "argon2id", updatedAt: clock.now)
            )
        }
    }

    package func totpCode(at time: Int64? = nil) -> String {
        TOTP.code(
            secret: Base32.decode(DevelopmentEnvironment.demoTOTPSecretBase32)!,
            parameters: .standard,
            counter: UInt64((time ?? clock.now) / 30)
        )
    }

    /// The device's part: Apple's sheet with our state and nonce, as the emulator's user.
    package func appleCredential(
        for answer: Response,
        userID: String? = nil,
        clientID: String = DevelopmentEnvironment.clientID
    ) throws -> [String: any Sendable] {
        let authorization = try development.emulator.authorize(
            userID: userID ?? development.appleUserID,
            clientID: clientID,
            nonce: answer["nonce"],
            state: answer["state"],
            emailMode: .hidden
        )
        return [
            "identityToken": authorization.identityToken, "authorizationCode": authorization.authorizationCode,
            "state": authorization.state ?? "", "user": authorization.user,
        ]
    }

    package static let demoLogin: [String: any Sendable] = [
        "username": DevelopmentEnvironment.demoUsername, "password": DevelopmentEnvironment.demoPassword,
        "serviceIdentifier": "example.com",
    ]
}
