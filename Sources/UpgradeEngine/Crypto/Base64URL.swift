import Foundation

/// base64url (RFC 4648 §5) without padding, as JOSE uses it.
public enum Base64URL {
    public static func encode<D: Collection<UInt8>>(_ bytes: D) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Strict decoding: only the base64url alphabet, no padding, no whitespace, and a length that
    /// a real encoding can have. Returns nil otherwise.
    public static func decode<S: StringProtocol>(_ text: S) -> [UInt8]? {
        var standard = [UInt8]()
        standard.reserveCapacity(text.utf8.count + 3)
        for c in text.utf8 {
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                standard.append(c)
            case UInt8(ascii: "-"): standard.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): standard.append(UInt8(ascii: "/"))
            default: return nil
            }
        }
        switch standard.count % 4 {
        case 0: break
        case 2: standard.append(contentsOf: [UInt8(ascii: "="), UInt8(ascii: "=")])
        case 3: standard.append(UInt8(ascii: "="))
        default: return nil
        }
        guard let data = Data(base64Encoded: Data(standard)) else { return nil }
        let bytes = [UInt8](data)
        // Reject non-canonical encodings (stray low bits), so one token has exactly one spelling.
        guard encode(bytes) == String(text) else { return nil }
        return bytes
    }
}
