/// A request's identity for logs and problem reports: 64 bits shown as 16 hex digits. The server
/// starts from a random value per run, so ids from different runs do not collide in one log store.
public struct HTTPRequestID: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64

    public init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    /// Sixteen lowercase hex digits, zero-padded.
    public var description: String {
        String(unsafeUninitializedCapacity: 16) { buffer in
            let hex: StaticString = "0123456789abcdef"
            for index in 0..<16 {
                buffer[index] = hex.utf8Start[Int(rawValue >> UInt64(60 - 4 * index) & 0xf)]
            }
            return 16
        }
    }
}
