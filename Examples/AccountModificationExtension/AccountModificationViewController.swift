// An Account Authentication Modification extension built on UpgradeClient. This view controller is a
// thin shell: it forwards the system's calls to AccountModificationFlow, which decides everything
// (and is tested on Linux against the server), and renders the step-up screen the flow describes.
//
// The paths the system (or the app, through ASAccountAuthenticationModificationController) can start:
//  1. Convert without UI: the saved password (or, for an in-app upgrade, an empty password and the
//     ticket the app's backend minted, passed in userInfo["upgradeTicket"]) → Apple's sheet → done.
//  2. Convert with the step-up UI: the account has TOTP, so the system calls the prepareInterface…
//     variant and the extension asks for a code (or a recovery code) before Apple's sheet.
//  3. The strong-password change: the system generated `newPassword` from the rules in the
//     extension's Info.plist (ASAccountAuthenticationModificationPasswordGenerationRequirements, the
//     string `upgrade-cli password rules` prints); the server checks and stores it.
//
// The package does not compile Examples/; AuthenticationServices and UIKit exist only on Apple's
// platforms. AccountModificationFlow.swift, AccountModificationSystem.swift, StepUpScreen.swift and
// FlowText.swift hold no UIKit and are compiled into the tests (docs/upgrade-client.md).
#if canImport(UIKit) && canImport(AuthenticationServices)
import AuthenticationServices
import UIKit
import UpgradeClient

final class AccountModificationViewController: ASAccountAuthenticationModificationViewController,
    AccountModificationSystem
{
    private static let serverURL = URL(string: "https://accounts.example.com")!

    private lazy var flow = AccountModificationFlow(client: UpgradeClient(baseURL: Self.serverURL), system: self)

    private let promptLabel = UILabel()
    private let errorLabel = UILabel()
    private let attemptsLabel = UILabel()
    private let codeField = UITextField()
    private let verifyButton = UIButton(type: .system)
    private let switchButton = UIButton(type: .system)
    private let spinner = UIActivityIndicatorView(style: .medium)
    private var isLaidOut = false

    // MARK: The system's calls

    override func convertAccountToSignInWithAppleWithoutUserInteraction(
        for serviceIdentifier: ASCredentialServiceIdentifier,
        existingCredential: ASPasswordCredential,
        userInfo: [AnyHashable: Any]? = nil
    ) {
        flow.convertWithoutUserInteraction(
            user: existingCredential.user,
            password: existingCredential.password,
            serviceIdentifier: serviceIdentifier.identifier,
            userInfo: userInfo
        )
    }

    override func prepareInterfaceToConvertAccountToSignInWithApple(
        for serviceIdentifier: ASCredentialServiceIdentifier,
        existingCredential: ASPasswordCredential,
        userInfo: [AnyHashable: Any]? = nil
    ) {
        flow.prepareToConvert(
            user: existingCredential.user,
            password: existingCredential.password,
            serviceIdentifier: serviceIdentifier.identifier,
            userInfo: userInfo
        )
    }

    override func changePasswordWithoutUserInteraction(
        for serviceIdentifier: ASCredentialServiceIdentifier,
        existingCredential: ASPasswordCredential,
        newPassword: String,
        userInfo: [AnyHashable: Any]? = nil
    ) {
        flow.changePasswordWithoutUserInteraction(
            user: existingCredential.user,
            password: existingCredential.password,
            newPassword: newPassword,
            serviceIdentifier: serviceIdentifier.identifier,
            userInfo: userInfo
        )
    }

    override func prepareInterfaceToChangePassword(
        for serviceIdentifier: ASCredentialServiceIdentifier,
        existingCredential: ASPasswordCredential,
        newPassword: String,
        userInfo: [AnyHashable: Any]? = nil
    ) {
        flow.prepareToChangePassword(
            user: existingCredential.user,
            password: existingCredential.password,
            newPassword: newPassword,
            serviceIdentifier: serviceIdentifier.identifier,
            userInfo: userInfo
        )
    }

    /// The user tapped the system's Cancel button.
    override func cancelRequest() {
        flow.cancelRequest()
    }

    // MARK: AccountModificationSystem

    func requestAppleCredential(state: String, nonce: String) async throws -> AppleIDCredential {
        do {
            let credential = try await extensionContext.requestSignInWithAppleUpgradeAuthorization(
                state: state,
                nonce: nonce
            )
            return AppleIDCredential(
                user: credential.user,
                state: credential.state,
                identityToken: credential.identityToken,
                authorizationCode: credential.authorizationCode,
                email: credential.email,
                fullName: credential.fullName
            )
        } catch let error as ASAuthorizationError where error.code == .canceled {
            throw AppleSheetError.canceled
        } catch {
            throw AppleSheetError.failed
        }
    }

    func completeUpgrade() {
        extensionContext.completeUpgradeToSignInWithApple(userInfo: nil)
    }

    func completePasswordChange(user: String, newPassword: String) {
        extensionContext.completeChangePasswordRequest(
            updatedCredential: ASPasswordCredential(user: user, password: newPassword),
            userInfo: nil
        )
    }

    func cancel(with code: ExtensionErrorCode, failureReason: String?) {
        var userInfo: [String: Any] = [:]
        if let failureReason { userInfo[ASExtensionLocalizedFailureReasonErrorKey] = failureReason }
        extensionContext.cancelRequest(
            withError: NSError(domain: ASExtensionErrorDomain, code: code.rawValue, userInfo: userInfo)
        )
    }

    func show(_ screen: StepUpScreen) {
        layOutOnce()
        promptLabel.text = screen.prompt
        errorLabel.text = screen.error
        errorLabel.isHidden = screen.error == nil
        attemptsLabel.text = screen.attemptsText
        attemptsLabel.isHidden = screen.attemptsText == nil
        if screen.error != nil { codeField.text = "" }
        switch screen.codeKind {
        case .authenticatorCode:
            codeField.placeholder = "123456"
            codeField.keyboardType = .numberPad
            codeField.textContentType = .oneTimeCode
        case .recoveryCode:
            codeField.placeholder = nil
            codeField.keyboardType = .asciiCapable
            codeField.textContentType = nil
        }
        codeField.isEnabled = screen.acceptsInput
        verifyButton.isEnabled = screen.acceptsInput
        switchButton.isEnabled = screen.acceptsInput
        verifyButton.setTitle(screen.verifyTitle, for: .normal)
        switchButton.setTitle(screen.switchTitle, for: .normal)
        if screen.isBusy { spinner.startAnimating() } else { spinner.stopAnimating() }
    }

    // MARK: The step-up screen

    private func verifyTapped() {
        flow.submitCode(codeField.text ?? "")
    }

    private func switchTapped() {
        codeField.text = ""
        flow.switchCodeKind()
    }

    private func layOutOnce() {
        guard !isLaidOut else { return }
        isLaidOut = true
        promptLabel.numberOfLines = 0
        errorLabel.numberOfLines = 0
        attemptsLabel.numberOfLines = 0
        codeField.borderStyle = .roundedRect
        spinner.hidesWhenStopped = true
        // UIAction rather than a target and selector: no Objective-C runtime is needed (iOS 14+).
        verifyButton.addAction(UIAction { [weak self] _ in self?.verifyTapped() }, for: .touchUpInside)
        switchButton.addAction(UIAction { [weak self] _ in self?.switchTapped() }, for: .touchUpInside)
        let stack = UIStackView(arrangedSubviews: [
            promptLabel, codeField, errorLabel, attemptsLabel, verifyButton, switchButton, spinner,
        ])
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
