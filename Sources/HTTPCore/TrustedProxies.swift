/// The reverse proxies whose `X-Forwarded-For` is believed (`UPGRADE_TRUSTED_PROXIES`), and the
/// client address that follows from it.
///
/// Like nginx's `real_ip_recursive on`: when the TCP peer is a trusted proxy, the client is the
/// right-most `X-Forwarded-For` address that is not itself a trusted proxy (all the header's fields,
/// in order, as one list). Addresses left of that one were written by the client and are never
/// believed. A malformed entry ends the walk: the client is then the nearest trusted hop, so
/// garbage buys no fresh identity. A peer that is not trusted is the client, whatever it sends.
public struct TrustedProxies: Sendable, Hashable, CustomStringConvertible {
    public struct Range: Sendable, Hashable, CustomStringConvertible {
        public let network: HTTPClientAddress
        public let prefixLength: Int

        /// `ADDRESS` or `ADDRESS/PREFIX`; host bits below the prefix must be zero.
        public init?(_ text: some StringProtocol) {
            let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            guard let address = HTTPClientAddress(parts[0]) else { return nil }
            let bits = address.bytes.count * 8
            var length = bits
            if parts.count == 2 {
                guard !parts[1].isEmpty, parts[1].utf8.allSatisfy({ (48...57).contains($0) }), parts[1].count <= 3,
                    let parsed = Int(parts[1]), parsed <= bits
                else { return nil }
                length = parsed
            }
            guard Self.masked(address.bytes, length) == address.bytes else { return nil }
            self.network = address
            self.prefixLength = length
        }

        public func contains(_ address: HTTPClientAddress) -> Bool {
            address.family == network.family && Self.masked(address.bytes, prefixLength) == network.bytes
        }

        public var description: String { "\(network)/\(prefixLength)" }

        static func masked(_ bytes: [UInt8], _ length: Int) -> [UInt8] {
            bytes.enumerated().map { index, byte in
                let kept = min(8, max(0, length - index * 8))
                return kept == 8 ? byte : byte & ~(UInt8(0xFF) >> kept)
            }
        }
    }

    public let ranges: [Range]

    public static let none = TrustedProxies(ranges: [])

    public init(ranges: [Range]) {
        self.ranges = ranges
    }

    /// A comma-separated list of addresses and CIDR ranges; nil if any entry is malformed.
    public init?(_ text: String) {
        var ranges: [Range] = []
        for entry in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let range = Range(entry.trimmingASCIIWhitespace()) else { return nil }
            ranges.append(range)
        }
        guard !ranges.isEmpty else { return nil }
        self.init(ranges: ranges)
    }

    public var description: String { ranges.map(\.description).joined(separator: ",") }

    public func trusts(_ address: HTTPClientAddress) -> Bool {
        ranges.contains { $0.contains(address) }
    }

    /// The client behind `peer`, given the request's `X-Forwarded-For` fields (in arrival order),
    /// which are read only when the peer is a trusted proxy: with none configured, no header is
    /// scanned on any request.
    public func client(
        peer: HTTPClientAddress?,
        forwardedFor readFields: @autoclosure () -> [String]
    ) -> HTTPClientAddress? {
        guard var client = peer, trusts(client) else { return peer }
        let fields = readFields()
        guard !fields.isEmpty else { return peer }
        let hops = fields.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
        for hop in hops.reversed() {
            guard let address = HTTPClientAddress(hop.trimmingASCIIWhitespace()) else { return client }
            client = address
            if !trusts(address) { return address }
        }
        return client
    }
}

extension Substring {
    fileprivate func trimmingASCIIWhitespace() -> Substring {
        var slice = self
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return slice
    }
}
