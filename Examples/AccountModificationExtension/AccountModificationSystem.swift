import Foundation
import UpgradeClient

/// What ``AccountModificationFlow`` asks of the system: AuthenticationServices' extension context and
/// the step-up screen. `AccountModificationViewController` implements it over `extensionContext` and
/// UIKit; the tests implement it over the server's Apple emulator, so that every path of the flow runs
/// without UIKit.
@MainActor
protocol AccountModificationSystem: AnyObject {
    /// Apple's upgrade sheet (`requestSignInWithAppleUpgradeAuthorization(state:nonce:)`). Throws
    /// ``AppleSheetError/canceled`` when the user dismissed it, ``AppleSheetError/failed`` otherwise.
    func requestAppleCredential(state: String, nonce: String) async throws -> AppleIDCredential

    /// `completeUpgradeToSignInWithApple(userInfo:)`: the system deletes the saved password.
    func completeUpgrade()

    /// `completeChangePasswordRequest(updatedCredential:userInfo:)` with the new password.
    func completePasswordChange(user: String, newPassword: String)

    /// `cancelRequest(withError:)` with an `ASExtensionError` of this code and, when given, a
    /// localized `ASExtensionLocalizedFailureReasonErrorKey`.
    func cancel(with code: ExtensionErrorCode, failureReason: String?)

    /// Shows the step-up screen in this state.
    func show(_ screen: StepUpScreen)
}

/// What Apple's sheet returned (`ASAuthorizationAppleIDCredential`), in Foundation types. `email` and
/// `fullName` come only with the user's first authorization of the app, so they are forwarded then.
struct AppleIDCredential: Sendable, Equatable {
    var user: String
    var state: String?
    var identityToken: Data?
    var authorizationCode: Data?
    var email: String?
    var fullName: PersonNameComponents?
}

/// How Apple's sheet ended without a credential.
enum AppleSheetError: Error, Equatable {
    /// The user dismissed it (`ASAuthorizationError.canceled`): cancel with `userCanceled`, no more UI.
    case canceled
    /// Anything else (`ASAuthorizationError.failed`, no network, ...).
    case failed
}
