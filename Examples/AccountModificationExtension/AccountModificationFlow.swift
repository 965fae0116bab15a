import Foundation
import UpgradeClient

/// The extension's logic, apart from UIKit: which calls to make for each request the system sends,
/// and how each request ends. `AccountModificationViewController` forwards the system's calls here and
/// renders what it is told; the tests drive it against the server and its Apple emulator.
///
/// Every request ends exactly once: completed, or cancelled with one `ASExtensionError` code. One call
/// to the server is in flight at a time (a second tap on Verify is ignored until the first answers).
/// `cancelRequest()` cancels that call, unless it is one that may change the account (a password
/// change's start or step-up, the Apple credential): that one it waits for, up to `cleanupTimeout`,
/// and a success that arrives meanwhile still completes the request, since the account did change.
/// Then it cancels the open upgrade or password change on the server (bounded by `cleanupTimeout`
/// again, so the request ends well within the 10 s after which the system cancels by itself); if the
/// server answers that it already completed, the request completes, otherwise it is cancelled with
/// `userCanceled`. No screen is shown once cancelling. The paths (docs/upgrade-client.md §2):
///
/// 1. Convert without UI: the saved password, or for an in-app upgrade an empty password and the
///    app's ticket in `userInfo["upgradeTicket"]`; Apple's sheet; the credential to the server.
/// 2. Convert with the step-up UI: the same, with a TOTP or recovery code before Apple's sheet.
/// 3. The strong-password change, without UI or with the step-up UI.
@MainActor
final class AccountModificationFlow {
    /// Where the request stands. Only `running` may end it, except that a completion also ends a
    /// request that is `cancelling`: the account did change.
    private enum Phase {
        case running
        case cancelling
        case ended
    }

    /// What the code the user types finishes.
    private enum Pending {
        case upgrade(id: String)
        case passwordChange(id: String, user: String, newPassword: String)
    }

    /// A password change the server holds open for this request: what a cancel must end, and what
    /// completes the request if the server answers that the change completed.
    private struct OpenPasswordChange {
        let id: String
        let user: String
        let newPassword: String
    }

    /// How the request ends.
    private enum Outcome {
        case upgraded
        case passwordChanged(user: String, newPassword: String)
        case cancelled(ExtensionErrorCode, failureReason: String?)
    }

    /// The key under which the app passes an in-app upgrade's ticket in `userInfo`.
    static let ticketKey = "upgradeTicket"

    let client: any UpgradeServing
    private weak var system: (any AccountModificationSystem)?
    /// The longest the server-side clean-up of a cancelled or failed upgrade may take.
    let cleanupTimeout: TimeInterval

    private var phase = Phase.running
    private var pending: Pending?
    /// The upgrade the server holds open for this request, which a cancel must end.
    private var openUpgradeID: String?
    /// The password change waiting for its step-up, which a cancel must end likewise.
    private var openPasswordChange: OpenPasswordChange?
    /// Whether the call in flight may change the account, or find that it did: `cancelRequest()` waits
    /// for it.
    private var mayChangeAccount = false
    private var screen = StepUpScreen.checking
    /// The call in flight; `nil` when the flow waits for the user.
    private(set) var work: Task<Void, Never>?
    /// The clean-up after `cancelRequest()`.
    private(set) var ending: Task<Void, Never>?

    init(client: any UpgradeServing, system: any AccountModificationSystem, cleanupTimeout: TimeInterval = 3) {
        self.client = client
        self.system = system
        self.cleanupTimeout = cleanupTimeout
    }

    static func ticket(in userInfo: [AnyHashable: Any]?) -> String? {
        userInfo?[ticketKey] as? String
    }

    // MARK: - The system's calls

    /// `convertAccountToSignInWithAppleWithoutUserInteraction`.
    func convertWithoutUserInteraction(
        user: String,
        password: String,
        serviceIdentifier: String,
        userInfo: [AnyHashable: Any]?
    ) {
        let ticket = Self.ticket(in: userInfo)
        run { [self] in
            let step = try await client.startUpgrade(
                username: user,
                password: password,
                ticket: ticket,
                serviceIdentifier: serviceIdentifier,
                entry: .silent
            )
            openUpgradeID = step.upgradeID
            switch step {
            case .readyForApple(let id, let state, let nonce):
                try await signInWithApple(upgradeID: id, state: state, nonce: nonce)
            case .twoFactorAuthRequired(let id, _):
                // The UI is needed. Ending this upgrade as `userInteractionRequired` lets the
                // interactive call present the same ticket again (docs/architecture.md §5).
                await cleanUp(upgradeID: id, reason: .userInteractionRequired)
                finish(.cancelled(.userInteractionRequired, failureReason: nil))
            }
        }
    }

    /// `prepareInterfaceToConvertAccountToSignInWithApple`.
    func prepareToConvert(user: String, password: String, serviceIdentifier: String, userInfo: [AnyHashable: Any]?) {
        let ticket = Self.ticket(in: userInfo)
        show(.checking)
        run { [self] in
            let step = try await client.startUpgrade(
                username: user,
                password: password,
                ticket: ticket,
                serviceIdentifier: serviceIdentifier,
                entry: .withUI
            )
            openUpgradeID = step.upgradeID
            switch step {
            case .readyForApple(let id, let state, let nonce):
                try await signInWithApple(upgradeID: id, state: state, nonce: nonce)
            case .twoFactorAuthRequired(let id, let attempts):
                pending = .upgrade(id: id)
                askForCode(attemptsRemaining: attempts, error: nil)
            }
        }
    }

    /// `changePasswordWithoutUserInteraction`.
    func changePasswordWithoutUserInteraction(
        user: String,
        password: String,
        newPassword: String,
        serviceIdentifier: String,
        userInfo: [AnyHashable: Any]?
    ) {
        let ticket = Self.ticket(in: userInfo)
        run { [self] in
            // Without a second factor the server completes the change in this call.
            let step = try await changingAccount {
                try await client.changePassword(
                    username: user,
                    password: password,
                    ticket: ticket,
                    newPassword: newPassword,
                    serviceIdentifier: serviceIdentifier,
                    entry: .silent
                )
            }
            switch step {
            case .completed:
                finish(.passwordChanged(user: user, newPassword: newPassword))
            case .twoFactorAuthRequired(let id, _):
                openPasswordChange = OpenPasswordChange(id: id, user: user, newPassword: newPassword)
                // Cancelling: the cancel ends this change.
                guard phase == .running else { return }
                // The UI is needed. Ending this change as `userInteractionRequired` lets the interactive
                // call present the same ticket again (docs/architecture.md §5).
                await cleanUpPasswordChange(id: id, reason: .userInteractionRequired)
                finish(.cancelled(.userInteractionRequired, failureReason: nil))
            }
        }
    }

    /// `prepareInterfaceToChangePassword`.
    func prepareToChangePassword(
        user: String,
        password: String,
        newPassword: String,
        serviceIdentifier: String,
        userInfo: [AnyHashable: Any]?
    ) {
        let ticket = Self.ticket(in: userInfo)
        show(.checking)
        run { [self] in
            let step = try await changingAccount {
                try await client.changePassword(
                    username: user,
                    password: password,
                    ticket: ticket,
                    newPassword: newPassword,
                    serviceIdentifier: serviceIdentifier,
                    entry: .withUI
                )
            }
            switch step {
            case .completed:
                finish(.passwordChanged(user: user, newPassword: newPassword))
            case .twoFactorAuthRequired(let id, let attempts):
                openPasswordChange = OpenPasswordChange(id: id, user: user, newPassword: newPassword)
                // Cancelling: no screen, the cancel ends this change.
                guard phase == .running else { return }
                pending = .passwordChange(id: id, user: user, newPassword: newPassword)
                askForCode(attemptsRemaining: attempts, error: nil)
            }
        }
    }

    /// `cancelRequest()`: the user tapped the system's Cancel button. A call that may change the account
    /// is waited for (up to `cleanupTimeout`; a success completes the request), any other call in
    /// flight cancelled at once. Then the open upgrade or password change, as it stands after that
    /// call, is cancelled on the server (bounded likewise), and the request cancelled with
    /// `userCanceled`, or completed if the server answers that the upgrade or change completed.
    func cancelRequest() {
        guard phase == .running else { return }
        phase = .cancelling
        pending = nil
        let inFlight = work
        let waitsForAnswer = mayChangeAccount
        if !waitsForAnswer { inFlight?.cancel() }
        let bound = cleanupTimeout
        ending = Task { [self] in
            if waitsForAnswer, let inFlight {
                await Self.bounded(bound) { await inFlight.value }
                // No answer within the bound: the call is given up, and the server's answer to the
                // cancel below says how it ended.
                inFlight.cancel()
            }
            // A success that arrived meanwhile has completed the request.
            guard phase == .cancelling else { return }
            let completed = await endOpenFlow(reason: .userCanceled)
            guard phase == .cancelling else { return }
            end(completed ?? .cancelled(.userCanceled, failureReason: nil))
        }
    }

    // MARK: - The step-up screen

    /// The Verify button. Ignored while a call is in flight, so a double tap sends one code.
    func submitCode(_ typed: String) {
        let code = typed.trimmingCharacters(in: .whitespacesAndNewlines)
        guard phase == .running, work == nil, let pending, !code.isEmpty else { return }
        let kind = screen.codeKind
        screen.isBusy = true
        show(screen)
        run { [self] in
            do {
                switch pending {
                case .upgrade(let id):
                    let step =
                        kind == .recoveryCode
                        ? try await client.stepUp(upgradeID: id, recoveryCode: code)
                        : try await client.stepUp(upgradeID: id, code: code)
                    switch step {
                    case .readyForApple(let id, let state, let nonce):
                        try await signInWithApple(upgradeID: id, state: state, nonce: nonce)
                    case .twoFactorAuthRequired(_, let attempts):
                        askForCode(attemptsRemaining: attempts, error: FlowText.wrongCode)
                    }
                case .passwordChange(let id, let user, let newPassword):
                    // A right code completes the change in this call.
                    let step = try await changingAccount {
                        kind == .recoveryCode
                            ? try await client.stepUpPasswordChange(id: id, recoveryCode: code)
                            : try await client.stepUpPasswordChange(id: id, code: code)
                    }
                    switch step {
                    case .completed:
                        openPasswordChange = nil
                        finish(.passwordChanged(user: user, newPassword: newPassword))
                    case .twoFactorAuthRequired(_, let attempts):
                        askForCode(attemptsRemaining: attempts, error: FlowText.wrongCode)
                    }
                }
            } catch let error as UpgradeClientError where error.mayTryAnotherCode {
                askForCode(attemptsRemaining: error.attemptsRemaining, error: FlowText.wrongCode)
            } catch let error as UpgradeClientError where error.slug == "rate-limited" {
                // Codes are delayed, the upgrade is still open: the user may try again after the wait.
                askForCode(attemptsRemaining: nil, error: FlowText.tryAgainIn(seconds: error.retryAfter ?? 1))
            }
        }
    }

    /// The button that switches between the authenticator code and a recovery code.
    func switchCodeKind() {
        guard phase == .running, work == nil, pending != nil else { return }
        screen.codeKind = screen.codeKind == .authenticatorCode ? .recoveryCode : .authenticatorCode
        screen.prompt = FlowText.prompt(for: screen.codeKind)
        screen.switchTitle = FlowText.switchTitle(from: screen.codeKind)
        screen.error = nil
        show(screen)
    }

    private func askForCode(attemptsRemaining: Int?, error: String?) {
        // No screen once cancelling.
        guard phase == .running else { return }
        screen.prompt = FlowText.prompt(for: screen.codeKind)
        screen.switchTitle = FlowText.switchTitle(from: screen.codeKind)
        screen.error = error
        if let attemptsRemaining { screen.attemptsText = FlowText.attemptsLeft(attemptsRemaining) }
        screen.isBusy = false
        show(screen)
    }

    private func show(_ next: StepUpScreen) {
        screen = next
        system?.show(next)
    }

    // MARK: - Apple's sheet

    /// Apple's sheet with the server's state and nonce, then the credential to the server.
    private func signInWithApple(upgradeID: String, state: String, nonce: String) async throws {
        pending = nil
        // No sheet once the request is cancelled, even if the answer that allows it arrived.
        try Task.checkCancellation()
        guard phase == .running, let system else { return }
        let credential: AppleIDCredential
        do {
            credential = try await system.requestAppleCredential(state: state, nonce: nonce)
        } catch AppleSheetError.canceled {
            // The user dismissed Apple's sheet: cancel with the same code, no further UI.
            await cleanUp(upgradeID: upgradeID, reason: .userCanceled)
            finish(.cancelled(.userCanceled, failureReason: nil))
            return
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            await cleanUp(upgradeID: upgradeID, reason: .failed)
            finish(.cancelled(.failed, failureReason: FlowText.appleUnavailable))
            return
        }
        try Task.checkCancellation()
        guard let token = credential.identityToken.flatMap({ String(data: $0, encoding: .utf8) }),
            let code = credential.authorizationCode.flatMap({ String(data: $0, encoding: .utf8) })
        else {
            await cleanUp(upgradeID: upgradeID, reason: .failed)
            finish(.cancelled(.failed, failureReason: FlowText.appleUnavailable))
            return
        }
        // The call that converts the account.
        try await changingAccount {
            do {
                // The client repeats this call after a lost answer, a 503, `upgrade-in-progress` or Apple's
                // keys out of reach, with the same state, which the server answers the same way.
                _ = try await client.submitAppleCredential(
                    upgradeID: upgradeID,
                    identityToken: token,
                    authorizationCode: code,
                    state: credential.state ?? state,
                    user: credential.user,
                    email: credential.email,
                    fullName: credential.fullName
                )
            } catch let error as UpgradeClientError where Self.answerMayBeLost(error) {
                // Still no answer at the client's deadline: one look at where the upgrade stands, so that
                // a converted account is never reported as failed (the Keychain would keep a dead password).
                guard await converted(upgradeID) else { throw error }
            }
        }
        openUpgradeID = nil
        finish(.upgraded)
    }

    /// A failure after which the server may have converted the account all the same.
    private static func answerMayBeLost(_ error: UpgradeClientError) -> Bool {
        error.kind == .unreachable || error.kind == .unexpectedAnswer || error.status == 503
            || error.slug == "upgrade-in-progress"
    }

    private func converted(_ upgradeID: String) async -> Bool {
        let client = self.client
        let answer = Answer()
        await Self.bounded(cleanupTimeout) {
            if let view = try? await client.status(upgradeID: upgradeID) { answer.set(view.isCompleted) }
        }
        return answer.value
    }

    // MARK: - Ending

    /// Runs `call`, one that may change the account, so that `cancelRequest()` waits for its answer
    /// instead of cancelling it. None starts once cancelling.
    private func changingAccount<T>(_ call: () async throws -> T) async throws -> T {
        try Task.checkCancellation()
        guard phase == .running else { throw CancellationError() }
        mayChangeAccount = true
        defer { mayChangeAccount = false }
        return try await call()
    }

    /// Runs `body` as the one call in flight; a failure ends the request.
    private func run(_ body: @escaping @MainActor () async throws -> Void) {
        guard phase == .running, work == nil else { return }
        work = Task { [self] in
            do {
                try await body()
            } catch is CancellationError {
                // `cancelRequest()` ends the request.
            } catch {
                await fail(error)
            }
            work = nil
        }
    }

    private func fail(_ error: any Error) async {
        guard phase == .running else { return }
        if !Self.mayStillBeOpen(after: error) { openUpgradeID = nil }
        // A call whose answer was lost (a password change's step-up is sent once) may have changed the
        // account all the same: the server's answer to the cancel says so, and the request completes.
        // Until it answers, `cancelRequest()` waits for it too.
        mayChangeAccount = true
        let completed = await endOpenFlow(reason: .failed)
        mayChangeAccount = false
        if let completed {
            finish(completed)
            return
        }
        let code = (error as? UpgradeClientError)?.extensionErrorCode ?? .failed
        finish(.cancelled(code, failureReason: FlowText.failure(error)))
    }

    /// Cancels on the server the upgrade or password change this request holds open, bounded; how the
    /// request ends instead when the server answers that it already completed.
    private func endOpenFlow(reason: ExtensionErrorCode) async -> Outcome? {
        if let upgradeID = openUpgradeID, await cleanUp(upgradeID: upgradeID, reason: reason) {
            return .upgraded
        }
        if let change = openPasswordChange, await cleanUpPasswordChange(id: change.id, reason: reason) {
            return .passwordChanged(user: change.user, newPassword: change.newPassword)
        }
        return nil
    }

    /// Whether the upgrade may still be open after `error` (an error naming its status says).
    private static func mayStillBeOpen(after error: any Error) -> Bool {
        guard let status = (error as? UpgradeClientError)?.upgradeStatus else { return true }
        return ["started", "stepUpRequired", "awaitingAppleCredential"].contains(status)
    }

    /// Ends the upgrade on the server, giving up after `cleanupTimeout`: the request must end in time
    /// whatever the network does, and an upgrade left open expires on its own. True when the server
    /// answers that the upgrade completed (`409` with `upgradeStatus` `completed`), or, for one another
    /// request is `converting`, that it completed before the bound: the account is converted.
    @discardableResult
    private func cleanUp(upgradeID: String, reason: ExtensionErrorCode) async -> Bool {
        if openUpgradeID == upgradeID { openUpgradeID = nil }
        let client = self.client
        let completed = Answer()
        await Self.bounded(cleanupTimeout) {
            do {
                try await client.cancel(upgradeID: upgradeID, reason: reason)
            } catch let error as UpgradeClientError where error.status == 409 {
                var status = error.upgradeStatus
                // Another request is converting the account: its outcome decides, read until there is one.
                while status == "converting" {
                    status = (try? await client.status(upgradeID: upgradeID))?.status
                    if status == "converting" { try? await Task.sleep(nanoseconds: 100_000_000) }
                }
                completed.set(status == "completed")
            } catch {}
        }
        return completed.value
    }

    /// Ends the password change on the server, bounded as `cleanUp` is. True when the server answers
    /// that the change completed (`409` with `changeStatus` `completed`): the new password is stored.
    @discardableResult
    private func cleanUpPasswordChange(id: String, reason: ExtensionErrorCode) async -> Bool {
        if openPasswordChange?.id == id { openPasswordChange = nil }
        let client = self.client
        let completed = Answer()
        await Self.bounded(cleanupTimeout) {
            do {
                try await client.cancelPasswordChange(id: id, reason: reason)
            } catch let error as UpgradeClientError where error.status == 409 {
                completed.set(error.passwordChangeStatus == "completed")
            } catch {}
        }
        return completed.value
    }

    /// Ends the request with `outcome` if it is still running; a completion also ends it while
    /// cancelling, because the account did change.
    private func finish(_ outcome: Outcome) {
        switch (phase, outcome) {
        case (.running, _), (.cancelling, .upgraded), (.cancelling, .passwordChanged): end(outcome)
        case (.cancelling, .cancelled), (.ended, _): return
        }
    }

    private func end(_ outcome: Outcome) {
        phase = .ended
        pending = nil
        switch outcome {
        case .upgraded:
            system?.completeUpgrade()
        case .passwordChanged(let user, let newPassword):
            system?.completePasswordChange(user: user, newPassword: newPassword)
        case .cancelled(let code, let failureReason):
            system?.cancel(with: code, failureReason: failureReason)
        }
    }

    /// Waits for `work` until it ends or `seconds` pass, whichever is first; on time out the work is
    /// cancelled and left to finish on its own.
    static func bounded(_ seconds: TimeInterval, _ work: @escaping @Sendable () async -> Void) async {
        let gate = Gate()
        let task = Task {
            await work()
            gate.open()
        }
        let timer = Task {
            try? await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1_000_000_000))
            gate.open()
        }
        await gate.wait()
        task.cancel()
        timer.cancel()
    }
}

/// A one-way gate: `wait()` returns once `open()` was called, before or after.
final class Gate: @unchecked Sendable {
    // `opened` and `waiters` are only touched with `lock` held.
    private let lock = NSLock()
    private var opened = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func open() {
        lock.lock()
        opened = true
        let waiting = waiters
        waiters = []
        lock.unlock()
        for waiter in waiting { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            lock.lock()
            if opened {
                lock.unlock()
                continuation.resume()
            } else {
                waiters.append(continuation)
                lock.unlock()
            }
        }
    }
}

/// A value set from another task, read after it ended.
private final class Answer: @unchecked Sendable {
    // `stored` is only touched with `lock` held.
    private let lock = NSLock()
    private var stored = false

    func set(_ value: Bool) {
        lock.lock()
        stored = value
        lock.unlock()
    }

    var value: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stored
    }
}
