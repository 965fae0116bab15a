import UpgradeEngine

/// The migration report page (scope `audit`, as `GET /v1/admin/report`).
extension ConsoleHandler {
    /// `GET /report?range=` or `?since=&until=` (`ConsoleReportRange`; nothing: the last 30 days):
    /// `ReportService.report` of that window, the document the API and the CLI give for it. A query
    /// that does not parse is a 400 with the form and the reason, and nothing is read.
    func report(_ context: inout Context) throws -> HTTPResponse {
        let (_, session) = try requireSession(context)
        try require(.audit, session)
        let today = RFC3339.day(of: context.now)
        let range: ConsoleReportRange
        var given: [String: String] = [:]
        do {
            given = try UpgradeAPIHandler.strictQuery(context.request.query, allowed: ConsoleReportRange.parameters)
            range = try ConsoleReportRange.parse(given, now: context.now)
        } catch {
            let message: String
            switch error {
            case let problem as ConsoleReportRange.Problem: message = problem.message
            case let problem as APIProblem: message = problem.detail
            default: throw error
            }
            context.cause = "range"
            let form = ConsoleRender.reportRange(
                chosen: nil,
                since: given["since"] ?? "",
                until: given["until"] ?? "",
                today: today
            )
            return page(
                context,
                status: 400,
                title: "Migration report",
                section: .report,
                ConsolePage.message(message + (message.hasSuffix(".") ? "" : ".") + " Nothing was read.", error: true)
                    + form
            )
        }
        let report = try reports.report(since: range.since, until: range.until, now: context.now)
        let form = ConsoleRender.reportRange(
            chosen: range.preset,
            since: range.firstDay.map(RFC3339.dayString) ?? "",
            until: RFC3339.dayString(range.lastDay),
            today: today
        )
        return page(
            context,
            title: "Migration report, \(range.heading)",
            section: .report,
            form + ConsoleRender.report(report, range: range)
        )
    }
}
