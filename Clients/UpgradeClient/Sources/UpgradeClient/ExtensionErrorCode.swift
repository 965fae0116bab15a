/// The codes of `ASExtensionError` (domain `ASExtensionErrorDomain`) an Account Authentication
/// Modification extension passes to `cancelRequest(withError:)`.
///
/// Which code fits depends on the call the system made, not only on what the server said:
///
/// - From a call without UI (`convertAccountToSignInWithAppleWithoutUserInteraction`,
///   `changePasswordWithoutUserInteraction`), a `twoFactorAuthRequired` step is answered with
///   `userInteractionRequired`, which asks the system for the `prepareInterface…` variant; any
///   ``UpgradeClientError`` is answered with its ``UpgradeClientError/extensionErrorCode``.
/// - From the UI (`prepareInterface…`), `userInteractionRequired` is never right: the UI is showing.
///   A wrong code with tries left asks for another code
///   (``UpgradeClientError/mayTryAnotherCode``); other errors end the request with `failed`.
/// - After `cancelRequest()` (the user tapped Cancel) and after the user dismissed Apple's sheet,
///   the code is `userCanceled`.
public enum ExtensionErrorCode: Int, Sendable, CaseIterable {
    /// The request failed: wrong password, locked account, an upgrade that cannot go on, a server
    /// that could not be reached.
    case failed = 0
    /// The user cancelled: the system's Cancel button, or Apple's sheet dismissed.
    case userCanceled = 1
    /// Only from a call without UI: the request needs the extension's UI (a second factor); the
    /// system then calls the `prepareInterface…` variant.
    case userInteractionRequired = 100
    /// The account the credential names does not exist. The server never says so (an unknown
    /// username answers exactly like a wrong password), so nothing in this library produces it.
    case credentialIdentityNotFound = 101

    /// The name the server's `cancel` accepts as `reason` (`userCanceled`, ...).
    public var name: String {
        switch self {
        case .failed: "failed"
        case .userCanceled: "userCanceled"
        case .userInteractionRequired: "userInteractionRequired"
        case .credentialIdentityNotFound: "credentialIdentityNotFound"
        }
    }
}
