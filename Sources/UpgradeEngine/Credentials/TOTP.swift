/// Time-based one-time passwords (RFC 6238) over HOTP (RFC 4226).
///
/// Pure functions: time comes in as `now` (Unix seconds) and the last accepted step comes in from the
/// caller's storage, so the outcome depends on nothing but the arguments.
public enum TOTP {
    /// How many steps either side of the current one are accepted, to absorb clock drift and the time a
    /// user takes to type (RFC 6238 §5.2 recommends at most one step back).
    public static let window: Int64 = 1

    /// Secrets shorter than this (80 bits) are refused by `verify`: RFC 4226 §4 requires at least 128
    /// bits for new secrets, and 80 is the floor the service tolerates for imported legacy ones.
    public static let minimumSecretLength = 10

    /// The HOTP value for `counter`, as exactly `parameters.digits` decimal digits.
    public static func code(secret: [UInt8], parameters: TOTPParameters, counter: UInt64) -> String {
        var message = [UInt8](repeating: 0, count: 8)
        for index in 0..<8 {
            message[index] = UInt8(truncatingIfNeeded: counter >> UInt64(56 - 8 * index))
        }
        let mac = Digest.hmac(parameters.algorithm, key: secret, message: message)
        // Dynamic truncation (RFC 4226 §5.3): the low nibble of the last byte picks four bytes, whose
        // top bit is dropped so the value is the same whether read as signed or unsigned.
        let offset = Int(mac[mac.count - 1] & 0x0f)
        let binary =
            UInt32(mac[offset] & 0x7f) << 24 | UInt32(mac[offset + 1]) << 16 | UInt32(mac[offset + 2]) << 8
            | UInt32(mac[offset + 3])
        let modulus: UInt32 = parameters.digits == 8 ? 100_000_000 : 1_000_000
        let value = binary % modulus
        var digits = [UInt8](repeating: UInt8(ascii: "0"), count: parameters.digits)
        var remaining = value
        for index in stride(from: parameters.digits - 1, through: 0, by: -1) {
            digits[index] = UInt8(ascii: "0") + UInt8(remaining % 10)
            remaining /= 10
        }
        return String(decoding: digits, as: UTF8.self)
    }

    /// The time step containing `now` (floor division, so times before 1970 fall in negative steps).
    public static func step(at now: Int64, parameters: TOTPParameters) -> Int64 {
        let period = Int64(parameters.period)
        let quotient = now / period
        return now % period < 0 ? quotient - 1 : quotient
    }

    /// Checks `code` against the steps around `now`, refusing any step at or before `lastAcceptedStep`.
    ///
    /// The code must be exactly `parameters.digits` ASCII digits; anything else (spaces, signs, other
    /// scripts' digits) is rejected before any secret is touched. Every candidate step is computed and
    /// compared in constant time, with no early exit, so timing does not tell which step matched.
    public static func verify(
        code: String,
        secret: [UInt8],
        parameters: TOTPParameters,
        now: Int64,
        lastAcceptedStep: Int64?
    ) -> TOTPVerification {
        let presented = Array(code.utf8)
        guard presented.count == parameters.digits,
            presented.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { return .rejected }
        guard secret.count >= minimumSecretLength else { return .rejected }

        let current = step(at: now, parameters: parameters)
        var freshMatch: Int64?
        var replayMatch = false
        for candidate in (current - window)...(current + window) {
            // Steps before the Unix epoch have no counter value.
            guard candidate >= 0 else { continue }
            let expected = Array(self.code(secret: secret, parameters: parameters, counter: UInt64(candidate)).utf8)
            let matches = ConstantTime.equals(expected, presented)
            if matches {
                if let last = lastAcceptedStep, candidate <= last {
                    replayMatch = true
                } else {
                    // Candidates ascend, so this keeps the highest matching step. Storing the highest is
                    // what makes the code single-use: were a code to match two steps (a 1 in 10^digits
                    // chance) and the lower one were stored, the same code would pass again on the higher.
                    freshMatch = candidate
                }
            }
        }
        if let step = freshMatch { return .accepted(step: step) }
        return replayMatch ? .replayed : .rejected
    }
}
