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
        var first = -1
        var second = -1
        var extra = false
        for index in bytes.indices where bytes[index] == UInt8(ascii: ".") {
            if first < 0 {
                first = index
            } else if second < 0 {
                second = index
            } else {
                extra = true
                break
            }
        }
        guard !extra else {
            throw JWSError("token has more than three dot-separated parts (an encrypted JWE is not accepted)")
        }
        guard second >= 0 else {
            throw JWSError("token has \(first < 0 ? "one part" : "two parts"); a JWS has three, separated by dots")
        }
        guard first > 0 else { throw JWSError("token's header part is empty") }
        guard second > first + 1 else { throw JWSError("token's payload part is empty") }
        guard second < bytes.count - 1 else { throw JWSError("token's signature part is empty") }
        let decoded = bytes.withUnsafeBufferPointer { buffer in
            (
                Self.decode(UnsafeBufferPointer(rebasing: buffer[..<first])),
                Self.decode(UnsafeBufferPointer(rebasing: buffer[(first + 1)..<second])),
                Self.decode(UnsafeBufferPointer(rebasing: buffer[(second + 1)...]))
            )
        }
        guard let header = decoded.0 else { throw JWSError("token's header is not base64url") }
        guard let payload = decoded.1 else { throw JWSError("token's payload is not base64url") }
        guard let signature = decoded.2 else { throw JWSError("token's signature is not base64url") }
        self.bytes = bytes
        self.signingInputEnd = second
        self.header = header
        self.payload = payload
        self.signature = signature
    }

    /// Serializes `header` and `payload`, signs the signing input with `signer`, and returns the
    /// compact token.
    public static func sign(
        header: JSONValue,
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
    /// re-encodes to check canonicity; this runs on every token, so it decodes in one pass into
    /// uninitialized storage and checks the unused low bits of the last symbol instead.
    static func decode(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        let remainder = text.count % 4
        guard remainder != 1 else { return nil }
        let groups = text.count / 4
        let outputCount = groups * 3 + (remainder == 0 ? 0 : remainder - 1)
        var valid = true
        let output = alphabet.withUnsafeBufferPointer { table in
            [UInt8](unsafeUninitializedCapacity: outputCount) { out, initialized in
                var bad: UInt8 = 0
                var input = 0
                var output = 0
                for _ in 0..<groups {
                    let a = table[Int(text[input])]
                    let b = table[Int(text[input + 1])]
                    let c = table[Int(text[input + 2])]
                    let d = table[Int(text[input + 3])]
                    bad |= a | b | c | d
                    let group = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    out[output] = UInt8(truncatingIfNeeded: group >> 16)
                    out[output + 1] = UInt8(truncatingIfNeeded: group >> 8)
                    out[output + 2] = UInt8(truncatingIfNeeded: group)
                    input += 4
                    output += 3
                }
                switch remainder {
                case 2:
                    let a = table[Int(text[input])]
                    let b = table[Int(text[input + 1])]
                    bad |= a | b | (b & 0x0F == 0 ? 0 : 0xFF)
                    out[output] = a << 2 | b >> 4
                case 3:
                    let a = table[Int(text[input])]
                    let b = table[Int(text[input + 1])]
                    let c = table[Int(text[input + 2])]
                    bad |= a | b | c | (c & 0x03 == 0 ? 0 : 0xFF)
                    out[output] = a << 2 | b >> 4
                    out[output + 1] = b << 4 | c >> 2
                default: break
                }
                // Every byte was written (garbage on failure, which is then discarded).
                initialized = outputCount
                valid = bad & 0xC0 == 0
            }
        }
        return valid ? output : nil
    }
}
