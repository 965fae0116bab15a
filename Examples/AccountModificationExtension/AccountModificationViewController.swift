// An Account Authentication Modification extension built on UpgradeClient: the three paths the
// system (or the app, through ASAccountAuthenticationModificationController) can start.
//
//  1. Convert without UI: the saved password (or, for an in-app upgrade, an empty password and the
//     ticket the app's backend minted, passed in userInfo["upgradeTicket"]) → Apple's sheet → done.
//  2. Convert with the step-up UI: the account has TOTP, so the system calls the prepareInterface…
//     variant and the extension asks for a code before Apple's sheet.
//  3. The strong-password change: the system generated `newPassword` from the rules in the
//     extension's Info.plist (ASAccountAuthenticationModificationPasswordGenerationRequirements, the
//     string `upgrade-cli password rules` prints), the server checks and stores it.
//
// The extension's Info.plist sets ASAccountAuthenticationModificationSupportsUpgradeToSignInWithApple
// and ASAccountAuthenticationModificationSupportsStrongPasswordChange to YES. The package does not
// compile Examples/; Scripts/typecheck-ios type-checks this file on Linux against the declaration-only
// stand-ins in Examples/AppleStandIns (docs/ios-extension.md).
#if canImport(AuthenticationServices) && canImport(UIKit)
import AuthenticationServices
import UIKit
import UpgradeClient

@available(iOS 15.0, *)
final class AccountModificationViewController: ASAccountAuthenticationModificationViewController {
    private let client = UpgradeClient(baseURL: URL(string: "https://accounts.example.com")!)

    /// What the code the user types finishes: an upgrade or a password change waiting for its step-up.
    private enum Pending {
        case upgrade(id: String)
        case passwordChange(id: String, updated: ASPasswordCredential)
    }
    private var pending: Pending?

    private let codeField = UITextField()
    private let message = UILabel()

    // MARK: 1. Convert without UI

    override func convertAccountToSignInWithAppleWithoutUserInteraction(
        for serviceIdentifier: ASCredentialServiceIdentifier,
        existingCredential: ASPasswordCredential,
        userInfo: [AnyHashable: Any]? = nil
    ) {
        Task {
            do {
                switch try await startUpgrade(serviceIdentifier, existingCredential, userInfo) {
                case .readyForApple(let id, let state, let nonce):
                    try await signInWithApple(upgradeID: id, state: state, nonce: nonce)
                case .twoFactorAuthRequired(let id, _):
                    // A code is needed: give this upgrade up; the system calls
                    // prepareInterfaceToConvertAccountToSignInWithApple, which starts another.
                    try? await client.cancel(upgradeID: id, reason: .userInteractionRequired)
                    cancel(.userInteractionRequired, nil)
                }
            } catch {
                cancel(error)
            }
        }
    }

    // MARK: 2. Convert with the step-up UI

    override func prepareInterfaceToConvertAccountToSignInWithApple(
        for serviceIdentifier: ASCredentialServiceIdentifier,
        existingCredential: ASPasswordCredential,
        userInfo: [AnyHashable: Any]? = nil
    ) {
        showCodeEntry()
        Task {
            do {
                switch try await startUpgrade(serviceIdentifier, existingCredential, userInfo) {
                case .readyForApple(let id, let state, let nonce):
                    try await signInWithApple(upgradeID: id, state: state, nonce: nonce)
                case .twoFactorAuthRequired(let id, _):
                    pending = .upgrade(id: id)
                    message.text = "Enter the code from your authenticator app."
                }
            } catch {
                cancel(error)
            }
        }
    }

    // MARK: 3. Strong-password change

    override func changePasswordWithoutUserInteraction(
        for serviceIdentifier: ASCredentialServiceIdentifier,
        existingCredential: ASPasswordCredential,
        newPassword: String,
        userInfo: [AnyHashable: Any]? = nil
    ) {
        Task {
            do {
                let updated = ASPasswordCredential(user: existingCredential.user, password: newPassword)
                switch try await changePassword(serviceIdentifier, existingCredential, newPassword, userInfo) {
                case .completed:
                    extensionContext.completeChangePasswordRequest(updatedCredential: updated, userInfo: nil)
                case .twoFactorAuthRequired:
                    cancel(.userInteractionRequired, nil)
                }
            } catch {
                cancel(error)
            }
        }
    }

    override func prepareInterfaceToChangePassword(
        for serviceIdentifier: ASCredentialServiceIdentifier,
        existingCredential: ASPasswordCredential,
        newPassword: String,
        userInfo: [AnyHashable: Any]? = nil
    ) {
        showCodeEntry()
        Task {
            do {
                let updated = ASPasswordCredential(user: existingCredential.user, password: newPassword)
                switch try await changePassword(serviceIdentifier, existingCredential, newPassword, userInfo) {
                case .completed:
                    extensionContext.completeChangePasswordRequest(updatedCredential: updated, userInfo: nil)
                case .twoFactorAuthRequired(let id):
                    pending = .passwordChange(id: id, updated: updated)
                    message.text = "Enter the code from your authenticator app."
                }
            } catch {
                cancel(error)
            }
        }
    }

    /// The user tapped the system's Cancel button.
    override func cancelRequest() {
        if case .upgrade(let id) = pending {
            let client = self.client
            Task { try? await client.cancel(upgradeID: id, reason: .userCanceled) }
        }
        cancel(.userCanceled, nil)
    }

    // MARK: The code the user typed

    private func verifyCode() {
        guard let code = codeField.text, !code.isEmpty, let pending else { return }
        Task {
            do {
                switch pending {
                case .upgrade(let id):
                    if case .readyForApple(let id, let state, let nonce) = try await client.stepUp(
                        upgradeID: id,
                        code: code
                    ) {
                        try await signInWithApple(upgradeID: id, state: state, nonce: nonce)
                    }
                case .passwordChange(let id, let updated):
                    if case .completed = try await client.stepUpPasswordChange(id: id, code: code) {
                        extensionContext.completeChangePasswordRequest(updatedCredential: updated, userInfo: nil)
                    }
                }
            } catch let error as UpgradeClientError where error.extensionErrorCode == .userInteractionRequired {
                // A wrong code with tries left: ask again.
                message.text = "That code did not work. Try again."
                codeField.text = ""
            } catch {
                cancel(error)
            }
        }
    }

    // MARK: Helpers

    private func startUpgrade(
        _ serviceIdentifier: ASCredentialServiceIdentifier,
        _ credential: ASPasswordCredential,
        _ userInfo: [AnyHashable: Any]?
    ) async throws -> UpgradeStep {
        // In-app upgrades get an empty password and the app's ticket.
        try await client.startUpgrade(
            username: credential.user,
            password: credential.password,
            ticket: userInfo?["upgradeTicket"] as? String,
            serviceIdentifier: serviceIdentifier.identifier
        )
    }

    private func changePassword(
        _ serviceIdentifier: ASCredentialServiceIdentifier,
        _ credential: ASPasswordCredential,
        _ newPassword: String,
        _ userInfo: [AnyHashable: Any]?
    ) async throws -> PasswordChangeStep {
        try await client.changePassword(
            username: credential.user,
            password: credential.password,
            ticket: userInfo?["upgradeTicket"] as? String,
            newPassword: newPassword,
            serviceIdentifier: serviceIdentifier.identifier
        )
    }

    /// Apple's sheet with the server's state and nonce, then the credential to the server.
    private func signInWithApple(upgradeID: String, state: String, nonce: String) async throws {
        let credential: ASAuthorizationAppleIDCredential
        do {
            credential = try await withCheckedThrowingContinuation { continuation in
                extensionContext.getSignInWithAppleUpgradeAuthorization(state: state, nonce: nonce) {
                    credential,
                    error in
                    if let credential {
                        continuation.resume(returning: credential)
                    } else {
                        continuation.resume(throwing: error ?? ASAuthorizationError(.failed))
                    }
                }
            }
        } catch let error as ASAuthorizationError where error.code == .canceled {
            // The user dismissed Apple's sheet: cancel with the same code, no further UI.
            try? await client.cancel(upgradeID: upgradeID, reason: .userCanceled)
            cancel(.userCanceled, nil)
            return
        }
        guard let token = credential.identityToken.flatMap({ String(data: $0, encoding: .utf8) }),
            let code = credential.authorizationCode.flatMap({ String(data: $0, encoding: .utf8) }),
            let returnedState = credential.state
        else {
            try? await client.cancel(upgradeID: upgradeID, reason: .failed)
            cancel(.failed, "Sign in with Apple returned no credential.")
            return
        }
        _ = try await client.submitAppleCredential(
            upgradeID: upgradeID,
            identityToken: token,
            authorizationCode: code,
            state: returnedState,
            user: credential.user
        )
        extensionContext.completeUpgradeToSignInWithApple(userInfo: nil)
    }

    private func cancel(_ error: any Error) {
        if let error = error as? UpgradeClientError {
            cancel(error.extensionErrorCode, error.detail)
        } else {
            cancel(.failed, nil)
        }
    }

    private func cancel(_ code: ExtensionErrorCode, _ reason: String?) {
        var info: [String: Any] = [:]
        if let reason { info[ASExtensionLocalizedFailureReasonErrorKey] = reason }
        extensionContext.cancelRequest(
            withError: NSError(domain: ASExtensionErrorDomain, code: code.rawValue, userInfo: info)
        )
    }

    private func showCodeEntry() {
        codeField.placeholder = "123456"
        codeField.keyboardType = .numberPad
        codeField.textContentType = .oneTimeCode
        codeField.borderStyle = .roundedRect
        message.numberOfLines = 0
        let verify = UIButton(type: .system)
        verify.setTitle("Verify", for: .normal)
        verify.addAction(UIAction { [weak self] _ in self?.verifyCode() }, for: .touchUpInside)
        let stack = UIStackView(arrangedSubviews: [message, codeField, verify])
        stack.axis = .vertical
        stack.spacing = 12
        stack.translatesAutoresizingMaskIntoConstraints = false
        view.addSubview(stack)
        NSLayoutConstraint.activate([
            stack.leadingAnchor.constraint(equalTo: view.layoutMarginsGuide.leadingAnchor),
            stack.trailingAnchor.constraint(equalTo: view.layoutMarginsGuide.trailingAnchor),
            stack.centerYAnchor.constraint(equalTo: view.centerYAnchor),
        ])
    }
}
#endif
