/// Failed password attempts for one username key: `Username.value`, whether or not an account has it.
public struct ThrottleRecord: Sendable, Equatable {
    public var usernameKey: String
    public var failures: Int
    public var lastFailureAt: Int64

    public init(usernameKey: String, failures: Int, lastFailureAt: Int64) {
        self.usernameKey = usernameKey
        self.failures = failures
        self.lastFailureAt = lastFailureAt
    }
}
