import Foundation
import Testing

@testable import UpgradeEngine

@Suite("RSA keys (RS256)")
struct RSAKeyTests {
    struct Wycheproof: Decodable {
        struct Group: Decodable {
            struct PublicKey: Decodable {
                let modulus: String
                let publicExponent: String
            }
            struct JWK: Decodable {
                let n: String
                let e: String
            }
            let publicKeyDer: String
            let publicKeyPem: String
            let publicKey: PublicKey
            let keyJwk: JWK
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

    /// Valid vectors must verify and invalid ones must not. The one "acceptable" vector (tcId 8,
    /// `MissingNull`: a DigestInfo without the NULL parameters) is rejected: OpenSSL re-encodes the
    /// expected DigestInfo with the NULL and compares bytes, and RS256 signers (Apple, OpenSSL,
    /// every JOSE library) always include it, so strictness costs nothing.
    @Test("agrees with all 259 Wycheproof RSASSA-PKCS1-v1_5 SHA-256 vectors")
    func wycheproof() throws {
        let file = try Fixtures.json(Wycheproof.self, "vectors/rsa_signature_2048_sha256_test.json")
        var checked = 0
        for group in file.testGroups {
            let key = try RSAPublicKey(derSPKI: [UInt8](hex: group.publicKeyDer)!)
            // The same key through the PEM and JWK routes.
            let fromPEM = try RSAPublicKey(pem: group.publicKeyPem)
            let fromJWK = try RSAPublicKey(jwkModulus: group.keyJwk.n, exponent: group.keyJwk.e)
            #expect(fromPEM.derRepresentation == key.derRepresentation)
            #expect(fromJWK.derRepresentation == key.derRepresentation)
            #expect(key.jwkModulus == group.keyJwk.n && key.jwkExponent == group.keyJwk.e)
            for test in group.tests {
                let message = [UInt8](hex: test.msg)!
                let signature = [UInt8](hex: test.sig)!
                let expected = test.result == "valid"
                #expect(
                    key.verify(signature: signature, message: message) == expected,
                    "tcId \(test.tcId) \(test.result) \(test.flags)"
                )
                #expect(fromJWK.verify(signature: signature, message: message) == expected, "tcId \(test.tcId)")
                checked += 1
            }
        }
        #expect(checked == 259 && file.numberOfTests == 259)
        #expect(ERR_queue_is_empty(), "a failed verification must not leave errors behind")
    }

    @Test("the acceptable MissingNull vector is rejected")
    func missingNullIsRejected() throws {
        let file = try Fixtures.json(Wycheproof.self, "vectors/rsa_signature_2048_sha256_test.json")
        let group = file.testGroups[0]
        let test = try #require(group.tests.first { $0.result == "acceptable" })
        #expect(test.flags == ["MissingNull"])
        let key = try RSAPublicKey(derSPKI: [UInt8](hex: group.publicKeyDer)!)
        #expect(!key.verify(signature: [UInt8](hex: test.sig)!, message: [UInt8](hex: test.msg)!))
    }

    @Test("sign and verify round trip; PKCS#8 PEM round trip")
    func signVerify() throws {
        let key = try RSAPrivateKey(generatingBits: 2048)
        #expect(key.publicKey.bitCount == 2048 && key.publicKey.modulusByteCount == 256)
        let message = Array("header.payload".utf8)
        let signature = key.signRS256(message)
        #expect(signature.count == 256)
        #expect(key.publicKey.verify(signature: signature, message: message))
        #expect(key.publicKey.verify(signature: signature, message: message[...]), "slices verify too")
        #expect(!key.publicKey.verify(signature: signature, message: Array("header.payloaD".utf8)))
        var flipped = signature
        flipped[100] ^= 1
        #expect(!key.publicKey.verify(signature: flipped, message: message))
        #expect(!key.publicKey.verify(signature: signature.dropLast(), message: message))
        #expect(!key.publicKey.verify(signature: [0] + signature, message: message))

        let pem = key.pemRepresentation
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let reloaded = try RSAPrivateKey(pem: pem)
        #expect(reloaded.publicKey.derRepresentation == key.publicKey.derRepresentation)
        #expect(key.publicKey.verify(signature: reloaded.signRS256(message), message: message))
        let publicPEM = key.publicKey.pemRepresentation
        #expect(try RSAPublicKey(pem: publicPEM).derRepresentation == key.publicKey.derRepresentation)
        #expect(ERR_queue_is_empty())
    }

    @Test("weak, odd-shaped and foreign keys are refused")
    func refusals() throws {
        let small = [UInt8](repeating: 0xC5, count: 128)  // 1024 bits
        #expect(throws: RSAKeyError.self) { try RSAPublicKey(modulus: small, exponent: [1, 0, 1]) }
        let goodModulus = [UInt8](repeating: 0xC5, count: 256)
        do {
            _ = try RSAPublicKey(modulus: small, exponent: [1, 0, 1])
        } catch {
            #expect(error.code == .tooSmall)
        }
        for exponent: [UInt8] in [[1], [2], [1, 0, 0], [0x01, 0, 0, 0, 1], [0]] {
            do {
                _ = try RSAPublicKey(modulus: goodModulus, exponent: exponent)
                Issue.record("exponent \(exponent) accepted")
            } catch {
                #expect(error.code == .badExponent, "exponent \(exponent)")
            }
        }
        do {
            _ = try RSAPublicKey(modulus: goodModulus.dropLast() + [0xC4], exponent: [1, 0, 1])
            Issue.record("even modulus accepted")
        } catch {
            #expect(error.code == .badModulus)
        }
        do {
            _ = try RSAPublicKey(modulus: [UInt8](repeating: 0xC5, count: 1025), exponent: [1, 0, 1])
            Issue.record("8200-bit modulus accepted")
        } catch {
            #expect(error.code == .tooLarge)
        }
        // e = 3 is small but legitimate (Wycheproof's edge-case groups use it).
        _ = try RSAPublicKey(modulus: goodModulus, exponent: [3])
        _ = try RSAPublicKey(modulus: [0, 0] + goodModulus, exponent: [0, 1, 0, 1])

        do {
            _ = try RSAPublicKey(pem: P256PrivateKey().publicKey.pemRepresentation)
            Issue.record("EC key accepted as RSA")
        } catch {
            #expect(error.code == .notRSA)
        }
        do {
            _ = try RSAPublicKey(pem: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
            Issue.record("garbage PEM accepted")
        } catch {
            #expect(error.code == .malformed)
        }
        do {
            _ = try RSAPublicKey(jwkModulus: "not base64!", exponent: "AQAB")
            Issue.record("bad base64url accepted")
        } catch {
            #expect(error.code == .malformed)
        }
        do {
            _ = try RSAPrivateKey(pem: P256PrivateKey().pemRepresentation)
            Issue.record("EC private key accepted as RSA")
        } catch {
            #expect(error.code == .notRSA)
        }
        let der = try RSAPrivateKey(generatingBits: 2048).publicKey.derRepresentation
        #expect(throws: RSAKeyError.self, "trailing bytes after the SPKI") { try RSAPublicKey(derSPKI: der + [0]) }
        #expect(ERR_queue_is_empty())
    }

    @Test("verification from many threads at once agrees")
    func concurrentVerification() async throws {
        let key = try RSAPrivateKey(generatingBits: 2048)
        let message = Array("concurrent".utf8)
        let signature = key.signRS256(message)
        let publicKey = key.publicKey
        let results = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<64 {
                group.addTask {
                    var candidate = signature
                    if index % 2 == 1 { candidate[index] ^= 0x80 }
                    return publicKey.verify(signature: candidate, message: message) == (index % 2 == 0)
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results.count == 64 && results.allSatisfy { $0 })
    }
}

/// Whether libcrypto's error queue for this thread is empty.
func ERR_queue_is_empty() -> Bool {
    OpenSSLError.drainQueue().isEmpty
}

extension RSAPublicKey {
    var derRepresentation: [UInt8] { EVPKeySupport.publicKeyDER(key) }
    var pemRepresentation: String { publicKeyPEM(der: derRepresentation) }
}

extension P256PublicKey {
    var derRepresentation: [UInt8] { EVPKeySupport.publicKeyDER(key) }
    var pemRepresentation: String { publicKeyPEM(der: derRepresentation) }
}

/// SubjectPublicKeyInfo as `-----BEGIN PUBLIC KEY-----` PEM, in 64-character lines as OpenSSL writes it.
func publicKeyPEM(der: [UInt8]) -> String {
    let base64 = Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
    return "-----BEGIN PUBLIC KEY-----\n\(base64)\n-----END PUBLIC KEY-----\n"
}
