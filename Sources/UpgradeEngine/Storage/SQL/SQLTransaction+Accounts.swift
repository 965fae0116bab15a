/// Accounts and their credentials: passwords, TOTP enrollments, recovery codes, the login
/// throttle, and the password check that reads them together.
extension SQLTransaction {
    private static func account(_ row: [SQLValue]) -> AccountRecord {
        AccountRecord(
            id: row[0].string ?? "",
            username: row[1].string ?? "",
            credentialKind: CredentialKind(rawValue: row[2].string ?? "") ?? .password,
            createdAt: row[3].int ?? 0,
            updatedAt: row[4].int ?? 0,
            version: row[5].int ?? 0
        )
    }

    func insertAccountRows(_ accounts: [AccountRecord], usernameSkeletons: [String]) throws(StorageError) {
        guard accounts.count == usernameSkeletons.count else {
            throw StorageError(.constraint, "accounts.username_skeleton: one skeleton per account is needed")
        }
        let records = AccountRow.rows(accounts, usernameSkeletons)
        try AccountSQL.insertAccounts.write(records) { sql, values throws(StorageError) in try send(sql, values) }
    }

    func account(id: String) throws(StorageError) -> AccountRecord? {
        try rows(AccountSQL.selectAccountByID, [.text(id)]).first.map(Self.account)
    }

    func account(username: Username) throws(StorageError) -> AccountRecord? {
        try rows(AccountSQL.selectAccountByUsername, [.text(username.value)]).first.map(Self.account)
    }

    func accounts(usernames: [Username]) throws(StorageError) -> [AccountRecord] {
        guard !usernames.isEmpty else { return [] }
        return try rows(
            AccountSQL.selectAccountsByUsernames,
            [.text(Username.jsonArray(usernames))]
        ).map(Self.account)
    }

    func accounts(afterID: String?, limit: Int) throws(StorageError) -> [AccountRecord] {
        try rows(AccountSQL.selectAccountsAfterID, [.text(afterID ?? ""), .integer(Int64(limit))]).map(Self.account)
    }

    func accounts(usernameSkeletons: [String]) throws(StorageError) -> [AccountRecord] {
        guard !usernameSkeletons.isEmpty else { return [] }
        return try rows(
            AccountSQL.selectAccountsBySkeletons,
            [.text(JSONValue.array(usernameSkeletons.map { .string($0) }).serializedString)]
        ).map(Self.account)
    }

    func accountsSharingUsernameSkeleton() throws(StorageError) -> [(skeleton: String, account: AccountRecord)] {
        try rows(
            """
            SELECT username_skeleton, \(AccountSQL.accountColumns) FROM accounts WHERE username_skeleton IN (
                SELECT username_skeleton FROM accounts WHERE username_skeleton IS NOT NULL
                GROUP BY username_skeleton HAVING count(*) > 1)
            ORDER BY username_skeleton, id
            """
        ).map { (skeleton: $0[0].string ?? "", account: Self.account(Array($0[1...]))) }
    }

    func setUsernameSkeletons(_ skeletons: [(accountID: String, skeleton: String)]) throws(StorageError) {
        guard !skeletons.isEmpty else { return }
        let json = JSONValue.array(
            skeletons.map { .object(["id": .string($0.accountID), "skeleton": .string($0.skeleton)]) }
        )
        try rows(AccountSQL.setUsernameSkeletons, [.text(json.serializedString)])
    }

    func settleSharedUsernameSkeletons() throws(StorageError) {
        try rows(
            """
            UPDATE accounts SET username_skeleton_shared = 0 WHERE username_skeleton_shared = 1 AND username_skeleton IN (
                SELECT username_skeleton FROM accounts WHERE username_skeleton IS NOT NULL
                GROUP BY username_skeleton HAVING count(*) = 1)
            """
        )
    }

    func usernameSkeletonSource() throws(StorageError) -> String? {
        try rows("SELECT version FROM username_skeleton_source WHERE id = 1").first?.first?.string
    }

    func setUsernameSkeletonSource(_ version: String) throws(StorageError) {
        try rows(
            """
            INSERT INTO username_skeleton_source (id, version) VALUES (1, $1)
                ON CONFLICT (id) DO UPDATE SET version = excluded.version
            """,
            [.text(version)]
        )
    }

    func updateAccountUsername(
        id: String,
        username: Username,
        expectedVersion: Int64,
        now: Int64
    ) throws(StorageError) {
        try versionedUpdate(
            "UPDATE accounts SET username = $1, updated_at = $2, version = version + 1 WHERE id = $3 AND version = $4",
            [.text(username.value), .integer(now), .text(id), .integer(expectedVersion)],
            what: "account"
        )
    }

    func updateAccountCredentialKind(
        id: String,
        kind: CredentialKind,
        expectedVersion: Int64,
        now: Int64
    ) throws(StorageError) {
        try versionedUpdate(
            "UPDATE accounts SET credential_kind = $1, updated_at = $2, version = version + 1 WHERE id = $3 AND version = $4",
            [.text(kind.rawValue), .integer(now), .text(id), .integer(expectedVersion)],
            what: "account"
        )
    }

    func upsertPasswordCredential(_ credential: PasswordCredentialRecord) throws(StorageError) {
        try upsertPasswordCredentials([credential])
    }

    func upsertPasswordCredentials(_ credentials: [PasswordCredentialRecord]) throws(StorageError) {
        try AccountSQL.upsertPasswords.write(credentials) { sql, values throws(StorageError) in try send(sql, values) }
    }

    func legacyPasswordCount() throws(StorageError) -> Int {
        // Answered from the partial index `password_credentials_legacy` (migration 20).
        Int(try scalarInt("SELECT COUNT(*) FROM password_credentials WHERE format = 'legacy'") ?? 0)
    }

    func passwordCredential(accountID: String) throws(StorageError) -> PasswordCredentialRecord? {
        try rows(
            "SELECT \(AccountSQL.passwordColumns) FROM password_credentials WHERE account_id = $1",
            [.text(accountID)]
        ).first.map(Self.passwordCredential)
    }

    /// A password credential from its columns in `AccountSQL.passwordColumns`' order.
    static func passwordCredential(_ row: [SQLValue]) -> PasswordCredentialRecord {
        PasswordCredentialRecord(
            accountID: row[0].string ?? "",
            hash: row[1].string ?? "",
            format: row[2].string ?? "",
            updatedAt: row[3].int ?? 0
        )
    }

    func deletePasswordCredential(accountID: String) throws(StorageError) {
        try send("DELETE FROM password_credentials WHERE account_id = $1", [.text(accountID)])
    }

    /// One statement instead of three: one round trip on PostgreSQL.
    func accountSnapshot(id: String) throws(StorageError) -> AccountSnapshot? {
        guard let row = try rows(AccountSQL.selectAccountSnapshot, [.text(id)]).first else { return nil }
        var snapshot = AccountSnapshot(account: Self.account(Array(row[0...5])))
        if let accountID = row[6].string {
            snapshot.credential = PasswordCredentialRecord(
                accountID: accountID,
                hash: row[7].string ?? "",
                format: row[8].string ?? "",
                updatedAt: row[9].int ?? 0
            )
        }
        if row[10].string != nil { snapshot.profile = Self.profile(Array(row[10...19])) }
        return snapshot
    }

    func deleteAccount(id: String) throws(StorageError) -> Bool {
        try rows("DELETE FROM accounts WHERE id = $1", [.text(id)])
        return changes == 1
    }

    // MARK: Second factor

    func upsertTOTPEnrollment(_ enrollment: TOTPEnrollmentRecord) throws(StorageError) {
        try send(
            """
            INSERT INTO totp_enrollments (account_id, secret_ciphertext, algorithm, digits, period, last_accepted_step, created_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            ON CONFLICT (account_id) DO UPDATE SET secret_ciphertext = excluded.secret_ciphertext, algorithm = excluded.algorithm,
                digits = excluded.digits, period = excluded.period, last_accepted_step = excluded.last_accepted_step,
                created_at = excluded.created_at
            """,
            [
                .text(enrollment.accountID), .blob(enrollment.secretCiphertext), .text(enrollment.algorithm.rawValue),
                .integer(Int64(enrollment.digits)), .integer(Int64(enrollment.period)),
                SQLValue(enrollment.lastAcceptedStep),
                .integer(enrollment.createdAt),
            ]
        )
    }

    func totpEnrollment(accountID: String) throws(StorageError) -> TOTPEnrollmentRecord? {
        try rows(
            "SELECT \(AccountSQL.totpColumns) FROM totp_enrollments WHERE account_id = $1",
            [.text(accountID)]
        ).first.map(Self.totpEnrollment)
    }

    /// A TOTP enrollment from its columns in `AccountSQL.totpColumns`' order.
    static func totpEnrollment(_ row: [SQLValue]) -> TOTPEnrollmentRecord {
        TOTPEnrollmentRecord(
            accountID: row[0].string ?? "",
            secretCiphertext: row[1].bytes ?? [],
            algorithm: DigestAlgorithm(rawValue: row[2].string ?? "") ?? .sha1,
            digits: Int(row[3].int ?? 6),
            period: Int(row[4].int ?? 30),
            lastAcceptedStep: row[5].int,
            createdAt: row[6].int ?? 0
        )
    }

    func advanceTOTPStep(accountID: String, step: Int64) throws(StorageError) -> Bool {
        try rows(
            "UPDATE totp_enrollments SET last_accepted_step = $1 WHERE account_id = $2 AND (last_accepted_step IS NULL OR last_accepted_step < $1)",
            [.integer(step), .text(accountID)]
        )
        return changes == 1
    }

    func insertRecoveryCodes(accountID: String, codeHashes: [String]) throws(StorageError) {
        for hash in codeHashes {
            try send(
                "INSERT INTO recovery_codes (account_id, code_hash, used_at) VALUES ($1, $2, NULL)",
                [.text(accountID), .text(hash)]
            )
        }
    }

    func consumeRecoveryCode(accountID: String, codeHash: String, now: Int64) throws(StorageError) -> Bool {
        try rows(
            "UPDATE recovery_codes SET used_at = $1 WHERE account_id = $2 AND code_hash = $3 AND used_at IS NULL",
            [.integer(now), .text(accountID), .text(codeHash)]
        )
        return changes == 1
    }

    func unusedRecoveryCodeCount(accountID: String) throws(StorageError) -> Int {
        Int(
            try scalarInt(
                "SELECT count(*) FROM recovery_codes WHERE account_id = $1 AND used_at IS NULL",
                [.text(accountID)]
            ) ?? 0
        )
    }

    // MARK: Throttling

    /// One statement instead of four: one round trip on PostgreSQL, about a third of the work on SQLite.
    func passwordCheckSnapshot(username: Username) throws(StorageError) -> PasswordCheckSnapshot {
        // The throttle row and the account are both keyed by the username's enforced form.
        let usernameKey = username.value
        guard
            let row = try rows(AccountSQL.selectPasswordCheck, [.text(usernameKey)]).first
        else { return PasswordCheckSnapshot() }
        var snapshot = PasswordCheckSnapshot()
        if let failures = row[0].int {
            snapshot.throttle = ThrottleRecord(
                usernameKey: usernameKey,
                failures: Int(failures),
                lastFailureAt: row[1].int ?? 0
            )
        }
        if row[2].string != nil {
            snapshot.account = Self.account(Array(row[2...7]))
            snapshot.hasSecondFactor = row[12].int == 1
        }
        if let accountID = row[8].string {
            snapshot.credential = PasswordCredentialRecord(
                accountID: accountID,
                hash: row[9].string ?? "",
                format: row[10].string ?? "",
                updatedAt: row[11].int ?? 0
            )
        }
        return snapshot
    }

    private static func throttle(_ row: [SQLValue]) -> ThrottleRecord {
        ThrottleRecord(usernameKey: row[0].string ?? "", failures: Int(row[1].int ?? 0), lastFailureAt: row[2].int ?? 0)
    }

    func throttle(usernameKey: String) throws(StorageError) -> ThrottleRecord? {
        try rows(
            "SELECT username_key, failures, last_failure_at FROM login_throttle WHERE username_key = $1",
            [.text(usernameKey)]
        ).first.map(Self.throttle)
    }

    /// The increment and the row it leaves, in one statement.
    func recordFailure(usernameKey: String, now: Int64) throws(StorageError) -> ThrottleRecord {
        try rows(
            """
            INSERT INTO login_throttle (username_key, failures, last_failure_at) VALUES ($1, 1, $2)
            ON CONFLICT (username_key) DO UPDATE
                SET failures = login_throttle.failures + 1, last_failure_at = excluded.last_failure_at
            RETURNING username_key, failures, last_failure_at
            """,
            [.text(usernameKey), .integer(now)]
        ).first.map(Self.throttle) ?? ThrottleRecord(usernameKey: usernameKey, failures: 1, lastFailureAt: now)
    }

    func clearFailures(usernameKey: String) throws(StorageError) {
        try send("DELETE FROM login_throttle WHERE username_key = $1", [.text(usernameKey)])
    }
}

enum AccountSQL {
    static let accountColumns = "id, username, credential_kind, created_at, updated_at, version"
    static let passwordColumns = "account_id, hash, format, updated_at"
    static let totpColumns =
        "account_id, secret_ciphertext, algorithm, digits, period, last_accepted_step, created_at"
    static let selectAccountByID = "SELECT \(accountColumns) FROM accounts WHERE id = $1"
    static let selectAccountByUsername = "SELECT \(accountColumns) FROM accounts WHERE username = $1"
    static let selectAccountsAfterID =
        "SELECT \(accountColumns) FROM accounts WHERE id > $1 ORDER BY id LIMIT $2"
    static let selectAccountsByUsernames = DialectSQL {
        "SELECT \(accountColumns) FROM accounts WHERE username IN (\($0.jsonStrings(1)))"
    }
    static let selectAccountsBySkeletons = DialectSQL {
        "SELECT \(accountColumns) FROM accounts WHERE username_skeleton IN (\($0.jsonStrings(1)))"
    }
    static let setUsernameSkeletons = DialectSQL(
        sqlite: """
            UPDATE accounts SET username_skeleton = j.value ->> '$.skeleton', username_skeleton_shared = 1
                FROM json_each($1) AS j
                WHERE accounts.id = j.value ->> '$.id'
            """,
        postgres: """
            UPDATE accounts SET username_skeleton = j.skeleton, username_skeleton_shared = 1
                FROM jsonb_to_recordset($1::jsonb) AS j (id TEXT, skeleton TEXT)
                WHERE accounts.id = j.id
            """
    )
    static let selectPasswordCheck = DialectSQL {
        """
        SELECT t.failures, t.last_failure_at,
            a.id, a.username, a.credential_kind, a.created_at, a.updated_at, a.version,
            p.account_id, p.hash, p.format, p.updated_at,
            EXISTS (SELECT 1 FROM totp_enrollments e WHERE e.account_id = a.id)
        FROM (SELECT \($0.parameter(1, as: "text")) AS username) AS q
        LEFT JOIN login_throttle t ON t.username_key = q.username
        LEFT JOIN accounts a ON a.username = q.username
        LEFT JOIN password_credentials p ON p.account_id = a.id
        """
    }
    static let selectAccountSnapshot = """
        SELECT a.id, a.username, a.credential_kind, a.created_at, a.updated_at, a.version,
            p.account_id, p.hash, p.format, p.updated_at,
            \(AccountImportSQL.profileColumns.split(separator: ", ").map { "f.\($0)" }.joined(separator: ", "))
        FROM accounts a
        LEFT JOIN password_credentials p ON p.account_id = a.id
        LEFT JOIN account_profiles f ON f.account_id = a.id
        WHERE a.id = $1
        """
    static let insertAccounts = MultiRowInsert(
        "INSERT INTO accounts (\(AccountRow.columns))",
        columns: 7
    )
    static let upsertPasswords = MultiRowInsert(
        "INSERT INTO password_credentials (account_id, hash, format, updated_at)",
        columns: 4,
        tail:
            "ON CONFLICT (account_id) DO UPDATE SET hash = excluded.hash, format = excluded.format, updated_at = excluded.updated_at"
    )
}
