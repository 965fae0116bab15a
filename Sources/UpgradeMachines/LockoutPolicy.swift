/// Per-account throttling of failed credential checks (passwords and step-up codes), counted by
/// the username's enforced form (`Username`), known or not, so that unknown usernames are throttled
/// exactly like known ones and look-alike spellings share one count.
///
/// Defaults: the first 3 consecutive failures cost nothing; from the 3rd on, the next attempt
/// waits 1 s after the latest failure, doubling with each further failure up to 60 s; from the
/// 10th, the account is locked for 15 minutes after each failure. A success resets the count to 0.
///
/// The caller keeps `failures` (consecutive failures since the last success) and the time of the
/// latest one, asks ``decision(failures:lastFailureAt:now:)`` before checking a credential, and
/// while the answer is not ``Decision/allowed`` refuses without checking and without counting, so
/// a throttled client cannot extend its own lock.
public struct LockoutPolicy: Sendable, Hashable {
    public enum Decision: Sendable, Hashable {
        case allowed
        /// Refuse with `rate-limited` until this Unix second.
        case delayed(until: Int64)
        /// Refuse with `locked` until this Unix second.
        case locked(until: Int64)
    }

    /// Consecutive failures after which attempts start to be delayed.
    public let failuresBeforeDelay: Int
    /// The delay after the `failuresBeforeDelay`-th failure, in seconds; doubles per further one.
    public let firstDelay: Int64
    public let maxDelay: Int64
    /// Consecutive failures after which the account is locked.
    public let failuresBeforeLock: Int
    /// Seconds an account stays locked after each failure past the threshold.
    public let lockDuration: Int64

    public static let `default` = LockoutPolicy(
        validFailuresBeforeDelay: 3,
        firstDelay: 1,
        maxDelay: 60,
        failuresBeforeLock: 10,
        lockDuration: 900
    )

    public init(
        failuresBeforeDelay: Int = 3,
        firstDelay: Int64 = 1,
        maxDelay: Int64 = 60,
        failuresBeforeLock: Int = 10,
        lockDuration: Int64 = 900
    ) throws(PolicyError) {
        try PolicyError.requirePositive(Int64(failuresBeforeDelay), "LockoutPolicy.failuresBeforeDelay")
        try PolicyError.requirePositive(firstDelay, "LockoutPolicy.firstDelay")
        try PolicyError.requirePositive(lockDuration, "LockoutPolicy.lockDuration")
        guard maxDelay >= firstDelay else {
            throw PolicyError(
                setting: "LockoutPolicy.maxDelay",
                value: maxDelay,
                requirement: "at least firstDelay (\(firstDelay))"
            )
        }
        guard failuresBeforeLock >= failuresBeforeDelay else {
            throw PolicyError(
                setting: "LockoutPolicy.failuresBeforeLock",
                value: Int64(failuresBeforeLock),
                requirement: "at least failuresBeforeDelay (\(failuresBeforeDelay))"
            )
        }
        self.init(
            validFailuresBeforeDelay: failuresBeforeDelay,
            firstDelay: firstDelay,
            maxDelay: maxDelay,
            failuresBeforeLock: failuresBeforeLock,
            lockDuration: lockDuration
        )
    }

    private init(
        validFailuresBeforeDelay failuresBeforeDelay: Int,
        firstDelay: Int64,
        maxDelay: Int64,
        failuresBeforeLock: Int,
        lockDuration: Int64
    ) {
        self.failuresBeforeDelay = failuresBeforeDelay
        self.firstDelay = firstDelay
        self.maxDelay = maxDelay
        self.failuresBeforeLock = failuresBeforeLock
        self.lockDuration = lockDuration
    }

    /// Whether a credential may be checked now, given `failures` consecutive failures since the
    /// last success, the latest at `lastFailureAt` (ignored when `failures` is 0).
    public func decision(failures: Int, lastFailureAt: Int64, now: Int64) -> Decision {
        if failures >= failuresBeforeLock {
            let until = lastFailureAt.adding(seconds: lockDuration)
            return now < until ? .locked(until: until) : .allowed
        }
        guard failures >= failuresBeforeDelay else { return .allowed }
        let until = lastFailureAt.adding(seconds: delay(afterFailures: failures))
        return now < until ? .delayed(until: until) : .allowed
    }

    /// `firstDelay * 2^(failures - failuresBeforeDelay)`, capped at `maxDelay` without overflowing.
    func delay(afterFailures failures: Int) -> Int64 {
        var delay = firstDelay
        for _ in failuresBeforeDelay..<failures {
            guard delay < maxDelay else { break }
            delay = delay > maxDelay / 2 ? maxDelay : delay * 2
        }
        return min(delay, maxDelay)
    }
}
