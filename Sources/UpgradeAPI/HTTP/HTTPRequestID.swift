/// A request's identity for logs and problem reports: 64 bits shown as 16 hex digits. The server
/// starts from a random value per run, so ids from different runs do not collide in one log store.
public struct HTTPRequestID: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64

    public init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    public var description: String {
        let digits = String(rawValue, radix: 16)
        return String(repeating: "0", count: 16 - digits.utf8.count) + digits
    }
}
