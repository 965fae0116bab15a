import UpgradeEngine

/// The upgrade routes and the ticket that starts an in-app one: decode, one `UpgradeService` call,
/// render.
extension UpgradeAPIHandler {
    /// `POST /v1/upgrades`.
    func startUpgrade(_ request: HTTPRequest, now: Int64) throws -> HTTPResponse {
        let body = try JSONBody(request, allowed: ["username", "password", "ticket", "serviceIdentifier", "entry"])
        // An in-app upgrade sends a ticket and an empty (or no) password; without a ticket the
        // password is required.
        let ticket = try body.string("ticket")
        let password = try ticket == nil ? body.requiredString("password") : body.string("password") ?? ""
        let answer = try recorded {
            try upgrades.start(
                username: try body.requiredString("username"),
                password: password,
                ticket: ticket,
                serviceIdentifier: try body.requiredString("serviceIdentifier"),
                entry: try Self.entry(body),
                clientKey: request.clientKey,
                received: request.received,
                now: now
            )
        }
        return Self.render(answer, status: 201)
    }

    /// The optional `entry` of a flow's first request: which of the extension's calls sent it, for
    /// the migration report. A ticket implies the entry `ticket`, so only the two calls are named.
    static func entry(_ body: JSONBody) throws -> FlowEntry? {
        guard let text = try body.string("entry") else { return nil }
        guard let entry = FlowEntry(rawValue: text), entry != .ticket else {
            throw APIProblem.validation("field 'entry' must be 'silent' or 'withUI'")
        }
        return entry
    }

    /// `POST /v1/upgrade-tickets` (scope `tickets`).
    func issueTicket(_ request: HTTPRequest, now: Int64) throws -> HTTPResponse {
        // The token is checked before the body is read: an unauthenticated caller learns nothing.
        let token = try admin.authorize(request, scope: .tickets, now: now)
        let body = try JSONBody(request, allowed: ["username", "secondFactorVerified"])
        let issued = try upgrades.issueTicket(
            username: try body.requiredString("username"),
            secondFactorVerified: try body.bool("secondFactorVerified") ?? false,
            issuedBy: token.name,
            now: now
        )
        return Self.noStoreJSON(
            .object(["ticket": .string(issued.ticket), "expiresAt": .string(Self.timestamp(issued.expiresAt))]),
            status: 201
        )
    }

    /// `POST /v1/upgrades/{id}/step-up`.
    func stepUp(_ request: HTTPRequest, id: String, now: Int64) throws -> HTTPResponse {
        let code = try Self.stepUpCode(request)
        return Self.render(
            try recorded { try upgrades.stepUp(id: id, code: code, clientKey: request.clientKey, now: now) }
        )
    }

    /// `POST /v1/upgrades/{id}/apple-credential`.
    func appleCredential(_ request: HTTPRequest, id: String, now: Int64) throws -> HTTPResponse {
        let body = try JSONBody(
            request,
            allowed: ["identityToken", "authorizationCode", "state", "user", "email", "fullName"]
        )
        // `email` and `fullName` are what Apple gave the device once; the engine checks and keeps
        // them where the account has none, marked as the device's.
        let credential = UpgradeService.AppleCredential(
            identityToken: try body.requiredString("identityToken"),
            authorizationCode: try body.requiredString("authorizationCode"),
            state: try body.requiredString("state"),
            user: try body.string("user"),
            email: try body.string("email"),
            fullName: try body.stringMembers("fullName", allowed: PersonName.partNames).map(PersonName.init(parts:))
        )
        let upgrades = self.upgrades
        let answer = try recorded {
            try blockingWait { () async throws(ServiceFailure) -> UpgradeAnswer in
                try await upgrades.submitAppleCredential(id: id, credential, now: now)
            }
        }
        return Self.render(answer)
    }

    /// `POST /v1/upgrades/{id}/cancel`.
    func cancel(_ request: HTTPRequest, id: String, now: Int64) throws -> HTTPResponse {
        let reason = try Self.cancelReason(request)
        return Self.render(try recorded { try upgrades.cancel(id: id, reason: reason, now: now) })
    }

    /// `GET /v1/upgrades/{id}`.
    func getUpgrade(id: String, now: Int64) throws -> HTTPResponse {
        Self.render(try upgrades.view(id: id, now: now))
    }

    /// Counts the outcome of an upgrade call for `upgrade_transitions_total` (password changes are
    /// not upgrades and are not counted there).
    func recorded(_ body: () throws -> UpgradeAnswer) throws -> UpgradeAnswer {
        do {
            let answer = try body()
            metrics.recordTransition(status: answer.status.rawValue, result: answer.result.rawValue)
            return answer
        } catch let failure as ServiceFailure {
            if let status = failure.status {
                metrics.recordTransition(status: status.rawValue, result: failure.result.rawValue)
            }
            throw failure
        }
    }

    /// The `{code}` or `{recoveryCode}` body of a step-up, upgrade or password change.
    static func stepUpCode(_ request: HTTPRequest) throws -> UpgradeService.StepUpCode {
        let body = try JSONBody(request, allowed: ["code", "recoveryCode"])
        switch (try body.string("code"), try body.string("recoveryCode")) {
        case (let totp?, nil): return .totp(totp)
        case (nil, let recovery?): return .recoveryCode(recovery)
        default: throw APIProblem.validation("send exactly one of 'code' and 'recoveryCode'")
        }
    }

    /// The `{reason}` body of a cancel, upgrade or password change: an `ASExtensionError` code by name
    /// or number.
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

    static func render(_ answer: UpgradeAnswer, status: Int = 200) -> HTTPResponse {
        noStoreJSON(
            .object([
                "id": .string(answer.id),
                "status": .string(answer.status.rawValue),
                "result": .string(answer.result.rawValue),
                "state": answer.state.map { .string($0) },
                "nonce": answer.nonce.map { .string($0) },
                "expiresAt": answer.expiresAt.map { .string(timestamp($0)) },
                "accountId": answer.accountID.map { .string($0) },
                "attemptsRemaining": answer.attemptsRemaining.map { .integer(Int64($0)) },
            ]),
            status: status
        )
    }

    static func render(_ view: UpgradeView) -> HTTPResponse {
        let history = view.history.map { entry in
            JSONValue.object([
                "at": .string(timestamp(entry.at)),
                "event": .string(entry.event),
                "from": entry.from.map { .string($0) },
                "to": entry.to.map { .string($0) },
                "problem": entry.problem.map { .string(UpgradeProblems.slug(for: $0)) },
            ])
        }
        let body = JSONValue.object([
            "id": .string(view.id),
            "status": .string(view.status.rawValue),
            "result": view.result.map { .string($0.rawValue) },
            "problem": view.problem.map { .string(UpgradeProblems.slug(for: $0)) },
            "createdAt": .string(timestamp(view.createdAt)),
            "expiresAt": view.expiresAt.map { .string(timestamp($0)) },
            "history": .array(history),
        ])
        return Self.noStoreJSON(body)
    }
}
