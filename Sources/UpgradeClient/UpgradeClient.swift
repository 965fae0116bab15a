import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The siwa-upgrade REST API as an Account Authentication Modification extension uses it: the
/// upgrade to Sign in with Apple (with or without a second factor, from a saved password or an
/// in-app ticket) and the strong-password change. It depends on Foundation alone, so an iOS
/// extension target can add it; `Examples/AccountModificationExtension` shows one.
///
/// Every method either returns the step the server answered or throws ``UpgradeClientError``, whose
/// `extensionErrorCode` is what the extension passes to `cancelRequest(withError:)`.
public struct UpgradeClient: Sendable {
    let baseURL: URL
    let session: URLSession

    /// `baseURL` is where the API is served, e.g. `https://accounts.example.com`; paths such as
    /// `/v1/upgrades` are appended to it.
    public init(baseURL: URL, session: URLSession = .shared) {
        self.baseURL = baseURL
        self.session = session
    }

    /// `POST /v1/upgrades`: checks the saved password, or for an in-app upgrade (the extension got
    /// an empty password) the one-time `ticket` the app's backend minted and passed in `userInfo`.
    public func startUpgrade(
        username: String,
        password: String,
        ticket: String? = nil,
        serviceIdentifier: String
    ) async throws -> UpgradeStep {
        var body: [String: String] = [
            "username": username, "password": password, "serviceIdentifier": serviceIdentifier,
        ]
        if let ticket { body["ticket"] = ticket }
        return try upgradeStep(try await post(["v1", "upgrades"], body))
    }

    /// `POST /v1/upgrades/{id}/step-up` with a TOTP code.
    public func stepUp(upgradeID: String, code: String) async throws -> UpgradeStep {
        try upgradeStep(try await post(["v1", "upgrades", upgradeID, "step-up"], ["code": code]))
    }

    /// `POST /v1/upgrades/{id}/step-up` with one of the account's recovery codes.
    public func stepUp(upgradeID: String, recoveryCode: String) async throws -> UpgradeStep {
        try upgradeStep(try await post(["v1", "upgrades", upgradeID, "step-up"], ["recoveryCode": recoveryCode]))
    }

    /// `POST /v1/upgrades/{id}/apple-credential`: what Apple's sheet returned. On success the account
    /// is converted and its password deleted; call `completeUpgradeToSignInWithApple(userInfo:)`.
    /// Sending the same credential again after a lost answer returns the same result.
    public func submitAppleCredential(
        upgradeID: String,
        identityToken: String,
        authorizationCode: String,
        state: String,
        user: String?
    ) async throws -> CompletedUpgrade {
        var body = ["identityToken": identityToken, "authorizationCode": authorizationCode, "state": state]
        if let user { body["user"] = user }
        let answer = try await post(["v1", "upgrades", upgradeID, "apple-credential"], body)
        guard answer.string("status") == "completed", let id = answer.string("id"),
            let accountID = answer.string("accountId")
        else { throw answer.unexpected("a completed upgrade") }
        return CompletedUpgrade(upgradeID: id, accountID: accountID)
    }

    /// `POST /v1/upgrades/{id}/cancel`: the extension gave up (`reason` is the code it cancels with).
    /// The server forgets the upgrade's state and nonce; cancelling twice is harmless.
    public func cancel(upgradeID: String, reason: ExtensionErrorCode) async throws {
        _ = try await post(["v1", "upgrades", upgradeID, "cancel"], ["reason": reason.rawValue])
    }

    /// `POST /v1/password-changes`: the strong-password change
    /// (`changePasswordWithoutUserInteraction`). The current `password`, or a `ticket` with an empty
    /// password, authorises it; `newPassword` must meet the server's password rules (the same rules
    /// as the extension's `ASAccountAuthenticationModificationPasswordGenerationRequirements`).
    public func changePassword(
        username: String,
        password: String,
        ticket: String? = nil,
        newPassword: String,
        serviceIdentifier: String
    ) async throws -> PasswordChangeStep {
        var body: [String: String] = [
            "username": username, "newPassword": newPassword, "serviceIdentifier": serviceIdentifier,
        ]
        if let ticket {
            body["ticket"] = ticket
            if !password.isEmpty { body["password"] = password }
        } else {
            body["password"] = password
        }
        return try passwordChangeStep(try await post(["v1", "password-changes"], body))
    }

    /// `POST /v1/password-changes/{id}/step-up` with a TOTP code.
    public func stepUpPasswordChange(id: String, code: String) async throws -> PasswordChangeStep {
        try passwordChangeStep(try await post(["v1", "password-changes", id, "step-up"], ["code": code]))
    }

    // MARK: - Answers

    private func upgradeStep(_ answer: Answer) throws -> UpgradeStep {
        guard let id = answer.string("id") else { throw answer.unexpected("an upgrade") }
        switch answer.string("result") {
        case "success":
            guard let state = answer.string("state"), let nonce = answer.string("nonce") else {
                throw answer.unexpected("a state and a nonce")
            }
            return .readyForApple(upgradeID: id, state: state, nonce: nonce)
        case "twoFactorAuthRequired":
            return .twoFactorAuthRequired(upgradeID: id, attemptsRemaining: answer.integer("attemptsRemaining"))
        default:
            throw answer.unexpected("success or twoFactorAuthRequired")
        }
    }

    private func passwordChangeStep(_ answer: Answer) throws -> PasswordChangeStep {
        guard let id = answer.string("id") else { throw answer.unexpected("a password change") }
        switch (answer.string("status"), answer.string("result")) {
        case ("completed", "success"): return .completed(id: id)
        case (_, "twoFactorAuthRequired"): return .twoFactorAuthRequired(id: id)
        default: throw answer.unexpected("completed or twoFactorAuthRequired")
        }
    }

    // MARK: - Transport

    /// A 2xx answer's JSON object.
    struct Answer {
        let status: Int
        let object: [String: Any]

        func string(_ key: String) -> String? { object[key] as? String }
        func integer(_ key: String) -> Int? { (object[key] as? NSNumber)?.intValue }

        func unexpected(_ wanted: String) -> UpgradeClientError {
            UpgradeClientError(
                status: status,
                problemType: "about:blank",
                detail: "the server's answer is not \(wanted)",
                extensionErrorCode: .failed
            )
        }
    }

    /// The longest answer read; the API's answers are a few hundred bytes.
    static let maxAnswerBytes = 64 * 1024

    func url(_ segments: [String]) -> URL {
        var url = baseURL
        for segment in segments { url.appendPathComponent(segment) }
        return url
    }

    private func post(_ segments: [String], _ body: [String: any Sendable]) async throws -> Answer {
        var request = URLRequest(url: url(segments), timeoutInterval: 30)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json, application/problem+json", forHTTPHeaderField: "Accept")
        request.httpBody = try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: request)
        } catch {
            throw UpgradeClientError(
                status: 0,
                problemType: "about:blank",
                detail: "the server could not be reached: \(error.localizedDescription)",
                extensionErrorCode: .failed
            )
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        let object =
            data.count <= Self.maxAnswerBytes
            ? (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] : nil
        guard (200..<300).contains(status) else {
            throw Self.problem(status: status, object ?? [:])
        }
        guard let object else {
            throw UpgradeClientError(
                status: status,
                problemType: "about:blank",
                detail: "the server's answer is not a JSON object",
                extensionErrorCode: .failed
            )
        }
        return Answer(status: status, object: object)
    }

    /// A refusal as the extension should act on it: a wrong code with tries left needs the UI again
    /// (`userInteractionRequired`); an account the server does not know is
    /// `credentialIdentityNotFound`; everything else ends the request (`failed`).
    static func problem(status: Int, _ object: [String: Any]) -> UpgradeClientError {
        let type = object["type"] as? String ?? "about:blank"
        let slug = type.split(separator: "/").last.map(String.init) ?? type
        let code: ExtensionErrorCode
        if object["result"] as? String == "twoFactorAuthRequired" {
            code = .userInteractionRequired
        } else if slug == "account-not-found" {
            code = .credentialIdentityNotFound
        } else {
            code = .failed
        }
        return UpgradeClientError(
            status: status,
            problemType: type,
            detail: object["detail"] as? String,
            extensionErrorCode: code
        )
    }
}
