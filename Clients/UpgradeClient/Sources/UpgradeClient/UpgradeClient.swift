import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The siwa-upgrade REST API as an Account Authentication Modification extension uses it: the
/// upgrade to Sign in with Apple (with or without a second factor, from a saved password or an
/// in-app ticket) and the strong-password change. It depends on Foundation alone, so an iOS
/// extension target can add it; `Examples/AccountModificationExtension` shows one.
///
/// Calls the server documents as safe to repeat are repeated after a transport failure, a `503`,
/// `upgrade-in-progress` or Apple's keys out of reach (``RetryPolicy``), within
/// ``RetryPolicy/deadline``; the others are sent once. Write test doubles against ``UpgradeServing``.
public struct UpgradeClient: UpgradeServing {
    /// Sends one request and returns the answer, as `URLSession.data(for:)` does.
    public typealias Transport = @Sendable (URLRequest) async throws -> (Data, URLResponse)

    /// Where the API is served, e.g. `https://accounts.example.com`; paths such as `/v1/upgrades`
    /// are appended to it.
    public let baseURL: URL
    public let retryPolicy: RetryPolicy
    let transport: Transport

    public init(baseURL: URL, session: URLSession = .shared, retryPolicy: RetryPolicy = .standard) {
        self.init(baseURL: baseURL, retryPolicy: retryPolicy, transport: Self.transport(session))
    }

    /// A client whose requests go through `transport` (a session of the app's own, a recorder in a test).
    public init(baseURL: URL, retryPolicy: RetryPolicy = .standard, transport: @escaping Transport) {
        self.baseURL = baseURL
        self.retryPolicy = retryPolicy
        self.transport = transport
    }

    public func startUpgrade(
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

    public func startUpgrade(
        username: String,
        password: String,
        ticket: String?,
        serviceIdentifier: String,
        entry: UpgradeEntry?
    ) async throws -> UpgradeStep {
        var body: [String: String] = ["username": username, "serviceIdentifier": serviceIdentifier]
        if let entry { body["entry"] = entry.rawValue }
        try Self.authorize(&body, password: password, ticket: ticket)
        return try Self.upgradeStep(try await send(.post, ["v1", "upgrades"], body, repeatable: false))
    }

    public func stepUp(upgradeID: String, code: String) async throws -> UpgradeStep {
        try Self.upgradeStep(try await send(.post, ["v1", "upgrades", upgradeID, "step-up"], ["code": code]))
    }

    public func stepUp(upgradeID: String, recoveryCode: String) async throws -> UpgradeStep {
        try Self.upgradeStep(
            try await send(.post, ["v1", "upgrades", upgradeID, "step-up"], ["recoveryCode": recoveryCode])
        )
    }

    public func submitAppleCredential(
        upgradeID: String,
        identityToken: String,
        authorizationCode: String,
        state: String,
        user: String?,
        email: String?,
        fullName: PersonNameComponents?
    ) async throws -> CompletedUpgrade {
        var body: [String: Any] = [
            "identityToken": identityToken, "authorizationCode": authorizationCode, "state": state,
        ]
        if let user { body["user"] = user }
        if let email = Self.forwarded(email, limit: Self.maxEmailLength) { body["email"] = email }
        if let name = fullName.flatMap(Self.nameMembers) { body["fullName"] = name }
        let answer = try await send(
            .post,
            ["v1", "upgrades", upgradeID, "apple-credential"],
            body,
            repeatable: true
        )
        guard answer.string("status") == "completed", let id = answer.string("id"),
            let accountID = answer.string("accountId")
        else { throw answer.unexpected("a completed upgrade") }
        return CompletedUpgrade(upgradeID: id, accountID: accountID)
    }

    public func cancel(upgradeID: String, reason: ExtensionErrorCode) async throws {
        _ = try await send(.post, ["v1", "upgrades", upgradeID, "cancel"], ["reason": reason.name], repeatable: true)
    }

    public func status(upgradeID: String) async throws -> UpgradeReport {
        let answer = try await send(.get, ["v1", "upgrades", upgradeID], nil, repeatable: true)
        guard let id = answer.string("id"), let status = answer.string("status") else {
            throw answer.unexpected("an upgrade")
        }
        return UpgradeReport(upgradeID: id, status: status, problem: answer.string("problem"))
    }

    public func changePassword(
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

    public func changePassword(
        username: String,
        password: String,
        ticket: String?,
        newPassword: String,
        serviceIdentifier: String,
        entry: UpgradeEntry?
    ) async throws -> PasswordChangeStep {
        var body: [String: String] = [
            "username": username, "newPassword": newPassword, "serviceIdentifier": serviceIdentifier,
        ]
        if let entry { body["entry"] = entry.rawValue }
        try Self.authorize(&body, password: password, ticket: ticket)
        return try Self.passwordChangeStep(try await send(.post, ["v1", "password-changes"], body))
    }

    public func stepUpPasswordChange(id: String, code: String) async throws -> PasswordChangeStep {
        try Self.passwordChangeStep(try await send(.post, ["v1", "password-changes", id, "step-up"], ["code": code]))
    }

    public func stepUpPasswordChange(id: String, recoveryCode: String) async throws -> PasswordChangeStep {
        try Self.passwordChangeStep(
            try await send(.post, ["v1", "password-changes", id, "step-up"], ["recoveryCode": recoveryCode])
        )
    }

    public func cancelPasswordChange(id: String, reason: ExtensionErrorCode) async throws {
        _ = try await send(.post, ["v1", "password-changes", id, "cancel"], ["reason": reason.name], repeatable: true)
    }

    // MARK: - Requests

    /// The password, or the ticket with the password only if one was given (both together are the
    /// server's `422`). An empty password without a ticket is refused here, before any request: the
    /// extension has nothing to authorise the call with, and an empty password must never reach the
    /// server's password check.
    static func authorize(_ body: inout [String: String], password: String, ticket: String?) throws {
        if let ticket, !ticket.isEmpty {
            body["ticket"] = ticket
            if !password.isEmpty { body["password"] = password }
        } else if password.isEmpty {
            throw UpgradeClientError(
                kind: .invalidArgument,
                detail:
                    "an empty password needs a ticket: for an in-app upgrade the app passes one in userInfo[\"upgradeTicket\"]"
            )
        } else {
            body["password"] = password
        }
    }

    /// The server's bounds on what the device forwards (docs: Schema/openapi.yaml,
    /// `AppleCredentialRequest`). A value over them, or with a control character, is left out rather
    /// than sent: it is a courtesy the server may store, and a `422` after Apple's sheet would lose the
    /// whole upgrade.
    static let maxEmailLength = 320
    static let maxNameComponentLength = 256

    static func forwarded(_ value: String?, limit: Int) -> String? {
        guard let value, !value.isEmpty, value.unicodeScalars.count <= limit,
            !value.unicodeScalars.contains(where: { CharacterSet.controlCharacters.contains($0) })
        else { return nil }
        return value
    }

    /// `fullName` as the server reads it: the components Apple filled in, none when all are empty.
    static func nameMembers(_ name: PersonNameComponents) -> [String: String]? {
        let components: [(String, String?)] = [
            ("namePrefix", name.namePrefix), ("givenName", name.givenName), ("middleName", name.middleName),
            ("familyName", name.familyName), ("nameSuffix", name.nameSuffix), ("nickname", name.nickname),
        ]
        var members: [String: String] = [:]
        for (key, value) in components {
            if let value = forwarded(value, limit: maxNameComponentLength) { members[key] = value }
        }
        return members.isEmpty ? nil : members
    }

    // MARK: - Answers

    static func upgradeStep(_ answer: Answer) throws -> UpgradeStep {
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

    static func passwordChangeStep(_ answer: Answer) throws -> PasswordChangeStep {
        guard let id = answer.string("id") else { throw answer.unexpected("a password change") }
        switch (answer.string("status"), answer.string("result")) {
        case ("completed", "success"): return .completed(id: id)
        case (_, "twoFactorAuthRequired"):
            return .twoFactorAuthRequired(id: id, attemptsRemaining: answer.integer("attemptsRemaining"))
        default: throw answer.unexpected("completed or twoFactorAuthRequired")
        }
    }
}
