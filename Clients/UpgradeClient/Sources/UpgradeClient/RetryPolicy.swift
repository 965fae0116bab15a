import Foundation

/// How ``UpgradeClient`` repeats the calls the server documents as safe to repeat: the upgrade's
/// status (`GET`), `cancel` (a cancelled upgrade answers a second cancel the same), and the Apple
/// credential (the same `state` gets the same answer, so a lost answer is asked for again).
/// They are repeated after a transport failure (no answer, a broken connection, a timeout), a `503`
/// (`database-unavailable`, `server-busy`, ...), `409 upgrade-in-progress` (another request is
/// converting the upgrade) and `502 apple-unavailable` with `upgradeStatus` `awaitingAppleCredential`
/// (Apple's signing keys could not be fetched and the server kept the upgrade open; not a `502` that
/// ended it), waiting `Retry-After` when the server sends it, until `deadline` seconds after the call
/// began. Every other call (start, step-up, password change) is sent once: repeating
/// it could spend a ticket or count a code twice.
public struct RetryPolicy: Sendable, Equatable {
    /// The longest a repeatable call takes, all attempts and waits included, in seconds.
    public var deadline: TimeInterval
    /// The longest one request waits for its answer, in seconds (`URLRequest.timeoutInterval`).
    public var attemptTimeout: TimeInterval
    /// The first wait between attempts, doubled after each, in seconds.
    public var initialBackoff: TimeInterval
    /// The longest wait between attempts (a longer `Retry-After` is still honoured), in seconds.
    public var maximumBackoff: TimeInterval

    public init(
        deadline: TimeInterval,
        attemptTimeout: TimeInterval = 15,
        initialBackoff: TimeInterval = 0.25,
        maximumBackoff: TimeInterval = 2
    ) {
        self.deadline = deadline
        self.attemptTimeout = attemptTimeout
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
    }

    /// 30 s in all, 15 s per request.
    public static let standard = RetryPolicy(deadline: 30)

    /// Every call sent once.
    public static let never = RetryPolicy(deadline: 0)

    /// The wait before attempt `attempt + 1` (the first retry is `attempt` 1).
    func backoff(afterAttempt attempt: Int) -> TimeInterval {
        min(maximumBackoff, initialBackoff * pow(2, Double(max(0, attempt - 1))))
    }
}
