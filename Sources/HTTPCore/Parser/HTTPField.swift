/// One header field line as received or to be sent: the name keeps its original case, and the
/// value has its surrounding whitespace removed.
public struct HTTPField: Hashable, Sendable, CustomStringConvertible {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    public var description: String { "\(name): \(value)" }

    /// ASCII case-insensitive name comparison (field names are tokens, so ASCII is the whole story).
    public func hasName(_ other: String) -> Bool {
        Self.equalsIgnoringASCIICase(name, other)
    }

    static func equalsIgnoringASCIICase(_ lhs: String, _ rhs: String) -> Bool {
        guard lhs.utf8.count == rhs.utf8.count else { return false }
        // Native strings are contiguous UTF-8; comparing buffers avoids generic iteration on a hot path.
        var left = lhs
        var right = rhs
        return left.withUTF8 { a in
            right.withUTF8 { b in
                for index in 0..<a.count where a[index] != b[index] {
                    guard lowercasedASCII(a[index]) == lowercasedASCII(b[index]) else { return false }
                }
                return true
            }
        }
    }

    @inline(__always)
    static func lowercasedASCII(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
    }
}
