/// Turns a run's request counter into request ids that are unique within the run but in no visible
/// order: an `X-Request-Id` is sent to every client, and ids that counted up would tell anyone who
/// asked twice how many requests the server answered in between (docs/architecture.md §3.3).
///
/// A balanced Feistel network over the counter's two 32-bit halves, with six rounds keyed by
/// random words drawn once per run. Every round is invertible whatever its round function, so the
/// whole is a permutation of `UInt64`: distinct counters give distinct ids, and `counter(of:)`
/// recovers the counter. The round function is an integer hash with full avalanche (a flipped input
/// bit flips each output bit with probability about 1/2), so consecutive counters give ids that
/// share nothing visible. This hides a count from observers; it is not a cipher meant to resist
/// cryptanalysis, and nothing secret depends on it.
struct RequestIDPermutation: Sendable {
    private let keys: [UInt32]

    static let rounds = 6

    init(keys: [UInt32]) {
        precondition(keys.count == Self.rounds, "a request id permutation takes \(Self.rounds) round keys")
        self.keys = keys
    }

    /// Keys from the system's random source.
    static func random() -> RequestIDPermutation {
        var generator = SystemRandomNumberGenerator()
        return RequestIDPermutation(keys: (0..<rounds).map { _ in UInt32.random(in: .min ... .max, using: &generator) })
    }

    /// The id of the request counted `counter`.
    func id(of counter: UInt64) -> UInt64 {
        var left = UInt32(truncatingIfNeeded: counter >> 32)
        var right = UInt32(truncatingIfNeeded: counter)
        for key in keys {
            (left, right) = (right, left ^ Self.mix(right ^ key))
        }
        return UInt64(left) << 32 | UInt64(right)
    }

    /// The counter whose id is `id`: the rounds undone in reverse order.
    func counter(of id: UInt64) -> UInt64 {
        var left = UInt32(truncatingIfNeeded: id >> 32)
        var right = UInt32(truncatingIfNeeded: id)
        for key in keys.reversed() {
            (left, right) = (right ^ Self.mix(left ^ key), left)
        }
        return UInt64(left) << 32 | UInt64(right)
    }

    /// A 32-bit integer hash with full avalanche (two multiply-xorshift steps).
    private static func mix(_ value: UInt32) -> UInt32 {
        var x = value
        x ^= x >> 16
        x &*= 0x7feb_352d
        x ^= x >> 15
        x &*= 0x846c_a68b
        x ^= x >> 16
        return x
    }
}
