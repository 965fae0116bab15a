import Foundation
import Testing

@testable import UpgradeEngine

@Suite("P-256 keys (ES256, JOSE signatures)")
struct ES256Tests {
    struct Wycheproof: Decodable {
        struct Group: Decodable {
            let publicKeyDer: String
            let publicKeyPem: String
            let tests: [Case]
        }
        struct Case: Decodable {
            let tcId: Int
            let msg: String
            let sig: String
            let result: String
            let flags: [String]
        }
        let numberOfTests: Int
        let testGroups: [Group]
    }

    @Test("agrees with all 252 Wycheproof P1363 (raw R‖S) vectors")
    func wycheproofP1363() throws {
        let file = try Fixtures.json(Wycheproof.self, "vectors/ecdsa_secp256r1_sha256_p1363_test.json")
        var checked = 0
        for group in file.testGroups {
            let key = try P256PublicKey(derSPKI: [UInt8](hex: group.publicKeyDer)!)
            #expect(try P256PublicKey(pem: group.publicKeyPem).derRepresentation == key.derRepresentation)
            for test in group.tests {
                #expect(test.result != "acceptable", "tcId \(test.tcId): no acceptable vectors expected")
                let verified = key.verifyJOSE(signature: [UInt8](hex: test.sig)!, message: [UInt8](hex: test.msg)!)
                #expect(verified == (test.result == "valid"), "tcId \(test.tcId) \(test.result) \(test.flags)")
                checked += 1
            }
        }
        #expect(checked == 252 && file.numberOfTests == 252)
        #expect(ERR_queue_is_empty())
    }

    @Test("signatures are 64 raw bytes, verify, and are never DER")
    func signVerify() throws {
        let key = P256PrivateKey()
        let message = Array("client-secret signing input".utf8)
        for _ in 0..<32 {
            let signature = key.signJOSE(message)
            #expect(signature.count == 64)
            #expect(key.publicKey.verifyJOSE(signature: signature, message: message))
            // The same signature as DER is refused: Apple refuses DER client secrets too.
            let der = try #require(P256PublicKey.derSignature(fromRaw: signature))
            #expect(!key.publicKey.verifyJOSE(signature: der, message: message))
            #expect(P256PublicKey.rawSignature(fromDER: der) == signature)
        }
        #expect(!key.publicKey.verifyJOSE(signature: key.signJOSE(message), message: message + [0]))
        #expect(!P256PrivateKey().publicKey.verifyJOSE(signature: key.signJOSE(message), message: message))
        #expect(ERR_queue_is_empty())
    }

    @Test("short R and S are left-padded to 32 bytes")
    func padding() throws {
        // r = 1, s = 2 in DER: 30 06 02 01 01 02 01 02.
        let raw = try #require(P256PublicKey.rawSignature(fromDER: [0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x02]))
        #expect(raw == [UInt8](repeating: 0, count: 31) + [1] + [UInt8](repeating: 0, count: 31) + [2])
    }

    @Test("PKCS#8 PEM round trip and refusals")
    func pem() throws {
        let key = P256PrivateKey()
        let pem = key.pemRepresentation
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let reloaded = try P256PrivateKey(pem: pem)
        #expect(reloaded.publicKey.derRepresentation == key.publicKey.derRepresentation)
        let message = Array("m".utf8)
        #expect(key.publicKey.verifyJOSE(signature: reloaded.signJOSE(message), message: message))

        let rsa = try RSAPrivateKey(generatingBits: 2048)
        do {
            _ = try P256PrivateKey(pem: rsa.pemRepresentation)
            Issue.record("RSA key accepted as P-256")
        } catch {
            #expect(error.code == .wrongCurve)
        }
        do {
            _ = try P256PublicKey(pem: rsa.publicKey.pemRepresentation)
            Issue.record("RSA public key accepted as P-256")
        } catch {
            #expect(error.code == .wrongCurve)
        }
        // A P-384 key: right type, wrong curve.
        let p384 = """
            -----BEGIN PUBLIC KEY-----
            MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAE03ayuvo98copullLQPflaez8d5TWJllz
            yam1xcgSR7g5fpY4ImxquXq2DKKm1JLMYCIaoUcuFS+VOJNQQ/JXN/+p5KtOyXz1
            RX0wpO+1gql+dpQjK+G8tjOFHBut6Thl
            -----END PUBLIC KEY-----
            """
        do {
            _ = try P256PublicKey(pem: p384)
            Issue.record("P-384 key accepted")
        } catch {
            #expect(error.code == .wrongCurve)
        }
        do {
            _ = try P256PrivateKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
            Issue.record("garbage accepted")
        } catch {
            #expect(error.code == .malformed)
        }
        #expect(ERR_queue_is_empty())
    }
}
