import Foundation
import HTTPCore
import UpgradeEngine

/// The emulator-only endpoints under `/emulator/` (JSON in, JSON or problem+json out): setup and
/// the parts of the world Apple's REST API cannot reach — the device and Apple's back office.
extension AppleIDEmulatorHandler {
    func emulatorEndpoint(_ request: HTTPRequest, segments: [String]) throws -> HTTPResponse {
        let rest = Array(segments.dropFirst())
        switch (rest.count, rest.first ?? "") {
        case (0, _):
            try require(request, "GET")
            return status()
        case (1, "teams"):
            try require(request, "POST")
            let body = try EmulatorJSONBody(request, allowed: ["teamId"])
            let teamID = try body.string("teamId")
            try emulator.addTeam(teamID)
            return Self.json(.object(["teamId": .string(teamID)]), status: 201)
        case (3, "teams") where rest[2] == "keys":
            try require(request, "POST")
            return try registerKey(request, teamID: rest[1])
        case (1, "apps"):
            try require(request, "POST")
            let body = try EmulatorJSONBody(request, allowed: ["clientId", "teamId", "primaryAppId"])
            let clientID = try body.string("clientId")
            let teamID = try body.string("teamId")
            let primary = try body.optionalString("primaryAppId")
            try emulator.addApp(clientID: clientID, teamID: teamID, primaryAppID: primary)
            return Self.json(
                .object([
                    "clientId": .string(clientID), "teamId": .string(teamID),
                    "primaryAppId": primary.map(JSONValue.string),
                ]),
                status: 201
            )
        case (3, "apps") where rest[2] == "transfer":
            try require(request, "POST")
            let toTeam = try EmulatorJSONBody(request, allowed: ["toTeamId"]).string("toTeamId")
            try emulator.transferApp(clientID: rest[1], toTeam: toTeam)
            return Self.json(.object(["clientId": .string(rest[1]), "teamId": .string(toTeam)]))
        case (1, "users"):
            try require(request, "POST")
            let body = try EmulatorJSONBody(request, allowed: ["email", "fullName", "realUserStatus"])
            let status = try body.optionalInteger("realUserStatus") ?? 2
            let userID = try emulator.createUser(
                email: try body.string("email"),
                fullName: try body.optionalString("fullName"),
                realUserStatus: Int(clamping: status)
            )
            return Self.json(.object(["userId": .string(userID)]), status: 201)
        case (2, "users") where rest[1] == "batch":
            try require(request, "POST")
            return try createAuthorizedUsers(request)
        case (2, "users"):
            try require(request, "DELETE")
            try emulator.deleteAccount(userID: rest[1])
            return Self.json(notificationsAfterAction())
        case (3, "users") where rest[2] == "revoke-consent":
            try require(request, "POST")
            let body = try EmulatorJSONBody(request, allowed: ["clientId", "notify"])
            let notify = try body.optionalBool("notify") ?? true
            try emulator.revokeConsent(userID: rest[1], clientID: try body.string("clientId"), notify: notify)
            return Self.json(notificationsAfterAction())
        case (3, "users") where rest[2] == "email-forwarding":
            try require(request, "POST")
            let body = try EmulatorJSONBody(request, allowed: ["teamId", "enabled"])
            try emulator.setEmailForwarding(
                userID: rest[1],
                teamID: try body.string("teamId"),
                enabled: try body.bool("enabled")
            )
            return Self.json(notificationsAfterAction())
        case (1, "authorize"):
            try require(request, "POST")
            return try authorize(request)
        case (1, "credential-state"):
            try require(request, "GET")
            return try credentialState(request)
        case (2, "keys") where rest[1] == "rotate":
            try require(request, "POST")
            _ = try EmulatorJSONBody(request, allowed: [])
            return Self.json(.object(["keyId": .string(emulator.rotateSigningKey())]))
        case (3, "keys") where rest[2] == "retire":
            try require(request, "POST")
            _ = try EmulatorJSONBody(request, allowed: [])
            try emulator.retireSigningKey(rest[1])
            return Self.json(.object(["retired": .string(rest[1])]))
        case (2, "clock") where rest[1] == "advance":
            try require(request, "POST")
            return try advanceClock(request)
        case (1, "faults"):
            try require(request, "POST")
            let body = try EmulatorJSONBody(request, allowed: ["endpoint", "statuses"])
            let endpoint = try body.string("endpoint")
            try emulator.injectFaults(try body.integers("statuses").map { Int(clamping: $0) }, endpoint: endpoint)
            return Self.json(
                .object([
                    "endpoint": .string(endpoint),
                    "pending": .array(emulator.pendingFaults(endpoint: endpoint).map { .integer(Int64($0)) }),
                ])
            )
        case (1, "revocations"):
            try require(request, "GET")
            return Self.json(.object(["revocations": .array(emulator.revocationCounts().map(Self.describeRevocation))]))
        case (1, "refresh-checks"):
            try require(request, "GET")
            let checks = emulator.refreshChecks().sorted { $0.key < $1.key }.map { userID, count in
                JSONValue.object(["userId": .string(userID), "count": .integer(Int64(count))])
            }
            return Self.json(.object(["refreshChecks": .array(checks)]))
        case (1, "notifications"):
            try require(request, "GET")
            let pending = collectNotifications()
            return Self.json(.object(["pending": .array(pending.map(Self.describe))]))
        case (2, "notifications") where rest[1] == "deliver":
            try require(request, "POST")
            let body = try EmulatorJSONBody(request, allowed: ["url", "clientId"])
            guard let url = try body.optionalString("url") ?? configuration.notificationURL else {
                throw EmulatorJSONBody.invalid("Give a url, or start the emulator with a notification URL.")
            }
            return Self.json(try deliver(to: url, clientID: try body.optionalString("clientId")))
        default:
            throw HTTPProblem(
                status: 404,
                slug: "emulator-not-found",
                title: "Not found",
                detail: "No emulator endpoint at \(request.path); see Schema/emulator-openapi.yaml."
            )
        }
    }

    private func require(_ request: HTTPRequest, _ method: String) throws(HTTPProblem) {
        guard request.method == method else { throw Self.methodNotAllowed(method) }
    }

    private func status() -> HTTPResponse {
        let keys = emulator.keySet
        return Self.json(
            .object([
                "issuer": .string(emulator.configuration.issuer),
                "now": .integer(configuration.clock?.now ?? Int64(Date().timeIntervalSince1970)),
                "activeKeyId": .string(emulator.activeSigningKeyID),
                "keyIds": .array(keys.keyIDs.map(JSONValue.string)),
                "pendingNotifications": .integer(Int64(collectNotifications().count)),
            ])
        )
    }

    /// Registers a team's Sign in with Apple key: the given public key, or a new key pair whose
    /// private half (a `.p8` PEM) is returned once, for the server's `APPLE_PRIVATE_KEY_FILE`.
    private func registerKey(_ request: HTTPRequest, teamID: String) throws -> HTTPResponse {
        let body = try EmulatorJSONBody(request, allowed: ["keyId", "publicKeyPem"])
        let keyID = try body.string("keyId")
        var privateKeyPEM: String?
        let publicKey: P256PublicKey
        if let pem = try body.optionalString("publicKeyPem") {
            do {
                publicKey = try P256PublicKey(pem: pem)
            } catch {
                throw EmulatorJSONBody.invalid("publicKeyPem is not a P-256 public key: \(error)")
            }
        } else {
            let privateKey = P256PrivateKey()
            publicKey = privateKey.publicKey
            privateKeyPEM = privateKey.pemRepresentation
        }
        try emulator.registerKey(teamID: teamID, keyID: keyID, publicKey: publicKey)
        return Self.json(
            .object([
                "teamId": .string(teamID), "keyId": .string(keyID),
                "privateKeyPem": privateKeyPEM.map(JSONValue.string),
            ]),
            status: 201
        )
    }

    /// The device: the user signs in to an app with Sign in with Apple.
    private func authorize(_ request: HTTPRequest) throws -> HTTPResponse {
        let body = try EmulatorJSONBody(
            request,
            allowed: ["userId", "clientId", "nonce", "state", "emailMode", "redirectUri"]
        )
        let modeName = try body.optionalString("emailMode") ?? AppleEmailMode.shared.rawValue
        guard let mode = AppleEmailMode(rawValue: modeName) else {
            throw EmulatorJSONBody.invalid("emailMode must be \"shared\" or \"hidden\".")
        }
        let authorization = try emulator.authorize(
            userID: try body.string("userId"),
            clientID: try body.string("clientId"),
            nonce: try body.optionalString("nonce"),
            state: try body.optionalString("state"),
            emailMode: mode,
            redirectURI: try body.optionalString("redirectUri")
        )
        return Self.json(
            .object([
                "identityToken": .string(authorization.identityToken),
                "authorizationCode": .string(authorization.authorizationCode),
                "user": .string(authorization.user),
                "state": authorization.state.map(JSONValue.string),
                "email": authorization.email.map(JSONValue.string),
                "fullName": authorization.fullName.map(JSONValue.string),
                "isFirstAuthorization": .bool(authorization.isFirstAuthorization),
            ])
        )
    }

    /// Many users at once who have already signed in to an app: what a load test of the transfer
    /// batches needs in place of one `users` and one `authorize` request per user.
    private func createAuthorizedUsers(_ request: HTTPRequest) throws -> HTTPResponse {
        let body = try EmulatorJSONBody(request, allowed: ["count", "clientId", "emailMode"])
        guard let count = try body.optionalInteger("count"),
            (1...Int64(AppleIDEmulator.maximumUserBatch)).contains(count)
        else {
            throw EmulatorJSONBody.invalid("count must be an integer from 1 to \(AppleIDEmulator.maximumUserBatch).")
        }
        let modeName = try body.optionalString("emailMode") ?? AppleEmailMode.shared.rawValue
        guard let mode = AppleEmailMode(rawValue: modeName) else {
            throw EmulatorJSONBody.invalid("emailMode must be \"shared\" or \"hidden\".")
        }
        let users = try emulator.createAuthorizedUsers(
            count: Int(count),
            clientID: try body.string("clientId"),
            emailMode: mode
        )
        let list = users.map { user in
            JSONValue.object(["userId": .string(user.userID), "sub": .string(user.sub), "email": .string(user.email)])
        }
        return Self.json(.object(["users": .array(list)]), status: 201)
    }

    /// The device: `getCredentialState(forUserID:)` for an app (no REST API at Apple has this).
    private func credentialState(_ request: HTTPRequest) throws(HTTPProblem) -> HTTPResponse {
        var parameters: [String: String] = [:]
        for pair in (request.query ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let name = parts[0].removingPercentEncoding,
                let value = parts[1].removingPercentEncoding, parameters.updateValue(value, forKey: name) == nil
            else {
                throw EmulatorJSONBody.invalid("The query must be user=SUB&clientId=CLIENT_ID, each once.")
            }
        }
        guard let sub = parameters["user"], let clientID = parameters["clientId"], parameters.count == 2 else {
            throw EmulatorJSONBody.invalid("The query must be user=SUB&clientId=CLIENT_ID, each once.")
        }
        let state = emulator.credentialState(forUserID: sub, clientID: clientID)
        return Self.json(.object(["state": .string(state.name), "rawValue": .integer(Int64(state.rawValue))]))
    }

    private func advanceClock(_ request: HTTPRequest) throws(HTTPProblem) -> HTTPResponse {
        guard let clock = configuration.clock else {
            throw HTTPProblem(
                status: 409,
                slug: "emulator-fixed-clock",
                title: "Emulator: clock not adjustable",
                detail: "This emulator runs on a clock that cannot be moved."
            )
        }
        let seconds = try EmulatorJSONBody(request, allowed: ["seconds"]).optionalInteger("seconds")
        guard let seconds, (1...(400 * 86_400)).contains(seconds) else {
            throw EmulatorJSONBody.invalid("seconds must be an integer from 1 to 34560000 (400 days).")
        }
        clock.advance(seconds: seconds)
        return Self.json(.object(["now": .integer(clock.now)]))
    }

    // MARK: Notifications

    /// Moves what the emulator has queued into our own queue and returns all undelivered ones.
    private func collectNotifications() -> [AppleServerNotification] {
        let fresh = emulator.drainNotifications()
        return undelivered.withLock { queue in
            queue.append(contentsOf: fresh)
            return queue
        }
    }

    /// After an action that may notify: deliver at once when a notification URL is configured,
    /// otherwise say how many wait.
    private func notificationsAfterAction() -> JSONValue {
        if let url = configuration.notificationURL, let result = try? deliver(to: url, clientID: nil) {
            return .object(["notifications": result])
        }
        return .object(["pendingNotifications": .integer(Int64(collectNotifications().count))])
    }

    /// Posts each undelivered notification (of `clientID`, if given) to `url`; those the receiver
    /// did not accept with a 2xx stay queued.
    private func deliver(to url: String, clientID: String?) throws(HTTPProblem) -> JSONValue {
        let target: URL
        switch EmulatorNotificationSender.validate(
            url,
            allowNonLoopback: configuration.allowNonLoopbackNotificationURLs
        ) {
        case .success(let valid): target = valid
        case .failure(let failure): throw EmulatorJSONBody.invalid("Notification URL \(failure.reason).")
        }
        _ = collectNotifications()
        let batch = undelivered.withLock { queue in
            let chosen = queue.filter { clientID == nil || $0.clientID == clientID }
            queue.removeAll { clientID == nil || $0.clientID == clientID }
            return chosen
        }
        var delivered: [JSONValue] = []
        var failed: [JSONValue] = []
        var retained: [AppleServerNotification] = []
        for notification in batch {
            let outcome = EmulatorNotificationSender.post(
                notification,
                to: target,
                timeout: configuration.notificationTimeout
            )
            var entry = Self.describe(notification)
            switch outcome {
            case .success(let status) where (200...299).contains(status):
                entry = entry.adding("status", .integer(Int64(status)))
                delivered.append(entry)
            case .success(let status):
                retained.append(notification)
                failed.append(entry.adding("reason", .string("HTTP \(status)")))
            case .failure(let failure):
                retained.append(notification)
                failed.append(entry.adding("reason", .string(failure.reason)))
            }
            let result: String
            switch outcome {
            case .success(let status): result = "HTTP \(status)"
            case .failure(let failure): result = failure.reason
            }
            configuration.log("notification \(notification.type) for \(notification.clientID) to \(target): \(result)")
        }
        let pending = undelivered.withLock { queue in
            queue.insert(contentsOf: retained, at: 0)
            return queue.count
        }
        return .object([
            "delivered": .array(delivered), "failed": .array(failed), "pending": .integer(Int64(pending)),
        ])
    }

    private static func describe(_ notification: AppleServerNotification) -> JSONValue {
        .object([
            "clientId": .string(notification.clientID), "type": .string(notification.type.rawValue),
            "payload": .string(notification.payload),
        ])
    }
}

extension AppleIDEmulatorHandler {
    /// A revoked token as `GET /emulator/revocations` lists it: by its hash, never itself.
    static func describeRevocation(_ revocation: AppleIDEmulator.RevocationCount) -> JSONValue {
        .object([
            "tokenSha256": .string(revocation.tokenSHA256), "tokenType": .string(revocation.tokenType),
            "clientId": .string(revocation.clientID), "userId": revocation.userID.map(JSONValue.string),
            "count": .integer(Int64(revocation.count)),
        ])
    }
}

extension JSONValue {
    fileprivate func adding(_ key: String, _ value: JSONValue) -> JSONValue {
        guard case .object(var members) = self else { return self }
        members.append(Member(key, value))
        return .object(members)
    }
}
