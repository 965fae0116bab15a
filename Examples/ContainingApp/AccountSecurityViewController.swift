// The containing app's side of an in-app upgrade: a screen that offers the signed-in user Sign in with Apple
// instead of the password, without typing anything. It asks the app's backend for a one-time ticket
// (AppBackend.fetchUpgradeTicket) and hands it to the extension through ASAccountAuthenticationModificationController;
// the system then runs Examples/AccountModificationExtension with an empty password and the ticket in `userInfo`.
// Scripts/typecheck-ios type-checks this file on Linux against Examples/AppleStandIns (docs/ios-extension.md).
#if canImport(AuthenticationServices) && canImport(UIKit)
import AuthenticationServices
import UIKit

@available(iOS 15.0, *)
final class AccountSecurityViewController: UIViewController {
    /// The website the saved password belongs to: the domain of the Associated Domains entitlement.
    private static let serviceIdentifier = ASCredentialServiceIdentifier(
        identifier: "accounts.example.com",
        type: .domain
    )

    private let backend: AppBackend
    private let username: String
    /// The request in flight. The controller holds its delegate weakly and runs one request at a time, so the
    /// screen keeps it until the delegate hears back, and a second tap starts nothing.
    private var modification: ASAccountAuthenticationModificationController?
    private var started = false

    private let message = UILabel()
    private let spinner = UIActivityIndicatorView(style: .medium)
    private lazy var upgradeButton = UIButton(
        type: .system,
        primaryAction: UIAction(title: NSLocalizedString("Use Sign in with Apple", comment: "Upgrade button")) {
            [weak self] _ in self?.startUpgrade()
        }
    )

    init(backend: AppBackend, username: String) {
        self.backend = backend
        self.username = username
        super.init(nibName: nil, bundle: nil)
    }

    required init?(coder: NSCoder) { nil }

    override func viewDidLoad() {
        super.viewDidLoad()
        view.backgroundColor = .systemBackground
        message.text = NSLocalizedString(
            "Sign in with Apple instead of your password: nothing to remember, nothing to leak.",
            comment: "Why upgrade"
        )
        message.font = UIFont.preferredFont(forTextStyle: .body)
        message.adjustsFontForContentSizeCategory = true
        message.numberOfLines = 0
        spinner.hidesWhenStopped = true
        let stack = UIStackView(arrangedSubviews: [message, upgradeButton, spinner])
        stack.axis = .vertical
        stack.spacing = 16
        stack.translatesAutoresizingMaskIntoConstraints = false
        view.addSubview(stack)
        NSLayoutConstraint.activate([
            stack.leadingAnchor.constraint(equalTo: view.layoutMarginsGuide.leadingAnchor),
            stack.trailingAnchor.constraint(equalTo: view.layoutMarginsGuide.trailingAnchor),
            stack.centerYAnchor.constraint(equalTo: view.centerYAnchor),
        ])
    }

    private func startUpgrade() {
        guard !started else { return }
        started = true
        upgradeButton.isEnabled = false
        spinner.startAnimating()
        Task {
            do {
                perform(ticket: try await backend.fetchUpgradeTicket())
            } catch {
                finish(NSLocalizedString("The upgrade could not start. Try again later.", comment: "No ticket"))
            }
        }
    }

    private func perform(ticket: String) {
        let request = ASAccountAuthenticationModificationReplacePasswordWithSignInWithAppleRequest(
            user: username,
            serviceIdentifier: Self.serviceIdentifier,
            userInfo: ["upgradeTicket": ticket]
        )
        let controller = ASAccountAuthenticationModificationController()
        controller.delegate = self
        controller.presentationContextProvider = self
        modification = controller
        controller.perform(request)
    }

    /// Ends the attempt; `text` is what to tell the user, nil after they cancelled themselves.
    private func finish(_ text: String?) {
        modification = nil
        started = false
        spinner.stopAnimating()
        upgradeButton.isEnabled = true
        if let text { message.text = text }
    }

    private func converted() {
        finish(NSLocalizedString("Your account now uses Sign in with Apple.", comment: "Upgrade done"))
        upgradeButton.isHidden = true
    }
}

// The delegate protocol is not main-actor isolated, so its methods are `nonisolated` and hop to the main actor;
// they take nothing non-Sendable across.
@available(iOS 15.0, *)
extension AccountSecurityViewController: ASAccountAuthenticationModificationControllerDelegate {
    nonisolated func accountAuthenticationModificationController(
        _ controller: ASAccountAuthenticationModificationController,
        didSuccessfullyComplete request: ASAccountAuthenticationModificationRequest,
        userInfo: [AnyHashable: Any]?
    ) {
        Task { @MainActor in self.converted() }
    }

    nonisolated func accountAuthenticationModificationController(
        _ controller: ASAccountAuthenticationModificationController,
        didFail request: ASAccountAuthenticationModificationRequest,
        error: any Error
    ) {
        let error = error as NSError
        let userCanceled =
            (error.domain == ASExtensionErrorDomain && error.code == ASExtensionError.Code.userCanceled.rawValue)
            || (error.domain == ASAuthorizationErrorDomain && error.code == ASAuthorizationError.Code.canceled.rawValue)
        Task { @MainActor in
            self.finish(
                userCanceled
                    ? nil : NSLocalizedString("The upgrade did not complete. Your password still works.", comment: "")
            )
        }
    }
}

@available(iOS 15.0, *)
extension AccountSecurityViewController: ASAccountAuthenticationModificationControllerPresentationContextProviding {
    func presentationAnchor(for controller: ASAccountAuthenticationModificationController) -> ASPresentationAnchor {
        view.window ?? ASPresentationAnchor()
    }
}
#endif
