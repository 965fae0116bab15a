import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeAPI
@testable import UpgradeEngine

/// `upgrade-cli token verify --jwks URL` as a real process, fetching the key set from the emulator
/// served on a loopback port.
@Suite("upgrade-cli token verify --jwks URL")
struct TokenVerifyJWKSURLTests {
    @Test("the key set is fetched from a loopback URL: the token verifies (exit 0) or is rejected (exit 1)")
    func fetchesFromLoopback() throws {
        let world = try EmulatorHTTPWorld()
        defer { world.stop() }
        let authorization = try world.authorize()
        let url = world.baseURL + "/auth/keys"
        let now = String(world.clock.now)
        let valid = try runCLI([
            "token", "verify",
            authorization.identityToken, "--jwks", url, "--audience", EmulatorHTTPWorld.app, "--now", now,
        ])
        #expect(valid.status == 0, "\(valid.stderr)")
        #expect(try JSONValue.parse(Array(valid.stdout.utf8))["sub"]?.stringValue == authorization.user)
        #expect(world.counter.count("/auth/keys") == 1)

        let rejected = try runCLI([
            "token", "verify",
            authorization.identityToken, "--jwks", url, "--audience", "com.other", "--now", now,
        ])
        #expect(rejected.status == 1, "\(rejected.stderr)")
        #expect(rejected.stderr.hasPrefix("error: token rejected (audienceNotAllowed)"), "\(rejected.stderr)")
    }

    @Test("an unusable JWKS URL is one line and exit 2; plain http is refused for any host but loopback")
    func unusableSources() throws {
        let world = try EmulatorHTTPWorld()
        defer { world.stop() }
        let authorization = try world.authorize()
        let cases: [(url: String, reason: String)] = [
            // Nothing listens on port 1 of the loopback address.
            ("http://127.0.0.1:1/auth/keys", "could not connect"),
            (world.baseURL + "/no/such/keys", "HTTP 404"),
            // Refused before any request is made: the key set would cross the network unprotected.
            ("http://example.com/auth/keys", "plain http"),
            ("https://appleid.apple.com/auth/keys?x=1", "has a query or fragment"),
            ("ftp://127.0.0.1/auth/keys", "must use https"),
        ]
        for (url, reason) in cases {
            let result = try runCLI([
                "token", "verify",
                authorization.identityToken, "--jwks", url, "--audience", EmulatorHTTPWorld.app,
            ])
            #expect(result.status == 2, "\(url): \(result.stderr)")
            #expect(result.stdout.isEmpty, "\(url)")
            #expect(result.stderr.hasPrefix("error: --jwks "), "\(url): \(result.stderr)")
            #expect(result.stderr.contains(reason), "\(url): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "one line: \(result.stderr)")
            #expect(!result.stderr.contains(authorization.identityToken))
        }
        #expect(world.counter.count("/no/such/keys") == 1)
    }
}
