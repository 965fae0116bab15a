/// What the server answered to a step of an upgrade that did not fail.
public enum UpgradeStep: Sendable, Equatable {
    /// The account may go on to Apple: pass `state` and `nonce` unchanged to
    /// `getSignInWithAppleUpgradeAuthorization(state:nonce:completionHandler:)`.
    case readyForApple(upgradeID: String, state: String, nonce: String)
    /// The account has a second factor: ask for a code (the extension's UI), then call
    /// `stepUp(upgradeID:code:)` or `stepUp(upgradeID:recoveryCode:)`. `attemptsRemaining` is set
    /// after a wrong code.
    case twoFactorAuthRequired(upgradeID: String, attemptsRemaining: Int?)
}

/// A converted account: its password is gone and it signs in with Apple from now on.
public struct CompletedUpgrade: Sendable, Equatable {
    public let upgradeID: String
    public let accountID: String
}

/// What the server answered to a strong-password change that did not fail.
public enum PasswordChangeStep: Sendable, Equatable {
    /// The new password is stored; the old one no longer works.
    case completed(id: String)
    /// The account has a second factor: ask for a code, then call `stepUpPasswordChange(id:code:)`.
    case twoFactorAuthRequired(id: String)
}

/// The codes of `ASExtensionError` (domain `ASExtensionErrorDomain`) an Account Authentication
/// Modification extension passes to `cancelRequest(withError:)`.
public enum ExtensionErrorCode: Int, Sendable {
    /// The request failed: wrong password, locked account, an upgrade that cannot go on.
    case failed = 0
    /// The user dismissed a sheet.
    case userCanceled = 1
    /// The request needs the extension's UI (a second factor, a code to type again): the system then
    /// calls the `prepareInterface…` variant of the request.
    case userInteractionRequired = 100
    /// The account the credential names does not exist.
    case credentialIdentityNotFound = 101
}

/// A request the server refused, or one that did not reach it.
///
/// `status` is the HTTP status (0 when no answer arrived), `problemType` the problem document's
/// `type` (`https://…/problems/invalid-credentials`; `about:blank` for an answer that was not a
/// problem document), `detail` its human-readable explanation (never a secret), and
/// `extensionErrorCode` what the extension should cancel the request with.
public struct UpgradeClientError: Error, Sendable {
    public let status: Int
    public let problemType: String
    public let detail: String?
    public let extensionErrorCode: ExtensionErrorCode

    init(status: Int, problemType: String, detail: String?, extensionErrorCode: ExtensionErrorCode) {
        self.status = status
        self.problemType = problemType
        self.detail = detail
        self.extensionErrorCode = extensionErrorCode
    }
}

extension UpgradeClientError: CustomStringConvertible {
    public var description: String {
        "\(status) \(problemType)" + (detail.map { ": \($0)" } ?? "")
    }
}
