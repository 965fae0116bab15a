import UpgradeEngine

/// The report page's window, from its query (docs/architecture.md §7.8): a preset (`range=7d`,
/// `30d`, `90d` or `all`) or two UTC days, both included (`since=YYYY-MM-DD&until=YYYY-MM-DD`, what
/// `<input type="date">` sends); no parameter at all is the last 30 days. The report is linear in the
/// audit trail it reads, so only `all` reads the whole history. Anything else is a `Problem`, shown
/// with a 400 before anything is read. Pure: the caller passes `now`.
struct ConsoleReportRange: Equatable, Sendable {
    enum Preset: String, CaseIterable, Sendable {
        case last7Days = "7d"
        case last30Days = "30d"
        case last90Days = "90d"
        case allTime = "all"

        /// Days including today; nil: the whole history.
        var days: Int64? {
            switch self {
            case .last7Days: 7
            case .last30Days: 30
            case .last90Days: 90
            case .allTime: nil
            }
        }

        /// What the page calls it, in its heading and in its link.
        var name: String {
            switch self {
            case .last7Days: "last 7 days"
            case .last30Days: "last 30 days"
            case .last90Days: "last 90 days"
            case .allTime: "all time"
            }
        }
    }

    /// Why the query was refused, in words for the page.
    struct Problem: Error, Equatable {
        let message: String
    }

    static let parameters: Set<String> = ["range", "since", "until"]
    /// What the page shows when asked nothing.
    static let defaultPreset = Preset.last30Days
    /// The earliest day a custom range may start on.
    static let earliestDay: Int64 = 0

    /// The preset chosen; nil for two days.
    let preset: Preset?
    /// The start, inclusive: the start of a UTC day; nil: from the first event.
    let since: Int64?
    /// The end, exclusive: `now` for a range that includes today, else the start of the day after it.
    let until: Int64
    /// The first day of the range (days since 1970-01-01, UTC); nil: the first day with an event.
    let firstDay: Int64?
    /// The last day of the range.
    let lastDay: Int64

    /// The range a query asks for at `now`.
    static func parse(_ query: [String: String], now: Int64) throws(Problem) -> ConsoleReportRange {
        let today = RFC3339.day(of: now)
        let (since, until) = (query["since"], query["until"])
        if let name = query["range"] {
            guard since == nil, until == nil else {
                throw Problem(message: "Choose a preset range or two days (since and until), not both.")
            }
            guard let preset = Preset(rawValue: name) else {
                let names = Preset.allCases.map(\.rawValue).joined(separator: ", ")
                throw Problem(message: "range must be one of \(names); for other days give since and until.")
            }
            return ConsoleReportRange(preset: preset, now: now)
        }
        guard since != nil || until != nil else { return ConsoleReportRange(preset: defaultPreset, now: now) }
        guard let since, let until else {
            throw Problem(message: "A range of days needs both since and until (YYYY-MM-DD, UTC).")
        }
        let first = try day(since, name: "since")
        let last = try day(until, name: "until")
        guard first <= last else {
            throw Problem(message: "since (\(since)) is after until (\(until)): the range would be empty.")
        }
        guard last <= today else {
            throw Problem(
                message:
                    "until (\(until)) is in the future: the last day can be today (\(RFC3339.dayString(today)), UTC) at most."
            )
        }
        return ConsoleReportRange(
            preset: nil,
            since: first * 86_400,
            until: last == today ? now : (last + 1) * 86_400,
            firstDay: first,
            lastDay: last
        )
    }

    /// The preset's range at `now`: from the start of the UTC day `days - 1` days before today to now.
    init(preset: Preset, now: Int64) {
        let today = RFC3339.day(of: now)
        let first = preset.days.map { today - ($0 - 1) }
        self.init(preset: preset, since: first.map { $0 * 86_400 }, until: now, firstDay: first, lastDay: today)
    }

    private init(preset: Preset?, since: Int64?, until: Int64, firstDay: Int64?, lastDay: Int64) {
        self.preset = preset
        self.since = since
        self.until = until
        self.firstDay = firstDay
        self.lastDay = lastDay
    }

    /// What the page's heading says: the preset's name and its days, or the days.
    var heading: String {
        let last = RFC3339.dayString(lastDay)
        let days = firstDay.map { first in first == lastDay ? last : "\(RFC3339.dayString(first)) to \(last)" }
        switch (preset, days) {
        case (let preset?, let days?): return "\(preset.name), \(days)"
        case (let preset?, nil): return "\(preset.name), to \(last)"
        case (nil, let days?): return days
        case (nil, nil): return "to \(last)"
        }
    }

    /// A day as `<input type="date">` sends it: `YYYY-MM-DD`, exactly, a real day, not before 1970.
    static func day(_ text: String, name: String) throws(Problem) -> Int64 {
        let bytes = Array(text.utf8)
        let shaped =
            bytes.count == 10 && bytes[4] == UInt8(ascii: "-") && bytes[7] == UInt8(ascii: "-")
            && bytes.enumerated().allSatisfy { index, byte in index == 4 || index == 7 || (0x30...0x39).contains(byte) }
        guard shaped, let seconds = AuditSearch.time(text + "T00:00:00Z") else {
            throw Problem(message: "\(name) must be a day written YYYY-MM-DD (UTC), such as 2026-11-01.")
        }
        guard seconds >= earliestDay * 86_400 else {
            throw Problem(message: "\(name) must be 1970-01-01 or later.")
        }
        return seconds / 86_400
    }
}
