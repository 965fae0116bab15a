/// A JSON value as JOSE objects carry it (JWS headers, JWT claims, JWK sets).
///
/// Objects keep their members in order, so what we sign is serialized exactly as it was built, and
/// parsing rejects duplicate member names (RFC 7519 §4 allows either rejecting them or taking the
/// last one; a verifier and another party disagreeing on which duplicate counts is how claim
/// smuggling starts).
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// A number written without fraction or exponent that fits in 64 bits.
    case integer(Int64)
    /// Any other number.
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([Member])

    public struct Member: Sendable, Equatable {
        public var key: String
        public var value: JSONValue

        public init(_ key: String, _ value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    /// Builds an object from ordered `(key, value)` pairs; nil values are left out, which is how
    /// optional claims are written.
    public static func object(_ pairs: KeyValuePairs<String, JSONValue?>) -> JSONValue {
        .object(pairs.compactMap { pair in pair.value.map { Member(pair.key, $0) } })
    }

    /// Parses a complete JSON text; anything but whitespace after the value is an error.
    public static func parse<Bytes: Collection<UInt8>>(_ bytes: Bytes) throws(JSONValueError) -> JSONValue {
        if let result = bytes.withContiguousStorageIfAvailable({ buffer in
            Result { () throws(JSONValueError) in try parse(buffer) }
        }) {
            return try result.get()
        }
        return try Array(bytes).withUnsafeBufferPointer { buffer throws(JSONValueError) in try parse(buffer) }
    }

    static func parse(_ buffer: UnsafeBufferPointer<UInt8>) throws(JSONValueError) -> JSONValue {
        var reader = JSONValueReader(buffer)
        let value = try reader.readValue()
        try reader.finish()
        return value
    }

    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var int64Value: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    public var members: [Member]? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// Compact serialization (no insignificant whitespace, `/` not escaped), UTF-8.
    public func serialized() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(into: &out)
        return out
    }

    public var serializedString: String {
        String(decoding: serialized(), as: UTF8.self)
    }

    /// Appends the compact serialization to `out`, for callers assembling a larger document.
    public func serialize(into out: inout [UInt8]) {
        write(into: &out)
    }

    /// Appends `string` as a JSON string literal (quoted, escaped) to `out`.
    public static func serialize(string: String, into out: inout [UInt8]) {
        writeString(string, into: &out)
    }

    private func write(into out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let value): out.append(contentsOf: (value ? "true" : "false").utf8)
        case .integer(let value): out.append(contentsOf: String(value).utf8)
        case .double(let value):
            // JSON has no spelling for NaN or infinity; building one is a programming error.
            precondition(value.isFinite, "JSON cannot represent \(value)")
            out.append(contentsOf: "\(value)".utf8)
        case .string(let value): Self.writeString(value, into: &out)
        case .array(let values):
            out.append(UInt8(ascii: "["))
            for (index, value) in values.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                value.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, member) in members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                Self.writeString(member.key, into: &out)
                out.append(UInt8(ascii: ":"))
                member.value.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static func writeString(_ string: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most strings need no escape: copy those whole, scanning their bytes in place.
        let copied: Bool? = string.utf8.withContiguousStorageIfAvailable { bytes in
            guard JSONValueReader.plainRun(bytes, from: 0).end == bytes.count else { return false }
            out.append(contentsOf: bytes)
            return true
        }
        if copied == true {
            out.append(UInt8(ascii: "\""))
            return
        }
        let hex: StaticString = "0123456789abcdef"
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\n"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case UInt8(ascii: "\r"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case UInt8(ascii: "\t"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                out.append(contentsOf: "\\u00".utf8)
                out.append(hex.utf8Start[Int(byte >> 4)])
                out.append(hex.utf8Start[Int(byte & 0x0f)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
