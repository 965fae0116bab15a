/// A record that `MultiRowInsert` writes: its row's values, in the column order both backends'
/// statements name, appended in place so a chunk of rows fills one array.
protocol InsertableRow {
    func appendRow(to values: inout [SQLValue])
}

/// An account as `insertAccountRows` stores it: the record and its username's skeleton.
struct AccountRow: InsertableRow {
    var account: AccountRecord
    var usernameSkeleton: String

    /// The columns, for both backends' statements.
    static let columns = "id, username, credential_kind, created_at, updated_at, version, username_skeleton"

    static func rows(_ accounts: [AccountRecord], _ skeletons: [String]) -> [AccountRow] {
        zip(accounts, skeletons).map { AccountRow(account: $0, usernameSkeleton: $1) }
    }

    /// `id, username, credential_kind, created_at, updated_at, version, username_skeleton`
    func appendRow(to values: inout [SQLValue]) {
        values += [
            .text(account.id), .text(account.username), .text(account.credentialKind.rawValue),
            .integer(account.createdAt), .integer(account.updatedAt), .integer(account.version),
            .text(usernameSkeleton),
        ]
    }
}

extension PasswordCredentialRecord: InsertableRow {
    /// `account_id, hash, format, updated_at`
    func appendRow(to values: inout [SQLValue]) {
        values += [.text(accountID), .text(hash), .text(format), .integer(updatedAt)]
    }
}

extension AccountProfileRecord: InsertableRow {
    /// `account_id, email, display_name, import_run, import_line, updated_at, email_source,
    /// display_name_source, full_name, real_user_status`
    func appendRow(to values: inout [SQLValue]) {
        values += [
            .text(accountID), SQLValue(email), SQLValue(displayName), SQLValue(importRun), SQLValue(importLine),
            .integer(updatedAt), SQLValue(emailSource?.rawValue), SQLValue(displayNameSource?.rawValue),
            SQLValue(fullName?.json.serializedString), SQLValue(realUserStatus.map { Int64($0.rawValue) }),
        ]
    }
}

extension AuditEvent: InsertableRow {
    /// `at, account_id, upgrade_id, event, from_status, to_status, detail`
    func appendRow(to values: inout [SQLValue]) {
        values += [
            .integer(at), SQLValue(accountID), SQLValue(upgradeID), .text(event), SQLValue(fromStatus),
            SQLValue(toStatus), .text(detailJSON),
        ]
    }
}
