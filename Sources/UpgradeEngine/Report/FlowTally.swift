/// Counts one flow's audited transitions into `MigrationReport.Outcomes`: in total, by entry and per
/// day. Which transition is which step (docs/architecture.md §7.7):
/// - `started`: the flow's first transition (from `started`); `credentialAccepted` when it moved on
///   rather than ending;
/// - `stepUpRequired`, `reachedApple`: a move into `stepUpRequired`, `awaitingAppleCredential`;
/// - `completed`, `expired`: a move into that status;
/// - `superseded`: the `superseded` event, or a failure with problem `superseded`;
/// - `cancelled` by the detail's `reason`, `failed` by the detail's `problem` as the failing call was
///   answered (`answeredAs`; `unknown` without one).
struct FlowTally {
    private(set) var total = MigrationReport.Outcomes()
    private(set) var byEntry: [String: MigrationReport.Outcomes] = Dictionary(
        uniqueKeysWithValues: MigrationReport.Flow.entries.map { ($0, MigrationReport.Outcomes()) }
    )
    private(set) var perDay: [Int64: MigrationReport.Outcomes] = [:]

    mutating func add(_ step: FlowStepCount) {
        let entry = step.entry.flatMap { MigrationReport.Flow.entries.contains($0) ? $0 : nil } ?? "unknown"
        Self.add(step, to: &total)
        Self.add(step, to: &byEntry[entry, default: MigrationReport.Outcomes()])
        Self.add(step, to: &perDay[step.day, default: MigrationReport.Outcomes()])
    }

    static let endings: Set<String> = ["failed", "cancelled", "expired"]

    /// Stored reasons whose calls are answered as another reason: the report counts a failure as the
    /// client saw it. Apple refusing a code is stored as `apple-exchange-failed` and answered as
    /// `invalid-authorization-code`; rows from before `apple-unavailable` existed may be an outage
    /// counted there too.
    static let answeredAs = [
        UpgradeFailureReason.appleExchangeFailed.rawValue: UpgradeFailureReason.invalidAuthorizationCode.rawValue
    ]

    static func add(_ step: FlowStepCount, to outcomes: inout MigrationReport.Outcomes) {
        let count = step.count
        let event = step.event.split(separator: ".", maxSplits: 1).last.map(String.init) ?? ""
        let moved = step.fromStatus != step.toStatus
        if step.fromStatus == "started" {
            outcomes.started += count
            if let to = step.toStatus, !endings.contains(to) { outcomes.credentialAccepted += count }
        }
        switch step.toStatus {
        case "stepUpRequired" where moved: outcomes.stepUpRequired += count
        case "awaitingAppleCredential" where moved: outcomes.reachedApple += count
        case "completed" where moved: outcomes.completed += count
        case "expired" where moved: outcomes.expired += count
        case "cancelled" where moved, "failed" where moved:
            if event == "superseded" || step.problem == "superseded" {
                outcomes.superseded += count
            } else if step.toStatus == "cancelled" {
                outcomes.cancelled[step.reason ?? "unknown", default: 0] += count
            } else {
                let problem = step.problem.map { Self.answeredAs[$0] ?? $0 } ?? "unknown"
                outcomes.failed[problem, default: 0] += count
            }
        default: break
        }
    }

    /// The flow's section of the report, its funnel through `steps` (names of `Outcomes` counts).
    func flow(steps: [String], median: Int64?) -> MigrationReport.Flow {
        let days = perDay.keys.sorted().map {
            MigrationReport.Day(day: RFC3339.dayString($0), outcomes: perDay[$0]!)
        }
        var funnel: [MigrationReport.Funnel.Step] = []
        for name in steps {
            let count = Self.count(name, in: total)
            funnel.append(
                MigrationReport.Funnel.Step(
                    name: name,
                    count: count,
                    rateFromPrevious: funnel.last.flatMap { Self.rate(count, of: $0.count) },
                    rateFromStart: funnel.first.flatMap { Self.rate(count, of: $0.count) }
                )
            )
        }
        return MigrationReport.Flow(
            total: total,
            byEntry: byEntry,
            perDay: days,
            funnel: MigrationReport.Funnel(steps: funnel, medianSecondsToComplete: median)
        )
    }

    static func count(_ step: String, in outcomes: MigrationReport.Outcomes) -> Int {
        switch step {
        case "started": outcomes.started
        case "credentialAccepted": outcomes.credentialAccepted
        case "stepUpRequired": outcomes.stepUpRequired
        case "reachedApple": outcomes.reachedApple
        case "completed": outcomes.completed
        default: 0
        }
    }

    /// `part / whole` to four decimals; nil when `whole` is 0.
    static func rate(_ part: Int, of whole: Int) -> Double? {
        guard whole > 0 else { return nil }
        return (Double(part) / Double(whole) * 10_000).rounded() / 10_000
    }
}
