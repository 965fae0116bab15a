/// Account profiles and import progress for `accounts import`.
extension SQLTransaction {
    func upsertAccountProfile(_ profile: AccountProfileRecord) throws(StorageError) {
        try upsertAccountProfiles([profile])
    }

    func upsertAccountProfiles(_ profiles: [AccountProfileRecord]) throws(StorageError) {
        try AccountImportSQL.upsertProfiles.write(profiles) { sql, values throws(StorageError) in try send(sql, values)
        }
    }

    func accountProfile(accountID: String) throws(StorageError) -> AccountProfileRecord? {
        try rows(
            "SELECT \(AccountImportSQL.profileColumns) FROM account_profiles WHERE account_id = $1",
            [.text(accountID)]
        ).first.map(Self.profile)
    }

    /// A profile from its columns in `AccountImportSQL.profileColumns`' order.
    static func profile(_ row: [SQLValue]) -> AccountProfileRecord {
        AccountProfileRecord(
            accountID: row[0].string ?? "",
            email: row[1].string,
            displayName: row[2].string,
            importRun: row[3].string,
            importLine: row[4].int,
            updatedAt: row[5].int ?? 0,
            emailSource: row[6].string.flatMap(ProfileSource.init(rawValue:)),
            displayNameSource: row[7].string.flatMap(ProfileSource.init(rawValue:)),
            fullName: row[8].string.flatMap { PersonName(json: $0) },
            realUserStatus: row[9].int.flatMap { AppleRealUserStatus(rawValue: Int($0)) }
        )
    }

    func deleteRecoveryCodes(accountID: String) throws(StorageError) {
        try rows("DELETE FROM recovery_codes WHERE account_id = $1", [.text(accountID)])
    }

    func storedStates(accountIDs: [String]) throws(StorageError) -> [String: StoredAccountState] {
        guard !accountIDs.isEmpty else { return [:] }
        let ids: [SQLValue] = [.text(JSONValue.array(accountIDs.map { .string($0) }).serializedString)]
        var states = Dictionary(accountIDs.map { ($0, StoredAccountState()) }) { first, _ in first }
        for row in try rows(AccountImportSQL.linksOf, ids) {
            let link = Self.link(row)
            states[link.accountID]?.appleLink = link
        }
        for row in try rows(AccountImportSQL.passwordsOf, ids) {
            let password = Self.passwordCredential(row)
            states[password.accountID]?.password = password
        }
        for row in try rows(AccountImportSQL.totpOf, ids) {
            let enrollment = Self.totpEnrollment(row)
            states[enrollment.accountID]?.totp = enrollment
        }
        for row in try rows(AccountImportSQL.recoveryCodesOf, ids) {
            guard let accountID = row[0].string, let hash = row[1].string else { continue }
            states[accountID]?.recoveryCodeHashes.append(hash)
        }
        for row in try rows(AccountImportSQL.profilesOf, ids) {
            let profile = Self.profile(row)
            states[profile.accountID]?.profile = profile
        }
        return states
    }

    func upsertImportRun(_ run: ImportRunRecord) throws(StorageError) {
        try rows(
            """
            INSERT INTO import_runs (\(AccountImportSQL.runColumns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
            ON CONFLICT (id) DO UPDATE SET source = excluded.source, last_line = excluded.last_line,
                created = excluded.created, updated = excluded.updated, skipped = excluded.skipped,
                failed = excluded.failed, started_at = excluded.started_at, updated_at = excluded.updated_at,
                finished_at = excluded.finished_at
            """,
            [
                .text(run.id), .text(run.source), .integer(run.lastLine), .integer(run.created), .integer(run.updated),
                .integer(run.skipped), .integer(run.failed), .integer(run.startedAt), .integer(run.updatedAt),
                run.finishedAt.map { .integer($0) } ?? .null,
            ]
        )
    }

    func importRun(id: String) throws(StorageError) -> ImportRunRecord? {
        try rows("SELECT \(AccountImportSQL.runColumns) FROM import_runs WHERE id = $1", [.text(id)]).first
            .map(Self.importRunRecord)
    }

    func importRuns(limit: Int) throws(StorageError) -> [ImportRunRecord] {
        try rows(
            "SELECT \(AccountImportSQL.runColumns) FROM import_runs ORDER BY started_at DESC, id DESC LIMIT $1",
            [.integer(Int64(max(0, limit)))]
        ).map(Self.importRunRecord)
    }

    private static func importRunRecord(_ row: [SQLValue]) -> ImportRunRecord {
        ImportRunRecord(
            id: row[0].string ?? "",
            source: row[1].string ?? "",
            lastLine: row[2].int ?? 0,
            created: row[3].int ?? 0,
            updated: row[4].int ?? 0,
            skipped: row[5].int ?? 0,
            failed: row[6].int ?? 0,
            startedAt: row[7].int ?? 0,
            updatedAt: row[8].int ?? 0,
            finishedAt: row[9].int
        )
    }
}

enum AccountImportSQL {
    // What `storedStates` reads: each table's rows of the accounts a JSON array of ids names.
    static let linksOf = DialectSQL {
        "SELECT \(AppleLinkSQL.linkColumns) FROM apple_links WHERE account_id IN (\($0.jsonStrings(1)))"
    }
    static let passwordsOf = DialectSQL {
        "SELECT \(AccountSQL.passwordColumns) FROM password_credentials WHERE account_id IN (\($0.jsonStrings(1)))"
    }
    static let totpOf = DialectSQL {
        "SELECT \(AccountSQL.totpColumns) FROM totp_enrollments WHERE account_id IN (\($0.jsonStrings(1)))"
    }
    static let recoveryCodesOf = DialectSQL {
        "SELECT account_id, code_hash FROM recovery_codes WHERE account_id IN (\($0.jsonStrings(1)))"
    }
    static let profilesOf = DialectSQL {
        "SELECT \(profileColumns) FROM account_profiles WHERE account_id IN (\($0.jsonStrings(1)))"
    }
    static let profileColumns =
        "account_id, email, display_name, import_run, import_line, updated_at, email_source, display_name_source, full_name, real_user_status"
    static let runColumns =
        "id, source, last_line, created, updated, skipped, failed, started_at, updated_at, finished_at"
    static let upsertProfiles = MultiRowInsert(
        "INSERT INTO account_profiles (\(profileColumns))",
        columns: 10,
        tail: """
            ON CONFLICT (account_id) DO UPDATE SET email = excluded.email, display_name = excluded.display_name,
                import_run = excluded.import_run, import_line = excluded.import_line, updated_at = excluded.updated_at,
                email_source = excluded.email_source, display_name_source = excluded.display_name_source,
                full_name = excluded.full_name, real_user_status = excluded.real_user_status
            """
    )
}
