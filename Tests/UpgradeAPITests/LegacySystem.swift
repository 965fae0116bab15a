import Foundation
import Glibc
import Testing
import UpgradeEngine

/// `Tests/Fixtures/legacy/legacy_system.py` as a process: a loopback legacy login system that checks
/// every request's signature with python's `standardwebhooks`, answers from its own bcrypt table, and
/// can be switched into the outage modes of docs/legacy-verification.md. `stop()` ends it; it also
/// ends by itself after `lifetime` seconds.
final class LegacySystem: @unchecked Sendable {
    /// One account of the table: the password is hashed with bcrypt by the script at startup.
    struct Entry: Sendable {
        var password: String
        var email: String?
        var displayName: String?
    }

    enum Mode: String, Sendable {
        /// `match` (with the table's profile), `mismatch` or `unknown`.
        case normal
        /// 500 to every verified request.
        case status500
        /// 302 to `/redirected`, which records a follow and answers `match`.
        case redirect
        /// Records the call (`answered: "stall"`), sleeps the mode's seconds (30 unless given), then
        /// answers as `normal`.
        case stall
        /// 200 with an HTML body.
        case garbage
        /// 200 `{"result": "yes"}`.
        case badresult
    }

    /// What the script recorded of one request; it never records the password.
    struct Request: Sendable, Equatable {
        let path: String
        let webhookID: String?
        /// Whether the Standard Webhooks signature and timestamp verified.
        let verified: Bool
        let username: String?
        let mode: String
        /// `match`, `mismatch`, `unknown`, another mode's name (`stall` too), `refused` (401) or
        /// `malformed` (400).
        let answered: String
        let redirectFollowed: Bool
    }

    static let script = FixtureProcess.script("legacy/legacy_system.py")

    let directory: URL
    let secretText: String
    /// Mode 0600, as `UPGRADE_LEGACY_VERIFY_SECRET_FILE` must be.
    let secretFile: String
    private let child: FixtureProcess

    init(table: [String: Entry], mode: Mode = .normal, lifetime: Int = 300) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("legacy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        secretText = "whsec_" + Data(SecureRandom.bytes(32)).base64EncodedString()
        secretFile = directory.appendingPathComponent("legacy-secret").path
        #expect(
            FileManager.default.createFile(
                atPath: secretFile,
                contents: Data((secretText + "\n").utf8),
                attributes: [.posixPermissions: 0o600]
            )
        )
        var rows: [String: [String: String]] = [:]
        for (username, entry) in table {
            var row = ["password": entry.password]
            row["email"] = entry.email
            row["displayName"] = entry.displayName
            rows[username] = row
        }
        let tableFile = directory.appendingPathComponent("table.json").path
        #expect(
            FileManager.default.createFile(
                atPath: tableFile,
                contents: try JSONSerialization.data(withJSONObject: rows)
            )
        )
        child = try FixtureProcess(
            script: Self.script,
            arguments: [
                "--secret-file", secretFile, "--table", tableFile, "--mode", mode.rawValue, "--max-seconds",
                String(lifetime),
            ],
            what: "the legacy system",
            needs: "python3 with standardwebhooks and bcrypt"
        )
    }

    typealias Failure = FixtureProcess.Failure

    deinit { stop() }

    func stop() {
        child.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    var port: Int { child.port }

    /// `UPGRADE_LEGACY_VERIFY_URL` for the server.
    var url: String { "http://127.0.0.1:\(port)/verify" }

    /// Switches how verified requests are answered; `seconds` is the stall's length.
    func setMode(_ mode: Mode, seconds: Double? = nil) throws {
        var change: [String: Any] = ["mode": mode.rawValue]
        change["seconds"] = seconds
        let response = try call("POST", "/control", body: try JSONSerialization.data(withJSONObject: change))
        guard response.status == 200 else { throw Failure("/control answered \(response.status): \(response.text)") }
    }

    /// Every request so far, in arrival order.
    func requests() throws -> [Request] {
        let response = try call("GET", "/log")
        guard response.status == 200,
            let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
            let requests = object["requests"] as? [[String: Any]]
        else { throw Failure("/log answered \(response.status): \(response.text)") }
        return requests.map {
            Request(
                path: $0["path"] as? String ?? "",
                webhookID: $0["webhookId"] as? String,
                verified: $0["verified"] as? Bool ?? false,
                username: $0["username"] as? String,
                mode: $0["mode"] as? String ?? "",
                answered: $0["answered"] as? String ?? "",
                redirectFollowed: $0["redirectFollowed"] as? Bool ?? false
            )
        }
    }

    /// Forgets the requests recorded so far.
    func clearRequests() throws {
        let response = try call("POST", "/log/clear")
        guard response.status == 204 else { throw Failure("/log/clear answered \(response.status)") }
    }

    /// The raw `/log` document, for checks that nothing secret was recorded.
    func logText() throws -> String { try call("GET", "/log").text }

    private func call(_ method: String, _ path: String, body: Data = Data()) throws -> TestClient.Response {
        let client = try TestClient(port: port)
        try client.send(
            "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        )
        try client.send(Array(body))
        return try client.readResponse()
    }
}
