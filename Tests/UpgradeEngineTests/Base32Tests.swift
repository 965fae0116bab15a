import Testing

@testable import UpgradeEngine

@Suite("Base32")
struct Base32Tests {
    struct Vector: Sendable, CustomTestStringConvertible {
        let plain: String
        let encoded: String
        var testDescription: String { "\"\(plain)\"" }
    }

    /// RFC 4648 §10.
    static let rfc4648: [Vector] = [
        Vector(plain: "", encoded: ""),
        Vector(plain: "f", encoded: "MY======"),
        Vector(plain: "fo", encoded: "MZXQ===="),
        Vector(plain: "foo", encoded: "MZXW6==="),
        Vector(plain: "foob", encoded: "MZXW6YQ="),
        Vector(plain: "fooba", encoded: "MZXW6YTB"),
        Vector(plain: "foobar", encoded: "MZXW6YTBOI======"),
    ]

    @Test("RFC 4648 test vectors, with and without padding, in either case", arguments: rfc4648)
    func rfcVector(_ vector: Vector) {
        let bytes = Array(vector.plain.utf8)
        #expect(Base32.encode(bytes) == vector.encoded)
        let unpadded = String(vector.encoded.prefix { $0 != "=" })
        #expect(Base32.encode(bytes, padding: false) == unpadded)
        #expect(Base32.decode(vector.encoded) == bytes)
        #expect(Base32.decode(unpadded) == bytes)
        #expect(Base32.decode(vector.encoded.lowercased()) == bytes)
    }

    @Test("round trip for every length up to 70 bytes")
    func roundTrip() {
        for length in 0...70 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 151 &+ 7) }
            #expect(Base32.decode(Base32.encode(bytes)) == bytes, "length \(length)")
            #expect(Base32.decode(Base32.encode(bytes, padding: false)) == bytes, "length \(length)")
        }
    }

    @Test(
        "refuses foreign characters, impossible lengths and wrong padding",
        arguments: [
            "MZXW6YQ1",  // 1 is not in the alphabet
            "MZXW6YQ8",  // nor is 8
            "MZXW 6YQ=",  // whitespace is the caller's business
            "MZXW6YQ=\n",
            "MZXW-6YQ",
            "M",  // 1, 3 or 6 characters in the last group cannot encode whole bytes
            "MZX",
            "MZXW6Y",
            "MZXW6YTBM",
            "MY=====",  // too little padding
            "MY=======",  // too much
            "MZXW6YTB========",  // a whole group of padding
            "MY==MY==",  // data after padding
            "=",
            "MZXW6YQ\u{00C9}",
        ]
    )
    func rejects(_ text: String) {
        #expect(Base32.decode(text) == nil)
    }

    @Test("unused low bits of the last character are ignored, as authenticator apps do")
    func trailingBits() {
        // "MY" is the canonical encoding of "f"; "MZ" has one stray low bit set.
        #expect(Base32.decode("MZ") == Array("f".utf8))
        #expect(Base32.decode("MZ======") == Array("f".utf8))
    }
}
