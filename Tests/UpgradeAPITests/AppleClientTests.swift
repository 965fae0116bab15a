import Dispatch
import Foundation
import Synchronization
import Testing

@testable import AppleEmulator
@testable import UpgradeAPI
@testable import UpgradeEngine

/// Answers every request with a closure, for the retry and transport tests.
struct ScriptedHandler: HTTPHandler {
    let respond: @Sendable (HTTPRequest) throws -> HTTPResponse

    func handle(_ request: HTTPRequest) throws -> HTTPResponse {
        try respond(request)
    }
}

/// Holds handler calls (on the server's worker threads) until the test opens it. The test waits
/// for an entry by polling with `Task.sleep`, never by blocking, so it cannot starve the small
/// cooperative thread pool the client under test needs to make the request at all.
final class HandlerGate: Sendable {
    private let entries = Atomic<Int>(0)
    private let released = DispatchSemaphore(value: 0)

    /// Called by the handler: count the entry, then wait (at most 10 s, so no test can hang here).
    func pass() {
        entries.add(1, ordering: .relaxed)
        _ = released.wait(timeout: .now() + 10)
    }

    func entered(seconds: Int = 10) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while entries.load(ordering: .relaxed) == 0 {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    func open(_ count: Int) {
        for _ in 0..<count { released.signal() }
    }
}

/// Counts requests per path before passing them on.
final class RequestCounter: Sendable {
    private let counts = Mutex<[String: Int]>([:])
    private let secrets = Mutex<[String]>([])

    func record(_ request: HTTPRequest) {
        counts.withLock { $0[String(request.path), default: 0] += 1 }
        if let form = try? AppleFormBody.decode(request.body),
            let secret = form.first(where: { $0.name == "client_secret" })?.value
        {
            secrets.withLock { $0.append(secret) }
        }
    }

    func count(_ path: String) -> Int {
        counts.withLock { $0[path] ?? 0 }
    }

    /// Every `client_secret` sent, in order.
    var clientSecrets: [String] { secrets.withLock { $0 } }
}

struct CountingHandler: HTTPHandler {
    let inner: any HTTPHandler
    let counter: RequestCounter

    func handle(_ request: HTTPRequest) throws -> HTTPResponse {
        counter.record(request)
        return try inner.handle(request)
    }
}

/// The emulator served over HTTP by our server on a free loopback port, with two teams (each with
/// a registered key), an app owned by team A, and one user. Call `stop()` at the end.
final class EmulatorHTTPWorld {
    static let teamA = "TEAMAAAAA1"
    static let teamB = "TEAMBBBBB2"
    static let keyA = "KEYAAAAAA1"
    static let keyB = "KEYBBBBBB2"
    static let app = "com.example.app"

    let clock = EmulatorClock()
    let emulator: AppleIDEmulator
    let counter = RequestCounter()
    let server: TestServer
    let privateKeyA = P256PrivateKey()
    let privateKeyB = P256PrivateKey()
    let user: String

    /// The world's user signs in to its app on a device (shared email, no state).
    func authorize(nonce: String? = nil) throws -> AppleAuthorization {
        try emulator.authorize(userID: user, clientID: Self.app, nonce: nonce, state: nil, emailMode: .shared)
    }

    init(
        configure: (inout AppleIDEmulatorHandler.Configuration) -> Void = { _ in },
        wrap: (any HTTPHandler) -> any HTTPHandler = { $0 }
    ) throws {
        let clock = self.clock
        emulator = AppleIDEmulator(clock: { clock.now })
        try emulator.addTeam(Self.teamA)
        try emulator.addTeam(Self.teamB)
        try emulator.registerKey(teamID: Self.teamA, keyID: Self.keyA, publicKey: privateKeyA.publicKey)
        try emulator.registerKey(teamID: Self.teamB, keyID: Self.keyB, publicKey: privateKeyB.publicKey)
        try emulator.addApp(clientID: Self.app, teamID: Self.teamA)
        user = try emulator.createUser(email: "jane@example.com", fullName: "Jane Appleseed")
        var configuration = AppleIDEmulatorHandler.Configuration()
        configuration.clock = clock
        configure(&configuration)
        let handler = CountingHandler(
            inner: wrap(AppleIDEmulatorHandler(emulator: emulator, configuration: configuration)),
            counter: counter
        )
        server = try TestServer(handler: handler)
    }

    var baseURL: String { "http://127.0.0.1:\(server.port)" }

    func stop() {
        server.stop()
    }

    /// A client of team A (or B) that signs its secrets with `key` (by default the registered one).
    func client(
        team: String = EmulatorHTTPWorld.teamA,
        key: P256PrivateKey? = nil,
        configure: (inout AppleClient.Configuration) -> Void = { _ in }
    ) throws -> AppleClient {
        let isA = team == Self.teamA
        let credentials = try AppleClient.Credentials(
            teamID: team,
            keyID: isA ? Self.keyA : Self.keyB,
            privateKey: key ?? (isA ? privateKeyA : privateKeyB)
        )
        var configuration = AppleClient.Configuration(baseURL: try .init(baseURL), credentials: credentials)
        let clock = self.clock
        configuration.clock = { clock.now }
        configuration.retry.maximumAttempts = 1
        configure(&configuration)
        return try AppleClient(configuration: configuration)
    }

    func verifier() throws -> IdentityTokenVerifier {
        IdentityTokenVerifier(keys: emulator.keySet, policy: try IdentityTokenPolicy(allowedAudiences: [Self.app]))
    }
}

/// The endpoint error `body` failed with; records an issue if it succeeded.
func appleError<T>(_ body: () async throws(AppleEndpointError) -> T) async -> AppleEndpointError? {
    do {
        _ = try await body()
        Issue.record("expected an AppleEndpointError")
        return nil
    } catch {
        return error
    }
}

@Suite("AppleClient against the emulator over HTTP")
struct AppleClientTests {
    @Test("an authorization code is exchanged with a real client secret the emulator validates")
    func exchangeHappyPath() async throws {
        let world = try EmulatorHTTPWorld()
        defer { world.stop() }
        let authorization = try world.emulator.authorize(
            userID: world.user,
            clientID: EmulatorHTTPWorld.app,
            nonce: "n-1",
            state: "s-1",
            emailMode: .hidden
        )
        let client = try world.client()
        let tokens = try await client.exchangeAuthorizationCode(
            authorization.authorizationCode,
            clientID: EmulatorHTTPWorld.app
        )
        #expect(tokens.tokenType.lowercased() == "bearer")
        #expect(tokens.expiresIn == 3600)
        #expect(tokens.refreshToken?.isEmpty == false)
        let idToken = try #require(tokens.idToken)
        let claims = try world.verifier().verify(idToken, expectedNonce: "n-1", now: world.clock.now)
        #expect(claims.subject == authorization.user)
        #expect(claims.audience == EmulatorHTTPWorld.app)
        #expect(claims.isPrivateEmail == true)
        #expect(world.counter.count("/auth/token") == 1)
    }

    @Test("a reused code is invalid_grant, and the error names neither the code nor the secret")
    func reusedCode() async throws {
        let world = try EmulatorHTTPWorld()
        defer { world.stop() }
        let code = try world.authorize().authorizationCode
        let client = try world.client()
        _ = try await client.exchangeAuthorizationCode(code, clientID: EmulatorHTTPWorld.app)
        let error = try #require(
            await appleError { () async throws(AppleEndpointError) in
                try await client.exchangeAuthorizationCode(code, clientID: EmulatorHTTPWorld.app)
            }
        )
        #expect(error.code == .invalidGrant)
        #expect(error.httpStatus == 400)
        #expect(error.message.contains("POST /auth/token (authorization_code)"))
        #expect(!error.description.contains(code))
        for secret in world.counter.clientSecrets {
            #expect(!error.description.contains(secret))
        }
    }

    @Test("a client secret signed with a key the team did not register is invalid_client")
    func wrongKey() async throws {
        let world = try EmulatorHTTPWorld()
        defer { world.stop() }
        let code = try world.authorize().authorizationCode
        let client = try world.client(key: P256PrivateKey())
        let error = try #require(
            await appleError { () async throws(AppleEndpointError) in
                try await client.exchangeAuthorizationCode(code, clientID: EmulatorHTTPWorld.app)
            }
        )
        #expect(error.code == .invalidClient)
        #expect(error.httpStatus == 400)
        #expect(error.message.contains("client secret"), "the message explains the usual causes")
    }

    @Test("refresh returns a new access token and identity token but no refresh token")
    func refresh() async throws {
        let world = try EmulatorHTTPWorld()
        defer { world.stop() }
        let code = try world.authorize().authorizationCode
        let client = try world.client()
        let first = try await client.exchangeAuthorizationCode(code, clientID: EmulatorHTTPWorld.app)
        let refreshed = try await client.refresh(try #require(first.refreshToken), clientID: EmulatorHTTPWorld.app)
        #expect(refreshed.refreshToken == nil)
        #expect(refreshed.accessToken != first.accessToken)
        let claims = try world.verifier().verify(
            try #require(refreshed.idToken),
            expectedNonce: nil,
            now: world.clock.now
        )
        #expect(claims.audience == EmulatorHTTPWorld.app)
    }

    @Test(
        "a silent consent revocation sends no notification; the next refresh-token check answers invalid_grant"
    )
    func silentRevocation() async throws {
        let world = try EmulatorHTTPWorld()
        defer { world.stop() }
        let client = try world.client()
        let tokens = try await client.exchangeAuthorizationCode(
            try world.authorize().authorizationCode,
            clientID: EmulatorHTTPWorld.app
        )
        let refreshToken = try #require(tokens.refreshToken)
        try await client.validateRefreshToken(refreshToken, clientID: EmulatorHTTPWorld.app)

        let revoked = try emulatorCall(
            world.server.port,
            "POST",
            "/emulator/users/\(world.user)/revoke-consent",
            #"{"clientId":"\#(EmulatorHTTPWorld.app)","notify":false}"#
        )
        #expect(revoked.response.status == 200)
        #expect(revoked.json?["pendingNotifications"]?.int64Value == 0, "no notification, ever")
        #expect(world.emulator.drainNotifications().isEmpty)
        let error = await appleError { () async throws(AppleEndpointError) in
            try await client.validateRefreshToken(refreshToken, clientID: EmulatorHTTPWorld.app)
        }
        #expect(error?.code == .invalidGrant && error?.httpStatus == 400)

        let checks = try emulatorCall(world.server.port, "GET", "/emulator/refresh-checks")
        let entry = checks.json?["refreshChecks"]?.arrayValue?.first
        #expect(entry?["userId"]?.stringValue == world.user && entry?["count"]?.int64Value == 2)

        // A fault on /auth/token answers before the grant is looked at.
        try world.emulator.injectFaults([503], endpoint: AppleIDEmulator.tokenPath)
        let fault = await appleError { () async throws(AppleEndpointError) in
            try await client.validateRefreshToken(refreshToken, clientID: EmulatorHTTPWorld.app)
        }
        #expect(fault?.code == .unavailable)
        #expect(world.emulator.refreshChecks(userID: world.user) == 2)
    }

    @Test("revoke invalidates the refresh token; revoking an unknown token succeeds")
    func revoke() async throws {
        let world = try EmulatorHTTPWorld()
        defer { world.stop() }
        let code = try world.authorize().authorizationCode
        let client = try world.client()
        let refreshToken = try #require(
            try await client.exchangeAuthorizationCode(code, clientID: EmulatorHTTPWorld.app).refreshToken
        )
        try await client.revoke(token: refreshToken, clientID: EmulatorHTTPWorld.app, tokenTypeHint: .refreshToken)
        try await client.revoke(token: "never-issued", clientID: EmulatorHTTPWorld.app)
        let error = await appleError { () async throws(AppleEndpointError) in
            try await client.refresh(refreshToken, clientID: EmulatorHTTPWorld.app)
        }
        #expect(error?.code == .invalidGrant)
    }

    @Test("client_credentials, then the sender's transfer_sub and the recipient's exchange for the new sub")
    func migrationBothDirections() async throws {
        let world = try EmulatorHTTPWorld()
        defer { world.stop() }
        let authorization = try world.emulator.authorize(
            userID: world.user,
            clientID: EmulatorHTTPWorld.app,
            nonce: nil,
            state: nil,
            emailMode: .hidden
        )
        let sender = try world.client(team: EmulatorHTTPWorld.teamA)
        let teamToken = try await sender.teamAccessToken(clientID: EmulatorHTTPWorld.app)
        #expect(teamToken.refreshToken == nil && teamToken.idToken == nil)
        let transferSub = try await sender.transferSub(
            forSub: authorization.user,
            target: EmulatorHTTPWorld.teamB,
            clientID: EmulatorHTTPWorld.app,
            accessToken: teamToken.accessToken
        )
        #expect(!transferSub.isEmpty && transferSub != authorization.user)

        try world.emulator.transferApp(clientID: EmulatorHTTPWorld.app, toTeam: EmulatorHTTPWorld.teamB)
        let recipient = try world.client(team: EmulatorHTTPWorld.teamB)
        let recipientToken = try await recipient.teamAccessToken(clientID: EmulatorHTTPWorld.app)
        let migrated = try await recipient.migrate(
            transferSub: transferSub,
            clientID: EmulatorHTTPWorld.app,
            accessToken: recipientToken.accessToken
        )
        #expect(migrated.sub == (try world.emulator.subject(userID: world.user, teamID: EmulatorHTTPWorld.teamB)))
        #expect(migrated.sub != authorization.user)
        #expect(migrated.isPrivateEmail == true)
        #expect(migrated.email == (try world.emulator.relayEmail(userID: world.user, teamID: EmulatorHTTPWorld.teamB)))

        // The sender's own team as target is refused before anything is sent.
        let before = world.counter.count("/auth/usermigrationinfo")
        let error = await appleError { () async throws(AppleEndpointError) in
            try await sender.transferSub(
                forSub: authorization.user,
                target: EmulatorHTTPWorld.teamA,
                clientID: EmulatorHTTPWorld.app,
                accessToken: teamToken.accessToken
            )
        }
        #expect(error?.code == .invalidRequest && error?.httpStatus == nil)
        #expect(world.counter.count("/auth/usermigrationinfo") == before)
    }

    @Test("a redirect_uri with reserved characters survives the strict encoding and decoding")
    func redirectURIRoundTrip() async throws {
        let world = try EmulatorHTTPWorld()
        defer { world.stop() }
        let redirect = "https://example.com/cb?a=1&b=x y+z/ü~*"
        let code = try world.emulator.authorize(
            userID: world.user,
            clientID: EmulatorHTTPWorld.app,
            nonce: nil,
            state: nil,
            emailMode: .shared,
            redirectURI: redirect
        ).authorizationCode
        let client = try world.client()
        let wrong = await appleError { () async throws(AppleEndpointError) in
            try await client.exchangeAuthorizationCode(
                code,
                clientID: EmulatorHTTPWorld.app,
                redirectURI: redirect + "x"
            )
        }
        #expect(wrong?.code == .invalidClient)
        _ = try await client.exchangeAuthorizationCode(code, clientID: EmulatorHTTPWorld.app, redirectURI: redirect)
    }

    @Test("the client secret is reused per client id until shortly before it expires")
    func clientSecretCache() async throws {
        let world = try EmulatorHTTPWorld()
        defer { world.stop() }
        let client = try world.client()
        _ = try await client.teamAccessToken(clientID: EmulatorHTTPWorld.app)
        _ = try await client.teamAccessToken(clientID: EmulatorHTTPWorld.app)
        // The emulator's clock also runs in real time: leave 30 s of slack on each side of the renewal point.
        world.clock.advance(seconds: 3600 - 300 - 30)
        _ = try await client.teamAccessToken(clientID: EmulatorHTTPWorld.app)
        world.clock.advance(seconds: 60)
        _ = try await client.teamAccessToken(clientID: EmulatorHTTPWorld.app)
        let secrets = world.counter.clientSecrets
        #expect(secrets.count == 4)
        #expect(Set(secrets.prefix(3)).count == 1, "one secret while it has more than 5 minutes left")
        #expect(secrets[3] != secrets[0], "renewed 5 minutes before expiry")
    }

    @Test("the form encoding leaves only unreserved characters unencoded")
    func formEncoding() {
        let encoded = AppleClient.formEncoded([("a b", "x+y/z=1&ü~._-*"), ("empty", "")])
        #expect(String(decoding: encoded, as: UTF8.self) == "a%20b=x%2By%2Fz%3D1%26%C3%BC~._-%2A&empty=")
    }

    @Test(
        "APPLE_BASE_URL is https, or http only to a loopback address",
        arguments: [
            ("https://appleid.apple.com", "https://appleid.apple.com"),
            ("https://appleid.apple.com/", "https://appleid.apple.com"),
            ("http://127.0.0.1:8090", "http://127.0.0.1:8090"),
            ("http://localhost:9/", "http://localhost:9"),
            ("http://[::1]:8090", "http://[::1]:8090"),
            ("https://proxy.example.com/apple/", "https://proxy.example.com/apple"),
        ]
    )
    func baseURLAccepted(input: String, normalized: String) throws {
        #expect(try AppleClient.BaseURL(input).string == normalized)
    }

    @Test(
        "APPLE_BASE_URL refusals name the problem",
        arguments: [
            ("http://appleid.apple.com", "insecureBaseURL"),
            ("http://127.0.0.1.example.com:80", "insecureBaseURL"),
            ("http://10.0.0.5:8090", "insecureBaseURL"),
            ("ftp://appleid.apple.com", "invalidBaseURL"),
            ("appleid.apple.com", "invalidBaseURL"),
            ("https://user:pw@appleid.apple.com", "invalidBaseURL"),
            ("https://appleid.apple.com/?x=1", "invalidBaseURL"),
            ("https://appleid.apple.com/#f", "invalidBaseURL"),
            ("https://", "invalidBaseURL"),
            ("", "invalidBaseURL"),
            ("https://apple id.com", "invalidBaseURL"),
        ]
    )
    func baseURLRefused(input: String, code: String) {
        #expect(throws: AppleClientConfigurationError.self) { try AppleClient.BaseURL(input) }
        do {
            _ = try AppleClient.BaseURL(input)
        } catch {
            #expect(error.code.description == code)
            #expect(error.message.contains("APPLE_BASE_URL"))
        }
    }

    @Test("settings out of range are refused at construction")
    func configurationBounds() throws {
        var configuration = AppleClient.Configuration(credentials: nil)
        configuration.retry.maximumAttempts = 0
        #expect(throws: AppleClientConfigurationError.self) { try AppleClient(configuration: configuration) }
        configuration = AppleClient.Configuration(credentials: nil)
        configuration.clientSecretRenewal = configuration.clientSecretLifetime
        #expect(throws: AppleClientConfigurationError.self) { try AppleClient(configuration: configuration) }
        configuration = AppleClient.Configuration(credentials: nil)
        configuration.requestTimeout = .zero
        #expect(throws: AppleClientConfigurationError.self) { try AppleClient(configuration: configuration) }
    }

    @Test("without a configured key, calls that need a client secret fail before sending")
    func missingCredentials() async throws {
        let world = try EmulatorHTTPWorld()
        defer { world.stop() }
        let client = try AppleClient(configuration: .init(baseURL: try .init(world.baseURL), credentials: nil))
        let error = await appleError { () async throws(AppleEndpointError) in
            try await client.teamAccessToken(clientID: EmulatorHTTPWorld.app)
        }
        #expect(error?.code == .invalidClient && error?.httpStatus == nil)
        #expect(error?.message.contains("APPLE_PRIVATE_KEY_FILE") == true)
        #expect(world.counter.count("/auth/token") == 0)
        // The key set needs no secret.
        _ = try await client.fetchKeySet()
    }
}
