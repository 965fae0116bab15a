/// The base64 dialects that stored password hashes use.
///
/// Every decoder is strict: the dialect's alphabet only, its padding rule, and zero bits in the
/// unused tail of the last character, so one hash has exactly one spelling and a damaged value is
/// reported as malformed instead of silently never matching.
enum PasswordHashBase64 {
    enum Dialect {
        /// RFC 4648 alphabet with `=` padding (Django's PBKDF2 hashes).
        case standardPadded
        /// RFC 4648 alphabet without padding (PHC strings, passlib's `$scrypt$`).
        case standardUnpadded
        /// passlib's "ab64": `.` instead of `+`, no padding (passlib's `$pbkdf2…$`).
        case adapted

        fileprivate var alphabet: [UInt8] {
            self == .adapted ? PasswordHashBase64.adaptedAlphabet : PasswordHashBase64.standardAlphabet
        }

        /// Character to value, 0xff for characters outside the alphabet.
        fileprivate var table: [UInt8] {
            self == .adapted ? PasswordHashBase64.adaptedTable : PasswordHashBase64.standardTable
        }

        fileprivate var padded: Bool { self == .standardPadded }
    }

    private static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let adaptedAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789./".utf8)
    private static let standardTable = table(for: standardAlphabet)
    private static let adaptedTable = table(for: adaptedAlphabet)

    private static func table(for alphabet: [UInt8]) -> [UInt8] {
        var table = [UInt8](repeating: 0xff, count: 256)
        for (value, c) in alphabet.enumerated() { table[Int(c)] = UInt8(value) }
        return table
    }

    /// The value of a crypt(3) alphabet character, or nil.
    static func cryptValue(_ c: UInt8) -> UInt32? {
        switch c {
        case UInt8(ascii: ".")...UInt8(ascii: "9"): return UInt32(c - UInt8(ascii: "."))
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return UInt32(c - UInt8(ascii: "A")) + 12
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return UInt32(c - UInt8(ascii: "a")) + 38
        default: return nil
        }
    }

    static func isCryptCharacter(_ c: UInt8) -> Bool { cryptValue(c) != nil }

    static func decode<C: Collection<UInt8>>(_ text: C, _ dialect: Dialect) -> [UInt8]? {
        let table = dialect.table
        var chars = Array(text)
        if dialect.padded {
            guard chars.count % 4 == 0 else { return nil }
            var padding = 0
            while chars.last == UInt8(ascii: "=") && padding < 2 {
                chars.removeLast()
                padding += 1
            }
            // Exactly the padding that the data length implies, and no more.
            guard padding == (4 - chars.count % 4) % 4 else { return nil }
        }
        guard chars.count % 4 != 1 else { return nil }

        var out = [UInt8]()
        out.reserveCapacity(chars.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for c in chars {
            let value = table[Int(c)]
            guard value != 0xff else { return nil }
            accumulator = (accumulator << 6) | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        // Canonical: the bits left over after the last whole byte are zero.
        guard accumulator == 0 else { return nil }
        return out
    }

    static func encode(_ bytes: [UInt8], _ dialect: Dialect) -> String {
        let alphabet = dialect.alphabet
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            var value: UInt32 = 0
            for byte in chunk { value = (value << 8) | UInt32(byte) }
            value <<= UInt32(8 * (3 - chunk.count))
            for position in 0...chunk.count {
                out.append(alphabet[Int((value >> UInt32(18 - 6 * position)) & 0x3f)])
            }
            if dialect.padded {
                out.append(contentsOf: repeatElement(UInt8(ascii: "="), count: 3 - chunk.count))
            }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// crypt(3)'s little-endian base64, as `$7$` and yescrypt store their output: each group of up to
    /// three bytes is read as a little-endian integer and written six bits at a time, lowest first.
    static func decodeCrypt<C: Collection<UInt8>>(_ text: C) -> [UInt8]? {
        let chars = Array(text)
        guard chars.count % 4 != 1 else { return nil }
        var out = [UInt8]()
        var index = 0
        while index < chars.count {
            let group = chars[index..<min(index + 4, chars.count)]
            var value: UInt32 = 0
            for (position, c) in group.enumerated() {
                guard let digit = cryptValue(c) else { return nil }
                value |= digit << UInt32(6 * position)
            }
            let byteCount = group.count - 1
            // Canonical: nothing above the group's whole bytes.
            guard value >> UInt32(8 * byteCount) == 0 else { return nil }
            for position in 0..<byteCount { out.append(UInt8(truncatingIfNeeded: value >> UInt32(8 * position))) }
            index += 4
        }
        return out
    }

    /// The crypt(3) alphabet, in value order.
    static let cryptAlphabet = Array("./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)

    /// crypt(3)'s base64, the inverse of `decodeCrypt`: phpass and Drupal compare their hashes in it
    /// (Drupal keeps only a prefix of the encoding).
    static func encodeCrypt(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            var value: UInt32 = 0
            for (position, byte) in chunk.enumerated() { value |= UInt32(byte) << UInt32(8 * position) }
            for position in 0...chunk.count { out.append(cryptAlphabet[Int((value >> UInt32(6 * position)) & 0x3f)]) }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}
