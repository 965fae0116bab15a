import Foundation
import Testing

@testable import UpgradeEngine

/// Runs a program to completion and captures its output.
func runProcess(_ executable: String, _ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    // Read before waiting, so a chatty child cannot block on a full pipe.
    let stdout = out.fileHandleForReading.readDataToEndOfFile()
    let stderr = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
}

@Suite("Client secret (ES256 JWT)")
struct ClientSecretTests {
    static let now: Int64 = 1_760_000_000

    static func signer(_ key: P256PrivateKey = P256PrivateKey()) throws -> ClientSecretSigner {
        try ClientSecretSigner(
            teamID: "ABCDE12345",
            keyID: "KEY1234567",
            clientID: "com.example.siwa-upgrade",
            privateKey: key
        )
    }

    @Test("header and claims are exactly docs/apple-protocol.md §2.1, and the signature verifies as raw R‖S")
    func claims() throws {
        let signer = try Self.signer()
        let secret = try signer.make(now: Self.now, lifetime: 3600)
        let jws = try JWSCompact(parsing: secret, maximumLength: 4096)
        #expect(String(decoding: jws.header, as: UTF8.self) == #"{"alg":"ES256","kid":"KEY1234567"}"#)
        #expect(
            String(decoding: jws.payload, as: UTF8.self)
                == #"{"iss":"ABCDE12345","iat":1760000000,"exp":1760003600,"aud":"https://appleid.apple.com","sub":"com.example.siwa-upgrade"}"#
        )
        #expect(jws.signature.count == 64)
        #expect(signer.privateKey.publicKey.verifyJOSE(signature: jws.signature, message: jws.signingInput))
        #expect(!P256PrivateKey().publicKey.verifyJOSE(signature: jws.signature, message: jws.signingInput))
    }

    @Test("lifetime bounds: up to 15 777 000 s")
    func lifetime() throws {
        let signer = try Self.signer()
        let longest = try signer.make(now: Self.now, lifetime: 15_777_000)
        let payload = try JSONValue.parse(JWSCompact(parsing: longest, maximumLength: 4096).payload)
        #expect(payload["exp"] == .integer(Self.now + 15_777_000))
        for bad: Int64 in [0, -1, 15_777_001] {
            do {
                _ = try signer.make(now: Self.now, lifetime: bad)
                Issue.record("lifetime \(bad) accepted")
            } catch {
                #expect(error.code == .invalidLifetime)
            }
        }
    }

    @Test("team id, key id and client id are validated")
    func identifiers() {
        let key = P256PrivateKey()
        let cases: [(String, String, String, ClientSecretError.Code)] = [
            ("ABCDE1234", "KEY1234567", "com.a", .invalidTeamID),
            ("abcde12345", "KEY1234567", "com.a", .invalidTeamID),
            ("ABCDE12345", "KEY123456", "com.a", .invalidKeyID),
            ("ABCDE12345", "KEY123456-", "com.a", .invalidKeyID),
            ("ABCDE12345", "KEY1234567", "", .invalidClientID),
            ("ABCDE12345", "KEY1234567", "com a", .invalidClientID),
        ]
        for (team, keyID, client, code) in cases {
            do {
                _ = try ClientSecretSigner(teamID: team, keyID: keyID, clientID: client, privateKey: key)
                Issue.record("\(team)/\(keyID)/\(client) accepted")
            } catch {
                #expect(error.code == code)
            }
        }
    }

    /// Independent check: joserfc verifies the JWS, and `cryptography` verifies R‖S re-encoded as DER.
    @Test("an independent implementation (python joserfc + cryptography) accepts the secret")
    func independentVerification() throws {
        let signer = try Self.signer()
        let secret = try signer.make(now: Self.now, lifetime: 600)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "client-secret-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("public.pem")
        let secretFile = directory.appendingPathComponent("secret.jwt")
        try signer.privateKey.publicKey.pemRepresentation.write(to: keyFile, atomically: true, encoding: .utf8)
        try secret.write(to: secretFile, atomically: true, encoding: .utf8)
        let script = """
            import base64, json, sys
            try:
                from joserfc import jws
                from joserfc.jwk import ECKey
                from cryptography.hazmat.primitives import hashes, serialization
                from cryptography.hazmat.primitives.asymmetric import ec
                from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
            except ImportError as error:
                sys.exit(f"missing python module: {error.name} (pip install joserfc cryptography)")
            pem = open(sys.argv[1]).read()
            token = open(sys.argv[2]).read().strip()
            obj = jws.deserialize_compact(token, ECKey.import_key(pem), algorithms=["ES256"])
            head, payload, sig = token.split(".")
            raw = base64.urlsafe_b64decode(sig + "=" * (-len(sig) % 4))
            assert len(raw) == 64, len(raw)
            der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
            serialization.load_pem_public_key(pem.encode()).verify(der, f"{head}.{payload}".encode(), ec.ECDSA(hashes.SHA256()))
            print(json.dumps({"header": obj.protected, "claims": json.loads(obj.payload)}, sort_keys=True))
            """
        // python3 from PATH, so a virtual environment or pyenv that holds joserfc is used.
        let result = try runProcess("/usr/bin/env", ["python3", "-c", script, keyFile.path, secretFile.path])
        try #require(result.status != 127, "python3 is not on PATH: install it with joserfc and cryptography")
        #expect(result.status == 0, "python verification failed: \(result.stderr)")
        #expect(
            result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                == #"{"claims": {"aud": "https://appleid.apple.com", "exp": 1760000600, "iat": 1760000000, "iss": "ABCDE12345", "sub": "com.example.siwa-upgrade"}, "header": {"alg": "ES256", "kid": "KEY1234567"}}"#
        )
    }
}
