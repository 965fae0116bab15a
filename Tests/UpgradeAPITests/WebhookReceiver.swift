import Foundation
import Testing
import UpgradeEngine
import UpgradeTestSupport

/// `Tests/Fixtures/webhooks/receiver.py` as a process: a loopback webhook receiver that verifies
/// every delivery with python's `standardwebhooks` and records it. `stop()` ends it; it also ends
/// by itself after `lifetime` seconds.
final class WebhookReceiver: @unchecked Sendable {
    struct Delivery: Sendable, Equatable {
        let id: String
        let type: String
        let accountID: String?
    }

    static let script = FixtureProcess.script("webhooks/receiver.py")

    let directory: URL
    let secretText: String
    let secretFile: String
    let record: String
    private let child: FixtureProcess

    /// The file the receiver reads the one secret it holds from, for each delivery (`hold`).
    let heldSecretFile: String

    init(lifetime: Int = 120, delayMilliseconds: Int = 0) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("hooks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var key = [UInt8](repeating: 0, count: 32)
        for index in key.indices { key[index] = UInt8.random(in: 0...255) }
        secretText = "whsec_" + Data(key).base64EncodedString()
        secretFile = directory.appendingPathComponent("webhook-secret").path
        #expect(
            FileManager.default.createFile(
                atPath: secretFile,
                contents: Data((secretText + "\n").utf8),
                attributes: [.posixPermissions: 0o600]
            )
        )
        record = directory.appendingPathComponent("deliveries.jsonl").path
        heldSecretFile = directory.appendingPathComponent("held-secret").path
        #expect(FileManager.default.createFile(atPath: heldSecretFile, contents: Data(secretText.utf8)))
        child = try FixtureProcess(
            script: Self.script,
            arguments: ["@" + heldSecretFile, record, String(lifetime), String(delayMilliseconds)],
            what: "the receiver",
            needs: "python3 with standardwebhooks"
        )
    }

    deinit { stop() }

    func stop() {
        child.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    var port: Int { child.port }

    var url: String { "http://127.0.0.1:\(port)/hooks" }

    /// From the next delivery on, the receiver verifies with `secret` alone (a receiver that
    /// switched its side of a rotation).
    func hold(_ secret: String) throws {
        try Data(secret.utf8).write(to: URL(fileURLWithPath: heldSecretFile), options: .atomic)
    }

    /// While down, every delivery is answered 503.
    func setDown(_ down: Bool) {
        if down {
            _ = FileManager.default.createFile(atPath: record + ".down", contents: Data())
        } else {
            try? FileManager.default.removeItem(atPath: record + ".down")
        }
    }

    /// The webhook-ids refused while down, in order.
    var refused: [String] { lines(record + ".refused") }

    /// Verified deliveries in the order they arrived; `bad` counts those whose signature failed.
    func deliveries() -> (verified: [Delivery], bad: Int) {
        var verified: [Delivery] = []
        var bad = 0
        for line in lines(record) {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                bad += 1
                continue
            }
            if object["bad"] as? Bool == true {
                bad += 1
            } else if let id = object["id"] as? String, let type = object["type"] as? String {
                verified.append(Delivery(id: id, type: type, accountID: object["accountId"] as? String))
            }
        }
        return (verified, bad)
    }

    private func lines(_ path: String) -> [String] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// Polls `condition` every 50 ms, at most `seconds`; whether it held.
    static func eventually(seconds: Double = 20, _ condition: () throws -> Bool) async rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            try? await Task.sleep(nanoseconds: 50_000_000)
        }
        return try condition()
    }
}

extension WebhookReceiver {
    /// A receiver, and a development server whose webhooks go to it (sent every 50 ms) with an admin
    /// token file holding `support` (scope `accounts`): what the webhook suites start with.
    static func withServer(
        _ backend: Backend,
        revocationIntervalMilliseconds: Int = 5000
    ) throws -> (receiver: WebhookReceiver, server: DevServer, supportToken: String) {
        let receiver = try WebhookReceiver()
        let tokens = receiver.directory.appendingPathComponent("admin-tokens").path
        let supportToken = try AdminTokenFile.add(name: "support", scopes: [.accounts], path: tokens, now: 1)
        let server = try DevServer(
            backend,
            environment: [
                "UPGRADE_ADMIN_TOKENS_FILE": tokens, "UPGRADE_WEBHOOK_URL": receiver.url,
                "UPGRADE_WEBHOOK_SECRET_FILE": receiver.secretFile,
            ],
            revocationIntervalMilliseconds: revocationIntervalMilliseconds,
            webhookIntervalMilliseconds: 50
        )
        return (receiver, server, supportToken)
    }
}
