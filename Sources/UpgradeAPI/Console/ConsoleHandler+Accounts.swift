import UpgradeEngine

/// The account pages: lookup and deletion.
extension ConsoleHandler {
    /// `GET /accounts?username=`: with `accounts`, the account's overview, open upgrades, latest
    /// audit events and the deletion form (`AdminQueryService.account`, as
    /// `GET /v1/admin/accounts/{username}`); with `audit` only, its audit trail
    /// (`AdminQueryService.searchAudit`, as `GET /v1/admin/audit?account=`).
    func accounts(_ context: inout Context) throws -> HTTPResponse {
        let (_, session) = try requireSession(context)
        if !ConsoleSection.accounts.isVisible(to: session.token) { try require(.accounts, session) }
        let query = try UpgradeAPIHandler.strictQuery(context.request.query, allowed: ["username"])
        let username = query["username"] ?? ""
        let search = ConsoleRender.accountSearch(username: username)
        guard !username.isEmpty else {
            return page(context, title: "Accounts", section: .accounts, search)
        }
        let content: HTML
        do {
            if session.token.allows(.accounts) {
                let overview = try queries.account(username: username)
                content = ConsoleRender.account(overview, csrf: session.csrf)
            } else {
                let trail = try queries.searchAudit(
                    username: username,
                    AuditSearch(limit: AdminQueryService.overviewEvents)
                )
                content = ConsoleRender.auditTrail(username: username, trail.events)
            }
        } catch {
            // The search form stays, with what was wrong.
            let failure: ServiceFailure = error
            let (status, _) = UpgradeProblems.problem(for: failure.kind)
            context.cause = failure.kind == .accountNotFound ? "account-not-found" : nil
            return page(
                context,
                status: status,
                title: "Accounts",
                section: .accounts,
                search + ConsolePage.message(failure.message, error: true)
            )
        }
        return page(context, title: "Accounts", section: .accounts, search + content)
    }

    /// `POST /accounts/delete` (scope `accounts`): the same call as `DELETE /v1/admin/accounts/{username}`
    /// and `upgrade-cli accounts delete`, once `confirm` repeats the username exactly.
    func deleteAccount(_ context: inout Context) throws -> HTTPResponse {
        let (_, session) = try requireSession(context)
        let form = try checkedForm(context, expected: session.csrf, allowed: ["username", "confirm"])
        try require(.accounts, session)
        let username = form["username"] ?? ""
        guard !username.isEmpty, form["confirm"] == username else {
            throw Refusal(
                status: 422,
                message:
                    "To delete the account, type its username exactly into the confirmation field. Nothing was deleted.",
                cause: "confirmation"
            )
        }
        let deletion = try deletions.deleteAndRevoke(
            username: username,
            deletedBy: session.token.name,
            revocations: revocations,
            clock: clock
        )
        if let cause = deletion.revocationError, let id = deletion.revocationID {
            // The deletion is committed and its revocation queued: the worker sends it.
            log.log("error", "revocation", [("revocation", .string(id)), ("cause", .string(cause))])
        }
        return page(
            context,
            title: "Account deleted",
            section: .accounts,
            ConsoleRender.deleted(username: username, deletion)
        )
    }
}
