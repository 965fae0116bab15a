import Foundation
import Glibc
import Synchronization
import UpgradeEngine

/// `Benchmarks legacy-stall [SECONDS] [CLIENTS] [ROUNDS]`: the throughput of the other routes while
/// the legacy login system takes the whole timeout on every call (docs/legacy-verification.md).
///
/// Three processes as for `upgrade-cpu`: the Apple ID emulator, the server in production mode
/// (`upgrade-cli serve` on a SQLite file of the run's own, `UPGRADE_LEGACY_VERIFY_TIMEOUT=1`), and
/// this driver. The legacy system is a loopback socket that listens and never accepts: the kernel
/// takes the connection and the request, and no answer ever comes. Each route is driven by two
/// keep-alive connections for SECONDS alone (A), then for SECONDS while CLIENTS devices sign in to
/// `legacyPassword` accounts (B), ROUNDS times in turn (A B A B), so a change in the machine's load
/// touches both alike. A legacy device that is told `503` at once (the calls in flight are at their
/// limit) waits 100 ms before it tries again, as a device showing the error would; one whose call
/// stalled tries again at once. The accounts' hashes are cheap (argon2id m=256 KiB, t=1), so the
/// server's CPU goes to the routes, not to the password hash.
///
/// Prints each route's operations per second in A and B and the ratio B/A (target ≥ 0.9), and the
/// longest any legacy-bound request took against the timeout (no worker is held longer).
/// `BENCH_ROUTE=TEXT` measures only the routes whose name contains TEXT.
func runLegacyStallBenchmark(seconds: Double, clients: Int, rounds: Int) throws {
    let binDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        .deletingLastPathComponent()
    let cli = binDirectory.appendingPathComponent("upgrade-cli").path
    guard FileManager.default.isExecutableFile(atPath: cli) else {
        throw BenchmarkError("build upgrade-cli in the same configuration first: swift build -c release")
    }
    let timeout = 1.0
    let routeClients = 2
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-legacy-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let now = Int64(Date().timeIntervalSince1970)
    let clientID = "com.example.bench"

    // Accounts, written directly: legacy ones for the devices in B, TOTP ones for step-ups and
    // plain ones for Apple credentials, each used once (a code is never accepted twice).
    let secretKey = SecureRandom.bytes(32)
    let secretKeyFile = directory.appendingPathComponent("secret.key")
    try Data(secretKey).write(to: secretKeyFile)
    try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secretKeyFile.path)
    let secrets = try SecretBox(key: secretKey)
    let totpSecret = SecureRandom.bytes(20)
    // Enough for every phase at 1500 operations per second; running out fails the run.
    let perKind = Int(Double(2 * rounds) * seconds * 1500) + 100
    let database = directory.appendingPathComponent("bench.db").path
    let store = try SQLiteStore(path: database)
    _ = try store.migrate(now: now)
    let hash = try PasswordHasher(parameters: .init(memoryKiB: 256, iterations: 1, parallelism: 1))
        .hash(password: "bench-password")
    try store.write { tx in
        func add(_ username: String, hash: String, format: String) throws -> String {
            let account = AccountRecord(
                id: "acct-\(username)",
                username: username,
                credentialKind: .password,
                createdAt: now,
                updatedAt: now
            )
            try tx.insertAccount(account)
            try tx.upsertPasswordCredential(
                PasswordCredentialRecord(accountID: account.id, hash: hash, format: format, updatedAt: now)
            )
            return account.id
        }
        for index in 0..<clients {
            _ = try add("legacy-\(index)", hash: "", format: PasswordCredentialRecord.legacyFormat)
        }
        for index in 0..<perKind {
            _ = try add("plain-\(index)", hash: hash, format: "argon2id")
            let id = try add("totp-\(index)", hash: hash, format: "argon2id")
            try tx.upsertTOTPEnrollment(
                TOTPEnrollmentRecord(
                    accountID: id,
                    secretCiphertext: secrets.seal(totpSecret, context: UpgradeService.totpContext(accountID: id)),
                    algorithm: .sha1,
                    digits: 6,
                    period: 30,
                    lastAcceptedStep: nil,
                    createdAt: now
                )
            )
        }
    }

    let legacy = try StalledListener()
    let webhookSecret = directory.appendingPathComponent("legacy-secret")
    try Data(("whsec_" + Data(SecureRandom.bytes(32)).base64EncodedString() + "\n").utf8).write(to: webhookSecret)
    try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: webhookSecret.path)

    let keyFile = directory.appendingPathComponent("apple.p8").path
    let emulator = try ChildProcess(
        cli,
        [
            "emulator", "serve", "--port", "0", "--team", "TEAMA12345", "--client-id", clientID, "--private-key-out",
            keyFile,
        ],
        environment: [:],
        readyWhen: "APPLE_BASE_URL="
    )
    defer { emulator.stop() }
    var environment = emulator.output.split(separator: "\n").reduce(into: [String: String]()) { values, line in
        let parts = line.split(separator: "=", maxSplits: 1)
        if parts.count == 2, parts[0].hasPrefix("APPLE_") { values[String(parts[0])] = String(parts[1]) }
    }
    guard let appleBase = environment["APPLE_BASE_URL"] else {
        throw BenchmarkError("the emulator printed no APPLE_BASE_URL")
    }
    environment["UPGRADE_DB"] = "sqlite:" + database
    let adminTokens = directory.appendingPathComponent("admin-tokens").path
    let tokenMaker = Process()
    let tokenOutput = Pipe()
    tokenMaker.executableURL = URL(fileURLWithPath: cli)
    tokenMaker.arguments = ["admin", "tokens", "add", "bench", "--scopes", "tickets", "--file", adminTokens]
    tokenMaker.standardOutput = tokenOutput
    try tokenMaker.run()
    let adminToken = String(decoding: tokenOutput.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        .trimmingCharacters(in: .whitespacesAndNewlines)
    tokenMaker.waitUntilExit()
    guard tokenMaker.terminationStatus == 0, adminToken.hasPrefix("siwa_admin_") else {
        throw BenchmarkError("upgrade-cli admin tokens add failed")
    }
    environment["UPGRADE_ADMIN_TOKENS_FILE"] = adminTokens
    environment["UPGRADE_LISTEN"] = "127.0.0.1:0"
    environment["UPGRADE_SECRET_KEY_FILE"] = secretKeyFile.path
    environment["UPGRADE_CLIENT_THROTTLE"] = "off"
    environment["UPGRADE_LEGACY_VERIFY_URL"] = "http://127.0.0.1:\(legacy.port)/verify"
    environment["UPGRADE_LEGACY_VERIFY_SECRET_FILE"] = webhookSecret.path
    environment["UPGRADE_LEGACY_VERIFY_TIMEOUT"] = String(format: "%g", timeout)
    let server = try ChildProcess(
        cli,
        ["serve"],
        environment: environment,
        readyWhen: "listening on http://",
        logFile: directory.appendingPathComponent("server.log")
    )
    defer { server.stop() }
    guard let range = server.output.range(of: #"listening on http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression)
    else {
        throw BenchmarkError("the server printed no address")
    }
    let base = String(server.output[range].dropFirst("listening on ".count))

    struct Device: Sendable {
        let server: LeanHTTPConnection
        let apple: LeanHTTPConnection
    }
    func device() throws -> Device {
        Device(server: try LeanHTTPConnection(base: base), apple: try LeanHTTPConnection(base: appleBase))
    }
    let shared = LegacyStallState()
    /// The next unused plain or TOTP account.
    @Sendable func take(totp: Bool) throws -> Int {
        let kind = totp ? "TOTP" : "plain"
        let index =
            totp
            ? shared.nextTOTP.add(1, ordering: .relaxed).oldValue : shared.nextPlain.add(1, ordering: .relaxed).oldValue
        guard index < perKind else {
            throw BenchmarkError("ran out of \(kind) accounts (\(perKind)); use shorter phases")
        }
        return index
    }
    /// An in-app upgrade of `username`: a ticket from the backend's admin token, then the start with
    /// it, so no password is hashed (the server would rehash the cheap hash to its own parameters).
    @Sendable func start(_ device: Device, _ username: String) throws -> JSONValue {
        let (minted, ticket) = try device.server.post(
            "/v1/upgrade-tickets",
            json: .object([.init("username", .string(username))]),
            authorization: "Bearer " + adminToken
        )
        guard minted == 201, let ticket = ticket["ticket"]?.stringValue else {
            throw BenchmarkError("minting a ticket for \(username) answered \(minted) \(ticket)")
        }
        let (status, started) = try device.server.post(
            "/v1/upgrades",
            ["username": username, "password": "", "ticket": ticket, "serviceIdentifier": "bench"]
        )
        guard status == 201, started["id"]?.stringValue != nil else {
            throw BenchmarkError("starting \(username)'s upgrade answered \(status) \(started)")
        }
        return started
    }
    @Sendable func authorize(_ device: Device, user: String, nonce: String, state: String?) throws -> JSONValue {
        var fields: [JSONValue.Member] = [
            .init("userId", .string(user)), .init("clientId", .string(clientID)), .init("nonce", .string(nonce)),
        ]
        if let state { fields.append(.init("state", .string(state))) }
        let (status, answer) = try device.apple.post("/emulator/authorize", json: .object(fields))
        guard status == 200, answer["identityToken"]?.stringValue != nil else {
            throw BenchmarkError("the emulator's authorization answered \(status) \(answer)")
        }
        return answer
    }
    /// A new Apple user, a plain account's upgrade, Apple's sheet and the credential; the user's id.
    @Sendable func appleCredential(_ device: Device) throws -> String {
        let index = try take(totp: false)
        let (_, created) = try device.apple.post("/emulator/users", ["email": "bench\(index)@example.com"])
        guard let user = created["userId"]?.stringValue else {
            throw BenchmarkError("the emulator created no user")
        }
        let started = try start(device, "plain-\(index)")
        let state = started["state"]?.stringValue ?? ""
        let authorization = try authorize(
            device,
            user: user,
            nonce: started["nonce"]?.stringValue ?? "",
            state: state
        )
        let (status, done) = try device.server.post(
            "/v1/upgrades/\(started["id"]?.stringValue ?? "")/apple-credential",
            [
                "identityToken": authorization["identityToken"]?.stringValue ?? "",
                "authorizationCode": authorization["authorizationCode"]?.stringValue ?? "",
                "state": state,
            ]
        )
        guard status == 200, done["status"]?.stringValue == "completed" else {
            throw BenchmarkError("apple-credential answered \(status) \(done)")
        }
        return user
    }
    let setup = try device()
    let linkedUser = try appleCredential(setup)

    /// One operation of a route on a device's connections.
    struct Route: Sendable {
        let name: String
        let run: @Sendable (Device) throws -> Void
    }
    @Sendable func get(_ device: Device, _ path: String) throws {
        let (status, _) = try device.server.get(path)
        guard status == 200 else { throw BenchmarkError("GET \(path) answered \(status)") }
    }
    var routes = [
        Route(name: "GET /healthz") { try get($0, "/healthz") },
        Route(name: "GET /readyz") { try get($0, "/readyz") },
        Route(name: "step-up (ticket + start of a TOTP account + right code)") { device in
            let index = try take(totp: true)
            let started = try start(device, "totp-\(index)")
            let code = TOTP.code(
                secret: totpSecret,
                parameters: .standard,
                counter: UInt64(Int64(Date().timeIntervalSince1970) / 30)
            )
            let (status, answer) = try device.server.post(
                "/v1/upgrades/\(started["id"]?.stringValue ?? "")/step-up",
                ["code": code]
            )
            guard status == 200 else { throw BenchmarkError("step-up answered \(status) \(answer)") }
        },
        Route(name: "Apple credential (new Apple user + ticket + start + sheet + credential)") { device in
            _ = try appleCredential(device)
        },
        Route(name: "sign-in (nonce + sheet + POST /v1/apple/sign-in)") { device in
            let (issued, nonceAnswer) = try device.server.post("/v1/apple/sign-in/nonce", json: .object([]))
            guard issued == 201, let nonce = nonceAnswer["nonce"]?.stringValue else {
                throw BenchmarkError("the sign-in nonce answered \(issued) \(nonceAnswer)")
            }
            let authorization = try authorize(device, user: linkedUser, nonce: nonce, state: nil)
            let (status, answer) = try device.server.post(
                "/v1/apple/sign-in",
                ["identityToken": authorization["identityToken"]?.stringValue ?? ""]
            )
            guard status == 200 else { throw BenchmarkError("sign-in answered \(status) \(answer)") }
        },
    ]

    // The legacy devices: each loops while `hammering`, on a connection of its own.
    let legacyDevices = try (0..<clients).map { _ in try LeanHTTPConnection(base: base) }
    let hammerDone = DispatchGroup()
    for (index, connection) in legacyDevices.enumerated() {
        hammerDone.enter()
        Thread.detachNewThread {
            defer { hammerDone.leave() }
            while !shared.stopping.load(ordering: .relaxed) {
                guard shared.hammering.load(ordering: .relaxed) else {
                    // Rarely, so idle devices take next to no CPU from phase A.
                    usleep(50_000)
                    continue
                }
                shared.inFlight.add(1, ordering: .relaxed)
                let started = DispatchTime.now().uptimeNanoseconds
                let answer = Result {
                    try connection.post(
                        "/v1/upgrades",
                        ["username": "legacy-\(index)", "password": "legacy-password", "serviceIdentifier": "bench"]
                    )
                }
                let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
                shared.inFlight.subtract(1, ordering: .relaxed)
                let atOnce = elapsed < timeout / 2
                shared.tally.withLock { tally in
                    switch answer {
                    case .success(let (status, json)) where status == 503:
                        guard json["type"]?.stringValue?.hasSuffix("/legacy-unavailable") == true else {
                            tally.failure = "a legacy sign-in answered 503 \(json)"
                            return
                        }
                        if atOnce { tally.refusedAtOnce += 1 } else { tally.stalled += 1 }
                        tally.longest = max(tally.longest, elapsed)
                    case .success(let (status, json)):
                        tally.failure = "a legacy sign-in answered \(status) \(json), not 503 legacy-unavailable"
                    case .failure(let error):
                        tally.failure = "a legacy sign-in failed: \(error)"
                    }
                }
                if shared.tally.withLock({ $0.failure != nil }) { return }
                if atOnce { usleep(100_000) }
            }
        }
    }
    defer {
        shared.stopping.store(true, ordering: .relaxed)
        hammerDone.wait()
    }

    /// Operations per second of `route` on all route devices at once, for `seconds`.
    func phase(_ route: Route) throws -> Double {
        // Fresh connections: the emulator closes one left idle while other routes ran.
        let devices = try (0..<routeClients).map { _ in try device() }
        let failures = Mutex<[String]>([])
        let counts = Mutex(0)
        let started = DispatchTime.now().uptimeNanoseconds
        let deadline = started + UInt64(seconds * 1e9)
        DispatchQueue.concurrentPerform(iterations: routeClients) { client in
            var done = 0
            while DispatchTime.now().uptimeNanoseconds < deadline {
                do {
                    try route.run(devices[client])
                } catch {
                    failures.withLock { $0.append("\(route.name): \(error)") }
                    return
                }
                done += 1
            }
            counts.withLock { $0 += done }
        }
        if let failure = failures.withLock({ $0.first }) { throw BenchmarkError(failure) }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        return Double(counts.withLock { $0 }) / elapsed
    }
    func setHammering(_ on: Bool) throws {
        shared.hammering.store(on, ordering: .relaxed)
        if on {
            // Until the legacy calls are at their limit and the rest are being refused.
            Thread.sleep(forTimeInterval: timeout / 2)
        } else {
            let until = Date().addingTimeInterval(timeout + 5)
            while shared.inFlight.load(ordering: .relaxed) > 0, Date() < until { usleep(5_000) }
        }
        if let failure = shared.tally.withLock({ $0.failure }) { throw BenchmarkError(failure) }
    }

    if let only = ProcessInfo.processInfo.environment["BENCH_ROUTE"] {
        routes = routes.filter { $0.name.contains(only) }
    }
    for route in routes { _ = try route.run(setup) }  // warm-up: JWKS fetched, caches filled
    print(
        "throughput of the other routes while the legacy system stalls (timeout \(String(format: "%g", timeout)) s, "
            + "\(clients) legacy devices in B, \(routeClients) connections per route, \(rounds)×A/B of "
            + "\(String(format: "%g", seconds)) s, \(ProcessInfo.processInfo.activeProcessorCount) cores)"
    )
    print(
        "  \("route".padding(toLength: 72, withPad: " ", startingAt: 0))      A /s      B /s    B/A"
    )
    var lowest = Double.infinity
    for route in routes {
        var alone = 0.0
        var stalled = 0.0
        var pairs: [String] = []
        for _ in 0..<rounds {
            try setHammering(false)
            let a = try phase(route)
            try setHammering(true)
            let b = try phase(route)
            alone += a
            stalled += b
            pairs.append(String(format: "%.2f", b / a))
        }
        try setHammering(false)
        let ratio = stalled / alone
        lowest = min(lowest, ratio)
        print(
            "  \(route.name.padding(toLength: 72, withPad: " ", startingAt: 0)) "
                + String(format: "%9.0f %9.0f  %5.2f", alone / Double(rounds), stalled / Double(rounds), ratio)
                + (rounds > 1 ? "   (each round: \(pairs.joined(separator: " ")))" : "")
        )
    }
    let legacyTally = shared.tally.withLock { $0 }
    print(
        "  legacy sign-ins in B: \(legacyTally.stalled) waited for the timeout, \(legacyTally.refusedAtOnce) "
            + "were refused at once (503 legacy-unavailable)"
    )
    print(
        String(
            format: "  longest legacy-bound request %.3f s (timeout %.3f s); lowest B/A %.2f (%@ 0.90)",
            legacyTally.longest,
            timeout,
            lowest,
            lowest >= 0.9 ? "at least" : "BELOW"
        )
    )
}

/// What the driver's threads share.
final class LegacyStallState: Sendable {
    struct Tally: Sendable {
        var stalled = 0
        var refusedAtOnce = 0
        var longest = 0.0
        var failure: String?
    }

    let nextPlain = Atomic<Int>(0)
    let nextTOTP = Atomic<Int>(0)
    let hammering = Atomic<Bool>(false)
    let stopping = Atomic<Bool>(false)
    let inFlight = Atomic<Int>(0)
    let tally = Mutex(Tally())
}

/// A legacy login system that never answers: a loopback socket that listens with a large backlog
/// and never accepts, so connections complete and requests are taken in, and no answer comes.
final class StalledListener {
    let fd: Int32
    let port: UInt16

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchmarkError("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && listen(fd, 4096) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else {
            let number = errno
            Glibc.close(fd)
            throw BenchmarkError("the stalled legacy system could not listen: errno \(number)")
        }
        self.fd = fd
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit { Glibc.close(fd) }
}
