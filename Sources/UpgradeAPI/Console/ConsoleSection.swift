import UpgradeEngine

/// The console's pages in its navigation, each with the scope a token needs to see it.
enum ConsoleSection: CaseIterable, Sendable {
    case overview, report, accounts, jobs, webhooks, revocations

    var path: String {
        switch self {
        case .overview: "/"
        case .report: "/report"
        case .accounts: "/accounts"
        case .jobs: "/jobs"
        case .webhooks: "/webhooks"
        case .revocations: "/revocations"
        }
    }

    var title: String {
        switch self {
        case .overview: "Overview"
        case .report: "Migration report"
        case .accounts: "Accounts"
        case .jobs: "Batch jobs"
        case .webhooks: "Webhooks"
        case .revocations: "Apple revocations"
        }
    }

    /// Whether a token with `scopes` sees the page: the account page shows what either scope
    /// allows (the overview and deletion with `accounts`, the audit trail with `audit`); the
    /// background work is read with `audit`.
    func isVisible(to token: AdminToken) -> Bool {
        switch self {
        case .overview: true
        case .accounts: token.allows(.accounts) || token.allows(.audit)
        case .report, .jobs, .webhooks, .revocations: token.allows(.audit)
        }
    }
}
