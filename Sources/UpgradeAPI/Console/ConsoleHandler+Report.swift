import UpgradeEngine

/// The migration report page (scope `audit`, as `GET /v1/admin/report`).
extension ConsoleHandler {
    /// `GET /report?since=&until=`: `ReportService.report`, the document the API and the CLI give.
    func report(_ context: inout Context) throws -> HTTPResponse {
        let (_, session) = try requireSession(context)
        try require(.audit, session)
        let query = try UpgradeAPIHandler.strictQuery(context.request.query, allowed: ["since", "until"])
        let since = query["since"] ?? ""
        let until = query["until"] ?? ""
        let window = ConsoleRender.reportWindow(since: since, until: until)
        var bounds: [Int64?] = []
        for (name, text) in [("Since", since), ("Until", until)] {
            guard !text.isEmpty else {
                bounds.append(nil)
                continue
            }
            guard let seconds = AuditSearch.time(text) else {
                throw Refusal(
                    status: 422,
                    message: "\(name) must be an RFC 3339 date-time (2026-11-24T10:00:00Z) or Unix seconds."
                )
            }
            bounds.append(seconds)
        }
        let report = try reports.report(since: bounds[0], until: bounds[1], now: context.now)
        return page(context, title: "Migration report", section: .report, window + ConsoleRender.report(report))
    }
}
