import UpgradeEngine

/// The admin routes on accounts (docs/architecture.md §7.1).
extension UpgradeAPIHandler {
    /// `DELETE /v1/admin/accounts/{username}` (scope `accounts`): deletes the account in one
    /// transaction, then tries its Apple revocation once, bounded by the revocation client's
    /// timeouts. `appleRevocation` is `done` when Apple answered, `pending` when the queue will
    /// retry it, `none` when the account had no refresh token.
    func deleteAccount(_ request: HTTPRequest, username: String?, now: Int64) throws -> HTTPResponse {
        // The token is checked before anything else: an unauthenticated caller learns nothing.
        let token = try admin.authorize(request, scope: .accounts, now: now)
        let deletion = try deletions.deleteAndRevoke(
            username: try Self.pathUsername(username),
            deletedBy: token.name,
            revocations: revocations,
            clock: clock
        )
        if let cause = deletion.revocationError, let id = deletion.revocationID {
            // The deletion is committed and its revocation queued: the worker sends it.
            log.log("error", "revocation", [("revocation", .string(id)), ("cause", .string(cause))])
        }
        let outcome = deletion.appleRevocation?.rawValue ?? "none"
        return Self.noStoreJSON(
            .object([
                "accountId": .string(deletion.accountID), "deleted": .bool(true), "appleRevocation": .string(outcome),
            ])
        )
    }
}
