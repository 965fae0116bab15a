/// base64url (RFC 4648 §5) without padding, as JOSE uses it. Encoded and decoded directly on
/// bytes: tokens, states and nonces pass through here on every request.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Each ASCII byte's 6-bit value, or 0xff for bytes outside the alphabet.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xff, count: 256)
        for (index, symbol) in alphabet.enumerated() { table[Int(symbol)] = UInt8(index) }
        return table
    }()

    public static func encode<D: Collection<UInt8>>(_ bytes: D) -> String {
        let input = Array(bytes)
        let count = (input.count * 4 + 2) / 3
        return String(unsafeUninitializedCapacity: count) { output in
            var written = 0
            var index = 0
            func put(_ sextet: UInt32) {
                output[written] = alphabet[Int(sextet & 0x3f)]
                written += 1
            }
            while index + 3 <= input.count {
                let group = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
                put(group >> 18)
                put(group >> 12)
                put(group >> 6)
                put(group)
                index += 3
            }
            switch input.count - index {
            case 1:
                let group = UInt32(input[index]) << 16
                put(group >> 18)
                put(group >> 12)
            case 2:
                let group = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8
                put(group >> 18)
                put(group >> 12)
                put(group >> 6)
            default:
                break
            }
            return written
        }
    }

    /// Strict decoding: only the base64url alphabet, no padding, no whitespace, a length that a
    /// real encoding can have, and no stray low bits in the last symbol, so one value has exactly
    /// one spelling. Returns nil otherwise.
    public static func decode<S: StringProtocol>(_ text: S) -> [UInt8]? {
        let symbols = text.utf8
        let remainder = symbols.count % 4
        guard remainder != 1 else { return nil }
        var output = [UInt8]()
        output.reserveCapacity(symbols.count * 3 / 4)
        var group: UInt32 = 0
        var pending = 0
        for symbol in symbols {
            let value = values[Int(symbol)]
            guard value != 0xff else { return nil }
            group = group << 6 | UInt32(value)
            pending += 1
            if pending == 4 {
                output.append(UInt8(truncatingIfNeeded: group >> 16))
                output.append(UInt8(truncatingIfNeeded: group >> 8))
                output.append(UInt8(truncatingIfNeeded: group))
                group = 0
                pending = 0
            }
        }
        switch pending {
        case 2:
            guard group & 0x0f == 0 else { return nil }
            output.append(UInt8(truncatingIfNeeded: group >> 4))
        case 3:
            guard group & 0x03 == 0 else { return nil }
            output.append(UInt8(truncatingIfNeeded: group >> 10))
            output.append(UInt8(truncatingIfNeeded: group >> 2))
        default:
            break
        }
        return output
    }
}
