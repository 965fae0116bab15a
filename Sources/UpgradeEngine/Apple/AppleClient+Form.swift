extension AppleClient {
    /// `application/x-www-form-urlencoded` with every byte outside RFC 3986's unreserved set
    /// (`A-Z a-z 0-9 - . _ ~`) percent-encoded in upper-case hex, spaces included (`%20`, not `+`).
    /// Apple answers a form that is not percent-encoded with `invalid_client` (TN3107), and the
    /// strictest encoding is one every decoder reads the same way.
    public static func formEncoded(_ pairs: [(name: String, value: String)]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(pairs.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 2 } * 2)
        for (index, pair) in pairs.enumerated() {
            if index > 0 { out.append(UInt8(ascii: "&")) }
            percentEncode(pair.name, into: &out)
            out.append(UInt8(ascii: "="))
            percentEncode(pair.value, into: &out)
        }
        return out
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    private static func percentEncode(_ text: String, into out: inout [UInt8]) {
        // Codes, ids and the client secret (a JWS) are all unreserved characters: copied whole.
        let copied: Bool? = text.utf8.withContiguousStorageIfAvailable { bytes in
            for byte in bytes where !isUnreserved(byte) { return false }
            out.append(contentsOf: bytes)
            return true
        }
        if copied == true { return }
        for byte in text.utf8 {
            if isUnreserved(byte) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0f)])
            }
        }
    }

    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            true
        default:
            false
        }
    }
}
