/// The report's accounts per day, from the audit trail's account events. Accounts on passwords at
/// the end of each day are derived backwards from the count at the end of the window: a later
/// conversion, or deletion of a password account, was one more then; a later creation of one, one
/// fewer. Rows that do not say their `credentialKind` (recorded from migration 25 on) count as
/// `password` when created and as unknown, left out of the derivation, when deleted
/// (docs/architecture.md §7.7).
enum AccountsTally {
    static let created: Set<String> = ["account.created", "account.imported", "account.provisioned"]

    /// `window`: the changes of the window; `later`: those after it; `onPasswordsNow`: today's count.
    static func days(
        _ window: [AccountChangeCount],
        later: [AccountChangeCount],
        onPasswordsNow: Int
    ) -> [MigrationReport.AccountsDay] {
        var perDay: [Int64: (created: Int, converted: Int, deleted: Int, net: Int)] = [:]
        for change in window {
            var day = perDay[change.day] ?? (0, 0, 0, 0)
            switch change.event {
            case "account.convertedToApple": day.converted += change.count
            case "account.deleted": day.deleted += change.count
            default: day.created += change.count
            }
            day.net += net(change)
            perDay[change.day] = day
        }
        var atEnd = onPasswordsNow - later.reduce(0) { $0 + net($1) }
        var days: [MigrationReport.AccountsDay] = []
        for day in perDay.keys.sorted(by: >) {
            let tally = perDay[day]!
            days.append(
                MigrationReport.AccountsDay(
                    day: RFC3339.dayString(day),
                    created: tally.created,
                    converted: tally.converted,
                    deleted: tally.deleted,
                    onPasswordsAtEnd: max(0, atEnd)
                )
            )
            atEnd -= tally.net
        }
        return days.reversed()
    }

    /// How `change` moved the count of accounts on passwords.
    static func net(_ change: AccountChangeCount) -> Int {
        if created.contains(change.event) {
            return change.credentialKind == nil || change.credentialKind == "password" ? change.count : 0
        }
        switch change.event {
        case "account.convertedToApple": return -change.count
        case "account.deleted": return change.credentialKind == "password" ? -change.count : 0
        default: return 0
        }
    }
}
