/// Exponential backoff with jitter, shared by the queues that retry a call out (Apple revocations,
/// webhooks): the wait after the n-th failed attempt is `initial * 2^(n-1)`, capped at `maximum`,
/// less up to half of it at random, so rows that failed together spread out.
public struct RetryBackoff: Sendable, Equatable {
    public var initial: Int64
    public var maximum: Int64

    public init(initial: Int64, maximum: Int64) {
        self.initial = initial
        self.maximum = maximum
    }

    /// The wait in seconds (at least 1) before the attempt after `failedAttempts` failures.
    public func delay(failedAttempts: Int64, random: (ClosedRange<Int64>) -> Int64 = Int64.random(in:)) -> Int64 {
        let exponent = min(max(failedAttempts - 1, 0), 40)
        let step = min(maximum, initial << exponent)
        return max(1, step - random(0...(step / 2)))
    }
}
