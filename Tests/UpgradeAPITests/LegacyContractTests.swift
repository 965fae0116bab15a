import Foundation
import HTTPCore
import Synchronization
import Testing
import UpgradeAPI
import UpgradeEngine

/// The legacy login system's contract (docs/legacy-verification.md) that the Python double does not
/// pin: the request's content type and body timestamp, answers that are outages although they look
/// like answers (another 2xx, a 4xx, an oversized body), exactly one call each, and the settings'
/// defaults and bounds. A scripted endpoint on loopback plays the legacy system.
@Suite("The legacy login system's contract")
struct LegacyContractTests {
    /// A verifier of `legacy` on a loopback server, without a pause after outages.
    static func verifier(_ port: Int) throws -> LegacyPasswordVerifier {
        LegacyPasswordVerifier(
            endpoint: .init(
                url: "http://127.0.0.1:\(port)/verify",
                secret: try WebhookSecret(text: "whsec_" + Data(SecureRandom.bytes(32)).base64EncodedString()),
                timeout: .seconds(2),
                outagePause: .zero
            )
        )
    }

    @Test("the request: POST, application/json, the three webhook headers, type, an RFC 3339 timestamp, data")
    func requestShape() throws {
        let legacy = ScriptedEndpoint([ScriptedEndpoint.json(#"{"result":"mismatch"}"#)])
        let server = try legacy.start()
        defer { server.shutdown() }
        let verifier = try Self.verifier(server.port)
        let before = Date()
        #expect(verifier.verify(username: "alice", password: "a guess") == .mismatch)
        let request = try #require(legacy.received.first)
        #expect(request.method == "POST" && request.path == "/verify")
        #expect(request.headers["Content-Type"]?.hasPrefix("application/json") == true)
        for name in ["webhook-id", "webhook-timestamp", "webhook-signature"] {
            #expect(request.headers[name] != nil, "\(name)")
        }
        #expect(request.headers["webhook-signature"]?.hasPrefix("v1,") == true)
        let body = try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
        #expect(Set(body.keys) == ["type", "timestamp", "data"])
        #expect(body["type"] as? String == "password.verify")
        #expect(body["data"] as? [String: String] == ["username": "alice", "password": "a guess"])
        let stamp = try #require(body["timestamp"] as? String)
        let parsed = try #require(ISO8601DateFormatter().date(from: stamp), "\(stamp) is not RFC 3339")
        #expect(abs(parsed.timeIntervalSince(before)) < 60)
    }

    @Test(
        "answers that are not a verdict are outages, each after exactly one call: no retry after a 4xx",
        arguments: [
            ("201 with a verdict", 201, #"{"result":"match"}"#, LegacyPasswordVerifier.Outage.Kind.status),
            ("400", 400, #"{"error":"bad request"}"#, .status),
            ("404", 404, "", .status),
            ("429", 429, "", .status),
            (
                "over 16 KiB", 200, #"{"result":"match","pad":""# + String(repeating: "x", count: 17 * 1024) + #""}"#,
                .invalidAnswer
            ),
            ("a JSON array", 200, #"["match"]"#, .invalidAnswer),
            ("an unknown result", 200, #"{"result":"MATCH"}"#, .invalidAnswer),
        ]
    )
    func outages(_ what: String, status: Int, body: String, kind: LegacyPasswordVerifier.Outage.Kind) throws {
        let legacy = ScriptedEndpoint([ScriptedEndpoint.json(body, status: status)])
        let server = try legacy.start()
        defer { server.shutdown() }
        let verifier = try Self.verifier(server.port)
        guard case .unavailable(let outage) = verifier.verify(username: "alice", password: "pw") else {
            Issue.record("\(what) gave a verdict")
            return
        }
        #expect(outage.kind == kind, "\(what): \(outage)")
        #expect(legacy.received.count == 1, "\(what): asked \(legacy.received.count) times")
        #expect(!outage.reason.contains("pw"), "no password in the reason")
    }

    @Test("settings: timeout 3 s by default, 0.5 to 10; create on or off, on only with a URL; a URL needs its secret")
    func settings() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("legacy-settings-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let secret = dir.appendingPathComponent("secret").path
        #expect(
            FileManager.default.createFile(
                atPath: secret,
                contents: Data(("whsec_" + Data(SecureRandom.bytes(32)).base64EncodedString() + "\n").utf8),
                attributes: [.posixPermissions: 0o600]
            )
        )
        let base = [
            "UPGRADE_DB": "sqlite:unused.db", "UPGRADE_LISTEN": "127.0.0.1:8080",
            "UPGRADE_LEGACY_VERIFY_URL": "http://127.0.0.1:9/verify", "UPGRADE_LEGACY_VERIFY_SECRET_FILE": secret,
        ]
        func load(_ extra: [String: String], without: [String] = []) -> Result<ServerSettings, ServerSettingsError> {
            var values = base.merging(extra) { $1 }
            for name in without { values[name] = nil }
            do {
                return .success(try ServerSettings.load(values, development: true))
            } catch {
                return .failure(error)
            }
        }
        #expect(try load([:]).get().legacyVerify?.timeout == .seconds(3))
        #expect(try load(["UPGRADE_LEGACY_VERIFY_TIMEOUT": "0.5"]).get().legacyVerify?.timeout == .milliseconds(500))
        #expect(try load(["UPGRADE_LEGACY_VERIFY_TIMEOUT": "10"]).get().legacyVerify?.timeout == .seconds(10))
        #expect(try load([:]).get().legacyCreate == false)
        #expect(try load(["UPGRADE_LEGACY_CREATE": "on"]).get().legacyCreate == true)
        let refusals: [([String: String], [String], String)] = [
            (
                ["UPGRADE_LEGACY_VERIFY_TIMEOUT": "0.4"], [],
                "UPGRADE_LEGACY_VERIFY_TIMEOUT: expected seconds from 0.5 to 10"
            ),
            (
                ["UPGRADE_LEGACY_VERIFY_TIMEOUT": "10.5"], [],
                "UPGRADE_LEGACY_VERIFY_TIMEOUT: expected seconds from 0.5 to 10"
            ),
            (
                ["UPGRADE_LEGACY_VERIFY_TIMEOUT": "3s"], [],
                "UPGRADE_LEGACY_VERIFY_TIMEOUT: expected seconds from 0.5 to 10"
            ),
            (["UPGRADE_LEGACY_CREATE": "yes"], [], "UPGRADE_LEGACY_CREATE: expected on or off"),
            (
                ["UPGRADE_LEGACY_CREATE": "on"], ["UPGRADE_LEGACY_VERIFY_URL", "UPGRADE_LEGACY_VERIFY_SECRET_FILE"],
                "UPGRADE_LEGACY_CREATE: on needs UPGRADE_LEGACY_VERIFY_URL"
            ),
            ([:], ["UPGRADE_LEGACY_VERIFY_SECRET_FILE"], "UPGRADE_LEGACY_VERIFY_SECRET_FILE: required with"),
            ([:], ["UPGRADE_LEGACY_VERIFY_URL"], "UPGRADE_LEGACY_VERIFY_URL: required with"),
        ]
        for (extra, without, message) in refusals {
            guard case .failure(let error) = load(extra, without: without) else {
                Issue.record("accepted: \(extra) without \(without)")
                continue
            }
            #expect(error.problems.count == 1, "\(error.problems)")
            #expect(error.problems.first?.hasPrefix(message) == true, "\(error.problems)")
        }
    }
}
