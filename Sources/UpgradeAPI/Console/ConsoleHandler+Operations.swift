import UpgradeEngine

/// The pages on background work: batch jobs, the webhook outbox and Apple revocations (scope `audit`).
extension ConsoleHandler {
    /// `GET /jobs`: the batch jobs' leases, the latest account imports and the running servers'
    /// keyrings.
    func jobs(_ context: inout Context) throws -> HTTPResponse {
        let (_, session) = try requireSession(context)
        try require(.audit, session)
        let jobs = try queries.batchJobs(now: context.now)
        return page(context, title: "Batch jobs", section: .jobs, ConsoleRender.jobs(jobs, now: context.now))
    }

    /// `GET /webhooks`: the outbox's counts and failed events (as `upgrade-cli webhooks status`),
    /// and, with `accounts` too, the replay form.
    func webhooks(_ context: inout Context) throws -> HTTPResponse {
        let (_, session) = try requireSession(context)
        try require(.audit, session)
        let status = try queries.webhookStatus()
        let replay = session.token.allows(.accounts) ? session.csrf : nil
        return page(context, title: "Webhooks", section: .webhooks, ConsoleRender.webhooks(status, replayCSRF: replay))
    }

    /// `POST /webhooks/replay` (scopes `audit` and `accounts`: it sends account events again): as
    /// `upgrade-cli webhooks replay --since TIME`.
    func replayWebhooks(_ context: inout Context) throws -> HTTPResponse {
        let (_, session) = try requireSession(context)
        let form = try checkedForm(context, expected: session.csrf, allowed: ["since"])
        try require(.audit, session)
        try require(.accounts, session)
        guard let since = form["since"].flatMap(AuditSearch.time) else {
            throw Refusal(
                status: 422,
                message:
                    "Since must be an RFC 3339 date-time (2026-11-24T10:00:00Z) or Unix seconds. Nothing was replayed."
            )
        }
        let count = try WebhookOutbox.replay(since: since, now: context.now, store: store)
        log.log(
            "info",
            "console webhook replay",
            [("admin", .string(session.token.name)), ("events", .integer(Int64(count)))]
        )
        return page(
            context,
            title: "Webhooks replayed",
            section: .webhooks,
            ConsoleRender.replayed(count, since: since)
        )
    }

    /// `GET /revocations`: how many Apple revocations are pending and the first ones due.
    func revocations(_ context: inout Context) throws -> HTTPResponse {
        let (_, session) = try requireSession(context)
        try require(.audit, session)
        let pending = try queries.pendingRevocations()
        return page(context, title: "Apple revocations", section: .revocations, ConsoleRender.revocations(pending))
    }
}
