/// TOTP parameters the service does not support.
public enum TOTPParametersError: Error, Equatable, Sendable, CustomStringConvertible {
    case unsupportedDigits(Int)
    case unsupportedPeriod(Int)

    public var description: String {
        switch self {
        case .unsupportedDigits(let digits):
            return "TOTP codes of \(digits) digits are not supported; use 6 or 8"
        case .unsupportedPeriod(let period):
            return "a TOTP period of \(period) seconds is not supported; only 30-second steps are"
        }
    }
}
