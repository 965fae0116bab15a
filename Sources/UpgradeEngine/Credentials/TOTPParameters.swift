/// How a TOTP secret turns into codes: the HMAC algorithm, the code length and the time step.
///
/// Only what the service verifies can be represented: 6 or 8 digits and a 30-second period. The
/// initializer and the decoder both enforce this, so a stored or imported value that the verifier
/// could not honour is refused where it enters instead of failing every login later.
public struct TOTPParameters: Sendable, Codable, Equatable, Hashable {
    /// The code lengths the service accepts.
    public static let supportedDigits: Set<Int> = [6, 8]
    /// The only time step the service accepts, in seconds.
    public static let supportedPeriod = 30

    /// SHA-1, 6 digits, 30 seconds: what authenticator apps assume when a URI says nothing else.
    public static let standard = TOTPParameters(validated: .sha1, digits: 6, period: supportedPeriod)

    public let algorithm: DigestAlgorithm
    public let digits: Int
    /// The time step in seconds.
    public let period: Int

    public init(
        algorithm: DigestAlgorithm = .sha1,
        digits: Int = 6,
        period: Int = TOTPParameters.supportedPeriod
    ) throws(TOTPParametersError) {
        guard Self.supportedDigits.contains(digits) else { throw .unsupportedDigits(digits) }
        guard period == Self.supportedPeriod else { throw .unsupportedPeriod(period) }
        self.init(validated: algorithm, digits: digits, period: period)
    }

    private init(validated algorithm: DigestAlgorithm, digits: Int, period: Int) {
        self.algorithm = algorithm
        self.digits = digits
        self.period = period
    }

    private enum CodingKeys: String, CodingKey {
        case algorithm, digits, period
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let algorithm = try container.decode(DigestAlgorithm.self, forKey: .algorithm)
        let digits = try container.decode(Int.self, forKey: .digits)
        let period = try container.decode(Int.self, forKey: .period)
        do {
            try self.init(algorithm: algorithm, digits: digits, period: period)
        } catch {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: error.description)
            )
        }
    }
}
