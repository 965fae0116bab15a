import UpgradeEngine

/// Strong-password changes (the extension's `changePasswordWithoutUserInteraction`): decode, one
/// service call, render.
extension UpgradeAPIHandler {
    /// `POST /v1/password-changes`.
    func startPasswordChange(_ request: HTTPRequest, now: Int64) throws -> HTTPResponse {
        let body = try JSONBody(
            request,
            allowed: ["username", "password", "ticket", "newPassword", "serviceIdentifier"]
        )
        // As for an upgrade: a ticket comes with an empty (or no) password; without one the password is required.
        let ticket = try body.string("ticket")
        let password = try ticket == nil ? body.requiredString("password") : body.string("password") ?? ""
        let answer = try recorded {
            try upgrades.startPasswordChange(
                username: try body.requiredString("username"),
                password: password,
                ticket: ticket,
                newPassword: try body.requiredString("newPassword"),
                serviceIdentifier: try body.requiredString("serviceIdentifier"),
                clientKey: request.clientKey,
                now: now
            )
        }
        return Self.render(answer, status: 201)
    }

    /// `POST /v1/password-changes/{id}/step-up`.
    func stepUpPasswordChange(_ request: HTTPRequest, id: String, now: Int64) throws -> HTTPResponse {
        let body = try JSONBody(request, allowed: ["code", "recoveryCode"])
        let code: UpgradeService.StepUpCode
        switch (try body.string("code"), try body.string("recoveryCode")) {
        case (let totp?, nil): code = .totp(totp)
        case (nil, let recovery?): code = .recoveryCode(recovery)
        default: throw APIProblem.validation("send exactly one of 'code' and 'recoveryCode'")
        }
        return Self.render(
            try upgrades.stepUpPasswordChange(id: id, code: code, clientKey: request.clientKey, now: now)
        )
    }

    /// The `{reason}` body of a cancel: an `ASExtensionError` code by name or number.
    static func cancelReason(_ request: HTTPRequest) throws -> ASExtensionErrorCode {
        let body = try JSONBody(request, allowed: ["reason"])
        let reason: ASExtensionErrorCode?
        switch body.value("reason") {
        case .string(let name)?: reason = ASExtensionErrorCode(name: name)
        case .integer(let number)?: reason = ASExtensionErrorCode(rawValue: Int(number))
        case nil, .null?: throw APIProblem.validation("field 'reason' is required")
        default: reason = nil
        }
        guard let reason else {
            throw APIProblem.validation(
                "field 'reason' must be an ASExtensionError code: failed (0), userCanceled (1), userInteractionRequired (100) or credentialIdentityNotFound (101)"
            )
        }
        return reason
    }

    static func render(_ answer: PasswordChangeAnswer, status: Int = 200) -> HTTPResponse {
        let members = JWSJSON.object([
            "id": .string(answer.id),
            "status": .string(answer.status.rawValue),
            "result": .string(answer.result.rawValue),
            "expiresAt": answer.expiresAt.map { .string(timestamp($0)) },
            "attemptsRemaining": answer.attemptsRemaining.map { .integer(Int64($0)) },
        ])
        var response = HTTPResponse(status: status, body: members.serialized())
        response.headers.replaceOrAppend(name: "Content-Type", value: "application/json")
        response.headers.replaceOrAppend(name: "Cache-Control", value: "no-store")
        return response
    }
}
