/// A JWS in compact serialization (RFC 7515 §7.1), `BASE64URL(header).BASE64URL(payload).BASE64URL(signature)`,
/// split and decoded. Splitting verifies nothing: callers check the header's algorithm, verify
/// `signature` over `signingInput`, and only then read `payload`.
///
/// Parsing is strict: exactly three non-empty parts and canonical base64url (RFC 4648 §5, no
/// padding, no whitespace, no stray low bits), so one token has exactly one spelling.
public struct JWSCompact: Sendable {
    /// The token's bytes; the signing input is a prefix of them, so verification needs no copy.
    private let bytes: [UInt8]
    private let signingInputEnd: Int
    /// The decoded protected header (JSON).
    public let header: [UInt8]
    /// The decoded payload (JSON for JWTs).
    public let payload: [UInt8]
    public let signature: [UInt8]

    /// `ASCII(BASE64URL(header) || '.' || BASE64URL(payload))`, what the signature covers.
    public var signingInput: ArraySlice<UInt8> { bytes[..<signingInputEnd] }

    public init(parsing token: String, maximumLength: Int) throws(JWSError) {
        let utf8 = token.utf8
        guard utf8.count <= maximumLength else {
            throw JWSError("token is \(utf8.count) bytes long; at most \(maximumLength) are accepted")
        }
        let bytes = Array(utf8)
        var dots: [Int] = []
        for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: ".") {
            dots.append(index)
            if dots.count > 2 { break }
        }
        guard dots.count == 2 else {
            throw JWSError(
                dots.count > 2
                    ? "token has more than three dot-separated parts (an encrypted JWE is not accepted)"
                    : "token has \(dots.count + 1) dot-separated part\(dots.isEmpty ? "" : "s"); a JWS has three"
            )
        }
        let (first, second) = (dots[0], dots[1])
        guard first > 0 else { throw JWSError("token's header part is empty") }
        guard second > first + 1 else { throw JWSError("token's payload part is empty") }
        guard second < bytes.count - 1 else { throw JWSError("token's signature part is empty") }
        guard let header = Self.decode(bytes[..<first]) else { throw JWSError("token's header is not base64url") }
        guard let payload = Self.decode(bytes[(first + 1)..<second]) else {
            throw JWSError("token's payload is not base64url")
        }
        guard let signature = Self.decode(bytes[(second + 1)...]) else {
            throw JWSError("token's signature is not base64url")
        }
        self.bytes = bytes
        self.signingInputEnd = second
        self.header = header
        self.payload = payload
        self.signature = signature
    }

    /// Serializes `header` and `payload`, signs the signing input with `signer`, and returns the
    /// compact token.
    public static func sign(
        header: JWSJSON,
        payload: [UInt8],
        signer: ([UInt8]) throws -> [UInt8]
    ) rethrows -> String {
        let signingInput = Base64URL.encode(header.serialized()) + "." + Base64URL.encode(payload)
        let signature = try signer(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    // MARK: base64url

    /// Decoding table: 0...63 for the base64url alphabet, 0xFF for anything else.
    private static let alphabet: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        let symbols = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        for (value, symbol) in symbols.enumerated() { table[Int(symbol)] = UInt8(value) }
        return table
    }()

    /// Strict, canonical base64url without padding. `Base64URL.decode` goes through Foundation and
    /// re-encodes to check canonicity; this runs on every token, so it decodes in one pass and
    /// checks the unused low bits of the last symbol instead.
    static func decode(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        let remainder = text.count % 4
        guard remainder != 1 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(text.count / 4 * 3 + 2)
        return alphabet.withUnsafeBufferPointer { table -> [UInt8]? in
            var index = text.startIndex
            let fullEnd = text.endIndex - remainder
            while index < fullEnd {
                let a = table[Int(text[index])]
                let b = table[Int(text[index + 1])]
                let c = table[Int(text[index + 2])]
                let d = table[Int(text[index + 3])]
                guard (a | b | c | d) & 0xC0 == 0 else { return nil }
                let group = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                out.append(UInt8(truncatingIfNeeded: group >> 16))
                out.append(UInt8(truncatingIfNeeded: group >> 8))
                out.append(UInt8(truncatingIfNeeded: group))
                index += 4
            }
            switch remainder {
            case 2:
                let a = table[Int(text[index])]
                let b = table[Int(text[index + 1])]
                guard (a | b) & 0xC0 == 0, b & 0x0F == 0 else { return nil }
                out.append(a << 2 | b >> 4)
            case 3:
                let a = table[Int(text[index])]
                let b = table[Int(text[index + 1])]
                let c = table[Int(text[index + 2])]
                guard (a | b | c) & 0xC0 == 0, c & 0x03 == 0 else { return nil }
                out.append(a << 2 | b >> 4)
                out.append(b << 4 | c >> 2)
            default: break
            }
            return out
        }
    }
}
