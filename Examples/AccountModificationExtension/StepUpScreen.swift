/// What the step-up screen shows, in localized text; the view controller renders it as it is.
struct StepUpScreen: Equatable, Sendable {
    /// Which code the field takes.
    enum CodeKind: Equatable, Sendable {
        case authenticatorCode
        case recoveryCode
    }

    var codeKind: CodeKind
    var prompt: String
    /// Why the last code was refused (the field is cleared when this is set).
    var error: String?
    /// "Attempts left: 4", once the server said how many.
    var attemptsText: String?
    /// A call is in flight, or the flow has not asked for a code yet: the spinner turns, the field and
    /// the buttons are disabled, so a second tap cannot send a second code.
    var isBusy: Bool
    /// The title of the button that switches between the authenticator code and a recovery code.
    var switchTitle: String
    var verifyTitle: String

    var acceptsInput: Bool { !isBusy }

    /// Before the server has answered: nothing to type yet.
    static var checking: StepUpScreen {
        StepUpScreen(
            codeKind: .authenticatorCode,
            prompt: FlowText.checking,
            error: nil,
            attemptsText: nil,
            isBusy: true,
            switchTitle: FlowText.switchTitle(from: .authenticatorCode),
            verifyTitle: FlowText.verify
        )
    }
}
