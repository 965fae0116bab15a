import Foundation
import UpgradeClient

/// Everything the extension shows people, localized (`Localizable.strings` of the extension; the
/// English text is the default value). The server's `detail` is English for developers and logs, so
/// the text is chosen by the problem's slug instead.
enum FlowText {
    static var checking: String {
        NSLocalizedString("stepUp.checking", value: "Checking your account…", comment: "Shown while the server checks")
    }

    static var verify: String {
        NSLocalizedString("stepUp.verify", value: "Verify", comment: "Button that sends the code")
    }

    static func prompt(for kind: StepUpScreen.CodeKind) -> String {
        switch kind {
        case .authenticatorCode:
            NSLocalizedString(
                "stepUp.prompt.authenticator",
                value: "Enter the code from your authenticator app.",
                comment: "Step-up prompt for a TOTP code"
            )
        case .recoveryCode:
            NSLocalizedString(
                "stepUp.prompt.recovery",
                value: "Enter one of your recovery codes.",
                comment: "Step-up prompt for a recovery code"
            )
        }
    }

    /// The button that offers the other kind of code.
    static func switchTitle(from kind: StepUpScreen.CodeKind) -> String {
        switch kind {
        case .authenticatorCode:
            NSLocalizedString(
                "stepUp.useRecoveryCode",
                value: "Use a recovery code",
                comment: "Switches the field to a recovery code"
            )
        case .recoveryCode:
            NSLocalizedString(
                "stepUp.useAuthenticator",
                value: "Use your authenticator app",
                comment: "Switches the field back to a TOTP code"
            )
        }
    }

    static var wrongCode: String {
        NSLocalizedString("stepUp.wrongCode", value: "That code didn't work. Try again.", comment: "A wrong code")
    }

    static func attemptsLeft(_ count: Int) -> String {
        String(
            format: NSLocalizedString(
                "stepUp.attemptsLeft",
                value: "Attempts left: %d",
                comment: "Codes still accepted"
            ),
            count
        )
    }

    static func tryAgainIn(seconds: Int) -> String {
        String(
            format: NSLocalizedString(
                "stepUp.tryAgainIn",
                value: "Too many attempts. Try again in %d seconds.",
                comment: "Codes are delayed"
            ),
            seconds
        )
    }

    static var appleUnavailable: String {
        NSLocalizedString(
            "failure.apple",
            value: "Sign in with Apple is not available right now. Try again later.",
            comment: "Apple's sheet failed"
        )
    }

    /// Why a request ended, for `ASExtensionLocalizedFailureReasonErrorKey`.
    static func failure(_ error: any Error) -> String {
        guard let error = error as? UpgradeClientError else { return somethingWentWrong }
        if error.kind == .unreachable {
            return NSLocalizedString(
                "failure.unreachable",
                value: "The server can't be reached. Check your connection and try again.",
                comment: "No answer from the server"
            )
        }
        switch error.slug {
        case "invalid-credentials":
            return NSLocalizedString(
                "failure.invalidCredentials",
                value: "The saved password is no longer correct.",
                comment: "Wrong password"
            )
        case "invalid-ticket":
            return NSLocalizedString(
                "failure.invalidTicket",
                value: "This request has expired. Start again from the app.",
                comment: "An in-app upgrade's ticket was refused"
            )
        case "locked", "rate-limited", "too-many-attempts":
            return NSLocalizedString(
                "failure.tooManyAttempts",
                value: "Too many attempts. Try again later.",
                comment: "Locked or delayed"
            )
        case "not-eligible":
            return NSLocalizedString(
                "failure.notEligible",
                value: "This account can't be changed this way.",
                comment: "The account cannot be upgraded"
            )
        case "sub-conflict":
            return NSLocalizedString(
                "failure.subConflict",
                value: "This Apple Account is already used by another account.",
                comment: "The Apple ID is linked elsewhere"
            )
        case "credentials-changed", "upgrade-expired", "conversion-interrupted":
            return NSLocalizedString(
                "failure.startAgain",
                value: "Something changed while this was open. Try again.",
                comment: "The flow must start again"
            )
        case "password-policy":
            return NSLocalizedString(
                "failure.passwordPolicy",
                value: "The new password doesn't meet this website's rules.",
                comment: "A password rule was broken"
            )
        default:
            return somethingWentWrong
        }
    }

    static var somethingWentWrong: String {
        NSLocalizedString(
            "failure.generic",
            value: "Something went wrong. Try again later.",
            comment: "Any other failure"
        )
    }
}
