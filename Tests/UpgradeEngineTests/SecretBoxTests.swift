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

    /// A row of `totp/secretbox_v2_vectors.json`: format version 2, with the key's id.
    struct VectorV2: Decodable, Sendable, CustomTestStringConvertible {
        let name: String
        let keyID: String
        let key: String
        let nonce: String
        let context: String
        let plaintext: String
        let sealed: String
        var testDescription: String { name }
    }

    static func vectorsV2() throws -> [VectorV2] {
        try Fixtures.json([VectorV2].self, "totp/secretbox_v2_vectors.json")
    }

    static let key = (0..<32).map { UInt8($0 &* 7 &+ 3) }
    static let context = "totp-secret:account-1"

    static func box() throws -> SecretBox { try SecretBox(key: key) }

    @Test(
        "opens version-1 values an independent AES-GCM implementation sealed (key id 0), and seals them byte for byte",
        arguments: try vectors()
    )
    func knownAnswer(_ vector: Vector) throws {
        let box = try SecretBox(key: try #require([UInt8](hex: vector.key)))
        let sealed = try #require([UInt8](hex: vector.sealed))
        let plaintext = try #require([UInt8](hex: vector.plaintext))
        #expect(try box.open(sealed, context: vector.context) == plaintext)
        #expect(SecretBox.keyID(of: sealed) == "0")
        let nonce = try #require([UInt8](hex: vector.nonce))
        #expect(try box.sealVersion1(plaintext, context: vector.context, nonce: nonce) == sealed)
        // In a keyring whose newest key is another, the version-1 value still opens with key 0.
        let keyring = try SecretBox(keys: [("k9", Array(repeating: 9, count: 32)), ("0", [UInt8](hex: vector.key)!)])
        #expect(try keyring.open(sealed, context: vector.context) == plaintext)
    }

    @Test(
        "opens version-2 values an independent AES-GCM implementation sealed, and seals them byte for byte",
        arguments: try vectorsV2()
    )
    func knownAnswerV2(_ vector: VectorV2) throws {
        let key = try #require([UInt8](hex: vector.key))
        let box = try SecretBox(keys: [(vector.keyID, key), ("older", Array(repeating: 5, count: 32))])
        let sealed = try #require([UInt8](hex: vector.sealed))
        let plaintext = try #require([UInt8](hex: vector.plaintext))
        #expect(try box.open(sealed, context: vector.context) == plaintext)
        #expect(SecretBox.keyID(of: sealed) == vector.keyID)
        let nonce = try #require([UInt8](hex: vector.nonce))
        #expect(box.seal(plaintext, context: vector.context, nonce: nonce) == sealed)
        // Listed as an older key, it still opens.
        let rotated = try SecretBox(keys: [("newer", Array(repeating: 6, count: 32)), (vector.keyID, key)])
        #expect(try rotated.open(sealed, context: vector.context) == plaintext)
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
        #expect(sealed.count == plaintext.count + 31, "0x02, id '0', 0x00, nonce, tag")
        #expect(Array(sealed.prefix(3)) == [2, UInt8(ascii: "0"), 0])
        #expect(try box.open(sealed, context: Self.context) == plaintext)
    }

    @Test("two seals of the same plaintext differ (fresh nonce each time)")
    func sealsDiffer() throws {
        let box = try Self.box()
        let plaintext = Array("same secret".utf8)
        let first = box.seal(plaintext, context: Self.context)
        let second = box.seal(plaintext, context: Self.context)
        #expect(first != second)
        #expect(first[3...14] != second[3...14], "the nonces differ")
    }

    @Test("altering any single byte makes opening fail")
    func tamperEveryByte() throws {
        let box = try Self.box()
        let sealed = box.seal(Array("a TOTP secret".utf8), context: Self.context)
        for index in sealed.indices {
            for flip: UInt8 in [0x01, 0x80] {
                var tampered = sealed
                tampered[index] ^= flip
                // The header (version, key id, terminator) fails as a malformed or unknown id.
                let expected: Set<SecretBoxError.Code> =
                    index < 3 ? [.unsupportedVersion, .unknownKey, .truncated] : [.authenticationFailed]
                let error = #expect(throws: SecretBoxError.self, "byte \(index)") {
                    try box.open(tampered, context: Self.context)
                }
                #expect(error.map { expected.contains($0.code) } == true, "byte \(index)")
            }
        }
        #expect(OpenSSLError.drainQueue().isEmpty, "failed tag checks leave nothing in libcrypto's error queue")
    }

    @Test("truncated or extended values do not open")
    func wrongLength() throws {
        let box = try Self.box()
        let sealed = box.seal(Array("a TOTP secret".utf8), context: Self.context)
        for length in [0, 3, 13, 30] {
            let error = #expect(throws: SecretBoxError.self) {
                try box.open(Array(sealed.prefix(length)), context: Self.context)
            }
            #expect(error?.code == .truncated, "length \(length)")
        }
        for length in [1, 2] {
            let error = #expect(throws: SecretBoxError.self) {
                try box.open(Array(sealed.prefix(length)), context: Self.context)
            }
            #expect(error?.code == .unsupportedVersion, "length \(length): no key id terminator")
        }
        for length in [31, sealed.count - 1] {
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

@Suite("SecretBox keyring")
struct SecretBoxKeyringTests {
    static let old = [UInt8](repeating: 1, count: 32)
    static let new = [UInt8](repeating: 2, count: 32)
    static let context = "totp-secret:account-1"

    @Test("new values are sealed under the newest key and record its id; older keys still open theirs")
    func newestSeals() throws {
        let before = try SecretBox(keys: [("k1", Self.old)])
        let sealedBefore = before.seal(Array("one".utf8), context: Self.context)
        #expect(SecretBox.keyID(of: sealedBefore) == "k1")
        let after = try SecretBox(keys: [("k2", Self.new), ("k1", Self.old)])
        let sealedAfter = after.seal(Array("two".utf8), context: Self.context)
        #expect(SecretBox.keyID(of: sealedAfter) == "k2")
        #expect(Array(sealedAfter.prefix(4)) == [2] + Array("k2".utf8) + [0])
        #expect(try after.open(sealedBefore, context: Self.context) == Array("one".utf8))
        #expect(try after.open(sealedAfter, context: Self.context) == Array("two".utf8))
        #expect(after.keyIDs == ["k2", "k1"])
        #expect(after.newestKeyID == "k2")
    }

    @Test("a value whose key is not listed fails naming the id, never key bytes")
    func missingKey() throws {
        let sealed = try SecretBox(keys: [("gone-key", Self.old)]).seal([1, 2, 3], context: Self.context)
        let error = #expect(throws: SecretBoxError.self) {
            try SecretBox(keys: [("k2", Self.new)]).open(sealed, context: Self.context)
        }
        #expect(error?.code == .unknownKey)
        #expect(error?.message.contains("'gone-key'") == true)
        #expect(error?.message.contains(Self.old.hexString) == false)
    }

    @Test("a key id swapped in the header does not open, even when the named key is listed")
    func swappedID() throws {
        let box = try SecretBox(keys: [("k2", Self.new), ("k1", Self.old)])
        var sealed = box.seal([1, 2, 3], context: Self.context)
        sealed[2] = UInt8(ascii: "1")
        let error = #expect(throws: SecretBoxError.self) { try box.open(sealed, context: Self.context) }
        #expect(error?.code == .authenticationFailed)
    }

    @Test("replaceKeys changes the keys of every copy at once")
    func replaceAcrossCopies() throws {
        let box = try SecretBox(keys: [("k1", Self.old)])
        let copy = box
        let sealedUnderOld = copy.seal([7], context: Self.context)
        box.replaceKeys(with: try SecretBox(keys: [("k2", Self.new), ("k1", Self.old)]))
        #expect(copy.newestKeyID == "k2")
        #expect(SecretBox.keyID(of: copy.seal([8], context: Self.context)) == "k2")
        #expect(try copy.open(sealedUnderOld, context: Self.context) == [7])
        copy.replaceKeys(with: try SecretBox(keys: [("k2", Self.new)]))
        #expect(box.keyIDs == ["k2"])
        let error = #expect(throws: SecretBoxError.self) { try box.open(sealedUnderOld, context: Self.context) }
        #expect(error?.code == .unknownKey)
        #expect(!box.isDevelopmentOnly)
    }

    @Test("an authenticator signs with the newest key, verifies under any listed one, and follows replaceKeys")
    func authenticatorAcrossRotation() throws {
        let box = try SecretBox(keys: [("k1", Self.old)])
        let authenticator = box.authenticator(purpose: "audit cursor")
        let message = Array("cursor".utf8)
        let oldTag = authenticator.tag(message)
        box.replaceKeys(with: try SecretBox(keys: [("k2", Self.new), ("k1", Self.old)]))
        let newTag = authenticator.tag(message)
        #expect(newTag != oldTag, "signs under the newest key after the reload")
        #expect(authenticator.isValid(tag: oldTag, for: message), "a tag made before the rotation still verifies")
        #expect(authenticator.isValid(tag: newTag, for: message))
        #expect(!authenticator.isValid(tag: newTag, for: Array("other".utf8)))
        #expect(!box.authenticator(purpose: "sign-in nonce").isValid(tag: newTag, for: message), "purposes differ")
        box.replaceKeys(with: try SecretBox(keys: [("k2", Self.new)]))
        #expect(!authenticator.isValid(tag: oldTag, for: message), "the removed key's tags no longer verify")
        #expect(authenticator.isValid(tag: newTag, for: message))
    }

    @Test(
        "keyrings need valid, unique ids and at least one key",
        arguments: [
            [(String, [UInt8])](), [("", Self.old)], [("a b", Self.old)],
            [(String(repeating: "a", count: 33), Self.old)],
            [("é", Self.old)], [("k1", Self.old), ("k1", Self.new)],
        ]
    )
    func invalidKeyrings(_ keys: [(String, [UInt8])]) {
        let error = #expect(throws: SecretBoxError.self) { try SecretBox(keys: keys.map { (id: $0.0, key: $0.1) }) }
        #expect(error?.code == .invalidKeyring)
    }

    @Test("key ids may use letters, digits, '-' and '_', up to 32 of them")
    func validIDs() throws {
        for id in ["0", "k2", "2026-11_rotation", String(repeating: "Z", count: 32)] {
            let box = try SecretBox(keys: [(id, Self.old)])
            #expect(SecretBox.keyID(of: box.seal([], context: "")) == id)
        }
    }

    @Test("the key ids show in the description, the keys never")
    func describedByIDs() throws {
        let box = try SecretBox(keys: [("k2", Self.new), ("k1", Self.old)])
        #expect("\(box)" == "SecretBox(key ids k2, k1; keys redacted)")
        #expect(!"\(box)".contains(Self.new.hexString))
    }
}
