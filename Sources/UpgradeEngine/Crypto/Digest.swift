import COpenSSL

/// Hash and HMAC algorithms used across the engine.
public enum DigestAlgorithm: String, Sendable, CaseIterable, Codable {
    case sha1 = "SHA1"
    case sha256 = "SHA256"
    case sha512 = "SHA512"

    /// The implementation fetched once (`EVPKeySupport`), not the legacy `EVP_sha256()` that is
    /// looked up again on every call.
    var evp: OpaquePointer {
        switch self {
        case .sha1: return EVPKeySupport.sha1.md
        case .sha256: return EVPKeySupport.sha256.md
        case .sha512: return EVPKeySupport.sha512.md
        }
    }

    public var outputSize: Int {
        switch self {
        case .sha1: return 20
        case .sha256: return 32
        case .sha512: return 64
        }
    }
}

public enum Digest {
    public static func hash<D: Collection<UInt8>>(_ algorithm: DigestAlgorithm, _ data: D) -> [UInt8] {
        let input = Array(data)
        var out = [UInt8](repeating: 0, count: algorithm.outputSize)
        var length: UInt32 = 0
        let rc = input.withUnsafeBytes { inBuf in
            out.withUnsafeMutableBufferPointer { outBuf in
                EVP_Digest(inBuf.baseAddress, inBuf.count, outBuf.baseAddress, &length, algorithm.evp, nil)
            }
        }
        precondition(rc == 1 && Int(length) == algorithm.outputSize, "EVP_Digest failed")
        return out
    }

    public static func sha256<D: Collection<UInt8>>(_ data: D) -> [UInt8] { hash(.sha256, data) }
    public static func sha256(_ string: String) -> [UInt8] { hash(.sha256, Array(string.utf8)) }

    /// HMAC of `message` under `key`.
    public static func hmac<K: Collection<UInt8>, M: Collection<UInt8>>(
        _ algorithm: DigestAlgorithm,
        key: K,
        message: M
    ) -> [UInt8] {
        let keyBytes = Array(key)
        let messageBytes = Array(message)
        var out = [UInt8](repeating: 0, count: algorithm.outputSize)
        var length: UInt32 = 0
        let result = keyBytes.withUnsafeBytes { k in
            messageBytes.withUnsafeBytes { m in
                out.withUnsafeMutableBufferPointer { o in
                    HMAC(
                        algorithm.evp,
                        k.baseAddress ?? UnsafeRawPointer(bitPattern: 1),
                        Int32(k.count),
                        m.baseAddress?.assumingMemoryBound(to: UInt8.self),
                        m.count,
                        o.baseAddress,
                        &length
                    )
                }
            }
        }
        precondition(result != nil && Int(length) == algorithm.outputSize, "HMAC failed")
        return out
    }
}

extension Array where Element == UInt8 {
    /// Lowercase hexadecimal.
    public var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(count * 2)
        for byte in self {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses hexadecimal (either case); nil on odd length or a non-hex character.
    public init?(hex: String) {
        let chars = Array(hex.utf8)
        guard chars.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        var out = [UInt8]()
        out.reserveCapacity(chars.count / 2)
        var i = 0
        while i < chars.count {
            guard let hi = nibble(chars[i]), let lo = nibble(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        self = out
    }
}
