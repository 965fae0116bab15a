import Foundation
import Testing

@testable import UpgradeEngine

@Suite("No secret is stored, audited or echoed")
struct SecretLeakTests {
    @Test("after full flows with failures, no secret is in the database files, the audit trail or any error")
    func noSecretAnywhere() async throws {
        let h = try UpgradeHarness()
        let now = UpgradeHarness.now
        let password = "pw-Zq8!unique-\(SecureRandom.token(byteCount: 6))"
        let totpSecret = Array("SECRET-TOTP-SEED-\(SecureRandom.token(byteCount: 6))".utf8)
        let recovery = RecoveryCodes.generate(count: 2)
        let alice = try h.addAccount("alice", password: password, totpSecret: totpSecret, recoveryCodes: recovery)
        var secrets: [String] = [
            password, Base32.encode(totpSecret, padding: false), String(decoding: totpSecret, as: UTF8.self),
        ]
        secrets += recovery + recovery.map(RecoveryCodes.normalize)
        var errors: [String] = []
        func record(_ error: any Error) { errors.append("\(error)") }

        // Failures first: wrong password, wrong code, bad state and bad nonce.
        do {
            _ = try h.service.start(username: "alice", password: password + "x", serviceIdentifier: "s", now: now)
        } catch {
            record(error)
        }
        let first = try h.service.start(
            username: "alice",
            password: password,
            serviceIdentifier: "s",
            now: now + 100
        )
        let code = TOTP.code(secret: totpSecret, parameters: .standard, counter: UInt64((now + 100) / 30))
        secrets.append(code)
        let wrongCode = String(code.reversed()) == code ? "12345x" : String(code.reversed())
        do { _ = try h.service.stepUp(id: first.id, code: .totp(wrongCode), now: now + 100) } catch { record(error) }
        let stepped = try h.service.stepUp(id: first.id, code: .totp(code), now: now + 100)
        let state = try #require(stepped.state)
        let nonce = try #require(stepped.nonce)
        let token = UpgradeHarness.identityToken(nonce: nonce, issuedAt: now + 100)
        let authorizationCode = "c." + SecureRandom.token()
        secrets += [state, nonce, token, authorizationCode, String(token.split(separator: ".")[2])]
        do {
            let forged = UpgradeService.AppleCredential(
                identityToken: token,
                authorizationCode: authorizationCode,
                state: nonce
            )
            _ = try await h.service.submitAppleCredential(id: first.id, forged, now: now + 101)
        } catch {
            record(error)
        }

        // Then a full successful flow with a recovery code.
        let second = try h.service.start(
            username: "alice",
            password: password,
            serviceIdentifier: "s",
            now: now + 200
        )
        let recovered = try h.service.stepUp(id: second.id, code: .recoveryCode(recovery[0]), now: now + 200)
        let token2 = UpgradeHarness.identityToken(nonce: recovered.nonce, issuedAt: now + 200)
        let code2 = "c." + SecureRandom.token()
        secrets += [recovered.state ?? "", recovered.nonce ?? "", token2, code2]
        let credential = UpgradeService.AppleCredential(
            identityToken: token2,
            authorizationCode: code2,
            state: recovered.state ?? ""
        )
        let done = try await h.service.submitAppleCredential(id: second.id, credential, now: now + 201)
        #expect(done.status == .completed)
        secrets += h.apple.issuedRefreshTokens
        #expect(h.apple.issuedRefreshTokens.count == 1)

        // The raw database and WAL bytes.
        var stored = Data()
        for suffix in ["", "-wal", "-shm"] {
            if let data = FileManager.default.contents(atPath: try #require(h.database.path) + suffix) {
                stored.append(data)
            }
        }
        #expect(stored.count > 0)
        // Every audit row, rendered.
        let audit = try h.store.read { tx in
            try tx.auditTrail(accountID: alice.id, limit: 1000) + tx.auditTrail(upgradeID: first.id, limit: 1000)
        }
        #expect(audit.count >= 6)
        let auditText = audit.map { "\($0)" }.joined(separator: "\n")
        let errorText = errors.joined(separator: "\n")
        #expect(errors.count == 3)
        let views = try [first.id, second.id].map { "\(try h.service.view(id: $0, now: now + 300))" }.joined()

        for (index, secret) in secrets.enumerated() where !secret.isEmpty {
            #expect(stored.range(of: Data(secret.utf8)) == nil, "secret #\(index) is in the database files")
            #expect(!auditText.contains(secret), "secret #\(index) is in the audit trail")
            #expect(!errorText.contains(secret), "secret #\(index) is in an error")
            #expect(!views.contains(secret), "secret #\(index) is in an upgrade view")
        }
    }
}
