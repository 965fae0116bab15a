import UpgradeEngine

/// The provisioning routes (scope `provisioning`, docs/architecture.md §7.5): decode, one
/// `AccountProvisioningService` call, render. The token is checked before the body is read. An
/// answer names usernames, actions and reasons, never a hash, secret or code a row carried.
extension UpgradeAPIHandler {
    /// `PUT /v1/admin/accounts/{username}`: `201` created, `200` updated or already so.
    func provisionAccount(_ request: HTTPRequest, username: String?, now: Int64) throws -> HTTPResponse {
        let token = try admin.authorize(request, scope: .provisioning, now: now)
        let username = try Self.pathUsername(username)
        let body = try JSONBody(request, allowed: nil)
        let action = try provisioning.put(username: username, fields: body.object, by: token.name, now: now)
        return Self.noStoreJSON(
            .object(["username": .string(username), "action": .string(action.rawValue)]),
            status: action == .created ? 201 : 200
        )
    }

    /// `POST /v1/admin/accounts/batch` `{"accounts": [row, ...]}`: one result per row, in order.
    func provisionBatch(_ request: HTTPRequest, now: Int64) throws -> HTTPResponse {
        let token = try admin.authorize(request, scope: .provisioning, now: now)
        let body = try JSONBody(request, allowed: ["accounts"])
        guard case .array(let rows) = body.value("accounts") else {
            throw APIProblem.validation("field 'accounts' must be an array of account objects")
        }
        let results = try provisioning.batch(rows, by: token.name, now: now)
        return Self.noStoreJSON(
            .object([
                "results": .array(
                    results.map { result in
                        var members: [JSONValue.Member] = [
                            .init("index", .integer(Int64(result.index))),
                            .init("username", result.username.map { .string($0) } ?? .null),
                            .init("action", .string(result.action.rawValue)),
                        ]
                        if let reason = result.reason { members.append(.init("reason", .string(reason))) }
                        return .object(members)
                    }
                )
            ])
        )
    }
}
