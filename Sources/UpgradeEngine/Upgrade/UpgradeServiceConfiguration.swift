/// What the upgrade service needs besides its collaborators.
public struct UpgradeServiceConfiguration: Sendable {
    /// Session, step-up and credential lifetimes and the step-up attempt limit.
    public var policy: UpgradePolicy
    /// Per-username throttling of failed passwords and codes.
    public var lockout: LockoutPolicy
    /// The team whose Apple `sub`s this deployment sees (`APPLE_TEAM_ID`); recorded on each link.
    public var appleTeamID: String
    /// How long a request that lost the race to convert an upgrade waits for the winner's result.
    public var convertingWaitMilliseconds: Int
    /// The current argon2id parameters: a changed password is hashed with them, and a password that
    /// checked out against a legacy hash (another format, older argon2id parameters) is rehashed with
    /// them in the transaction that records the successful check.
    public var passwordHasher = PasswordHasher()
    /// Per-client limit on failed credential checks (`UPGRADE_CLIENT_THROTTLE`); nil turns it off.
    public var clientThrottle: ClientThrottle.Policy?
    /// How long an in-app upgrade ticket may wait to be spent (seconds).
    public var ticketLifetime: Int64 = 300
    /// The team's legacy login system, which checks the passwords of accounts imported or
    /// provisioned with `legacyPassword` (`UPGRADE_LEGACY_VERIFY_URL`); nil when none is set.
    public var legacyVerifier: LegacyPasswordVerifier?
    /// `UPGRADE_LEGACY_CREATE`: an unknown username is asked about too, and a match creates the
    /// account just in time (docs/legacy-verification.md).
    public var legacyCreate = false
    /// What a changed password must meet (`UPGRADE_PASSWORD_RULES`).
    public var passwordRules: PasswordRules = .default
    /// How soon, from the start of the call, a refused credential check may be answered at the
    /// earliest (`ServiceFailure.notBefore`, `UPGRADE_FAILURE_FLOOR_MS`). nil takes the verifier's
    /// `PasswordHashLimits.failureFloor`, which exceeds the costliest check its limits admit;
    /// `.zero` turns the floor off.
    public var failureFloor: Duration?
    /// Called with how long a refused credential check took when it took longer than the failure
    /// floor (for metrics: the floor is too short for this machine's load). The floor is raised for
    /// a while after it (`FailureFloorTracker`).
    public var onFailureFloorOverrun: @Sendable (Duration) -> Void = { _ in }
    /// Called as each effect a transition returned is performed, with the upgrade's id, in the
    /// machine's order (for metrics and tests). The effects performed inside a transaction
    /// (`issueStateAndNonce`, `convertAccount`) are reported again when a conflict makes the store run
    /// that transaction again (`UpgradeStore.write`); the Apple call never is.
    public var onEffect: @Sendable (UpgradeEffect, String) -> Void = { _, _ in }

    public init(
        policy: UpgradePolicy = .default,
        lockout: LockoutPolicy = .default,
        appleTeamID: String,
        convertingWaitMilliseconds: Int = 10_000
    ) {
        self.policy = policy
        self.lockout = lockout
        self.appleTeamID = appleTeamID
        self.convertingWaitMilliseconds = convertingWaitMilliseconds
    }
}
