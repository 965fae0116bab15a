import Foundation
import Testing
import UpgradeEngine

@testable import UpgradeAPI

/// Bearer tokens for the admin routes, asked before any admin work: 401 for a missing or wrong
/// token, 403 without the scope, wrong tokens counted per client on a count of their own.
@Suite("Admin bearer tokens")
struct AdminAuthenticatorTests {
    static let client = HTTPClientAddress(bytes: [192, 0, 2, 7])!
    static let now: Int64 = 1_800_000_000

    /// A token file in a directory of its own with one `tickets` token and one `audit` token.
    struct Fixture {
        let directory: URL
        let path: String
        let tickets: String
        let audit: String

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("admin-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            path = directory.appendingPathComponent("tokens").path
            tickets = try AdminTokenFile.add(name: "backend", scopes: [.tickets], path: path, now: now)
            audit = try AdminTokenFile.add(name: "support", scopes: [.audit, .accounts], path: path, now: now)
        }

        func remove() { try? FileManager.default.removeItem(at: directory) }
    }

    static func request(authorization: [String]) -> HTTPRequest {
        var headers = HTTPHeaders()
        headers.append(name: "Host", value: "localhost")
        for value in authorization { headers.append(name: "Authorization", value: value) }
        return HTTPRequest(
            head: HTTPRequestHead(method: "POST", target: "/v1/upgrade-tickets", version: .http1_1, headers: headers),
            client: client
        )
    }

    @Test("the right token with the scope passes; a missing, malformed or wrong one is 401, another scope 403")
    func outcomes() throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let throttled = try ClientThrottleTests.Throttled(ClientThrottle.Policy(failures: 100, window: 600)!)
        let authenticator = AdminAuthenticator(
            tokens: try AdminTokenFile.load(path: fixture.path),
            throttle: throttled.throttle
        )

        let passed = try authenticator.authorize(
            Self.request(authorization: ["Bearer \(fixture.tickets)"]),
            scope: .tickets,
            now: Self.now
        )
        #expect(passed.name == "backend")
        // The scheme is case-insensitive (RFC 9110 §11.1).
        let lowercase = try authenticator.authorize(
            Self.request(authorization: ["bearer \(fixture.audit)"]),
            scope: .audit,
            now: Self.now
        )
        #expect(lowercase.name == "support")

        func refusal(_ values: [String], _ scope: AdminScope = .tickets) -> APIProblem? {
            #expect(throws: APIProblem.self) {
                try authenticator.authorize(Self.request(authorization: values), scope: scope, now: Self.now)
            }
        }
        let missing = try #require(refusal([]))
        #expect(missing.status == 401 && missing.slug == "unauthorized")
        #expect(missing.headers.values(for: "WWW-Authenticate") == ["Bearer realm=\"siwa-upgrade admin\""])
        #expect(try throttled.throttle.clientsInDebt(now: Self.now) == 0, "a request without a token guessed nothing")

        for malformed in [["Basic YWxhZGRpbjpvcGVuc2VzYW1l"], ["Bearer"], ["Bearer a b"], ["Bearer x", "Bearer y"]] {
            let problem = try #require(refusal(malformed))
            #expect(problem.status == 401 && problem.slug == "unauthorized", "\(malformed)")
        }

        let wrong = try #require(refusal(["Bearer \(AdminToken.generate())"]))
        #expect(wrong.status == 401 && wrong.slug == "unauthorized")
        #expect(wrong.headers.values(for: "WWW-Authenticate").first?.contains("error=\"invalid_token\"") == true)
        #expect(try throttled.throttle.clientsInDebt(now: Self.now) == 1, "a wrong token counts against the client")
        // A token one character off is just as wrong.
        var altered = Array(fixture.tickets)
        altered[altered.count - 1] = altered.last == "A" ? "B" : "A"
        #expect(refusal(["Bearer \(String(altered))"])?.status == 401)

        let scope = try #require(refusal(["Bearer \(fixture.tickets)"], .audit))
        #expect(scope.status == 403 && scope.slug == "insufficient-scope")
        #expect(
            scope.headers.values(for: "WWW-Authenticate")
                == ["Bearer realm=\"siwa-upgrade admin\", error=\"insufficient_scope\", scope=\"audit\""]
        )
        for problem in [missing, wrong, scope] {
            let body = String(decoding: problem.response.body, as: UTF8.self)
            #expect(!body.contains(fixture.tickets) && !body.contains(fixture.audit))
            #expect(!(problem.cause ?? "").contains(fixture.tickets))
        }
    }

    @Test("without a token file every admin request is 401")
    func noTokensConfigured() throws {
        let authenticator = AdminAuthenticator(tokens: nil, throttle: nil)
        let problem = #expect(throws: APIProblem.self) {
            try authenticator.authorize(
                Self.request(authorization: ["Bearer \(AdminToken.generate())"]),
                scope: .tickets,
                now: Self.now
            )
        }
        #expect(problem?.status == 401)
    }

    @Test("wrong tokens spend an allowance of their own; the right token is never refused by a throttle")
    func throttled() throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let credentials = try ClientThrottleTests.Throttled(ClientThrottle.Policy(failures: 3, window: 60)!)
        let adminTokens = ClientThrottle(
            policy: credentials.throttle.policy,
            store: credentials.store,
            namespace: .adminTokens
        )
        let authenticator = AdminAuthenticator(
            tokens: try AdminTokenFile.load(path: fixture.path),
            throttle: adminTokens
        )
        let clientKey = Self.client.throttleKey.description
        func authorize(_ token: String, _ scope: AdminScope = .tickets, now: Int64 = Self.now) throws -> AdminToken {
            try authenticator.authorize(Self.request(authorization: ["Bearer \(token)"]), scope: scope, now: now)
        }
        // The client's end-user count is spent; the admin tokens' count is another.
        for _ in 0..<3 { try credentials.recordFailure(Self.client, now: Self.now) }
        #expect(try authorize(fixture.tickets).name == "backend")
        #expect(try adminTokens.retryAfter(clientKey: clientKey, now: Self.now) == nil)

        for _ in 0..<3 {
            let problem = #expect(throws: APIProblem.self) { try authorize(AdminToken.generate()) }
            #expect(problem?.status == 401)
        }
        let limited = #expect(throws: ServiceFailure.self) { try authorize(AdminToken.generate()) }
        #expect(limited?.kind == .rateLimited && limited?.retryAfter == 20)
        // Refusals are not counted: the wait does not grow.
        #expect(try adminTokens.retryAfter(clientKey: clientKey, now: Self.now) == 20)
        // The valid token passes, and its scope is still checked.
        #expect(try authorize(fixture.tickets).name == "backend")
        let scope = #expect(throws: APIProblem.self) { try authorize(fixture.tickets, .audit) }
        #expect(scope?.status == 403)
        // Wrong tokens did not add to the end-user count: it is paid by the wrong passwords' wait.
        #expect(try credentials.retryAfter(Self.client, now: Self.now + 20) == nil)
        let later = #expect(throws: APIProblem.self) { try authorize(AdminToken.generate(), now: Self.now + 20) }
        #expect(later?.status == 401)
    }

    @Test("the file holds names, scopes and hashes only; a file group or others can read is refused")
    func file() throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let text = try String(contentsOfFile: fixture.path, encoding: .utf8)
        #expect(!text.contains(fixture.tickets) && !text.contains(fixture.audit))
        #expect(text.contains(Digest.sha256(fixture.tickets).hexString))
        let mode = try FileManager.default.attributesOfItem(atPath: fixture.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(fixture.tickets.hasPrefix("siwa_admin_") && fixture.tickets.utf8.count == 11 + 43)

        chmod(fixture.path, 0o640)
        let error = #expect(throws: AdminTokenError.self) { try AdminTokenFile.load(path: fixture.path) }
        #expect(error?.code == .permissionsTooOpen)
        #expect(error?.message.contains("chmod 600") == true)
    }
}
