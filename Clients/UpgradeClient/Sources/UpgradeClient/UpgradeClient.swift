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
        if let email = Self.forwardedEmail(email) { body["email"] = email }
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

    /// What the server accepts of what the device forwards (Schema/openapi.yaml, `GivenEmail` and
    /// `GivenPersonName`), checked here by the same rules: a value the server would refuse is left out
    /// rather than sent, since it is a courtesy the server may store, and a `422` after Apple's sheet
    /// would lose the whole upgrade.
    static let maxEmailBytes = 320
    static let maxNamePartBytes = 256

    /// `email` as the server accepts it, or nil: not empty, at most 320 bytes of UTF-8, no space,
    /// control or invisible character (no byte up to 0x20 nor 0x7F, no control, format, space, line or
    /// paragraph separator), and `local@domain` with exactly one `@`.
    static func forwardedEmail(_ email: String?) -> String? {
        guard let email, !email.isEmpty else { return nil }
        let bytes = Array(email.utf8)
        guard bytes.count <= maxEmailBytes, bytes.allSatisfy({ $0 > 0x20 && $0 != 0x7f }),
            !email.unicodeScalars.contains(where: isHiddenInEmail)
        else { return nil }
        guard let at = bytes.firstIndex(of: UInt8(ascii: "@")), at > 0, at < bytes.count - 1,
            bytes.lastIndex(of: UInt8(ascii: "@")) == at
        else { return nil }
        return email
    }

    private static func isHiddenInEmail(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .spaceSeparator, .lineSeparator, .paragraphSeparator: true
        default: false
        }
    }

    /// `fullName` as the server accepts it: the parts Apple filled in, each left out when it is blank
    /// (the server counts it absent) or when the server would refuse it (over 256 bytes of UTF-8, or a
    /// control, line or paragraph separator, or bidirectional embedding, override or isolate
    /// character); none when no part is left, or when the display name the server forms from given,
    /// middle and family name would be over 256 bytes (the server refuses the whole name then).
    static func nameMembers(_ name: PersonNameComponents) -> [String: String]? {
        let components: [(String, String?)] = [
            ("namePrefix", name.namePrefix), ("givenName", name.givenName), ("middleName", name.middleName),
            ("familyName", name.familyName), ("nameSuffix", name.nameSuffix), ("nickname", name.nickname),
        ]
        var members: [String: String] = [:]
        for (key, value) in components {
            guard let value, !isBlank(value), isAcceptedNamePart(value) else { continue }
            members[key] = value
        }
        guard !members.isEmpty else { return nil }
        // The display name: the parts spaced, or unspaced when one is Chinese, Japanese or Korean.
        let formed = ["givenName", "middleName", "familyName"].compactMap { members[$0] }
        let spaces = formed.contains(where: isCJK) ? 0 : max(0, formed.count - 1)
        guard formed.reduce(spaces, { $0 + $1.utf8.count }) <= maxNamePartBytes else { return nil }
        return members
    }

    private static func isBlank(_ value: String) -> Bool {
        value.unicodeScalars.allSatisfy { $0.properties.isWhitespace }
    }

    private static func isAcceptedNamePart(_ value: String) -> Bool {
        guard value.utf8.count <= maxNamePartBytes else { return false }
        return !value.unicodeScalars.contains { scalar in
            switch scalar.properties.generalCategory {
            case .control, .lineSeparator, .paragraphSeparator: true
            default: (0x202A...0x202E).contains(scalar.value) || (0x2066...0x2069).contains(scalar.value)
            }
        }
    }

    /// Han, Hiragana, Katakana or Hangul: scripts whose names are written family name first, unspaced.
    private static func isCJK(_ text: String) -> Bool {
        text.unicodeScalars.contains { scalar in
            switch scalar.value {
            case 0x1100...0x11FF, 0x3040...0x30FF, 0x3130...0x318F, 0x3400...0x4DBF, 0x4E00...0x9FFF,
                0xAC00...0xD7AF, 0xF900...0xFAFF, 0x20000...0x2FA1F:
                true
            default: false
            }
        }
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
