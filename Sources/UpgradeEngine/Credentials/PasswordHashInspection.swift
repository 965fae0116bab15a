/// What a stored hash is, learned by parsing it without computing anything.
public struct PasswordHashInspection: Sendable, Hashable, CustomStringConvertible {
    /// The algorithm.
    public let format: PasswordHashFormat
    /// The stored encoding's identifying prefix, such as `$2b$`, `$7$`, `pbkdf2_sha256$` or `$pbkdf2-sha256$`.
    public let scheme: String
    /// The cost parameters in words, such as `cost 12 (2^12 iterations)` or `m=19456 KiB, t=2, p=1`.
    public let costDescription: String

    public var description: String { "\(format.rawValue) (\(scheme)) \(costDescription)" }
}
