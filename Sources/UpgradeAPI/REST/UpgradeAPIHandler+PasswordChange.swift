import UpgradeEngine

/// Strong-password changes (the extension's `changePasswordWithoutUserInteraction`): decode, one
/// service call, render.
extension UpgradeAPIHandler {
    /// `POST /v1/password-changes`.
    func startPasswordChange(_ request: HTTPRequest, now: Int64) throws -> HTTPResponse {
        let body = try JSONBody(
            request,
            allowed: ["username", "password", "ticket", "newPassword", "serviceIdentifier", "entry"]
        )
        // As for an upgrade: a ticket comes with an empty (or no) password; without one the password is required.
        let ticket = try body.string("ticket")
        let password = try ticket == nil ? body.requiredString("password") : body.string("password") ?? ""
        let answer = try upgrades.startPasswordChange(
            username: try body.requiredString("username"),
            password: password,
            ticket: ticket,
            newPassword: try body.requiredString("newPassword"),
            serviceIdentifier: try body.requiredString("serviceIdentifier"),
            entry: try Self.entry(body),
            clientKey: request.clientKey,
            received: request.received,
            now: now
        )
        return Self.render(answer, status: 201)
    }

    /// `POST /v1/password-changes/{id}/step-up`.
    func stepUpPasswordChange(_ request: HTTPRequest, id: String, now: Int64) throws -> HTTPResponse {
        let code = try Self.stepUpCode(request)
        return Self.render(
            try upgrades.stepUpPasswordChange(id: id, code: code, clientKey: request.clientKey, now: now)
        )
    }

    /// `POST /v1/password-changes/{id}/cancel`.
    func cancelPasswordChange(_ request: HTTPRequest, id: String, now: Int64) throws -> HTTPResponse {
        let reason = try Self.cancelReason(request)
        return Self.render(try upgrades.cancelPasswordChange(id: id, reason: reason, now: now))
    }

    static func render(_ answer: PasswordChangeAnswer, status: Int = 200) -> HTTPResponse {
        noStoreJSON(
            .object([
                "id": .string(answer.id),
                "status": .string(answer.status.rawValue),
                "result": .string(answer.result.rawValue),
                "expiresAt": answer.expiresAt.map { .string(timestamp($0)) },
                "attemptsRemaining": answer.attemptsRemaining.map { .integer(Int64($0)) },
            ]),
            status: status
        )
    }
}
