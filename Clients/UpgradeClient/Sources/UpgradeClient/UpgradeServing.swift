import Foundation

/// Every call an Account Authentication Modification extension makes to the server, so that an app
/// can put a test double in place of ``UpgradeClient``: every result and error type has a public
/// initializer.
///
/// Each method returns the step the server answered or throws ``UpgradeClientError`` (or
/// `CancellationError` when the calling task was cancelled).
public protocol UpgradeServing: Sendable {
    /// `POST /v1/upgrades`: checks the saved `password`, or for an in-app upgrade (the extension got an
    /// empty password) the one-time `ticket` the app's backend minted and passed in `userInfo`. An
    /// empty password without a ticket is refused before any request (`invalidArgument`). Sent once.
    func startUpgrade(
        username: String,
        password: String,
        ticket: String?,
        serviceIdentifier: String
    ) async throws -> UpgradeStep

    /// `startUpgrade` saying which of the extension's calls began it (`entry`, for the server's
    /// migration report). The default implementation drops `entry` and calls the method above, so
    /// a test double need implement only that one.
    func startUpgrade(
        username: String,
        password: String,
        ticket: String?,
        serviceIdentifier: String,
        entry: UpgradeEntry?
    ) async throws -> UpgradeStep

    /// `POST /v1/upgrades/{id}/step-up` with a TOTP code. Sent once: a repeated code would count twice.
    func stepUp(upgradeID: String, code: String) async throws -> UpgradeStep

    /// `POST /v1/upgrades/{id}/step-up` with one of the account's recovery codes. Sent once.
    func stepUp(upgradeID: String, recoveryCode: String) async throws -> UpgradeStep

    /// `POST /v1/upgrades/{id}/apple-credential`: what Apple's sheet returned. On success the account
    /// is converted and its password deleted: call `completeUpgradeToSignInWithApple(userInfo:)`.
    /// `email` and `fullName` are what Apple gives only on the first authorization; they are sent only
    /// when present. The server answers the same `state` again with the same answer, so a lost answer
    /// is asked for again under the ``RetryPolicy``.
    func submitAppleCredential(
        upgradeID: String,
        identityToken: String,
        authorizationCode: String,
        state: String,
        user: String?,
        email: String?,
        fullName: PersonNameComponents?
    ) async throws -> CompletedUpgrade

    /// `POST /v1/upgrades/{id}/cancel`: the extension gave up (`reason` is the code it cancels with).
    /// The server forgets the upgrade's state and nonce; a cancelled upgrade answers a second cancel
    /// the same, so this call is repeated under the ``RetryPolicy``. An upgrade that already ended
    /// otherwise answers `409 not-allowed-in-state`.
    func cancel(upgradeID: String, reason: ExtensionErrorCode) async throws

    /// `GET /v1/upgrades/{id}`: where the upgrade stands. Repeated under the ``RetryPolicy``.
    func status(upgradeID: String) async throws -> UpgradeReport

    /// `POST /v1/password-changes`: the strong-password change. The current `password`, or a `ticket`
    /// with an empty password, authorises it; `newPassword` must meet the server's password rules (the
    /// extension's `ASAccountAuthenticationModificationPasswordGenerationRequirements`). An empty
    /// password without a ticket is refused before any request. Sent once.
    func changePassword(
        username: String,
        password: String,
        ticket: String?,
        newPassword: String,
        serviceIdentifier: String
    ) async throws -> PasswordChangeStep

    /// `changePassword` saying which of the extension's calls began it (`entry`); the default
    /// implementation drops `entry` and calls the method above.
    func changePassword(
        username: String,
        password: String,
        ticket: String?,
        newPassword: String,
        serviceIdentifier: String,
        entry: UpgradeEntry?
    ) async throws -> PasswordChangeStep

    /// `POST /v1/password-changes/{id}/step-up` with a TOTP code. Sent once.
    func stepUpPasswordChange(id: String, code: String) async throws -> PasswordChangeStep

    /// `POST /v1/password-changes/{id}/step-up` with a recovery code. Sent once.
    func stepUpPasswordChange(id: String, recoveryCode: String) async throws -> PasswordChangeStep

    /// `POST /v1/password-changes/{id}/cancel`: the extension gave up on a change waiting for its
    /// step-up (`reason` is the code it cancels with; `userInteractionRequired` from the silent call
    /// leaves the ticket to the interactive one). A cancelled change answers a second cancel the
    /// same, so this call is repeated under the ``RetryPolicy``; one that already ended otherwise
    /// answers `409 not-allowed-in-state`.
    func cancelPasswordChange(id: String, reason: ExtensionErrorCode) async throws
}

extension UpgradeServing {
    public func startUpgrade(
        username: String,
        password: String,
        ticket: String?,
        serviceIdentifier: String,
        entry: UpgradeEntry?
    ) async throws -> UpgradeStep {
        try await startUpgrade(
            username: username,
            password: password,
            ticket: ticket,
            serviceIdentifier: serviceIdentifier
        )
    }

    public func changePassword(
        username: String,
        password: String,
        ticket: String?,
        newPassword: String,
        serviceIdentifier: String,
        entry: UpgradeEntry?
    ) async throws -> PasswordChangeStep {
        try await changePassword(
            username: username,
            password: password,
            ticket: ticket,
            newPassword: newPassword,
            serviceIdentifier: serviceIdentifier
        )
    }

    /// A password upgrade (no ticket).
    public func startUpgrade(username: String, password: String, serviceIdentifier: String) async throws -> UpgradeStep
    {
        try await startUpgrade(
            username: username,
            password: password,
            ticket: nil,
            serviceIdentifier: serviceIdentifier
        )
    }

    /// The credential without the first authorization's `email` and `fullName`.
    public func submitAppleCredential(
        upgradeID: String,
        identityToken: String,
        authorizationCode: String,
        state: String,
        user: String?
    ) async throws -> CompletedUpgrade {
        try await submitAppleCredential(
            upgradeID: upgradeID,
            identityToken: identityToken,
            authorizationCode: authorizationCode,
            state: state,
            user: user,
            email: nil,
            fullName: nil
        )
    }

    /// A password change authorised by the current password (no ticket).
    public func changePassword(
        username: String,
        password: String,
        newPassword: String,
        serviceIdentifier: String
    ) async throws -> PasswordChangeStep {
        try await changePassword(
            username: username,
            password: password,
            ticket: nil,
            newPassword: newPassword,
            serviceIdentifier: serviceIdentifier
        )
    }
}
