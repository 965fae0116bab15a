import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// Runs the built `upgrade-cli token verify` against the minted fixtures (exit codes as the README documents them).
@Suite("upgrade-cli token verify")
struct IdentityTokenCLITests {
    /// The executable sits next to the test bundle in the build directory.
    static func run(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try runProcess(try UpgradeCLI.executable(), ["token", "verify"] + arguments)
    }

    static let jwks = Fixtures.url("apple/jwks.json").path

    static func common(_ fixtures: TokenFixtures) -> [String] {
        [
            "--jwks", jwks, "--audience", fixtures.audiences[0], "--audience=\(fixtures.audiences[1])",
            "--nonce", fixtures.nonce, "--now", String(fixtures.now),
        ]
    }

    @Test("a valid token: exit 0 and the claims as JSON")
    func valid() throws {
        let fixtures = try TokenFixtures.load()
        for fixture in fixtures.valid {
            let result = try Self.run([fixture.token] + Self.common(fixtures))
            #expect(result.status == 0, "\(fixture.name): \(result.stderr)")
            let claims = try JSONValue.parse(Array(result.stdout.utf8))
            for (name, value) in fixture.expected {
                #expect(claims[name] == value.json, "\(fixture.name): \(name)")
            }
            #expect(!result.stdout.contains(fixtures.nonce), "the nonce is not printed")
        }
    }

    @Test("each rejected fixture: exit 1 and its reason on stderr")
    func rejected() throws {
        let fixtures = try TokenFixtures.load()
        for fixture in fixtures.invalid {
            let result = try Self.run([fixture.token] + Self.common(fixtures))
            #expect(result.status == 1, "\(fixture.name)")
            #expect(result.stdout.isEmpty, "\(fixture.name)")
            #expect(
                result.stderr.hasPrefix("error: token rejected (\(fixture.code)): "),
                "\(fixture.name): \(result.stderr)"
            )
            #expect(!result.stderr.contains(fixtures.nonce), "\(fixture.name)")
        }
    }

    @Test("comma-separated audiences; the token from standard input")
    func audienceListAndStdin() throws {
        let fixtures = try TokenFixtures.load()
        let token = fixtures.valid[1].token
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("token-\(UUID().uuidString)")
        try (token + "\n").write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try runProcess(
            "/bin/sh",
            [
                "-c", "\"$0\" token verify - --jwks \"$1\" --audience \"com.other, $2\" --now \"$3\" < \"$4\"",
                try UpgradeCLI.executable(), Self.jwks, fixtures.audiences[1], String(fixtures.now), file.path,
            ]
        )
        #expect(result.status == 0, "\(result.stderr)")
        // Without the token's audience in the list it is rejected.
        let wrong = try Self.run([token, "--jwks", Self.jwks, "--audience", "com.other", "--now", String(fixtures.now)])
        #expect(wrong.status == 1 && wrong.stderr.contains("audienceNotAllowed"))
    }

    @Test("usage and configuration errors exit 2")
    func usage() throws {
        let fixtures = try TokenFixtures.load()
        let token = fixtures.valid[0].token
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("jwks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let broken = directory.appendingPathComponent("broken.json")
        try "{\"keys\": [".write(to: broken, atomically: true, encoding: .utf8)
        let empty = directory.appendingPathComponent("empty.json")
        try "{\"keys\": []}".write(to: empty, atomically: true, encoding: .utf8)
        let cases: [([String], String)] = [
            ([token, "--audience", "a"], "missing required option --jwks"),
            ([token, "--jwks", Self.jwks], "missing required option --audience"),
            (["--jwks", Self.jwks, "--audience", "a"], "missing TOKEN"),
            (
                [token, "--jwks", directory.appendingPathComponent("absent.json").path, "--audience", "a"],
                "cannot read JWKS file"
            ),
            ([token, "--jwks", broken.path, "--audience", "a"], "not valid JSON"),
            ([token, "--jwks", empty.path, "--audience", "a"], "no RS256 signature key"),
            ([token, "--jwks", "http://example.com/auth/keys", "--audience", "a"], "uses plain http"),
            ([token, "--jwks", Self.jwks, "--audience", "a", "--now", "soon"], "--now must be an integer"),
            ([token, "--jwks", Self.jwks, "--audience", "a", "--leeway", "3600"], "leeway must be 0 to 600"),
            ([token, "--jwks", Self.jwks, "--audience", "a", "--bogus"], "unknown option --bogus"),
            ([token, "extra", "--jwks", Self.jwks, "--audience", "a"], "unexpected argument"),
        ]
        for (arguments, reason) in cases {
            let result = try Self.run(arguments)
            #expect(result.status == 2, "\(reason): \(result.stderr)")
            #expect(result.stderr.contains(reason), "\(reason): \(result.stderr)")
            #expect(!result.stderr.contains(token), "the token is never echoed")
        }
    }
}
