/// A value the device forwarded (`email`, `fullName`) that the server refuses to store: the field
/// it names and why, never the value (it is personal data). Nothing was changed.
public struct ProfileValidationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The request field, e.g. `email` or `fullName.givenName`.
    public var field: String
    public var reason: String

    public init(field: String, _ reason: String) {
        self.field = field
        self.reason = reason
    }

    /// `field 'fullName.givenName' must be at most 256 bytes`.
    public var description: String { "field '\(field)' \(reason)" }
}
