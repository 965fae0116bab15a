import Foundation
import Synchronization
import Testing

@testable import UpgradeAPI
@testable import UpgradeEngine

/// One request on its own connection; the answer as `TestClient` reads it.
func exchange(
    _ port: Int,
    _ method: String,
    _ target: String,
    headers: [(String, String)] = [],
    body: [UInt8] = []
) throws -> TestClient.Response {
    let client = try TestClient(port: port)
    var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    for (name, value) in headers { head += "\(name): \(value)\r\n" }
    if !body.isEmpty || method == "POST" { head += "Content-Length: \(body.count)\r\n" }
    try client.send(Array((head + "\r\n").utf8) + body)
    return try client.readResponse()
}

/// A JSON request to an emulator-only endpoint; the answer and its JSON (if any).
func emulatorCall(
    _ port: Int,
    _ method: String,
    _ path: String,
    _ json: String? = nil
) throws -> (response: TestClient.Response, json: JSONValue?) {
    let response = try exchange(
        port,
        method,
        path,
        headers: json == nil ? [] : [("Content-Type", "application/json")],
        body: Array((json ?? "").utf8)
    )
    return (response, try? JSONValue.parse(response.body))
}

let formType = ("Content-Type", "application/x-www-form-urlencoded")

@Suite("The Apple ID emulator over HTTP")
struct EmulatorHTTPTests {
    struct AppleCase: Sendable, CustomStringConvertible {
        let description: String
        let method: String
        let target: String
        let headers: [(String, String)]
        let body: String
        let status: Int
        let error: String?
    }

    static let dummySecret = "client_id=com.example.app&client_secret=eyJhbGciOiJFUzI1NiJ9.e30.c2ln"

    static let appleCases: [AppleCase] = [
        AppleCase(
            description: "JSON instead of a form",
            method: "POST",
            target: "/auth/token",
            headers: [("Content-Type", "application/json")],
            body: #"{"grant_type":"client_credentials"}"#,
            status: 400,
            error: "invalid_request"
        ),
        AppleCase(
            description: "no Content-Type",
            method: "POST",
            target: "/auth/token",
            headers: [],
            body: "grant_type=client_credentials&" + dummySecret,
            status: 400,
            error: "invalid_request"
        ),
        AppleCase(
            description: "form media type with another charset",
            method: "POST",
            target: "/auth/token",
            headers: [("Content-Type", "application/x-www-form-urlencoded; charset=latin1")],
            body: "grant_type=client_credentials&" + dummySecret,
            status: 400,
            error: "invalid_request"
        ),
        AppleCase(
            description: "a repeated parameter",
            method: "POST",
            target: "/auth/token",
            headers: [formType],
            body: "grant_type=client_credentials&grant_type=client_credentials&" + dummySecret,
            status: 400,
            error: "invalid_request"
        ),
        AppleCase(
            description: "a missing client_secret",
            method: "POST",
            target: "/auth/token",
            headers: [formType],
            body: "grant_type=client_credentials&client_id=com.example.app&scope=user.migration",
            status: 400,
            error: "invalid_request"
        ),
        AppleCase(
            description: "a missing code",
            method: "POST",
            target: "/auth/token",
            headers: [formType],
            body: "grant_type=authorization_code&" + dummySecret,
            status: 400,
            error: "invalid_request"
        ),
        AppleCase(
            description: "an empty required parameter",
            method: "POST",
            target: "/auth/token",
            headers: [formType],
            body: "grant_type=authorization_code&code=&" + dummySecret,
            status: 400,
            error: "invalid_request"
        ),
        AppleCase(
            description: "a raw space: not percent-encoded",
            method: "POST",
            target: "/auth/token",
            headers: [formType],
            body: "grant_type=client credentials&" + dummySecret,
            status: 400,
            error: "invalid_client"
        ),
        AppleCase(
            description: "a raw slash: not percent-encoded",
            method: "POST",
            target: "/auth/token",
            headers: [formType],
            body: "grant_type=authorization_code&code=a/b&" + dummySecret,
            status: 400,
            error: "invalid_client"
        ),
        AppleCase(
            description: "a malformed escape",
            method: "POST",
            target: "/auth/token",
            headers: [formType],
            body: "grant_type=%zzclient_credentials&" + dummySecret,
            status: 400,
            error: "invalid_client"
        ),
        AppleCase(
            description: "a truncated escape",
            method: "POST",
            target: "/auth/token",
            headers: [formType],
            body: dummySecret + "&grant_type=x%4",
            status: 400,
            error: "invalid_client"
        ),
        AppleCase(
            description: "a value that is not UTF-8",
            method: "POST",
            target: "/auth/token",
            headers: [formType],
            body: "grant_type=%FF&" + dummySecret,
            status: 400,
            error: "invalid_request"
        ),
        AppleCase(
            description: "a field without '='",
            method: "POST",
            target: "/auth/token",
            headers: [formType],
            body: "grant_type&" + dummySecret,
            status: 400,
            error: "invalid_request"
        ),
        AppleCase(
            description: "parameters in the URL",
            method: "POST",
            target: "/auth/token?grant_type=client_credentials",
            headers: [formType],
            body: dummySecret,
            status: 400,
            error: "invalid_request"
        ),
        AppleCase(
            description: "an unknown grant type",
            method: "POST",
            target: "/auth/token",
            headers: [formType],
            body: "grant_type=password&" + dummySecret,
            status: 400,
            error: "unsupported_grant_type"
        ),
        AppleCase(
            description: "client_credentials with another scope",
            method: "POST",
            target: "/auth/token",
            headers: [formType],
            body: "grant_type=client_credentials&scope=openid&" + dummySecret,
            status: 400,
            error: "invalid_scope"
        ),
        AppleCase(
            description: "a client secret that does not verify",
            method: "POST",
            target: "/auth/token",
            headers: [formType],
            body: "grant_type=client_credentials&scope=user.migration&" + dummySecret,
            status: 400,
            error: "invalid_client"
        ),
        AppleCase(
            description: "revoke without a token",
            method: "POST",
            target: "/auth/revoke",
            headers: [formType],
            body: dummySecret,
            status: 400,
            error: "invalid_request"
        ),
        AppleCase(
            description: "revoke with an unknown token_type_hint",
            method: "POST",
            target: "/auth/revoke",
            headers: [formType],
            body: dummySecret + "&token=t&token_type_hint=id_token",
            status: 400,
            error: "invalid_request"
        ),
        AppleCase(
            description: "usermigrationinfo without Authorization",
            method: "POST",
            target: "/auth/usermigrationinfo",
            headers: [formType],
            body: dummySecret + "&transfer_sub=x",
            status: 400,
            error: "invalid_request"
        ),
        AppleCase(
            description: "usermigrationinfo with Authorization twice",
            method: "POST",
            target: "/auth/usermigrationinfo",
            headers: [formType, ("Authorization", "Bearer a"), ("Authorization", "Bearer b")],
            body: dummySecret + "&transfer_sub=x",
            status: 400,
            error: "invalid_request"
        ),
        AppleCase(
            description: "GET on a POST endpoint",
            method: "GET",
            target: "/auth/token",
            headers: [],
            body: "",
            status: 405,
            error: nil
        ),
        AppleCase(
            description: "POST on the key set",
            method: "POST",
            target: "/auth/keys",
            headers: [formType],
            body: "",
            status: 405,
            error: nil
        ),
    ]

    @Test("Apple's endpoints validate requests as Apple does and answer {\"error\": …}")
    func appleValidation() throws {
        // One emulator for the whole table: none of these requests changes its state.
        let world = try EmulatorHTTPWorld()
        defer { world.stop() }
        for testCase in Self.appleCases {
            let response = try exchange(
                world.server.port,
                testCase.method,
                testCase.target,
                headers: testCase.headers,
                body: Array(testCase.body.utf8)
            )
            #expect(response.status == testCase.status, "\(testCase)")
            if let error = testCase.error {
                #expect(response.text == #"{"error":"\#(error)"}"#, "\(testCase)")
                #expect(response.header("Content-Type") == "application/json", "\(testCase)")
                #expect(response.header("X-Emulator-Reason")?.isEmpty == false, "\(testCase): the emulator says why")
            } else {
                #expect(response.header("Allow") != nil, "\(testCase)")
            }
        }
    }

    @Test("every operation in Schema/emulator-openapi.yaml is served with its method")
    func specMatchesRoutes() throws {
        let specURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Schema/emulator-openapi.yaml")
        let lines = try String(contentsOf: specURL, encoding: .utf8).split(separator: "\n").map(String.init)
        var operations: [(method: String, path: String)] = []
        var currentPath: String?
        for line in lines {
            if line.hasPrefix("  /"), line.hasSuffix(":") {
                currentPath = String(line.dropFirst(2).dropLast())
            } else if line.hasPrefix("components:") {
                currentPath = nil
            } else if let path = currentPath, ["    get:", "    post:", "    delete:"].contains(line) {
                operations.append((line.trimmingCharacters(in: .whitespaces).dropLast().uppercased(), path))
            }
        }
        #expect(operations.count == 24)

        let world = try EmulatorHTTPWorld()
        defer { world.stop() }
        for (method, template) in operations {
            let path = template.replacingOccurrences(of: "{teamId}", with: EmulatorHTTPWorld.teamA)
                .replacingOccurrences(of: "{clientId}", with: "com.nothing")
                .replacingOccurrences(of: "{userId}", with: "user-nobody")
                .replacingOccurrences(of: "{keyId}", with: "noSuchKey")
            let isApple = path.hasPrefix("/auth/")
            let response = try exchange(
                world.server.port,
                method,
                path,
                headers: method == "POST" ? [isApple ? formType : ("Content-Type", "application/json")] : [],
                body: method == "POST" && !isApple ? Array("{}".utf8) : []
            )
            #expect(response.status != 405, "\(method) \(path) is not answered")
            #expect(
                isApple ? response.status != 404 : response.problemSlug != "emulator-not-found",
                "\(method) \(path)"
            )
        }
    }

    @Test("the key set is Apple's JWKS shape, with the configured max-age")
    func keySet() throws {
        let world = try EmulatorHTTPWorld(configure: { $0.keysMaxAge = 600 })
        defer { world.stop() }
        let response = try exchange(world.server.port, "GET", "/auth/keys")
        #expect(response.status == 200)
        #expect(response.header("Cache-Control") == "public, max-age=600")
        let keys = try JWKSet(json: response.body)
        #expect(keys.keyIDs == [world.emulator.activeSigningKeyID])
    }

    @Test("set up a team, key, app and user over HTTP, authorize on the 'device', exchange with AppleClient")
    func endToEnd() async throws {
        let world = try EmulatorHTTPWorld()
        defer { world.stop() }
        let port = world.server.port
        #expect(try emulatorCall(port, "POST", "/emulator/teams", #"{"teamId":"TEAMC12345"}"#).response.status == 201)
        let key = try emulatorCall(port, "POST", "/emulator/teams/TEAMC12345/keys", #"{"keyId":"KEYC123456"}"#)
        #expect(key.response.status == 201)
        let pem = try #require(key.json?["privateKeyPem"]?.stringValue)
        let app = try emulatorCall(
            port,
            "POST",
            "/emulator/apps",
            #"{"clientId":"com.example.c","teamId":"TEAMC12345"}"#
        )
        #expect(app.response.status == 201)
        let user = try emulatorCall(
            port,
            "POST",
            "/emulator/users",
            #"{"email":"c@example.com","fullName":"C Example"}"#
        )
        let userID = try #require(user.json?["userId"]?.stringValue)
        let authorized = try emulatorCall(
            port,
            "POST",
            "/emulator/authorize",
            #"{"userId":"\#(userID)","clientId":"com.example.c","nonce":"n-9","state":"s-9","emailMode":"hidden"}"#
        )
        #expect(authorized.response.status == 200)
        let json = try #require(authorized.json)
        #expect(json["state"]?.stringValue == "s-9")
        #expect(json["isFirstAuthorization"]?.boolValue == true)
        #expect(json["fullName"]?.stringValue == "C Example")
        #expect(json["email"]?.stringValue?.hasSuffix("@privaterelay.appleid.com") == true)

        var configuration = AppleClient.Configuration(
            baseURL: try .init(world.baseURL),
            credentials: try .init(teamID: "TEAMC12345", keyID: "KEYC123456", privateKey: try P256PrivateKey(pem: pem))
        )
        let clock = world.clock
        configuration.clock = { clock.now }
        let client = try AppleClient(configuration: configuration)
        let source = AppleIdentityTokenVerifier(
            fetcher: client,
            policy: try IdentityTokenPolicy(allowedAudiences: ["com.example.c"])
        )
        let claims = try await source.verifyIdentityToken(
            try #require(json["identityToken"]?.stringValue),
            nonce: .exact("n-9"),
            now: world.clock.now
        )
        #expect(claims.subject == json["user"]?.stringValue)
        let tokens = try await client.exchangeAuthorizationCode(
            try #require(json["authorizationCode"]?.stringValue),
            clientID: "com.example.c"
        )
        #expect(tokens.refreshToken != nil)
    }

    @Test("a batch of users who signed in to the app already, bounded in count")
    func authorizedUserBatch() throws {
        let world = try EmulatorHTTPWorld()
        defer { world.stop() }
        let port = world.server.port
        let made = try emulatorCall(
            port,
            "POST",
            "/emulator/users/batch",
            #"{"count":3,"clientId":"\#(EmulatorHTTPWorld.app)","emailMode":"hidden"}"#
        )
        #expect(made.response.status == 201)
        let users = try #require(made.json?["users"]?.arrayValue)
        #expect(users.count == 3)
        let first = try #require(users.first)
        let userID = try #require(first["userId"]?.stringValue)
        let sub = try #require(first["sub"]?.stringValue)
        #expect(first["email"]?.stringValue?.hasSuffix("@privaterelay.appleid.com") == true)
        let signedIn = try world.emulator.authorize(
            userID: userID,
            clientID: EmulatorHTTPWorld.app,
            nonce: nil,
            state: nil,
            emailMode: .shared
        )
        #expect(signedIn.user == sub && !signedIn.isFirstAuthorization)

        for (body, status, slug) in [
            (#"{"count":0,"clientId":"com.example.app"}"#, 400, "emulator-invalid-request"),
            (#"{"count":10001,"clientId":"com.example.app"}"#, 400, "emulator-invalid-request"),
            (#"{"clientId":"com.example.app"}"#, 400, "emulator-invalid-request"),
            (#"{"count":1,"clientId":"com.example.app","emailMode":"secret"}"#, 400, "emulator-invalid-request"),
            (#"{"count":1}"#, 400, "emulator-invalid-request"),
            (#"{"count":1,"clientId":"com.nothing"}"#, 404, "emulator-unknown-app"),
        ] {
            let refused = try emulatorCall(port, "POST", "/emulator/users/batch", body)
            #expect(refused.response.status == status, "\(body)")
            #expect(refused.response.problemSlug == slug, "\(body)")
        }
        #expect(try emulatorCall(port, "GET", "/emulator/users/batch").response.status == 405)
    }

    @Test("emulator errors are problem documents, never Apple's {\"error\"} shape")
    func emulatorProblems() throws {
        let world = try EmulatorHTTPWorld()
        defer { world.stop() }
        let port = world.server.port
        let cases: [(String, String, String?, Int, String)] = [
            ("POST", "/emulator/teams", #"{"teamId":"\#(EmulatorHTTPWorld.teamA)"}"#, 409, "emulator-already-exists"),
            ("POST", "/emulator/teams", #"{"teamId":"short"}"#, 400, "emulator-invalid-identifier"),
            ("POST", "/emulator/teams", #"{"teamID":"TEAMD12345"}"#, 400, "emulator-invalid-request"),
            ("POST", "/emulator/teams", #"{"teamId":1}"#, 400, "emulator-invalid-request"),
            ("POST", "/emulator/teams", #"{"teamId":"A","teamId":"B"}"#, 400, "emulator-invalid-request"),
            ("DELETE", "/emulator/users/user-nobody", nil, 404, "emulator-unknown-user"),
            ("POST", "/emulator/apps/com.nothing/transfer", #"{"toTeamId":"TEAMBBBBB2"}"#, 404, "emulator-unknown-app"),
            ("GET", "/emulator/teams", nil, 405, "emulator-method-not-allowed"),
            ("GET", "/emulator/nothing", nil, 404, "emulator-not-found"),
            ("GET", "/elsewhere", nil, 404, "emulator-not-found"),
            ("POST", "/emulator/keys/\(world.emulator.activeSigningKeyID)/retire", nil, 409, "emulator-not-allowed"),
        ]
        for (method, path, json, status, slug) in cases {
            let response = try emulatorCall(port, method, path, json).response
            #expect(response.status == status, "\(method) \(path)")
            #expect(response.problemSlug == slug, "\(method) \(path): \(response.text)")
            #expect(response.header("Content-Type") == "application/problem+json")
        }
        let textBody = try exchange(
            port,
            "POST",
            "/emulator/teams",
            headers: [("Content-Type", "text/plain")],
            body: Array("TEAMD12345".utf8)
        )
        #expect(textBody.status == 415)
        let utf16Body = try exchange(
            port,
            "POST",
            "/emulator/teams",
            headers: [("Content-Type", "application/json; charset=utf-16")],
            body: Array(#"{"teamId":"TEAMD12345"}"#.utf8)
        )
        #expect(utf16Body.status == 415 && utf16Body.problemSlug == "emulator-unsupported-media-type")
    }

    @Test("rotate and retire signing keys over HTTP")
    func keyRotation() throws {
        let world = try EmulatorHTTPWorld()
        defer { world.stop() }
        let port = world.server.port
        let old = world.emulator.activeSigningKeyID
        let rotated = try emulatorCall(port, "POST", "/emulator/keys/rotate")
        let new = try #require(rotated.json?["keyId"]?.stringValue)
        #expect(try JWKSet(json: exchange(port, "GET", "/auth/keys").body).keyIDs == [old, new])
        #expect(try emulatorCall(port, "POST", "/emulator/keys/\(old)/retire").response.status == 200)
        #expect(try JWKSet(json: exchange(port, "GET", "/auth/keys").body).keyIDs == [new])
        let status = try emulatorCall(port, "GET", "/emulator")
        #expect(status.json?["activeKeyId"]?.stringValue == new)
    }

    @Test("moving the emulator's clock expires codes (valid 5 minutes)")
    func clockAdvance() async throws {
        let world = try EmulatorHTTPWorld()
        defer { world.stop() }
        let code = try world.authorize().authorizationCode
        let before = world.clock.now
        let advanced = try emulatorCall(world.server.port, "POST", "/emulator/clock/advance", #"{"seconds":301}"#)
        #expect((advanced.json?["now"]?.int64Value ?? 0) >= before + 301)
        let client = try world.client()
        let error = await appleError { () async throws(AppleEndpointError) in
            try await client.exchangeAuthorizationCode(code, clientID: EmulatorHTTPWorld.app)
        }
        #expect(error?.code == .invalidGrant)
        let refused = try emulatorCall(world.server.port, "POST", "/emulator/clock/advance", #"{"seconds":-5}"#)
        #expect(refused.response.status == 400)
    }

    @Test("an app transfer over HTTP leaves the old id 'transferred' on the device")
    func transferAndCredentialState() throws {
        let world = try EmulatorHTTPWorld()
        defer { world.stop() }
        let port = world.server.port
        let sub = try world.authorize().user
        let query = "/emulator/credential-state?user=\(sub)&clientId=\(EmulatorHTTPWorld.app)"
        #expect(try emulatorCall(port, "GET", query).json?["state"]?.stringValue == "authorized")
        let moved = try emulatorCall(
            port,
            "POST",
            "/emulator/apps/\(EmulatorHTTPWorld.app)/transfer",
            #"{"toTeamId":"\#(EmulatorHTTPWorld.teamB)"}"#
        )
        #expect(moved.response.status == 200)
        let state = try emulatorCall(port, "GET", query).json
        #expect(state?["state"]?.stringValue == "transferred")
        #expect(state?["rawValue"]?.int64Value == 3)
        #expect(try emulatorCall(port, "GET", "/emulator/credential-state?user=\(sub)").response.status == 400)
    }

    final class BodyLog: Sendable {
        let bodies = Mutex<[[UInt8]]>([])
    }

    /// Records the bodies POSTed to it; answers `status`.
    final class Receiver {
        let server: TestServer

        init(status: Int = 200) throws {
            let log = BodyLog()
            server = try TestServer(
                handler: ScriptedHandler { request in
                    log.bodies.withLock { $0.append(request.body) }
                    return HTTPResponse(status: status)
                }
            )
            self.log = log
        }

        private let log: BodyLog
        var received: [[UInt8]] { log.bodies.withLock { $0 } }

        var url: String { "http://127.0.0.1:\(server.port)/v1/apple/notifications" }
    }

    @Test("a consent revocation is queued, listed, and delivered as Apple's signed {\"payload\"}")
    func notificationDelivery() throws {
        let world = try EmulatorHTTPWorld()
        defer { world.stop() }
        let receiver = try Receiver()
        defer { receiver.server.stop() }
        let port = world.server.port
        _ = try world.authorize()
        let revoked = try emulatorCall(
            port,
            "POST",
            "/emulator/users/\(world.user)/revoke-consent",
            #"{"clientId":"\#(EmulatorHTTPWorld.app)"}"#
        )
        #expect(revoked.json?["pendingNotifications"]?.int64Value == 1)
        let listed = try emulatorCall(port, "GET", "/emulator/notifications").json?["pending"]?.arrayValue
        #expect(listed?.first?["type"]?.stringValue == "consent-revoked")

        let remote = try emulatorCall(
            port,
            "POST",
            "/emulator/notifications/deliver",
            #"{"url":"http://203.0.113.7/n"}"#
        )
        #expect(remote.response.status == 400)
        #expect(remote.response.text.contains("loopback"))

        let delivered = try emulatorCall(
            port,
            "POST",
            "/emulator/notifications/deliver",
            #"{"url":"\#(receiver.url)"}"#
        )
        #expect(delivered.json?["delivered"]?.arrayValue?.count == 1)
        #expect(delivered.json?["pending"]?.int64Value == 0)
        let body = try #require(receiver.received.first)
        let payload = try #require(JSONValue.parse(body)["payload"]?.stringValue)
        let jws = try JWSCompact(parsing: payload, maximumLength: 8192)
        let header = try JWSHeader(json: jws.header)
        let keyID = try #require(header.keyID)
        let key = try #require(world.emulator.keySet[keyID])
        #expect(header.algorithm == "RS256")
        #expect(key.verify(signature: jws.signature, message: jws.signingInput))
        let claims = try JSONValue.parse(jws.payload)
        #expect(claims["aud"]?.stringValue == EmulatorHTTPWorld.app)
        #expect(claims["events"]?.stringValue?.contains("consent-revoked") == true)
    }

    @Test("a receiver that refuses keeps the notification queued")
    func failedDelivery() throws {
        let world = try EmulatorHTTPWorld()
        defer { world.stop() }
        let receiver = try Receiver(status: 503)
        defer { receiver.server.stop() }
        _ = try world.authorize()
        _ = try emulatorCall(world.server.port, "DELETE", "/emulator/users/\(world.user)")
        let attempt = try emulatorCall(
            world.server.port,
            "POST",
            "/emulator/notifications/deliver",
            #"{"url":"\#(receiver.url)"}"#
        )
        #expect(attempt.json?["failed"]?.arrayValue?.first?["reason"]?.stringValue == "HTTP 503")
        #expect(attempt.json?["pending"]?.int64Value == 1)
        #expect(receiver.received.count == 1)
    }

    @Test("with a notification URL configured, an account deletion is delivered at once")
    func automaticDelivery() throws {
        let receiver = try Receiver()
        defer { receiver.server.stop() }
        let url = receiver.url
        let world = try EmulatorHTTPWorld(configure: { $0.notificationURL = url })
        defer { world.stop() }
        _ = try world.emulator.authorize(
            userID: world.user,
            clientID: EmulatorHTTPWorld.app,
            nonce: nil,
            state: nil,
            emailMode: .hidden
        )
        let deleted = try emulatorCall(world.server.port, "DELETE", "/emulator/users/\(world.user)")
        #expect(deleted.response.status == 200)
        let delivered = deleted.json?["notifications"]?["delivered"]?.arrayValue
        #expect(delivered?.first?["type"]?.stringValue == "account-deleted")
        #expect(receiver.received.count == 1)
    }
}
