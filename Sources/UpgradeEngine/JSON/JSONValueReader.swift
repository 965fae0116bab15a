/// A strict RFC 8259 pull reader over UTF-8 bytes.
///
/// It exists so identity-token claims can be read straight into their fields, member by member,
/// without building a tree or a dictionary first: token verification has to stay within a few
/// percent of the RSA verification it wraps. It is strict where lenient parsers differ (no
/// trailing commas, no leading zeros, no lone surrogates, no invalid UTF-8, no control characters
/// in strings, bounded nesting), because two parsers reading one signed payload differently is a
/// security bug. The buffer must outlive the reader, so it lives inside `withUnsafe…` scopes only.
struct JSONValueReader {
    /// Deep enough for any JOSE object; shallow enough that hostile input cannot exhaust the stack.
    static let maximumDepth = 32

    private let bytes: UnsafeBufferPointer<UInt8>
    private(set) var index: Int = 0
    private var depth = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    private func fail(_ message: String) -> JSONValueError {
        JSONValueError(offset: index, message: message)
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): index += 1
            default: return
            }
        }
    }

    /// Only whitespace may follow the top-level value.
    mutating func finish() throws(JSONValueError) {
        skipWhitespace()
        guard index == bytes.count else { throw fail("unexpected data after the JSON value") }
    }

    private mutating func peek() throws(JSONValueError) -> UInt8 {
        skipWhitespace()
        guard index < bytes.count else { throw fail("unexpected end of input") }
        return bytes[index]
    }

    private mutating func expect(_ byte: UInt8) throws(JSONValueError) {
        guard try peek() == byte else { throw fail("expected '\(Character(Unicode.Scalar(byte)))'") }
        index += 1
    }

    // MARK: Objects

    /// Reads an object, handing each member's name to `member`, which must consume the value
    /// (with one of the `read…` methods or `skipValue`).
    mutating func readObject(
        _ member: (String, inout JSONValueReader) throws(JSONValueError) -> Void
    ) throws(JSONValueError) {
        try readObjectRawKeys { key, reader throws(JSONValueError) in
            try member(String(decoding: key, as: UTF8.self), &reader)
        }
    }

    /// Like `readObject`, but hands over each name as its (unescaped, valid UTF-8) bytes, valid only
    /// during the call: matching names byte-wise spares a `String` per member on the hot path.
    mutating func readObjectRawKeys(
        _ member: (UnsafeBufferPointer<UInt8>, inout JSONValueReader) throws(JSONValueError) -> Void
    ) throws(JSONValueError) {
        try expect(UInt8(ascii: "{"))
        depth += 1
        guard depth <= Self.maximumDepth else { throw fail("nesting deeper than \(Self.maximumDepth)") }
        if try peek() == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return
        }
        while true {
            guard try peek() == UInt8(ascii: "\"") else { throw fail("expected a member name") }
            if let raw = try readPlainString() {
                try expect(UInt8(ascii: ":"))
                try member(raw, &self)
            } else {
                let key = Array(try readString().utf8)
                try expect(UInt8(ascii: ":"))
                try key.withUnsafeBufferPointer { key throws(JSONValueError) in try member(key, &self) }
            }
            switch try peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                depth -= 1
                return
            default: throw fail("expected ',' or '}'")
            }
        }
    }

    /// A string without escapes, as its bytes in the input (checked like `readString`); nil, with
    /// nothing consumed, when it contains an escape.
    private mutating func readPlainString() throws(JSONValueError) -> UnsafeBufferPointer<UInt8>? {
        let quote = index
        index += 1
        var union: UInt8 = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let raw = UnsafeBufferPointer(rebasing: bytes[(quote + 1)..<index])
                guard union < 0x80 || Self.isValidUTF8(raw) else { throw fail("invalid UTF-8 in a string") }
                index += 1
                return raw
            }
            if byte == UInt8(ascii: "\\") {
                index = quote
                return nil
            }
            if byte < 0x20 { throw fail("unescaped control character in a string") }
            union |= byte
            index += 1
        }
        throw fail("unterminated string")
    }

    mutating func readArray(_ element: (inout JSONValueReader) throws(JSONValueError) -> Void) throws(JSONValueError) {
        try expect(UInt8(ascii: "["))
        depth += 1
        guard depth <= Self.maximumDepth else { throw fail("nesting deeper than \(Self.maximumDepth)") }
        if try peek() == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return
        }
        while true {
            try element(&self)
            switch try peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                depth -= 1
                return
            default: throw fail("expected ',' or ']'")
            }
        }
    }

    // MARK: Values

    /// The kind of the next value, without consuming it.
    enum Kind {
        case object, array, string, number, bool, null
    }

    mutating func peekKind() throws(JSONValueError) -> Kind {
        switch try peek() {
        case UInt8(ascii: "{"): return .object
        case UInt8(ascii: "["): return .array
        case UInt8(ascii: "\""): return .string
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .bool
        case UInt8(ascii: "n"): return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number
        default: throw fail("expected a JSON value")
        }
    }

    static let linearDuplicateCheckLimit = 16

    /// Any value, as a tree.
    mutating func readValue() throws(JSONValueError) -> JSONValue {
        switch try peekKind() {
        case .object:
            var members: [JSONValue.Member] = []
            // Duplicates are found by comparing with the names so far while an object is small (the
            // tokens, bodies and answers we read have a dozen members at most), which costs less
            // than hashing every name; past that a set keeps the check linear.
            var names: Set<String>?
            try readObject { key, reader throws(JSONValueError) in
                let duplicate: Bool
                if var seen = names {
                    names = nil
                    duplicate = !seen.insert(key).inserted
                    names = seen
                } else if members.count < Self.linearDuplicateCheckLimit {
                    duplicate = members.contains { $0.key == key }
                } else {
                    var seen = Set(members.map(\.key))
                    duplicate = !seen.insert(key).inserted
                    names = seen
                }
                guard !duplicate else { throw reader.fail("duplicate member name") }
                members.append(JSONValue.Member(key, try reader.readValue()))
            }
            return .object(members)
        case .array:
            var values: [JSONValue] = []
            try readArray { reader throws(JSONValueError) in values.append(try reader.readValue()) }
            return .array(values)
        case .string: return .string(try readString())
        case .number: return try readNumber()
        case .bool: return .bool(try readBool())
        case .null:
            try readLiteral("null")
            return .null
        }
    }

    mutating func skipValue() throws(JSONValueError) {
        _ = try readValue()
    }

    mutating func readBool() throws(JSONValueError) -> Bool {
        if try peek() == UInt8(ascii: "t") {
            try readLiteral("true")
            return true
        }
        try readLiteral("false")
        return false
    }

    private mutating func readLiteral(_ literal: StaticString) throws(JSONValueError) {
        _ = try peek()
        let count = literal.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw fail("expected \(literal)") }
        let matches = literal.withUTF8Buffer { expected in
            (0..<count).allSatisfy { bytes[index + $0] == expected[$0] }
        }
        guard matches else { throw fail("expected \(literal)") }
        index += count
    }

    /// A number per the RFC 8259 grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    mutating func readNumber() throws(JSONValueError) -> JSONValue {
        _ = try peek()
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, Self.isDigit(bytes[index]) else { throw fail("expected a digit") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, Self.isDigit(bytes[index]) { throw fail("leading zeros are not allowed") }
        } else {
            while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, Self.isDigit(bytes[index]) else { throw fail("expected a digit after '.'") }
            while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < bytes.count, Self.isDigit(bytes[index]) else { throw fail("expected an exponent") }
            while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
        }
        if isInteger, let value = Self.parseInt64(bytes[start..<index]) {
            return .integer(value)
        }
        // The grammar was checked above, so the text is a valid Double literal.
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        guard let value = Double(text), value.isFinite else { throw fail("number out of range") }
        return .double(value)
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private static func parseInt64(_ digits: Slice<UnsafeBufferPointer<UInt8>>) -> Int64? {
        var negative = false
        var rest = digits[...]
        if rest.first == UInt8(ascii: "-") {
            negative = true
            rest = rest.dropFirst()
        }
        // Accumulate negatively so Int64.min parses too.
        var value: Int64 = 0
        for digit in rest {
            let (scaled, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = scaled.subtractingReportingOverflow(Int64(digit - UInt8(ascii: "0")))
            if overflow1 || overflow2 { return nil }
            value = next
        }
        if negative { return value }
        return value == .min ? nil : -value
    }

    // MARK: Strings

    mutating func readString() throws(JSONValueError) -> String {
        try expect(UInt8(ascii: "\""))
        let start = index
        // Fast path: no escapes, which is every string in a real token; pure ASCII needs no
        // UTF-8 validation.
        let (cursor, nonASCII) = Self.plainRun(bytes, from: start)
        let end = bytes.count
        if cursor < end, bytes[cursor] == UInt8(ascii: "\"") {
            index = cursor
            let raw = UnsafeBufferPointer(rebasing: bytes[start..<index])
            guard !nonASCII || Self.isValidUTF8(raw) else { throw fail("invalid UTF-8 in a string") }
            index += 1
            return String(decoding: raw, as: UTF8.self)
        }
        index = cursor
        if index < end, bytes[index] < 0x20 { throw fail("unescaped control character in a string") }
        var decoded = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                guard Self.isValidUTF8(decoded) else { throw fail("invalid UTF-8 in a string") }
                index += 1
                return String(decoding: decoded, as: UTF8.self)
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw fail("unterminated string") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(escape)
                case UInt8(ascii: "b"): decoded.append(0x08)
                case UInt8(ascii: "f"): decoded.append(0x0c)
                case UInt8(ascii: "n"): decoded.append(0x0a)
                case UInt8(ascii: "r"): decoded.append(0x0d)
                case UInt8(ascii: "t"): decoded.append(0x09)
                case UInt8(ascii: "u"): try appendUnicodeEscape(to: &decoded)
                default:
                    index -= 1
                    throw fail("invalid escape sequence")
                }
            case 0..<0x20:
                throw fail("unescaped control character in a string")
            default:
                decoded.append(byte)
                index += 1
            }
        }
        throw fail("unterminated string")
    }

    /// The end of the plain run that starts at `start`: the index of the first `"`, `\\` or control
    /// byte (or `bytes.count`), and whether any byte before it has its high bit set. Eight bytes at a
    /// time while a word holds none of them (tokens and codes are long runs of base64url), then byte
    /// by byte. String reading and writing both start here.
    static func plainRun(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> (end: Int, nonASCII: Bool) {
        var cursor = start
        var union: UInt64 = 0
        if let base = bytes.baseAddress {
            while bytes.count - cursor >= 8 {
                let word = UnsafeRawPointer(base + cursor).loadUnaligned(as: UInt64.self)
                guard !hasStringBoundary(word) else { break }
                union |= word
                cursor += 8
            }
        }
        while cursor < bytes.count {
            let byte = bytes[cursor]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            union |= UInt64(byte)
            cursor += 1
        }
        return (cursor, union & 0x8080_8080_8080_8080 != 0)
    }

    /// Whether any byte of `word` is `"`, `\\` or below 0x20: the bytes that end the plain run of
    /// a string. Each test is the classic "has a byte less than n" word trick, exact as a yes/no
    /// answer (a quote or backslash is found as a zero byte after XOR with that byte repeated).
    @inline(__always)
    static func hasStringBoundary(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        func hasByteBelow(_ value: UInt64, _ limit: UInt64) -> Bool {
            (value &- ones &* limit) & ~value & highs != 0
        }
        return hasByteBelow(word ^ (ones &* 0x22), 1) || hasByteBelow(word ^ (ones &* 0x5c), 1)
            || hasByteBelow(word, 0x20)
    }

    /// `\uXXXX` (the `\u` already consumed), combining a surrogate pair; a lone surrogate is refused
    /// because it has no UTF-8 encoding.
    private mutating func appendUnicodeEscape(to decoded: inout [UInt8]) throws(JSONValueError) {
        var scalar = try readHex4()
        if (0xD800...0xDBFF).contains(scalar) {
            guard bytes.count - index >= 2, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else { throw fail("lone surrogate in a \\u escape") }
            index += 2
            let low = try readHex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw fail("lone surrogate in a \\u escape") }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalar) {
            throw fail("lone surrogate in a \\u escape")
        }
        guard let unicode = Unicode.Scalar(scalar) else { throw fail("invalid \\u escape") }
        decoded.append(contentsOf: UTF8.encode(unicode)!)
    }

    private mutating func readHex4() throws(JSONValueError) -> UInt32 {
        guard bytes.count - index >= 4 else { throw fail("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let nibble: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = byte - UInt8(ascii: "A") + 10
            default: throw fail("invalid \\u escape")
            }
            value = value << 4 | UInt32(nibble)
            index += 1
        }
        return value
    }

    /// Well-formed UTF-8 per Unicode §3.9 (no overlong forms, no surrogates, nothing above U+10FFFF).
    static func isValidUTF8<C: Collection<UInt8>>(_ bytes: C) -> Bool where C.Index == Int {
        var i = bytes.startIndex
        let end = bytes.endIndex
        while i < end {
            let lead = bytes[i]
            if lead < 0x80 {
                i += 1
                continue
            }
            let length: Int
            var lower: UInt8 = 0x80
            var upper: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0:
                length = 3
                lower = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED:
                length = 3
                upper = 0x9F
            case 0xF0:
                length = 4
                lower = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4:
                length = 4
                upper = 0x8F
            default: return false
            }
            guard end - i >= length else { return false }
            guard bytes[i + 1] >= lower, bytes[i + 1] <= upper else { return false }
            for k in 2..<length {
                guard bytes[i + k] & 0xC0 == 0x80 else { return false }
            }
            i += length
        }
        return true
    }
}
