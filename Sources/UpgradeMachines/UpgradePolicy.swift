/// The limits an upgrade session runs under. Durations are in seconds.
///
/// Defaults: the whole user-facing flow must finish within 10 minutes (``sessionLifetime``); a
/// user gets 5 minutes to type a code and 5 minutes to get through Apple's sheet, each capped by
/// the session; the server gets 2 minutes to exchange the code and commit; 5 step-up attempts.
public struct UpgradePolicy: Sendable, Hashable {
    public let sessionLifetime: Int64
    public let stepUpLifetime: Int64
    /// Also the lifetime of the issued `state` and `nonce`.
    public let appleCredentialLifetime: Int64
    /// Apple's authorization code is valid for 5 minutes (docs/apple-protocol.md §2.2), so an exchange cannot
    /// usefully take longer than that anyway.
    public let conversionLifetime: Int64
    /// Wrong TOTP or recovery codes allowed per session; the one that reaches it fails the upgrade.
    public let maxStepUpAttempts: Int

    public static let `default` = UpgradePolicy(
        validSessionLifetime: 600,
        stepUpLifetime: 300,
        appleCredentialLifetime: 300,
        conversionLifetime: 120,
        maxStepUpAttempts: 5
    )

    public init(
        sessionLifetime: Int64 = 600,
        stepUpLifetime: Int64 = 300,
        appleCredentialLifetime: Int64 = 300,
        conversionLifetime: Int64 = 120,
        maxStepUpAttempts: Int = 5
    ) throws(PolicyError) {
        try PolicyError.requirePositive(sessionLifetime, "UpgradePolicy.sessionLifetime")
        try PolicyError.requirePositive(stepUpLifetime, "UpgradePolicy.stepUpLifetime")
        try PolicyError.requirePositive(appleCredentialLifetime, "UpgradePolicy.appleCredentialLifetime")
        try PolicyError.requirePositive(conversionLifetime, "UpgradePolicy.conversionLifetime")
        try PolicyError.requirePositive(Int64(maxStepUpAttempts), "UpgradePolicy.maxStepUpAttempts")
        self.init(
            validSessionLifetime: sessionLifetime,
            stepUpLifetime: stepUpLifetime,
            appleCredentialLifetime: appleCredentialLifetime,
            conversionLifetime: conversionLifetime,
            maxStepUpAttempts: maxStepUpAttempts
        )
    }

    private init(
        validSessionLifetime sessionLifetime: Int64,
        stepUpLifetime: Int64,
        appleCredentialLifetime: Int64,
        conversionLifetime: Int64,
        maxStepUpAttempts: Int
    ) {
        self.sessionLifetime = sessionLifetime
        self.stepUpLifetime = stepUpLifetime
        self.appleCredentialLifetime = appleCredentialLifetime
        self.conversionLifetime = conversionLifetime
        self.maxStepUpAttempts = maxStepUpAttempts
    }
}
