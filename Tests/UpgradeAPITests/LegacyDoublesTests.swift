import Foundation
import Glibc
import Synchronization
import Testing
import UpgradeEngine
import UpgradeTestSupport

/// The two legacy login systems the lazy-verification flow is tried and tested against
/// (docs/legacy-verification.md): the Python fixture of the end-to-end tests and `upgrade-cli legacy
/// verify`. Each is sent requests signed as the server signs them (`WebhookSecret`), and badly signed
/// ones, over loopback HTTP.
@Suite("Legacy login system doubles")
struct LegacyDoublesTests {
    /// A `password.verify` request as the server sends it; `signature` replaces the real one.
    static func request(
        secret: WebhookSecret,
        username: String,
        password: String,
        timestamp: Int64 = Int64(Date().timeIntervalSince1970),
        signature: String? = nil,
        path: String = "/verify"
    ) -> String {
        let id = "msg_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let data = ["username": username, "password": password]
        let object: [String: Any] = ["type": "password.verify", "timestamp": "2026-11-27T10:00:00Z", "data": data]
        let body = String(decoding: (try? JSONSerialization.data(withJSONObject: object)) ?? Data(), as: UTF8.self)
        let signed = signature ?? secret.signature(id: id, timestamp: timestamp, body: Array(body.utf8))
        return "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + "webhook-id: \(id)\r\nwebhook-timestamp: \(timestamp)\r\nwebhook-signature: \(signed)\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
    }

    static func send(_ request: String, port: Int) throws -> TestClient.Response {
        let client = try TestClient(port: port)
        try client.send(request)
        return try client.readResponse()
    }

    static func json(_ response: TestClient.Response) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
    }

    static let password = "correct horse battery staple"

    // MARK: The Python fixture

    @Test("legacy_system.py: match with the profile, mismatch, unknown; a bad signature is refused and recorded")
    func pythonAnswers() throws {
        let legacy = try LegacySystem(table: [
            "alice": .init(password: Self.password, email: "alice@example.com", displayName: "Alice Example"),
            "bob": .init(password: "hunter2"),
        ])
        let secret = try WebhookSecret(text: legacy.secretText)
        let other = try WebhookSecret(text: "whsec_" + Data(SecureRandom.bytes(32)).base64EncodedString())

        let match = try Self.send(
            Self.request(secret: secret, username: "alice", password: Self.password),
            port: legacy.port
        )
        #expect(match.status == 200)
        #expect(Self.json(match)?["result"] as? String == "match")
        let profile = Self.json(match)?["profile"] as? [String: String]
        #expect(profile == ["email": "alice@example.com", "displayName": "Alice Example"])
        let bare = try Self.send(Self.request(secret: secret, username: "bob", password: "hunter2"), port: legacy.port)
        #expect(Self.json(bare)?["result"] as? String == "match")
        #expect(Self.json(bare)?["profile"] == nil)
        let mismatch = try Self.send(
            Self.request(secret: secret, username: "alice", password: "wrong"),
            port: legacy.port
        )
        #expect(mismatch.status == 200)
        #expect(Self.json(mismatch)?["result"] as? String == "mismatch")
        let unknown = try Self.send(Self.request(secret: secret, username: "carol", password: "x"), port: legacy.port)
        #expect(Self.json(unknown)?["result"] as? String == "unknown")

        let forged = try Self.send(
            Self.request(secret: other, username: "alice", password: Self.password),
            port: legacy.port
        )
        #expect(forged.status == 401)
        let stale = Int64(Date().timeIntervalSince1970) - 600
        let replayed = try Self.send(
            Self.request(secret: secret, username: "alice", password: Self.password, timestamp: stale),
            port: legacy.port
        )
        #expect(replayed.status == 401)

        let requests = try legacy.requests()
        #expect(requests.map(\.answered) == ["match", "match", "mismatch", "unknown", "refused", "refused"])
        #expect(requests.map(\.verified) == [true, true, true, true, false, false])
        #expect(requests.map(\.username) == ["alice", "bob", "alice", "carol", nil, nil])
        let log = try legacy.logText()
        #expect(!log.contains(Self.password) && !log.contains("hunter2") && !log.contains("wrong"))
        try legacy.clearRequests()
        #expect(try legacy.requests().isEmpty)
    }

    @Test("legacy_system.py: each outage mode answers as documented, and a bad signature is still refused")
    func pythonModes() async throws {
        let legacy = try LegacySystem(table: ["alice": .init(password: Self.password)])
        let secret = try WebhookSecret(text: legacy.secretText)
        let signed = { Self.request(secret: secret, username: "alice", password: Self.password) }

        try legacy.setMode(.status500)
        #expect(try Self.send(signed(), port: legacy.port).status == 500)
        #expect(
            try Self.send(
                Self.request(secret: secret, username: "a", password: "b", signature: "v1,AAAA"),
                port: legacy.port
            ).status == 401
        )

        try legacy.setMode(.redirect)
        let redirect = try Self.send(signed(), port: legacy.port)
        #expect(redirect.status == 302)
        #expect(redirect.header("Location") == "http://127.0.0.1:\(legacy.port)/redirected")

        try legacy.setMode(.garbage)
        let garbage = try Self.send(signed(), port: legacy.port)
        #expect(garbage.status == 200)
        #expect(Self.json(garbage) == nil)

        try legacy.setMode(.badresult)
        let badResult = try Self.send(signed(), port: legacy.port)
        #expect(badResult.status == 200)
        #expect(Self.json(badResult)?["result"] as? String == "yes")

        // A stall holds the answer (2 s here, 30 s by default), then answers as normal.
        try legacy.setMode(.stall, seconds: 2)
        let client = try TestClient(port: legacy.port)
        try client.send(signed())
        #expect(!client.isReadable(withinMilliseconds: 500))
        // Recorded on arrival, while the caller still waits.
        #expect(try await WebhookReceiver.eventually(seconds: 10) { try legacy.requests().last?.answered == "stall" })
        let late = try client.readResponse()
        #expect(Self.json(late)?["result"] as? String == "match")

        // Following the redirect is recorded, so a test can prove the server never does.
        let followed = try Self.send(
            signed().replacingOccurrences(of: "POST /verify", with: "POST /redirected"),
            port: legacy.port
        )
        #expect(followed.status == 200)

        let requests = try legacy.requests()
        #expect(
            requests.map(\.answered) == ["status500", "refused", "redirect", "garbage", "badresult", "stall", "match"]
        )
        #expect(requests.map(\.redirectFollowed) == [false, false, false, false, false, false, true])
        #expect(
            requests.map(\.mode) == ["status500", "status500", "redirect", "garbage", "badresult", "stall", "stall"]
        )
    }

    @Test("the server's LegacyPasswordVerifier gets a verdict in normal mode and an outage in every other")
    func pythonAgainstTheServersClient() throws {
        let legacy = try LegacySystem(table: [
            "alice": .init(password: Self.password, email: "alice@example.com", displayName: "Alice Example")
        ])
        // No pause after an outage, so that each mode below is asked about.
        let verifier = LegacyPasswordVerifier(
            endpoint: .init(
                url: legacy.url,
                secret: try WebhookSecret.load(path: legacy.secretFile),
                timeout: .seconds(1),
                outagePause: .zero
            )
        )
        #expect(
            verifier.verify(username: "alice", password: Self.password)
                == .match(LegacyProfile(email: "alice@example.com", displayName: "Alice Example"))
        )
        #expect(verifier.verify(username: "alice", password: "wrong") == .mismatch)
        #expect(verifier.verify(username: "carol", password: "x") == .unknown)
        let outages: [(LegacySystem.Mode, LegacyPasswordVerifier.Outage.Kind)] = [
            (.status500, .status), (.redirect, .redirected), (.garbage, .invalidAnswer), (.badresult, .invalidAnswer),
            (.stall, .timedOut),
        ]
        for (mode, kind) in outages {
            try legacy.setMode(mode, seconds: 3)
            guard case .unavailable(let outage) = verifier.verify(username: "alice", password: Self.password) else {
                Issue.record("\(mode) gave a verdict")
                continue
            }
            #expect(outage.kind == kind, "\(mode): \(outage)")
        }
        let requests = try legacy.requests()
        let unverified = requests.filter { !$0.verified }
        let followed = requests.filter(\.redirectFollowed)
        #expect(unverified.isEmpty, "every request verified with standardwebhooks")
        #expect(followed.isEmpty, "the redirect was not followed")
        #expect(
            requests.map(\.answered) == [
                "match", "mismatch", "unknown", "status500", "redirect", "garbage", "badresult", "stall",
            ]
        )

        // Within the pause every check is still asked: the first one the legacy system answers ends
        // the pause. Until then `outageHold` is how long the last outage took, so that a check not
        // asked can be answered in the same time.
        try legacy.setMode(.normal)
        let calls = Mutex<[String]>([])
        let pausing = LegacyPasswordVerifier(
            endpoint: .init(
                url: legacy.url,
                secret: try WebhookSecret.load(path: legacy.secretFile),
                timeout: .seconds(1),
                outagePause: .seconds(30)
            ),
            onCall: { call in calls.withLock { $0.append("\(call.outcome)/\(call.attempts)") } }
        )
        #expect(pausing.verify(username: "alice", password: "wrong") == .mismatch)
        #expect(pausing.outageHold == nil)
        try legacy.setMode(.status500)
        guard case .unavailable(let refused) = pausing.verify(username: "alice", password: Self.password) else {
            Issue.record("a 500 gave a verdict")
            return
        }
        #expect(refused.kind == .status && pausing.outageHold != nil)
        #expect(try #require(pausing.outageHold) < .seconds(1), "a refusal is fast, and so is its hold")
        try legacy.setMode(.normal)
        guard case .match = pausing.verify(username: "alice", password: Self.password) else {
            Issue.record("the legacy system, back, was not asked within the pause")
            return
        }
        #expect(pausing.outageHold == nil, "an answer ends the pause")
        try legacy.setMode(.stall, seconds: 30)
        guard case .unavailable(let stalled) = pausing.verify(username: "alice", password: Self.password) else {
            Issue.record("a stall gave a verdict")
            return
        }
        #expect(stalled.kind == .timedOut)
        #expect(try #require(pausing.outageHold) >= .milliseconds(900), "a stall's hold is its timeout")
        try legacy.setMode(.normal)
        #expect(try legacy.requests().count == requests.count + 4)
        #expect(calls.withLock { $0 } == ["mismatch/1", "status/1", "match/1", "timed-out/1"])
    }

    // MARK: upgrade-cli legacy verify

    /// An accounts file (JSONL) and a secret file in a fresh directory.
    static func cliFiles() throws -> (directory: URL, accounts: String, secretFile: String, secret: WebhookSecret) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("legacy-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let secretText = "whsec_" + Data(SecureRandom.bytes(32)).base64EncodedString()
        let secretFile = directory.appendingPathComponent("secret").path
        #expect(
            FileManager.default.createFile(
                atPath: secretFile,
                contents: Data((secretText + "\n").utf8),
                attributes: [.posixPermissions: 0o600]
            )
        )
        // bcrypt (pyca/bcrypt) and phpass (passlib), from Tests/Fixtures/passwords/hashes.json.
        let rows: [[String: String]] = [
            [
                "username": "Alice", "passwordHash": "$2b$04$BijTQqc208/khZ0oPV5xKOL.ZsLZITC3nFpegnO1AV049ap0LYpue",
                "email": "alice@example.com", "displayName": "Alice Example",
            ],
            ["username": "bob", "passwordHash": "$P$5t4UiB4G0H4GJ3P5V8AcDSaKMG.LrG0"],
        ]
        let lines = try rows.map { String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self) }
        let accounts = directory.appendingPathComponent("accounts.jsonl").path
        #expect(FileManager.default.createFile(atPath: accounts, contents: Data(lines.joined(separator: "\n").utf8)))
        return (directory, accounts, secretFile, try WebhookSecret(text: secretText))
    }

    @Test("legacy verify: a secret file of several secrets (a rotation) verifies a request signed with any of them")
    func cliRotation() async throws {
        let files = try Self.cliFiles()
        defer { try? FileManager.default.removeItem(at: files.directory) }
        let newText = "whsec_" + Data(SecureRandom.bytes(32)).base64EncodedString()
        let oldText = try String(contentsOfFile: files.secretFile, encoding: .utf8)
        try FileManager.default.removeItem(atPath: files.secretFile)
        #expect(
            FileManager.default.createFile(
                atPath: files.secretFile,
                contents: Data("# new first\n\(newText)\n\(oldText)".utf8),
                attributes: [.posixPermissions: 0o600]
            )
        )
        let running = try EmulatorCommandHTTPTests.Running(
            ["--listen", "127.0.0.1:0", "--accounts", files.accounts, "--secret-file", files.secretFile],
            command: ["legacy", "verify"]
        )
        let url = try #require(await running.setting("UPGRADE_LEGACY_VERIFY_URL"), "\(running.errors.text)")
        let port = try #require(URLComponents(string: url)?.port)
        let other = try WebhookSecret(text: "whsec_" + Data(SecureRandom.bytes(32)).base64EncodedString())
        for secret in [files.secret, try WebhookSecret(text: newText)] {
            let answer = try Self.send(
                Self.request(secret: secret, username: "alice", password: Self.password),
                port: port
            )
            #expect(answer.status == 200 && Self.json(answer)?["result"] as? String == "match")
        }
        let forged = try Self.send(Self.request(secret: other, username: "alice", password: Self.password), port: port)
        #expect(forged.status == 401)
        #expect(await running.stop() == 0)
    }

    @Test("legacy verify: signed requests get match (with the profile), mismatch, unknown; bad signatures get 401")
    func cliAnswers() async throws {
        let files = try Self.cliFiles()
        defer { try? FileManager.default.removeItem(at: files.directory) }
        let running = try EmulatorCommandHTTPTests.Running(
            ["--listen", "127.0.0.1:0", "--accounts", files.accounts, "--secret-file", files.secretFile],
            command: ["legacy", "verify"]
        )
        let url = try #require(
            await running.setting("UPGRADE_LEGACY_VERIFY_URL"),
            "stdout: \(running.output.text) stderr: \(running.errors.text)"
        )
        #expect(await running.setting("UPGRADE_LEGACY_VERIFY_SECRET_FILE") == files.secretFile)
        let port = try #require(URLComponents(string: url)?.port)
        let secret = files.secret
        let other = try WebhookSecret(text: "whsec_" + Data(SecureRandom.bytes(32)).base64EncodedString())

        // The file's `Alice` answers for the `alice` the server sends (both PRECIS-normalised).
        let match = try Self.send(Self.request(secret: secret, username: "alice", password: Self.password), port: port)
        #expect(match.status == 200)
        #expect(Self.json(match)?["result"] as? String == "match")
        #expect(
            Self.json(match)?["profile"] as? [String: String] == [
                "email": "alice@example.com", "displayName": "Alice Example",
            ]
        )
        let phpass = try Self.send(Self.request(secret: secret, username: "bob", password: Self.password), port: port)
        #expect(Self.json(phpass)?["result"] as? String == "match")
        #expect(Self.json(phpass)?["profile"] == nil)
        let mismatch = try Self.send(Self.request(secret: secret, username: "alice", password: "wrong"), port: port)
        #expect(Self.json(mismatch)?["result"] as? String == "mismatch")
        let unknown = try Self.send(Self.request(secret: secret, username: "carol", password: "x"), port: port)
        #expect(Self.json(unknown)?["result"] as? String == "unknown")

        let forged = try Self.send(Self.request(secret: other, username: "alice", password: Self.password), port: port)
        #expect(forged.status == 401)
        #expect(Self.json(forged)?["result"] == nil)
        let now = Int64(Date().timeIntervalSince1970)
        for stale in [now - 301, now + 301] {
            let response = try Self.send(
                Self.request(secret: secret, username: "alice", password: Self.password, timestamp: stale),
                port: port
            )
            #expect(response.status == 401, "timestamp \(stale - now) s from now")
        }
        let unsigned = try Self.send(
            "POST /verify HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
            port: port
        )
        #expect(unsigned.status == 401)
        // Signed, but not a password.verify body.
        let id = "msg_1"
        let body = #"{"type":"account.converted","data":{}}"#
        let wrongType = try Self.send(
            "POST /verify HTTP/1.1\r\nHost: x\r\nwebhook-id: \(id)\r\nwebhook-timestamp: \(now)\r\n"
                + "webhook-signature: \(secret.signature(id: id, timestamp: now, body: Array(body.utf8)))\r\n"
                + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)",
            port: port
        )
        #expect(wrongType.status == 400)

        // And as the server asks.
        let verifier = LegacyPasswordVerifier(endpoint: .init(url: url, secret: secret))
        #expect(
            verifier.verify(username: "alice", password: Self.password)
                == .match(LegacyProfile(email: "alice@example.com", displayName: "Alice Example"))
        )
        #expect(verifier.verify(username: "bob", password: "wrong") == .mismatch)
        #expect(verifier.verify(username: "carol", password: "x") == .unknown)

        #expect(await running.stop() == 0)
        let errors = await running.errors.all()
        #expect(errors.contains("alice: match") && errors.contains("carol: unknown") && errors.contains("401"))
        #expect(!errors.contains(Self.password) && !errors.contains("wrong"), "stderr: \(errors)")
    }

    @Test("legacy verify --stall holds each answer, then gives it; the accounts may be a JSON array")
    func cliStall() async throws {
        let files = try Self.cliFiles()
        defer { try? FileManager.default.removeItem(at: files.directory) }
        // A JSON array of the same rows as the JSON Lines file.
        let lines = String(decoding: try Data(contentsOf: URL(fileURLWithPath: files.accounts)), as: UTF8.self)
        let array = "[" + lines.split(separator: "\n").joined(separator: ",\n") + "]"
        try Data(array.utf8).write(to: URL(fileURLWithPath: files.accounts))
        let running = try EmulatorCommandHTTPTests.Running(
            [
                "--listen", "127.0.0.1:0", "--accounts", files.accounts, "--secret-file", files.secretFile, "--stall",
                "2",
            ],
            command: ["legacy", "verify"]
        )
        let url = try #require(await running.setting("UPGRADE_LEGACY_VERIFY_URL"), "stderr: \(running.errors.text)")
        let port = try #require(URLComponents(string: url)?.port)
        let client = try TestClient(port: port)
        try client.send(Self.request(secret: files.secret, username: "alice", password: Self.password))
        #expect(!client.isReadable(withinMilliseconds: 500))
        let answer = Self.json(try client.readResponse())
        #expect(answer?["result"] as? String == "match")
        #expect(
            answer?["profile"] as? [String: String] == ["email": "alice@example.com", "displayName": "Alice Example"]
        )
        #expect(await running.stop() == 0)
    }

    @Test(
        "legacy verify refuses a non-loopback address, a bad hash, an open secret file, with one line and exit 2",
        arguments: ["non-loopback", "bad hash", "open secret", "stall"]
    )
    func cliRefusals(_ case: String) throws {
        let files = try Self.cliFiles()
        defer { try? FileManager.default.removeItem(at: files.directory) }
        var arguments = ["legacy", "verify", "--listen", "127.0.0.1:0", "--accounts", files.accounts]
        arguments += ["--secret-file", files.secretFile]
        let expected: String
        switch `case` {
        case "non-loopback":
            arguments[3] = "0.0.0.0:0"
            expected = "--listen 0.0.0.0:0 is not loopback"
        case "bad hash":
            let row =
                #"{"username": "eve", "passwordHash": "$2b$99$BijTQqc208/khZ0oPV5xKOL.ZsLZITC3nFpegnO1AV049ap0LYpue"}"#
            try Data(row.utf8).write(to: URL(fileURLWithPath: files.accounts))
            expected = "line 1 (eve): passwordHash"
        case "open secret":
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: files.secretFile)
            expected = "--secret-file=\(files.secretFile): has mode 0644"
        default:
            arguments += ["--stall", "61"]
            expected = "--stall must be"
        }
        let result = try runCLI(arguments)
        #expect(result.status == 2)
        #expect(result.stderr.contains(expected), "stderr: \(result.stderr)")
        #expect(result.stdout.isEmpty)
        // A file's problem is one line; a command line's is followed by the usage.
        let usage = `case` == "non-loopback" || `case` == "stall"
        #expect(
            usage
                ? result.stderr.contains("usage: upgrade-cli legacy verify")
                : result.stderr.split(separator: "\n").count == 1
        )
    }
}
