import Foundation
import Testing

@testable import UpgradeEngine

@Suite("JWK sets")
struct JWKSTests {
    static let key = try! RSAPrivateKey(generatingBits: 2048).publicKey

    static func rsaEntry(_ kid: String?, extra: KeyValuePairs<String, JSONValue?> = [:]) -> JSONValue {
        var members: [JSONValue.Member] = [
            .init("kty", .string("RSA")), .init("n", .string(key.jwkModulus)), .init("e", .string(key.jwkExponent)),
        ]
        if let kid { members.append(.init("kid", .string(kid))) }
        for (name, value) in extra {
            members.removeAll { $0.key == name }
            if let value { members.append(.init(name, value)) }
        }
        return .object(members)
    }

    static func document(_ entries: [JSONValue]) -> [UInt8] {
        JSONValue.object(["keys": .array(entries)]).serialized()
    }

    @Test("the committed fixture loads both keys by kid")
    func fixture() throws {
        let set = try JWKSet(json: Fixtures.data("apple/jwks.json"))
        #expect(set.keyIDs == ["Wq7kT2r", "pX9mBcQ4Ld"])
        #expect(set["Wq7kT2r"] != nil && set["pX9mBcQ4Ld"] != nil)
        #expect(set["wq7kT2r"] == nil, "kids are case-sensitive")
        #expect(set.skipped.isEmpty)
    }

    @Test("an unknown kid resolves to nothing, never to another key")
    func noFallback() throws {
        let set = try JWKSet(json: Self.document([Self.rsaEntry("only")]))
        #expect(set["only"] != nil)
        #expect(set["other"] == nil)
        #expect(set[""] == nil)
    }

    @Test("unusable entries are skipped with a reason")
    func skipping() throws {
        let ec: JSONValue = .object([
            "kty": .string("EC"), "kid": .string("ec"), "crv": .string("P-256"), "x": .string("AA"), "y": .string("AA"),
        ])
        let entries: [JSONValue] = [
            Self.rsaEntry("good", extra: ["use": .string("sig"), "alg": .string("RS256")]),
            ec,
            Self.rsaEntry("enc", extra: ["use": .string("enc")]),
            Self.rsaEntry("rs512", extra: ["alg": .string("RS512")]),
            Self.rsaEntry("ops", extra: ["key_ops": .array([.string("encrypt")])]),
            Self.rsaEntry(nil),
            Self.rsaEntry("small", extra: ["n": .string(Base64URL.encode([UInt8](repeating: 0xC5, count: 128)))]),
            Self.rsaEntry("no-e", extra: ["e": nil]),
        ]
        let set = try JWKSet(json: Self.document(entries))
        #expect(set.keyIDs == ["good"])
        #expect(set.skipped.map(\.keyID) == ["ec", "enc", "rs512", "ops", nil, "small", "no-e"])
        #expect(set.skipped[0].reason.contains("not RSA"))
        #expect(set.skipped[5].reason.contains("2048"))
    }

    @Test(
        "refused sets",
        arguments: [
            ("not JSON", Array("{\"keys\":[".utf8), JWKSetError.Code.malformed),
            ("no keys array", Array("{\"key\":[]}".utf8), .malformed),
            ("keys not objects", Array("{\"keys\":[1]}".utf8), .malformed),
            ("empty", Array("{\"keys\":[]}".utf8), .noUsableKeys),
            ("duplicate kid", JWKSTests.document([rsaEntry("a"), rsaEntry("a")]), .duplicateKeyID),
            (
                "duplicate kid, one unusable",
                JWKSTests.document([rsaEntry("a"), rsaEntry("a", extra: ["use": .string("enc")])]),
                .duplicateKeyID
            ),
            ("private key", JWKSTests.document([rsaEntry("a", extra: ["d": .string("AQAB")])]), .privateKeyMaterial),
            ("only unusable", JWKSTests.document([rsaEntry("a", extra: ["alg": .string("HS256")])]), .noUsableKeys),
        ]
    )
    func refused(name: String, json: [UInt8], code: JWKSetError.Code) {
        do {
            _ = try JWKSet(json: json)
            Issue.record("\(name): accepted")
        } catch {
            #expect(error.code == code, "\(name): \(error.message)")
        }
    }

    @Test("export matches Apple's shape and reloads")
    func export() throws {
        let set = try JWKSet(keys: [("k1", Self.key)])
        let exported = set.json
        let entry = try #require(exported["keys"]?.arrayValue?.first)
        #expect(entry.members?.map(\.key) == ["kty", "kid", "use", "alg", "n", "e"])
        #expect(entry["e"] == .string("AQAB"))
        let reloaded = try JWKSet(json: exported.serialized())
        #expect(reloaded.keyIDs == ["k1"])
        #expect(reloaded["k1"]?.derRepresentation == Self.key.derRepresentation)
        #expect(throws: JWKSetError.self) { try JWKSet(keys: [("k1", Self.key), ("k1", Self.key)]) }
        #expect(throws: JWKSetError.self) { try JWKSet(keys: []) }
    }
}
