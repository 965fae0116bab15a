import Foundation
import Synchronization
import UpgradeClient

@testable import AccountModificationExtension

/// The real client with a hand on it, as an app's test double would be written against
/// `UpgradeServing`: it records every call and can hold a step-up, the answer of a call that changes
/// the account, or a cancel at a gate that ignores task cancellation, as a request stuck on the network
/// would.
final class InterposedUpgrades: UpgradeServing {
    let real: UpgradeClient
    /// Opened when a step-up begins.
    let stepUpEntered = Gate()
    /// When set, a step-up waits for it before it is sent.
    let holdStepUp: Gate?
    /// When set, a step-up's answer (an upgrade's or a password change's) waits for it after the
    /// server acted.
    let holdStepUpAnswer: Gate?
    /// When set, a password change's first answer waits for it after the server acted.
    let holdChangeAnswer: Gate?
    /// When set, the Apple credential's answer waits for it after the server acted.
    let holdCredentialAnswer: Gate?
    /// Opened when an answer is held at one of the gates above.
    let answerHeld = Gate()
    /// When set, a cancel waits for it before it goes on.
    let holdCancel: Gate?
    private let record = Mutex<[String]>([])
    private let started = Mutex<String?>(nil)

    init(
        _ real: UpgradeClient,
        holdStepUp: Gate? = nil,
        holdStepUpAnswer: Gate? = nil,
        holdChangeAnswer: Gate? = nil,
        holdCredentialAnswer: Gate? = nil,
        holdCancel: Gate? = nil
    ) {
        self.real = real
        self.holdStepUp = holdStepUp
        self.holdStepUpAnswer = holdStepUpAnswer
        self.holdChangeAnswer = holdChangeAnswer
        self.holdCredentialAnswer = holdCredentialAnswer
        self.holdCancel = holdCancel
    }

    /// The calls made, by name (`startUpgrade`, `stepUp`, `cancel(userCanceled)`, ...).
    var calls: [String] { record.withLock { $0 } }

    private func note(_ call: String) { record.withLock { $0.append(call) } }

    /// `answer` once `gate` (if any) is open.
    private func held<T: Sendable>(_ answer: T, at gate: Gate?) async -> T {
        guard let gate else { return answer }
        answerHeld.open()
        await gate.wait()
        return answer
    }

    /// The upgrade the last `startUpgrade` opened.
    var upgradeID: String? { started.withLock { $0 } }

    func startUpgrade(
        username: String,
        password: String,
        ticket: String?,
        serviceIdentifier: String
    ) async throws -> UpgradeStep {
        try await startUpgrade(
            username: username,
            password: password,
            ticket: ticket,
            serviceIdentifier: serviceIdentifier,
            entry: nil
        )
    }

    func startUpgrade(
        username: String,
        password: String,
        ticket: String?,
        serviceIdentifier: String,
        entry: UpgradeEntry?
    ) async throws -> UpgradeStep {
        note("startUpgrade")
        let step = try await real.startUpgrade(
            username: username,
            password: password,
            ticket: ticket,
            serviceIdentifier: serviceIdentifier,
            entry: entry
        )
        started.withLock { $0 = step.upgradeID }
        return step
    }

    func stepUp(upgradeID: String, code: String) async throws -> UpgradeStep {
        note("stepUp")
        stepUpEntered.open()
        await holdStepUp?.wait()
        let step = try await real.stepUp(upgradeID: upgradeID, code: code)
        return await held(step, at: holdStepUpAnswer)
    }

    func stepUp(upgradeID: String, recoveryCode: String) async throws -> UpgradeStep {
        note("stepUp(recoveryCode)")
        stepUpEntered.open()
        await holdStepUp?.wait()
        return try await real.stepUp(upgradeID: upgradeID, recoveryCode: recoveryCode)
    }

    func submitAppleCredential(
        upgradeID: String,
        identityToken: String,
        authorizationCode: String,
        state: String,
        user: String?,
        email: String?,
        fullName: PersonNameComponents?
    ) async throws -> CompletedUpgrade {
        note("submitAppleCredential")
        let completed = try await real.submitAppleCredential(
            upgradeID: upgradeID,
            identityToken: identityToken,
            authorizationCode: authorizationCode,
            state: state,
            user: user,
            email: email,
            fullName: fullName
        )
        return await held(completed, at: holdCredentialAnswer)
    }

    func cancel(upgradeID: String, reason: ExtensionErrorCode) async throws {
        note("cancel(\(reason.name))")
        await holdCancel?.wait()
        try await real.cancel(upgradeID: upgradeID, reason: reason)
    }

    func status(upgradeID: String) async throws -> UpgradeReport {
        note("status")
        return try await real.status(upgradeID: upgradeID)
    }

    func changePassword(
        username: String,
        password: String,
        ticket: String?,
        newPassword: String,
        serviceIdentifier: String
    ) async throws -> PasswordChangeStep {
        try await changePassword(
            username: username,
            password: password,
            ticket: ticket,
            newPassword: newPassword,
            serviceIdentifier: serviceIdentifier,
            entry: nil
        )
    }

    func changePassword(
        username: String,
        password: String,
        ticket: String?,
        newPassword: String,
        serviceIdentifier: String,
        entry: UpgradeEntry?
    ) async throws -> PasswordChangeStep {
        note("changePassword")
        let step = try await real.changePassword(
            username: username,
            password: password,
            ticket: ticket,
            newPassword: newPassword,
            serviceIdentifier: serviceIdentifier,
            entry: entry
        )
        return await held(step, at: holdChangeAnswer)
    }

    func stepUpPasswordChange(id: String, code: String) async throws -> PasswordChangeStep {
        note("stepUpPasswordChange")
        stepUpEntered.open()
        await holdStepUp?.wait()
        let step = try await real.stepUpPasswordChange(id: id, code: code)
        return await held(step, at: holdStepUpAnswer)
    }

    func stepUpPasswordChange(id: String, recoveryCode: String) async throws -> PasswordChangeStep {
        note("stepUpPasswordChange(recoveryCode)")
        stepUpEntered.open()
        await holdStepUp?.wait()
        return try await real.stepUpPasswordChange(id: id, recoveryCode: recoveryCode)
    }

    func cancelPasswordChange(id: String, reason: ExtensionErrorCode) async throws {
        note("cancelPasswordChange(\(reason.name))")
        await holdCancel?.wait()
        try await real.cancelPasswordChange(id: id, reason: reason)
    }
}
