/// A record that `MultiRowInsert` writes: its row's values, in the column order both backends'
/// statements name, appended in place so a chunk of rows fills one array.
protocol InsertableRow {
    func appendRow(to values: inout [SQLValue])
}

extension AccountRecord: InsertableRow {
    /// `id, username, credential_kind, created_at, updated_at, version`
    func appendRow(to values: inout [SQLValue]) {
        values += [
            .text(id), .text(username), .text(credentialKind.rawValue), .integer(createdAt), .integer(updatedAt),
            .integer(version),
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
