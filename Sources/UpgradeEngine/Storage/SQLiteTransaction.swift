import Foundation

/// `StoreTransaction` over one SQLite connection inside an open transaction.
///
/// Statements are written once, as literals or `static let`s, never built per call: the
/// connection's statement cache finds them again by their text.
struct SQLiteTransaction: StoreTransaction {
    let connection: SQLiteConnection

    @discardableResult
    private func rows(_ sql: String, _ arguments: [SQLValue] = []) throws(StorageError) -> [[SQLValue]] {
        try connection.query(sql, arguments)
    }

    /// Runs an UPDATE guarded by `version = expectedVersion`; no row changed means someone else won.
    private func versionedUpdate(_ sql: String, _ arguments: [SQLValue], what: String) throws(StorageError) {
        try connection.query(sql, arguments)
        guard connection.changes == 1 else {
            throw StorageError(.versionConflict, "\(what) was changed by another request; reload and retry")
        }
    }

    /// Sets one indexed column of one row, and only if its value differs. SQLite deletes and
    /// reinserts the index entry of every column an UPDATE names, even one set to its own value, so
    /// the versioned updates leave indexed columns out and set each through this, and a row whose
    /// indexed values stay as they were costs no index page. `sql` names the new value `?1` and the
    /// row's key `?2`, e.g. `UPDATE t SET c = ?1 WHERE id = ?2 AND c IS NOT ?1`.
    private func setIndexedColumn(_ sql: String, to value: SQLValue, key: String) throws(StorageError) {
        try rows(sql, [value, .text(key)])
    }

    // MARK: Accounts and credentials

    private static let accountColumns = "id, username, credential_kind, created_at, updated_at, version"
    private static let selectAccountByID = "SELECT \(Self.accountColumns) FROM accounts WHERE id = ?"
    private static let selectAccountByUsername = "SELECT \(Self.accountColumns) FROM accounts WHERE username = ?"
    private static let selectAccountsAfterID =
        "SELECT \(Self.accountColumns) FROM accounts WHERE id > ? ORDER BY id LIMIT ?"

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

    func insertAccount(_ account: AccountRecord) throws(StorageError) {
        let username: Username
        do {
            username = try Username(account.username)
        } catch {
            throw StorageError(.constraint, "accounts.username is not a valid username (\(error.code))")
        }
        try rows(
            "INSERT INTO accounts (id, username, credential_kind, created_at, updated_at, version) VALUES (?, ?, ?, ?, ?, ?)",
            [
                .text(account.id), .text(username.value),
                .text(account.credentialKind.rawValue),
                .integer(account.createdAt), .integer(account.updatedAt), .integer(account.version),
            ]
        )
    }

    func account(id: String) throws(StorageError) -> AccountRecord? {
        try rows(Self.selectAccountByID, [.text(id)]).first.map(Self.account)
    }

    func account(username: Username) throws(StorageError) -> AccountRecord? {
        try rows(Self.selectAccountByUsername, [.text(username.value)]).first.map(Self.account)
    }

    func accounts(afterID: String?, limit: Int) throws(StorageError) -> [AccountRecord] {
        try rows(Self.selectAccountsAfterID, [.text(afterID ?? ""), .integer(Int64(limit))]).map(Self.account)
    }

    func updateAccountUsername(
        id: String,
        username: Username,
        expectedVersion: Int64,
        now: Int64
    ) throws(StorageError) {
        try versionedUpdate(
            "UPDATE accounts SET username = ?, updated_at = ?, version = version + 1 WHERE id = ? AND version = ?",
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
            "UPDATE accounts SET credential_kind = ?, updated_at = ?, version = version + 1 WHERE id = ? AND version = ?",
            [.text(kind.rawValue), .integer(now), .text(id), .integer(expectedVersion)],
            what: "account"
        )
    }

    func upsertPasswordCredential(_ credential: PasswordCredentialRecord) throws(StorageError) {
        try rows(
            """
            INSERT INTO password_credentials (account_id, hash, format, updated_at) VALUES (?, ?, ?, ?)
            ON CONFLICT (account_id) DO UPDATE SET hash = excluded.hash, format = excluded.format, updated_at = excluded.updated_at
            """,
            [
                .text(credential.accountID), .text(credential.hash), .text(credential.format),
                .integer(credential.updatedAt),
            ]
        )
    }

    func passwordCredential(accountID: String) throws(StorageError) -> PasswordCredentialRecord? {
        try rows(
            "SELECT account_id, hash, format, updated_at FROM password_credentials WHERE account_id = ?",
            [.text(accountID)]
        )
        .first.map { row in
            PasswordCredentialRecord(
                accountID: row[0].string ?? "",
                hash: row[1].string ?? "",
                format: row[2].string ?? "",
                updatedAt: row[3].int ?? 0
            )
        }
    }

    func deletePasswordCredential(accountID: String) throws(StorageError) -> Bool {
        try rows("DELETE FROM password_credentials WHERE account_id = ?", [.text(accountID)])
        return connection.changes == 1
    }

    // MARK: Second factor

    func upsertTOTPEnrollment(_ enrollment: TOTPEnrollmentRecord) throws(StorageError) {
        try rows(
            """
            INSERT INTO totp_enrollments (account_id, secret_ciphertext, algorithm, digits, period, last_accepted_step, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
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
            "SELECT account_id, secret_ciphertext, algorithm, digits, period, last_accepted_step, created_at FROM totp_enrollments WHERE account_id = ?",
            [.text(accountID)]
        ).first.map { row in
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
    }

    func advanceTOTPStep(accountID: String, step: Int64) throws(StorageError) -> Bool {
        try rows(
            "UPDATE totp_enrollments SET last_accepted_step = ? WHERE account_id = ? AND (last_accepted_step IS NULL OR last_accepted_step < ?)",
            [.integer(step), .text(accountID), .integer(step)]
        )
        return connection.changes == 1
    }

    func insertRecoveryCodes(accountID: String, codeHashes: [String]) throws(StorageError) {
        for hash in codeHashes {
            try rows(
                "INSERT INTO recovery_codes (account_id, code_hash, used_at) VALUES (?, ?, NULL)",
                [.text(accountID), .text(hash)]
            )
        }
    }

    func consumeRecoveryCode(accountID: String, codeHash: String, now: Int64) throws(StorageError) -> Bool {
        try rows(
            "UPDATE recovery_codes SET used_at = ? WHERE account_id = ? AND code_hash = ? AND used_at IS NULL",
            [.integer(now), .text(accountID), .text(codeHash)]
        )
        return connection.changes == 1
    }

    func unusedRecoveryCodeCount(accountID: String) throws(StorageError) -> Int {
        Int(
            try connection.scalarInt(
                "SELECT count(*) FROM recovery_codes WHERE account_id = ? AND used_at IS NULL",
                [.text(accountID)]
            ) ?? 0
        )
    }

    // MARK: Throttling

    /// One statement instead of four: a start request's reads cost about a third as much.
    func passwordCheckSnapshot(username: Username) throws(StorageError) -> PasswordCheckSnapshot {
        // The throttle row and the account are both keyed by the username's enforced form.
        let usernameKey = username.value
        guard
            let row = try rows(
                """
                SELECT t.failures, t.last_failure_at,
                    a.id, a.username, a.credential_kind, a.created_at, a.updated_at, a.version,
                    p.account_id, p.hash, p.format, p.updated_at,
                    EXISTS (SELECT 1 FROM totp_enrollments e WHERE e.account_id = a.id)
                FROM (SELECT ? AS username) AS q
                LEFT JOIN login_throttle t ON t.username_key = q.username
                LEFT JOIN accounts a ON a.username = q.username
                LEFT JOIN password_credentials p ON p.account_id = a.id
                """,
                [.text(usernameKey)]
            ).first
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

    func throttle(usernameKey: String) throws(StorageError) -> ThrottleRecord? {
        try rows(
            "SELECT username_key, failures, last_failure_at FROM login_throttle WHERE username_key = ?",
            [.text(usernameKey)]
        )
        .first.map {
            ThrottleRecord(
                usernameKey: $0[0].string ?? "",
                failures: Int($0[1].int ?? 0),
                lastFailureAt: $0[2].int ?? 0
            )
        }
    }

    func recordFailure(usernameKey: String, now: Int64) throws(StorageError) -> ThrottleRecord {
        try rows(
            """
            INSERT INTO login_throttle (username_key, failures, last_failure_at) VALUES (?, 1, ?)
            ON CONFLICT (username_key) DO UPDATE SET failures = failures + 1, last_failure_at = excluded.last_failure_at
            """,
            [.text(usernameKey), .integer(now)]
        )
        return try throttle(usernameKey: usernameKey)
            ?? ThrottleRecord(usernameKey: usernameKey, failures: 1, lastFailureAt: now)
    }

    func clearFailures(usernameKey: String) throws(StorageError) {
        try rows("DELETE FROM login_throttle WHERE username_key = ?", [.text(usernameKey)])
    }

    // MARK: Apple links

    private static let linkColumns =
        "account_id, sub, team_id, client_id, email, is_private_email, refresh_token_ciphertext, status, linked_at, updated_at, version, email_forwarding_enabled, email_forwarding_at"
    private static let insertLink =
        "INSERT INTO apple_links (\(Self.linkColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    private static let selectLinkByAccount = "SELECT \(Self.linkColumns) FROM apple_links WHERE account_id = ?"
    private static let selectLinkBySub = "SELECT \(Self.linkColumns) FROM apple_links WHERE sub = ?"

    private static func link(_ row: [SQLValue]) -> AppleLinkRecord {
        AppleLinkRecord(
            accountID: row[0].string ?? "",
            sub: row[1].string ?? "",
            teamID: row[2].string ?? "",
            clientID: row[3].string ?? "",
            email: row[4].string,
            isPrivateEmail: row[5].int.map { $0 != 0 },
            refreshTokenCiphertext: row[6].bytes,
            status: AppleLinkStatus(rawValue: row[7].string ?? "") ?? .revoked,
            emailForwardingEnabled: row[11].int.map { $0 != 0 },
            emailForwardingAt: row[12].int,
            linkedAt: row[8].int ?? 0,
            updatedAt: row[9].int ?? 0,
            version: row[10].int ?? 0
        )
    }

    func insertAppleLink(_ link: AppleLinkRecord) throws(StorageError) {
        try rows(
            Self.insertLink,
            [
                .text(link.accountID), .text(link.sub), .text(link.teamID), .text(link.clientID), SQLValue(link.email),
                SQLValue(link.isPrivateEmail), SQLValue(link.refreshTokenCiphertext), .text(link.status.rawValue),
                .integer(link.linkedAt), .integer(link.updatedAt), .integer(link.version),
                SQLValue(link.emailForwardingEnabled), SQLValue(link.emailForwardingAt),
            ]
        )
    }

    func appleLink(accountID: String) throws(StorageError) -> AppleLinkRecord? {
        try rows(Self.selectLinkByAccount, [.text(accountID)]).first.map(
            Self.link
        )
    }

    func appleLink(sub: String) throws(StorageError) -> AppleLinkRecord? {
        try rows(Self.selectLinkBySub, [.text(sub)]).first.map(Self.link)
    }

    /// `sub` is indexed and set apart (`setIndexedColumn`): only a team transfer changes it, so a
    /// notification or a stored refresh token writes no page of the `sub` index.
    func updateAppleLink(_ link: AppleLinkRecord, expectedVersion: Int64) throws(StorageError) {
        try versionedUpdate(
            """
            UPDATE apple_links SET team_id = ?, client_id = ?, email = ?, is_private_email = ?, refresh_token_ciphertext = ?,
                status = ?, email_forwarding_enabled = ?, email_forwarding_at = ?, updated_at = ?, version = version + 1
            WHERE account_id = ? AND version = ?
            """,
            [
                .text(link.teamID), .text(link.clientID), SQLValue(link.email), SQLValue(link.isPrivateEmail),
                SQLValue(link.refreshTokenCiphertext), .text(link.status.rawValue),
                SQLValue(link.emailForwardingEnabled), SQLValue(link.emailForwardingAt), .integer(link.updatedAt),
                .text(link.accountID), .integer(expectedVersion),
            ],
            what: "Apple link"
        )
        try setIndexedColumn(
            "UPDATE apple_links SET sub = ?1 WHERE account_id = ?2 AND sub IS NOT ?1",
            to: .text(link.sub),
            key: link.accountID
        )
    }

    // MARK: Upgrade sessions

    private static let sessionColumns =
        "id, account_id, username_key, service_identifier, status, machine, state_hash, nonce_hash, linked_sub, created_at, expires_at, updated_at, version"
    private static let insertSession =
        "INSERT INTO upgrade_sessions (\(Self.sessionColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    private static let selectSessionByID = "SELECT \(Self.sessionColumns) FROM upgrade_sessions WHERE id = ?"

    func insertUpgradeSession(_ session: UpgradeSessionRecord) throws(StorageError) {
        try rows(
            Self.insertSession,
            [
                .text(session.id), SQLValue(session.accountID), .text(session.usernameKey),
                .text(session.serviceIdentifier),
                .text(session.status), .text(session.machine), SQLValue(session.stateHash), SQLValue(session.nonceHash),
                SQLValue(session.linkedSub), .integer(session.createdAt), .integer(session.expiresAt),
                .integer(session.updatedAt),
                .integer(session.version),
            ]
        )
    }

    func upgradeSession(id: String) throws(StorageError) -> UpgradeSessionRecord? {
        try rows(Self.selectSessionByID, [.text(id)]).first.map(Self.session)
    }

    private static let selectOpenSessions = """
        SELECT \(sessionColumns) FROM upgrade_sessions
        WHERE account_id = ? AND status IN ('started', 'stepUpRequired', 'awaitingAppleCredential', 'converting')
        ORDER BY created_at, id LIMIT ?
        """
    /// Matches the partial index `upgrade_sessions_converting`.
    private static let selectConversionsExpiring = """
        SELECT \(sessionColumns) FROM upgrade_sessions
        WHERE status = 'converting' AND expires_at <= ? ORDER BY expires_at LIMIT ?
        """

    func openUpgradeSessions(accountID: String, limit: Int) throws(StorageError) -> [UpgradeSessionRecord] {
        try rows(Self.selectOpenSessions, [.text(accountID), .integer(Int64(limit))]).map(Self.session)
    }

    func conversions(expiringBy time: Int64, limit: Int) throws(StorageError) -> [UpgradeSessionRecord] {
        try rows(Self.selectConversionsExpiring, [.integer(time), .integer(Int64(limit))]).map(Self.session)
    }

    private static func session(_ row: [SQLValue]) -> UpgradeSessionRecord {
        UpgradeSessionRecord(
            id: row[0].string ?? "",
            accountID: row[1].string,
            usernameKey: row[2].string ?? "",
            serviceIdentifier: row[3].string ?? "",
            status: row[4].string ?? "",
            machine: row[5].string ?? "",
            stateHash: row[6].string,
            nonceHash: row[7].string,
            linkedSub: row[8].string,
            createdAt: row[9].int ?? 0,
            expiresAt: row[10].int ?? 0,
            updatedAt: row[11].int ?? 0,
            version: row[12].int ?? 0
        )
    }

    /// Sets only the columns a transition changes. `account_id`, the one indexed column, never
    /// changes, and naming it here even unchanged rewrote its `upgrade_sessions_account` entry (see
    /// `setIndexedColumn`): one more page per transition.
    func updateUpgradeSession(_ session: UpgradeSessionRecord, expectedVersion: Int64) throws(StorageError) {
        try versionedUpdate(
            """
            UPDATE upgrade_sessions SET status = ?, machine = ?, state_hash = ?, nonce_hash = ?, linked_sub = ?,
                expires_at = ?, updated_at = ?, version = version + 1
            WHERE id = ? AND version = ?
            """,
            [
                .text(session.status), .text(session.machine), SQLValue(session.stateHash),
                SQLValue(session.nonceHash), SQLValue(session.linkedSub), .integer(session.expiresAt),
                .integer(session.updatedAt),
                .text(session.id), .integer(expectedVersion),
            ],
            what: "upgrade"
        )
    }

    // MARK: Team transfer

    private static let transferColumns =
        "account_id, status, machine, old_sub, transfer_sub, new_sub, target_team_id, failure_reason, attempts, window_ends_at, updated_at, version"
    /// SQLite checks an upsert's target first, so a record another request inserted meanwhile is
    /// recognised by its `account_id` before `old_sub`, which it shares, could refuse the row.
    private static let insertTransfer =
        "INSERT INTO transfer_records (\(Self.transferColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1) ON CONFLICT (account_id) DO NOTHING"
    private static let selectTransferByAccount =
        "SELECT \(Self.transferColumns) FROM transfer_records WHERE account_id = ?"
    private static let selectTransferBySub =
        "SELECT \(Self.transferColumns) FROM transfer_records WHERE transfer_sub = ?"
    private static let selectTransfersByStatus =
        "SELECT \(Self.transferColumns) FROM transfer_records WHERE status = ? ORDER BY account_id LIMIT ?"
    private static let selectTransfers =
        "SELECT \(Self.transferColumns) FROM transfer_records ORDER BY account_id LIMIT ?"
    private static let selectTransferByOldSub = "SELECT \(Self.transferColumns) FROM transfer_records WHERE old_sub = ?"

    private static func transfer(_ row: [SQLValue]) -> TransferRecord {
        TransferRecord(
            accountID: row[0].string ?? "",
            status: row[1].string ?? "",
            machine: row[2].string ?? "",
            oldSub: row[3].string ?? "",
            transferSub: row[4].string,
            newSub: row[5].string,
            targetTeamID: row[6].string ?? "",
            failureReason: row[7].string,
            attempts: Int(row[8].int ?? 0),
            windowEndsAt: row[9].int,
            updatedAt: row[10].int ?? 0,
            version: row[11].int ?? 0
        )
    }

    func upsertTransferRecord(_ record: TransferRecord, expectedVersion: Int64?) throws(StorageError) {
        guard let expectedVersion else {
            try rows(
                Self.insertTransfer,
                [
                    .text(record.accountID), .text(record.status), .text(record.machine), .text(record.oldSub),
                    SQLValue(record.transferSub), SQLValue(record.newSub), .text(record.targetTeamID),
                    SQLValue(record.failureReason), .integer(Int64(record.attempts)), SQLValue(record.windowEndsAt),
                    .integer(record.updatedAt),
                ]
            )
            // Read as absent, inserted by another request since: the same lost race as a stale version.
            guard connection.changes == 1 else {
                throw StorageError(.versionConflict, "transfer record was created by another request; reload and retry")
            }
            return
        }
        // The indexed columns are set apart (`setIndexedColumn`): most transitions change `status`
        // alone, and `old_sub` never changes after the insert.
        try versionedUpdate(
            """
            UPDATE transfer_records SET machine = ?, new_sub = ?, target_team_id = ?, failure_reason = ?, attempts = ?,
                window_ends_at = ?, updated_at = ?, version = version + 1
            WHERE account_id = ? AND version = ?
            """,
            [
                .text(record.machine), SQLValue(record.newSub), .text(record.targetTeamID),
                SQLValue(record.failureReason), .integer(Int64(record.attempts)), SQLValue(record.windowEndsAt),
                .integer(record.updatedAt), .text(record.accountID), .integer(expectedVersion),
            ],
            what: "transfer record"
        )
        try setIndexedColumn(
            "UPDATE transfer_records SET status = ?1 WHERE account_id = ?2 AND status IS NOT ?1",
            to: .text(record.status),
            key: record.accountID
        )
        try setIndexedColumn(
            "UPDATE transfer_records SET transfer_sub = ?1 WHERE account_id = ?2 AND transfer_sub IS NOT ?1",
            to: SQLValue(record.transferSub),
            key: record.accountID
        )
    }

    func transferRecord(accountID: String) throws(StorageError) -> TransferRecord? {
        try rows(Self.selectTransferByAccount, [.text(accountID)]).first
            .map(Self.transfer)
    }

    func transferRecord(transferSub: String) throws(StorageError) -> TransferRecord? {
        try rows(Self.selectTransferBySub, [.text(transferSub)])
            .first.map(Self.transfer)
    }

    func transferRecords(status: String?, limit: Int) throws(StorageError) -> [TransferRecord] {
        if let status {
            return try rows(
                Self.selectTransfersByStatus,
                [.text(status), .integer(Int64(limit))]
            ).map(Self.transfer)
        }
        return try rows(
            Self.selectTransfers,
            [.integer(Int64(limit))]
        )
        .map(Self.transfer)
    }

    func transferRecord(oldSub: String) throws(StorageError) -> TransferRecord? {
        try rows(Self.selectTransferByOldSub, [.text(oldSub)]).first
            .map(Self.transfer)
    }

    func transferProgress() throws(StorageError) -> TransferProgress {
        var counts: [String: Int] = [:]
        for row in try rows("SELECT status, count(*) FROM transfer_records GROUP BY status") {
            counts[row[0].string ?? ""] = Int(row[1].int ?? 0)
        }
        let untouched = try connection.scalarInt(
            """
            SELECT count(*) FROM apple_links AS l WHERE l.status = 'linked'
                AND NOT EXISTS (SELECT 1 FROM transfer_records AS t WHERE t.account_id = l.account_id)
            """
        )
        let windowEndsAt = try rows("SELECT max(window_ends_at) FROM transfer_records").first?[0].int
        return TransferProgress(
            recordsByStatus: counts,
            untouchedLinkedAccounts: Int(untouched ?? 0),
            latestWindowEndsAt: windowEndsAt
        )
    }

    func linkedAccountIDs(afterAccountID: String?, limit: Int) throws(StorageError) -> [String] {
        try rows(
            "SELECT account_id FROM apple_links WHERE status = 'linked' AND account_id > ? ORDER BY account_id LIMIT ?",
            [.text(afterAccountID ?? ""), .integer(Int64(limit))]
        ).compactMap { $0[0].string }
    }

    // MARK: Apple notifications

    func recordNotification(jti: String, type: String, now: Int64) throws(StorageError) -> Bool {
        try rows(
            "INSERT INTO apple_notifications (jti, type, received_at) VALUES (?, ?, ?) ON CONFLICT (jti) DO NOTHING",
            [.text(jti), .text(type), .integer(now)]
        )
        return connection.changes == 1
    }

    func notificationSeen(jti: String) throws(StorageError) -> Bool {
        try connection.scalarInt("SELECT count(*) FROM apple_notifications WHERE jti = ?", [.text(jti)]) == 1
    }

    // MARK: Sign-in nonces

    func useSignInNonce(hash: String, expiresAt: Int64, now: Int64) throws(StorageError) -> Bool {
        // Expired rows are refused by their expiry anyway; the index keeps this a range delete.
        try rows("DELETE FROM used_sign_in_nonces WHERE expires_at <= ?", [.integer(now)])
        try rows(
            "INSERT INTO used_sign_in_nonces (nonce_hash, expires_at) VALUES (?, ?) ON CONFLICT (nonce_hash) DO NOTHING",
            [.text(hash), .integer(expiresAt)]
        )
        return connection.changes == 1
    }

    // MARK: Audit

    func appendAudit(_ event: AuditEvent) throws(StorageError) {
        let detail = JWSJSON.object(
            event.detail.sorted { $0.key < $1.key }.map { JWSJSON.Member($0.key, .string($0.value)) }
        )
        .serializedString
        try rows(
            "INSERT INTO audit_events (at, account_id, upgrade_id, event, from_status, to_status, detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                .integer(event.at), SQLValue(event.accountID), SQLValue(event.upgradeID), .text(event.event),
                SQLValue(event.fromStatus), SQLValue(event.toStatus), .text(detail),
            ]
        )
    }

    private static func audit(_ row: [SQLValue]) -> AuditEvent {
        let detailText = row[7].string ?? "{}"
        var detail: [String: String] = [:]
        for member in (try? JWSJSON.parse(Array(detailText.utf8)))?.members ?? [] {
            if let value = member.value.stringValue { detail[member.key] = value }
        }
        return AuditEvent(
            id: row[0].int,
            at: row[1].int ?? 0,
            accountID: row[2].string,
            upgradeID: row[3].string,
            event: row[4].string ?? "",
            fromStatus: row[5].string,
            toStatus: row[6].string,
            detail: detail
        )
    }

    func auditTrail(accountID: String, limit: Int) throws(StorageError) -> [AuditEvent] {
        try rows(
            "SELECT id, at, account_id, upgrade_id, event, from_status, to_status, detail FROM audit_events WHERE account_id = ? ORDER BY id LIMIT ?",
            [.text(accountID), .integer(Int64(limit))]
        ).map(Self.audit)
    }

    func auditTrail(upgradeID: String, limit: Int) throws(StorageError) -> [AuditEvent] {
        try rows(
            "SELECT id, at, account_id, upgrade_id, event, from_status, to_status, detail FROM audit_events WHERE upgrade_id = ? ORDER BY id LIMIT ?",
            [.text(upgradeID), .integer(Int64(limit))]
        ).map(Self.audit)
    }
}
