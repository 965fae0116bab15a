/// What the server answered to a step of an upgrade that did not fail.
public enum UpgradeStep: Sendable, Equatable {
    /// The account may go on to Apple: pass `state` and `nonce` unchanged to
    /// `requestSignInWithAppleUpgradeAuthorization(state:nonce:)`, then send what it returns with
    /// ``UpgradeServing/submitAppleCredential(upgradeID:identityToken:authorizationCode:state:user:email:fullName:)``.
    case readyForApple(upgradeID: String, state: String, nonce: String)
    /// The account has a second factor. From a call without UI, cancel the upgrade
    /// (``UpgradeServing/cancel(upgradeID:reason:)`` with `userInteractionRequired`) and the request with
    /// `userInteractionRequired`: the system then calls the `prepareInterface…` variant, which starts
    /// again (an in-app upgrade's ticket may be presented again). From the UI, ask for a code and call
    /// ``UpgradeServing/stepUp(upgradeID:code:)`` or ``UpgradeServing/stepUp(upgradeID:recoveryCode:)``.
    /// `attemptsRemaining` is how many codes the server still accepts, when it said.
    case twoFactorAuthRequired(upgradeID: String, attemptsRemaining: Int?)

    /// The upgrade this step belongs to.
    public var upgradeID: String {
        switch self {
        case .readyForApple(let id, _, _), .twoFactorAuthRequired(let id, _): id
        }
    }
}
