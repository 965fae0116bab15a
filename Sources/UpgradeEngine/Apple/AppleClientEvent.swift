/// What an `AppleClient` reports while it works. Descriptions name the endpoint and the reason,
/// never a secret, code or token.
public enum AppleClientEvent: Sendable, Equatable, CustomStringConvertible {
    /// A call failed in a way worth repeating; the next attempt starts after `delay`.
    case retrying(endpoint: String, attempt: Int, maximumAttempts: Int, reason: String, delay: Duration)

    public var description: String {
        switch self {
        case .retrying(let endpoint, let attempt, let maximumAttempts, let reason, let delay):
            let milliseconds = delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000
            return
                "\(endpoint): attempt \(attempt) of \(maximumAttempts) failed (\(reason)); retrying in \(milliseconds) ms"
        }
    }
}
