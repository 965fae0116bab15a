import Foundation
import Testing

@testable import UpgradeEngine

@Suite("Crypto primitives")
struct CryptoPrimitivesTests {
    struct WycheproofMAC: Decodable {
        struct Group: Decodable {
            let keySize: Int
            let tagSize: Int
            let tests: [Case]
        }
        struct Case: Decodable {
            let tcId: Int
            let key: String
            let msg: String
            let tag: String
            let result: String
        }
        let testGroups: [Group]
    }

    @Test("HMAC-SHA1 agrees with every Wycheproof vector")
    func hmacSHA1Wycheproof() throws {
        let file = try Fixtures.json(WycheproofMAC.self, "vectors/hmac_sha1_test.json")
        var checked = 0
        for group in file.testGroups {
            for test in group.tests {
                let mac = Digest.hmac(.sha1, key: [UInt8](hex: test.key)!, message: [UInt8](hex: test.msg)!)
                let truncated = Array(mac.prefix(group.tagSize / 8))
                let matches = ConstantTime.equals(truncated, [UInt8](hex: test.tag)!)
                #expect(matches == (test.result == "valid"), "tcId \(test.tcId)")
                checked += 1
            }
        }
        #expect(checked == 170)
    }

    @Test("base64url round-trips and rejects non-canonical or foreign input")
    func base64url() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
        }
        #expect(Base64URL.encode([0xfb, 0xff]) == "-_8")
        #expect(Base64URL.decode("-_8=") == nil, "padding is not allowed")
        #expect(Base64URL.decode("-_9") == nil, "stray low bits are not canonical")
        #expect(Base64URL.decode("a b") == nil)
        #expect(Base64URL.decode("+/8") == nil, "standard alphabet is not base64url")
        #expect(Base64URL.decode("A") == nil, "impossible length")
        #expect(Base64URL.decode("AAAAA") == nil, "impossible length")
        #expect(Base64URL.decode("") == [])
    }

    @Test("base64url agrees with Foundation's base64 for random inputs of every length up to 256")
    func base64urlMatchesFoundation() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...256 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let reference = Data(bytes).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encode(bytes) == reference, "length \(length)")
            #expect(Base64URL.decode(reference) == bytes, "length \(length)")
        }
    }

    @Test("constant-time comparison")
    func constantTime() {
        #expect(ConstantTime.equals("secret", "secret"))
        #expect(!ConstantTime.equals("secret", "secreT"))
        #expect(!ConstantTime.equals("secret", "secret1"))
        #expect(ConstantTime.equals([UInt8](), [UInt8]()))
    }

    @Test("random bytes differ between calls")
    func randomness() {
        #expect(SecureRandom.bytes(32) != SecureRandom.bytes(32))
        #expect(SecureRandom.token().count == 43)
        #expect(SecureRandom.bytes(0).isEmpty)
    }

    @Test("a draw larger than one getrandom call returns (256 bytes) is filled to its end")
    func largeRandomDraw() {
        // 1 MiB: each byte value should appear about 4096 times. A buffer left partly unfilled
        // (zeros past the first call's bytes) would put most of the weight on 0.
        let bytes = SecureRandom.bytes(1 << 20)
        #expect(bytes.count == 1 << 20)
        var histogram = [Int](repeating: 0, count: 256)
        for byte in bytes { histogram[Int(byte)] += 1 }
        #expect(histogram.min()! > 3000 && histogram.max()! < 5200)
        #expect(bytes.suffix(4096).contains { $0 != 0 })
    }
}
