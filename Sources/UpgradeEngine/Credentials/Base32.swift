/// Base32 (RFC 4648 §6, the `A–Z2–7` alphabet), the encoding of TOTP secrets in `otpauth://` URIs.
public enum Base32 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    /// Encodes `bytes`; with `padding`, `=` fills the last group of 8 characters as RFC 4648 does.
    public static func encode<D: Collection<UInt8>>(_ bytes: D, padding: Bool = true) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 4) / 5 * 8)
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                out.append(alphabet[Int((buffer >> UInt32(bits)) & 0x1f)])
            }
        }
        if bits > 0 {
            out.append(alphabet[Int((buffer << UInt32(5 - bits)) & 0x1f)])
        }
        if padding {
            while out.count % 8 != 0 { out.append(UInt8(ascii: "=")) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes Base32 text. Returns nil for any character outside the alphabet (whitespace included),
    /// for a length no encoder can produce, or for padding that is present but not exactly right.
    ///
    /// Deliberately tolerant where legacy authenticator secrets differ from the RFC, and strict elsewhere:
    /// - letters are accepted in either case, as authenticator apps do;
    /// - padding is optional, because most `otpauth://` secrets omit it;
    /// - unused low bits of the last character are ignored rather than rejected: many issuers generate
    ///   secrets as random Base32 characters (not by encoding bytes), and authenticator apps discard those
    ///   bits, so rejecting them would refuse secrets whose codes every other client computes the same way.
    public static func decode<S: StringProtocol>(_ text: S) -> [UInt8]? {
        var symbols = [UInt8]()
        symbols.reserveCapacity(text.utf8.count)
        var padding = 0
        for c in text.utf8 {
            if c == UInt8(ascii: "=") {
                padding += 1
                continue
            }
            // Data after padding means the padding was not at the end.
            guard padding == 0, let value = symbolValue(c) else { return nil }
            symbols.append(value)
        }
        // A final group of 1, 3 or 6 characters cannot come from any whole number of bytes.
        switch symbols.count % 8 {
        case 1, 3, 6: return nil
        default: break
        }
        if padding > 0 {
            guard (symbols.count + padding) % 8 == 0, padding < 8 else { return nil }
        }
        var out = [UInt8]()
        out.reserveCapacity(symbols.count * 5 / 8)
        var buffer: UInt32 = 0
        var bits = 0
        for value in symbols {
            buffer = (buffer << 5 | UInt32(value)) & 0xffff
            bits += 5
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        return out
    }

    private static func symbolValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return c - UInt8(ascii: "a")
        case UInt8(ascii: "2")...UInt8(ascii: "7"): return c - UInt8(ascii: "2") + 26
        default: return nil
        }
    }
}
