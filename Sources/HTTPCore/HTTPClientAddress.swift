import Glibc

/// The TCP peer of a connection, as `accept` reported it (an IPv4-mapped IPv6 address is IPv4).
public struct HTTPClientAddress: Sendable, Hashable, CustomStringConvertible {
    public enum Family: Sendable, Hashable {
        case ipv4
        case ipv6
    }

    public let family: Family
    /// The address in network byte order: the first 4 bytes for IPv4, all 16 for IPv6.
    public let bytes: [UInt8]

    /// `nil` unless `bytes` has 4 (IPv4) or 16 (IPv6) elements.
    public init?(bytes: [UInt8]) {
        switch bytes.count {
        case 4: family = .ipv4
        case 16: family = .ipv6
        default: return nil
        }
        self.bytes = bytes
    }

    /// Parses dotted-decimal IPv4 or textual IPv6 (`inet_pton`; no brackets, port or zone). An
    /// IPv4-mapped IPv6 address becomes IPv4, as `accept` reports it.
    public init?(_ text: some StringProtocol) {
        let string = String(text)
        guard !string.isEmpty, string.utf8.count <= 45 else { return nil }
        var v4 = in_addr()
        if string.contains("."), !string.contains(":"), inet_pton(AF_INET, string, &v4) == 1 {
            self.init(bytes: withUnsafeBytes(of: &v4) { Array($0) })
            return
        }
        var v6 = in6_addr()
        guard string.contains(":"), inet_pton(AF_INET6, string, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            self.init(bytes: Array(bytes[12...]))
        } else {
            self.init(bytes: bytes)
        }
    }

    /// What per-client limits count by: the whole IPv4 address, or the /64 prefix of an IPv6 one,
    /// since a single IPv6 client is usually handed a whole /64 and can pick any address in it.
    public var throttleKey: HTTPClientAddress {
        guard family == .ipv6 else { return self }
        return HTTPClientAddress(bytes: Array(bytes[0..<8]) + [UInt8](repeating: 0, count: 8)) ?? self
    }

    /// Dotted decimal, or RFC 5952 text (lower case, the longest run of two or more zero groups as `::`).
    public var description: String {
        guard family == .ipv6 else { return bytes.map(String.init).joined(separator: ".") }
        let groups = (0..<8).map { UInt16(bytes[2 * $0]) << 8 | UInt16(bytes[2 * $0 + 1]) }
        var best: Range<Int>?
        var index = 0
        while index < 8 {
            guard groups[index] == 0 else {
                index += 1
                continue
            }
            var end = index
            while end < 8 && groups[end] == 0 { end += 1 }
            if end - index >= 2 && end - index > (best?.count ?? 0) { best = index..<end }
            index = end
        }
        func text(_ range: Range<Int>) -> String {
            groups[range].map { String($0, radix: 16) }.joined(separator: ":")
        }
        guard let best else { return text(0..<8) }
        return text(0..<best.lowerBound) + "::" + text(best.upperBound..<8)
    }
}
