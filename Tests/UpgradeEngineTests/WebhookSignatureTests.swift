import Foundation
import Testing

@testable import UpgradeEngine

/// The Standard Webhooks signature: the specification's published example, an independent
/// implementation (the `standardwebhooks` package from PyPI) verifying what we sign, and the
/// secret's format and file checks.
@Suite("Webhook signatures (Standard Webhooks)")
struct WebhookSignatureTests {
    @Test("the specification's example: secret, id, timestamp and body give its signature")
    func specificationExample() throws {
        let secret = try WebhookSecret(text: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        let signature = secret.signature(
            id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
            timestamp: 1_614_265_330,
            body: Array(#"{"test": 2432232314}"#.utf8)
        )
        #expect(signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    @Test("a signature header verifies when any of its v1 entries is this secret's, and only then")
    func signatureHeaderVerification() throws {
        let secret = try WebhookSecret(text: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        let other = try WebhookSecret(text: "whsec_" + Data(SecureRandom.bytes(32)).base64EncodedString())
        let id = "msg_p5jXN8AQM9LWM0D4loKWxJek"
        let body = Array(#"{"test": 2432232314}"#.utf8)
        let good = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        let foreign = other.signature(id: id, timestamp: 1_614_265_330, body: body)
        #expect(secret.isValidSignature(good, id: id, timestamp: 1_614_265_330, body: body))
        // One entry per signing secret, in any order; unknown versions are ignored, not errors.
        #expect(secret.isValidSignature("\(foreign) \(good)", id: id, timestamp: 1_614_265_330, body: body))
        #expect(secret.isValidSignature("v1a,xyz \(good)", id: id, timestamp: 1_614_265_330, body: body))
        #expect(!secret.isValidSignature(foreign, id: id, timestamp: 1_614_265_330, body: body))
        #expect(!secret.isValidSignature("v2," + good.dropFirst(3), id: id, timestamp: 1_614_265_330, body: body))
        #expect(!secret.isValidSignature(good, id: id, timestamp: 1_614_265_331, body: body))
        #expect(!secret.isValidSignature(good, id: "msg_other", timestamp: 1_614_265_330, body: body))
        #expect(!secret.isValidSignature(good, id: id, timestamp: 1_614_265_330, body: body + [32]))
        #expect(!secret.isValidSignature("", id: id, timestamp: 1_614_265_330, body: body))
    }

    @Test(
        "python's standardwebhooks verifies a delivery signed during a rotation with the old secret alone, and with the new one alone"
    )
    func verifiedByStandardWebhooks() throws {
        let newText = "whsec_" + Data(SecureRandom.bytes(32)).base64EncodedString()
        let oldText = "whsec_" + Data(SecureRandom.bytes(32)).base64EncodedString()
        let otherText = "whsec_" + Data(SecureRandom.bytes(32)).base64EncodedString()
        let secrets = try WebhookSecrets(text: "# rotating\n\(newText)\n\n\(oldText)\n")
        #expect(secrets.count == 2)
        let now = Int64(Date().timeIntervalSince1970)
        let body = WebhookOutbox.body(
            type: .transferCompleted,
            data: [("accountId", .string("acc-1")), ("newSub", .string("001.ü\"x")), ("email", .null)],
            now: now
        )
        let headers = WebhookSender.headers(id: "msg_abc", timestamp: now, body: Array(body.utf8), secrets: secrets)
        let signature = try #require(headers.first { $0.hasPrefix("webhook-signature: ") })
        #expect(signature.split(separator: " ").count == 3, "one v1 entry per secret: \(signature)")
        let tampered = WebhookSender.headers(id: "msg_abd", timestamp: now, body: Array(body.utf8), secrets: secrets)
        let script = """
            import json, sys
            from standardwebhooks import Webhook, WebhookVerificationError
            new, old, other, body = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
            good, bad = json.loads(sys.argv[5]), json.loads(sys.argv[6])
            def headers(lines):
                return {k.strip(): v.strip() for k, v in (l.split(":", 1) for l in lines)}
            def refused(secret, hdrs):
                try:
                    Webhook(secret).verify(body.encode(), hdrs)
                    return False
                except WebhookVerificationError:
                    return True
            payload = Webhook(old).verify(body.encode(), headers(good))
            Webhook(new).verify(body.encode(), headers(good))
            if not refused(other, headers(good)):
                print("a secret not in the file verified it")
                sys.exit(1)
            if not refused(new, dict(headers(bad), **{"webhook-id": headers(good)["webhook-id"]})):
                print("tampered signature accepted")
                sys.exit(1)
            print(payload["type"], payload["data"]["newSub"])
            """
        let encode = { (lines: [String]) in
            String(decoding: try JSONSerialization.data(withJSONObject: lines), as: UTF8.self)
        }
        // python3 from PATH, so a virtual environment that holds standardwebhooks is used.
        let result = try runProcess(
            "/usr/bin/env",
            ["python3", "-c", script, newText, oldText, otherText, body, try encode(headers), try encode(tampered)]
        )
        try #require(
            !result.stderr.contains("No module named 'standardwebhooks'"),
            "the standardwebhooks package is missing: run Scripts/setup (pip install standardwebhooks)"
        )
        #expect(result.status == 0, "standardwebhooks refused it: \(result.stderr) \(result.stdout)")
        #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "transfer.completed 001.ü\"x")
    }

    @Test("a secret file names the bad line without repeating it, and holds at least one secret")
    func malformedSecretLists() {
        let good = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
        for (text, line) in [("\(good)\nwhsec_notbase64!\n", "line 2"), ("# only a comment\n\n", "no secret")] {
            do {
                _ = try WebhookSecrets(text: text)
                Issue.record("accepted \(line)")
            } catch {
                #expect(error.message.contains(line), "\(error.message)")
                #expect(!error.message.contains("MfKQ9r8") && !error.message.contains("notbase64"))
            }
        }
    }

    @Test("a secret that is not whsec_ and base64 of 24 to 64 bytes is refused without repeating it")
    func malformedSecrets() {
        for text in [
            "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_not base64!", "whsec_" + Data([1, 2, 3]).base64EncodedString(),
        ] {
            #expect(throws: WebhookSecretError.self) { try WebhookSecret(text: text) }
            do {
                _ = try WebhookSecret(text: text)
            } catch {
                #expect(!error.message.contains(text))
            }
        }
        let parsed = try? WebhookSecret(text: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        #expect(String(describing: parsed).contains("redacted"))
    }

    @Test("the secret file must be owner-only, like the other secret files")
    func secretFileMode() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("whsec-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let text = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n"
        #expect(
            FileManager.default.createFile(
                atPath: path,
                contents: Data(text.utf8),
                attributes: [.posixPermissions: 0o644]
            )
        )
        do {
            _ = try WebhookSecret.load(path: path)
            Issue.record("a group-readable secret file was accepted")
        } catch {
            #expect(error.message.contains("chmod 600") && error.message.contains("UPGRADE_WEBHOOK_SECRET_FILE"))
            #expect(!error.message.contains("MfKQ9r8"))
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        let secret = try WebhookSecret.load(path: path)
        #expect(
            secret.signature(
                id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
                timestamp: 1_614_265_330,
                body: Array(#"{"test": 2432232314}"#.utf8)
            ) == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        )
    }
}
