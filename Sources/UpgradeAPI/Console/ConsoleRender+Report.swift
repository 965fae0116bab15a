import UpgradeEngine

/// The migration report page: the `MigrationReport` that `GET /v1/admin/report` answers, as numbers,
/// tables and charts. Every number carries `data-field`, its path in the report's JSON document, so
/// a test can compare the page with the API's answer.
extension ConsoleRender {
    /// The range chooser: a link per preset (the chosen one marked), and two days for any other
    /// range, filled in with the range shown (or with what was asked, when it was refused). A GET
    /// form, as the page runs no script.
    static func reportRange(chosen: ConsoleReportRange.Preset?, since: String, until: String, today: Int64) -> HTML {
        let presets = HTML.joined(
            ConsoleReportRange.Preset.allCases.map { preset -> HTML in
                let current: HTML = preset == chosen ? #" aria-current="true""# : ""
                let name = preset.name.prefix(1).uppercased() + preset.name.dropFirst()
                let slow = preset == .allTime ? " (slow on large histories)" : ""
                return "<li><a href=\"/report?range=\(preset.rawValue)\"\(current)>\(name)\(slow)</a></li>"
            }
        )
        let earliest = RFC3339.dayString(ConsoleReportRange.earliestDay)
        let latest = RFC3339.dayString(today)
        return """
            <section aria-labelledby="range-heading">
            <h2 id="range-heading">Range</h2>
            <ul class="presets">\(presets)</ul>
            <form method="get" action="/report" class="inline">
            <div class="field"><label for="since">First day (UTC)</label>
            <input type="date" id="since" name="since" value="\(since)" min="\(earliest)" max="\(latest)" required></div>
            <div class="field"><label for="until">Last day (UTC, included)</label>
            <input type="date" id="until" name="until" value="\(until)" min="\(earliest)" max="\(latest)" required></div>
            <button type="submit">Show these days</button>
            </form>
            <p class="hint">The report reads the audit trail of its range, so a long range takes longer: all time reads the whole history, seconds at a million accounts.</p>
            </section>
            """
    }

    /// The report of `range`; the per-day charts have a slot for every day of the range.
    static func report(_ report: MigrationReport, range: ConsoleReportRange) -> HTML {
        let accounts = report.accounts
        let stats = numbers(
            label: "Accounts now",
            [
                ("On a password", "accounts.password", accounts.password),
                ("Legacy password", "accounts.legacyPassword", accounts.legacyPassword),
                ("Apple only", "accounts.appleOnly", accounts.appleOnly),
                ("All accounts", "accounts.total", accounts.total),
            ]
        )
        let days = report.accountsPerDay
        let chartDays = Self.chartDays(days, range: range)
        let span = chartDays.first.map { "\($0.day) to \(chartDays[chartDays.count - 1].day)" } ?? "the window"
        let conversions = ConsoleCharts.bars(
            id: "conversions",
            title: "Conversions per day",
            description:
                "Password accounts converted to Sign in with Apple on each day from \(span), oldest first.",
            points: chartDays.map { (String($0.day.suffix(5)), $0.converted) }
        )
        let remaining = ConsoleCharts.bars(
            id: "remaining",
            title: "Accounts remaining on passwords",
            description:
                "Accounts still on a password at the end of each day from \(span), oldest first; blank before the window's first change, as the count is derived from the changes.",
            points: chartDays.map { (String($0.day.suffix(5)), $0.onPasswordsAtEnd) },
            alternate: true
        )
        let perDay = ConsolePage.table(
            caption: "Accounts per day with a change",
            headers: ["Day", "Created", "Converted", "Deleted", "On passwords at the end"],
            rows: days.enumerated().map { index, day in
                [
                    HTML(text: day.day), cell("accountsPerDay.\(index).created", day.created),
                    cell("accountsPerDay.\(index).converted", day.converted),
                    cell("accountsPerDay.\(index).deleted", day.deleted),
                    cell("accountsPerDay.\(index).onPasswordsAtEnd", day.onPasswordsAtEnd),
                ]
            },
            numeric: [1, 2, 3, 4]
        )
        let since: HTML =
            report.since.map { "<time id=\"window-since\" datetime=\"\($0)\">\($0)</time>" } ?? "the first event"
        let until: HTML = "<time id=\"window-until\" datetime=\"\(report.until)\">\(report.until)</time>"
        return """
            <p class="hint">From \(since) to \(until) (not included), read at \(report.generatedAt).</p>
            <section aria-labelledby="accounts-heading">
            <h2 id="accounts-heading">Accounts</h2>
            \(stats)
            \(conversions)
            \(remaining)
            \(perDay)
            </section>
            \(flow(report.upgrades, key: "upgrades", title: "Upgrades to Sign in with Apple"))
            \(flow(report.passwordChanges, key: "passwordChanges", title: "Strong-password changes"))
            \(backlogs(report))
            """
    }

    /// A range longer than this many days starts its charts at its first day with a change, so that
    /// days typed from 1970 on do not draw some 20,000 empty slots.
    static let chartLeadingDaysLimit: Int64 = 366

    /// Every day of `range`, oldest first, with its conversions (0 on a day without a change) and
    /// the accounts on passwords at its end: carried from the last day with a change, nil before
    /// the window's first change (the document gives the count only from there). All time starts at
    /// its first day with a change.
    static func chartDays(
        _ days: [MigrationReport.AccountsDay],
        range: ConsoleReportRange
    ) -> [(day: String, converted: Int, onPasswordsAtEnd: Int?)] {
        let firstChange = days.first.flatMap { AuditSearch.time($0.day + "T00:00:00Z") }.map { $0 / 86_400 }
        var first = range.firstDay ?? firstChange
        if let start = first, range.lastDay - start >= chartLeadingDaysLimit {
            first = max(start, firstChange ?? range.lastDay - chartLeadingDaysLimit + 1)
        }
        guard let first, first <= range.lastDay else { return [] }
        let byDay = Dictionary(days.map { ($0.day, $0) }) { kept, _ in kept }
        var carried: Int?
        return (first...range.lastDay).map { number in
            let day = RFC3339.dayString(number)
            let changed = byDay[day]
            if let changed { carried = changed.onPasswordsAtEnd }
            return (day, changed?.converted ?? 0, carried)
        }
    }

    /// One flow: its funnel as a chart and a table, and its outcomes in total and by entry.
    static func flow(_ flow: MigrationReport.Flow, key: String, title: String) -> HTML {
        let steps = flow.funnel.steps
        let chart = ConsoleCharts.funnel(
            id: "\(key)-funnel",
            title: "\(title): the funnel",
            description: steps.map { "\($0.name) \($0.count)" }.joined(separator: ", "),
            steps: steps.map { ($0.name, $0.count, $0.rateFromPrevious) }
        )
        let funnel = ConsolePage.table(
            caption: "Funnel",
            headers: ["Step", "Flows", "From the step before", "From the start"],
            rows: steps.enumerated().map { index, step in
                [
                    ConsolePage.mono(step.name), cell("\(key).funnel.steps.\(index).count", step.count),
                    HTML(text: step.rateFromPrevious.map(ConsoleCharts.percent) ?? "–"),
                    HTML(text: step.rateFromStart.map(ConsoleCharts.percent) ?? "–"),
                ]
            },
            numeric: [1, 2, 3]
        )
        let median: HTML =
            flow.funnel.medianSecondsToComplete.map { seconds in
                "<span data-field=\"\(key).funnel.medianSecondsToComplete\">\(seconds)</span> s"
            } ?? "none completed"
        let entries = MigrationReport.Flow.entries
        let columns: [(name: String, path: String, outcomes: MigrationReport.Outcomes)] =
            [("All", "\(key).total", flow.total)]
            + entries.map { ($0, "\(key).byEntry.\($0)", flow.byEntry[$0] ?? MigrationReport.Outcomes()) }
        func row(_ label: String, _ field: String, _ value: (MigrationReport.Outcomes) -> Int) -> [HTML] {
            [ConsolePage.mono(label)] + columns.map { cell("\($0.path).\(field)", value($0.outcomes)) }
        }
        var rows: [[HTML]] = [
            row("started", "started") { $0.started },
            row("credentialAccepted", "credentialAccepted") { $0.credentialAccepted },
            row("stepUpRequired", "stepUpRequired") { $0.stepUpRequired },
        ]
        if key == "upgrades" { rows.append(row("reachedApple", "reachedApple") { $0.reachedApple }) }
        rows.append(row("completed", "completed") { $0.completed })
        for reason in flow.total.cancelled.keys.sorted() {
            rows.append(row("cancelled: \(reason)", "cancelled.\(reason)") { $0.cancelled[reason] ?? 0 })
        }
        for slug in flow.total.failed.keys.sorted() {
            rows.append(row("failed: \(slug)", "failed.\(slug)") { $0.failed[slug] ?? 0 })
        }
        rows.append(row("expired", "expired") { $0.expired })
        rows.append(row("superseded", "superseded") { $0.superseded })
        let outcomes = ConsolePage.table(
            caption: "Outcomes in the window, by entry",
            headers: ["Step or outcome"] + columns.map(\.name),
            rows: rows,
            numeric: Set(1...columns.count)
        )
        return """
            <section aria-labelledby="\(key)-heading">
            <h2 id="\(key)-heading">\(title)</h2>
            \(chart)
            \(funnel)
            <p>Median time from start to completion: \(median).</p>
            \(outcomes)
            </section>
            """
    }

    /// The transfer and the outboxes as they are now.
    static func backlogs(_ report: MigrationReport) -> HTML {
        let transfer = ConsolePage.table(
            caption: "Transfer records by status",
            headers: ["Status", "Records"],
            rows: report.transfer.byStatus.keys.sorted().map { status in
                [ConsolePage.mono(status), cell("transfer.byStatus.\(status)", report.transfer.byStatus[status] ?? 0)]
            } + [
                [
                    HTML("Apple-linked accounts no transfer step has touched"),
                    cell("transfer.untouchedLinkedAccounts", report.transfer.untouchedLinkedAccounts),
                ],
                [
                    HTML("Accounts an earlier transfer left behind (stranded)"),
                    cell("transfer.strandedAccounts", report.transfer.strandedAccounts),
                ],
            ],
            numeric: [1]
        )
        let outboxes = numbers(
            label: "Outboxes now",
            [
                ("Webhooks pending", "outboxes.webhooks.pending", report.outboxes.webhooks.pending),
                ("Webhooks delivered", "outboxes.webhooks.delivered", report.outboxes.webhooks.delivered),
                ("Webhooks failed", "outboxes.webhooks.failed", report.outboxes.webhooks.failed),
                (
                    "Apple revocations pending", "outboxes.appleRevocations.pending",
                    report.outboxes.appleRevocations.pending
                ),
            ]
        )
        return """
            <section aria-labelledby="transfer-heading">
            <h2 id="transfer-heading">Team transfer</h2>
            \(transfer)
            <p>Migration window ends: \(ConsolePage.text(report.transfer.windowEndsAt)).</p>
            </section>
            <section aria-labelledby="outboxes-heading">
            <h2 id="outboxes-heading">Outboxes</h2>
            \(outboxes)
            </section>
            """
    }

    /// A number in a table cell, with its path in the report's JSON.
    static func cell(_ field: String, _ value: Int) -> HTML {
        "<span data-field=\"\(field)\">\(value)</span>"
    }

    /// Headline numbers with their paths.
    static func numbers(label: String, _ items: [(String, String, Int)]) -> HTML {
        let cards = HTML.joined(
            items.map { name, field, value -> HTML in
                "<div class=\"stat\"><dt>\(name)</dt><dd data-field=\"\(field)\">\(value)</dd></div>"
            }
        )
        return "<dl class=\"stats\" aria-label=\"\(label)\">\(cards)</dl>"
    }
}
