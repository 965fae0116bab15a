import Testing

@testable import UpgradeEngine

@Suite("SecretBox")
struct SecretBoxTests {
    /// A row of `totp/secretbox_vectors.json`, sealed by Python's `cryptography` (AESGCM).
    struct Vector: Decodable, Sendable, CustomTestStringConvertible {
        let name: String
        let key: String
        let nonce: String
        let context: String
        let plaintext: String
        let sealed: String
        var testDescription: String { name }
    }

    static func vectors() throws -> [Vector] { try Fixtures.json([Vector].self, "totp/secretbox_vectors.json") }

    static let key = (0..<32).map { UInt8($0 &* 7 &+ 3) }
    static let context = "totp-secret:account-1"

    static func box() throws -> SecretBox { try SecretBox(key: key) }

    @Test(
        "opens what an independent AES-GCM implementation sealed, and seals it byte for byte",
        arguments: try vectors()
    )
    func knownAnswer(_ vector: Vector) throws {
        let box = try SecretBox(key: try #require([UInt8](hex: vector.key)))
        let sealed = try #require([UInt8](hex: vector.sealed))
        let plaintext = try #require([UInt8](hex: vector.plaintext))
        #expect(try box.open(sealed, context: vector.context) == plaintext)
        let nonce = try #require([UInt8](hex: vector.nonce))
        #expect(box.seal(plaintext, context: vector.context, nonce: nonce) == sealed)
    }

    @Test("the development key is SHA-256 of its published derivation string, and marked as such")
    func developmentKey() throws {
        let vector = try #require(try Self.vectors().first { $0.name == "development key" })
        #expect([UInt8](hex: vector.key) == Digest.sha256(SecretBox.developmentKeyDerivation))
        let box = SecretBox.developmentOnly()
        #expect(box.isDevelopmentOnly)
        #expect(
            try box.open(try #require([UInt8](hex: vector.sealed)), context: vector.context)
                == [UInt8](hex: vector.plaintext)
        )
        #expect(try !Self.box().isDevelopmentOnly)
    }

    @Test("round trip for plaintexts of many lengths", arguments: [0, 1, 15, 16, 17, 20, 64, 1000, 65_537])
    func roundTrip(length: Int) throws {
        let box = try Self.box()
        let plaintext = SecureRandom.bytes(length)
        let sealed = box.seal(plaintext, context: Self.context)
        #expect(sealed.count == plaintext.count + 29)
        #expect(sealed[0] == 1)
        #expect(try box.open(sealed, context: Self.context) == plaintext)
    }

    @Test("two seals of the same plaintext differ (fresh nonce each time)")
    func sealsDiffer() throws {
        let box = try Self.box()
        let plaintext = Array("same secret".utf8)
        let first = box.seal(plaintext, context: Self.context)
        let second = box.seal(plaintext, context: Self.context)
        #expect(first != second)
        #expect(first[1...12] != second[1...12], "the nonces differ")
    }

    @Test("altering any single byte makes opening fail")
    func tamperEveryByte() throws {
        let box = try Self.box()
        let sealed = box.seal(Array("a TOTP secret".utf8), context: Self.context)
        for index in sealed.indices {
            for flip: UInt8 in [0x01, 0x80] {
                var tampered = sealed
                tampered[index] ^= flip
                let expected: SecretBoxError.Code = index == 0 ? .unsupportedVersion : .authenticationFailed
                let error = #expect(throws: SecretBoxError.self, "byte \(index)") {
                    try box.open(tampered, context: Self.context)
                }
                #expect(error?.code == expected, "byte \(index)")
            }
        }
        #expect(OpenSSLError.drainQueue().isEmpty, "failed tag checks leave nothing in libcrypto's error queue")
    }

    @Test("truncated or extended values do not open")
    func wrongLength() throws {
        let box = try Self.box()
        let sealed = box.seal(Array("a TOTP secret".utf8), context: Self.context)
        for length in [0, 1, 13, 28] {
            let error = #expect(throws: SecretBoxError.self) {
                try box.open(Array(sealed.prefix(length)), context: Self.context)
            }
            #expect(error?.code == .truncated)
        }
        for length in [29, sealed.count - 1] {
            let error = #expect(throws: SecretBoxError.self) {
                try box.open(Array(sealed.prefix(length)), context: Self.context)
            }
            #expect(error?.code == .authenticationFailed)
        }
        let extended = #expect(throws: SecretBoxError.self) { try box.open(sealed + [0], context: Self.context) }
        #expect(extended?.code == .authenticationFailed)
    }

    @Test(
        "a value sealed for one context does not open in another",
        arguments: [
            "totp-secret:account-2", "refresh-token:account-1", "", "totp-secret:account-1 ", "TOTP-SECRET:ACCOUNT-1",
        ]
    )
    func wrongContext(other: String) throws {
        let box = try Self.box()
        let sealed = box.seal(Array("a TOTP secret".utf8), context: Self.context)
        let error = #expect(throws: SecretBoxError.self) { try box.open(sealed, context: other) }
        #expect(error?.code == .authenticationFailed)
    }

    @Test("a value sealed under one key does not open under another, nor under the development key")
    func wrongKey() throws {
        let sealed = try Self.box().seal(Array("a TOTP secret".utf8), context: Self.context)
        var otherKey = Self.key
        otherKey[31] ^= 1
        let other = try SecretBox(key: otherKey)
        let error = #expect(throws: SecretBoxError.self) { try other.open(sealed, context: Self.context) }
        #expect(error?.code == .authenticationFailed)
        let developmentError = #expect(throws: SecretBoxError.self) {
            try SecretBox.developmentOnly().open(sealed, context: Self.context)
        }
        #expect(developmentError?.code == .authenticationFailed)
    }

    @Test("keys must be exactly 32 bytes", arguments: [0, 16, 31, 33, 64])
    func keyLength(length: Int) {
        let error = #expect(throws: SecretBoxError.self) { try SecretBox(key: [UInt8](repeating: 7, count: length)) }
        #expect(error?.code == .invalidKeyLength)
    }

    @Test("the key never shows in descriptions or reflection")
    func keyRedacted() throws {
        let box = try Self.box()
        let hex = Self.key.hexString
        let decimal = Self.key.map(String.init).joined(separator: ", ")
        for text in [
            String(describing: box), String(reflecting: box), "\(box)",
            "\(Mirror(reflecting: box).children.map { $0 })",
        ] {
            #expect(!text.contains(hex))
            #expect(!text.contains(decimal))
            #expect(!text.contains(String(decimal.prefix(12))))
        }
    }
}
