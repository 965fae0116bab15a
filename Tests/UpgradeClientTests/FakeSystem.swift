import Foundation
import UpgradeAPI
import UpgradeClient
import UpgradeEngine
import UpgradeTestSupport

@testable import AccountModificationExtension

/// The system's side of the extension, as the tests play it: Apple's sheet is the server's emulator
/// (or a dismissal), and every completion, cancellation and screen is recorded.
@MainActor
final class FakeSystem: AccountModificationSystem {
    enum Outcome: Equatable {
        case upgraded
        case passwordChanged(user: String, newPassword: String)
        case cancelled(ExtensionErrorCode, failureReason: String?)
    }

    typealias Sheet = @MainActor (_ state: String, _ nonce: String) async throws -> AppleIDCredential

    private(set) var outcomes: [Outcome] = []
    private(set) var screens: [StepUpScreen] = []
    private(set) var sheetsShown = 0
    private let sheet: Sheet
    private let ended = Gate()

    init(sheet: @escaping Sheet) {
        self.sheet = sheet
    }

    /// Apple's sheet as the emulator's development user signs in: `email` and `fullName` on the
    /// first authorization only, as Apple gives them.
    convenience init(_ server: DevServer) {
        self.init { state, nonce in
            try FakeSystem.emulatorCredential(server, state: state, nonce: nonce)
        }
    }

    nonisolated static func emulatorCredential(
        _ server: DevServer,
        state: String,
        nonce: String
    ) throws -> AppleIDCredential {
        let authorization = try server.development.emulator.authorize(
            userID: server.development.appleUserID,
            clientID: DevelopmentEnvironment.clientID,
            nonce: nonce,
            state: state,
            emailMode: .hidden
        )
        var name: PersonNameComponents?
        if let fullName = authorization.fullName {
            let parts = fullName.split(separator: " ", maxSplits: 1).map(String.init)
            var components = PersonNameComponents()
            components.givenName = parts.first
            components.familyName = parts.count > 1 ? parts[1] : nil
            name = components
        }
        return AppleIDCredential(
            user: authorization.user,
            state: authorization.state,
            identityToken: Data(authorization.identityToken.utf8),
            authorizationCode: Data(authorization.authorizationCode.utf8),
            email: authorization.email,
            fullName: name
        )
    }

    /// How the request ended, once it has; `nil` if it has not within `seconds` (a flow that never
    /// ends fails its test instead of hanging the suite).
    func outcome(within seconds: TimeInterval = 60) async -> Outcome? {
        let ended = self.ended
        await AccountModificationFlow.bounded(seconds) { await ended.wait() }
        return outcomes.first
    }

    var lastScreen: StepUpScreen? { screens.last }

    func requestAppleCredential(state: String, nonce: String) async throws -> AppleIDCredential {
        sheetsShown += 1
        return try await sheet(state, nonce)
    }

    func completeUpgrade() { end(.upgraded) }

    func completePasswordChange(user: String, newPassword: String) {
        end(.passwordChanged(user: user, newPassword: newPassword))
    }

    func cancel(with code: ExtensionErrorCode, failureReason: String?) {
        end(.cancelled(code, failureReason: failureReason))
    }

    func show(_ screen: StepUpScreen) { screens.append(screen) }

    private func end(_ outcome: Outcome) {
        outcomes.append(outcome)
        ended.open()
    }
}
