public struct TOTPEnrollmentRecord: Sendable, Equatable {
    public var accountID: String
    /// The TOTP secret sealed with the server's secret key (context bound to the account id).
    public var secretCiphertext: [UInt8]
    public var algorithm: DigestAlgorithm
    public var digits: Int
    public var period: Int
    public var lastAcceptedStep: Int64?
    public var createdAt: Int64

    public init(
        accountID: String,
        secretCiphertext: [UInt8],
        algorithm: DigestAlgorithm,
        digits: Int,
        period: Int,
        lastAcceptedStep: Int64?,
        createdAt: Int64
    ) {
        self.accountID = accountID
        self.secretCiphertext = secretCiphertext
        self.algorithm = algorithm
        self.digits = digits
        self.period = period
        self.lastAcceptedStep = lastAcceptedStep
        self.createdAt = createdAt
    }
}
