import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// The rows the collisions below run into. Every value bound carries `marker`, so a message that
/// quoted one would show it.
private enum Seed {
    static let marker = "s3cret"
    static let alice = "s3cret-account-alice"
    static let bob = "s3cret-account-bob"
    static let aliceSub = "001.s3cret.alice"
    static let oldSub = "001.s3cret.old"
    static let transferSub = "001.s3cret.transfer"
    static let sessionID = "upg_s3cret"
    static let codeHash = "s3cret-code-hash"
    static let jti = "s3cret-jti"
    static let nonceHash = "s3cret-nonce-hash"
    static let job = "s3cret-job"
    static let clientKey = "s3cret-client"
    static let now: Int64 = 1_700_000_000

    static func account(_ id: String, _ username: String) -> AccountRecord {
        AccountRecord(id: id, username: username, credentialKind: .password, createdAt: now, updatedAt: now)
    }

    static func link(_ accountID: String, sub: String) -> AppleLinkRecord {
        AppleLinkRecord(
            accountID: accountID,
            sub: sub,
            teamID: "TEAMA12345",
            clientID: "com.example.app",
            email: nil,
            isPrivateEmail: nil,
            refreshTokenCiphertext: nil,
            status: .linked,
            linkedAt: now,
            updatedAt: now
        )
    }

    static func transfer(_ accountID: String, oldSub: String, transferSub: String) -> TransferRecord {
        TransferRecord(
            accountID: accountID,
            status: "transferPrepared",
            machine: "{}",
            oldSub: oldSub,
            transferSub: transferSub,
            newSub: nil,
            targetTeamID: "TEAMB12345",
            failureReason: nil,
            attempts: 1,
            windowEndsAt: nil,
            updatedAt: now
        )
    }

    static func session(_ id: String) -> UpgradeSessionRecord {
        UpgradeSessionRecord(
            id: id,
            accountID: alice,
            usernameKey: "s3cret-alice",
            serviceIdentifier: "example.com",
            status: "started",
            machine: "{}",
            stateHash: nil,
            nonceHash: nil,
            linkedSub: nil,
            createdAt: now,
            expiresAt: now + 600,
            updatedAt: now
        )
    }

    static let ticketHash = "s3cret-ticket-hash"
    static let changeID = "pwc_s3cret"

    static func change(_ id: String) -> PasswordChangeRecord {
        PasswordChangeRecord(
            id: id,
            accountID: alice,
            usernameKey: "s3cret-alice",
            serviceIdentifier: "example.com",
            status: "stepUpRequired",
            machine: "{}",
            newPasswordHash: "s3cret-new-hash",
            createdAt: now,
            expiresAt: now + 300,
            updatedAt: now
        )
    }

    static func ticket(_ accountID: String) -> UpgradeTicketRecord {
        UpgradeTicketRecord(
            ticketHash: ticketHash,
            accountID: accountID,
            secondFactorVerified: false,
            createdAt: now,
            expiresAt: now + 300
        )
    }

    static let revocationID = "s3cret-revocation"

    static func revocation(_ accountID: String) -> AppleRevocationRecord {
        AppleRevocationRecord(
            id: revocationID,
            accountID: accountID,
            tokenCiphertext: Array("s3cret-sealed".utf8),
            clientID: "com.example.app",
            createdAt: now,
            nextAttemptAt: now
        )
    }

    static let webhookID = "msg_s3cret-webhook"

    static func webhookEvent(_ accountID: String) -> WebhookEventRecord {
        WebhookEventRecord(
            id: webhookID,
            accountID: accountID,
            type: "account.deleted",
            payload: "{}",
            createdAt: now,
            nextAttemptAt: now
        )
    }

    /// A database holding one row behind each unique constraint.
    static func database(_ backend: Backend) throws -> TestDatabase {
        let db = try backend.database()
        try db.store.write { tx in
            try tx.insertAccount(account(alice, "s3cret-alice"))
            try tx.insertAccount(account(bob, "s3cret-bob"))
            try tx.upsertPasswordCredential(
                PasswordCredentialRecord(accountID: alice, hash: "s3cret-hash", format: "argon2id", updatedAt: now)
            )
            try tx.upsertTOTPEnrollment(
                TOTPEnrollmentRecord(
                    accountID: alice,
                    secretCiphertext: Array("s3cret".utf8),
                    algorithm: .sha1,
                    digits: 6,
                    period: 30,
                    lastAcceptedStep: nil,
                    createdAt: now
                )
            )
            try tx.insertRecoveryCodes(accountID: alice, codeHashes: [codeHash])
            _ = try tx.recordFailure(usernameKey: "s3cret-alice", now: now)
            try tx.insertAppleLink(link(alice, sub: aliceSub))
            try tx.insertUpgradeSession(session(sessionID))
            try tx.upsertTransferRecord(transfer(alice, oldSub: oldSub, transferSub: transferSub), expectedVersion: nil)
            try tx.appendAudit(AuditEvent(at: now, accountID: alice, upgradeID: nil, event: "s3cret.event"))
            _ = try tx.recordNotification(jti: jti, type: "s3cret-type", now: now)
            _ = try tx.useSignInNonce(hash: nonceHash, expiresAt: now + 600, now: now)
            try tx.setClientThrottle(clientKey: clientKey, paidOffAt: now * 1000)
            _ = try tx.acquireJobLease(
                JobLeaseRecord(
                    job: job,
                    holder: "h",
                    token: "t",
                    acquiredAt: now,
                    heartbeatAt: now,
                    expiresAt: now + 30
                ),
                now: now
            )
            try tx.insertUpgradeTicket(ticket(alice), now: now)
            try tx.insertAppleRevocation(revocation(alice))
            try tx.insertPasswordChange(change(changeID))
            try tx.insertWebhookEvent(webhookEvent(alice))
        }
        return db
    }

    /// A statement the protocol offers no way to run (its upserts turn these collisions into
    /// updates or no-ops), run on the transaction's own connection.
    static func raw(_ tx: any StoreTransaction, _ sql: String, _ arguments: [SQLValue]) throws {
        try TestDatabase.raw(tx, sql, arguments)
    }
}

/// One write that breaks each UNIQUE and PRIMARY KEY constraint of the schema, through the store's
/// own methods wherever one can.
enum UniqueCollision: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case accountsID, accountsUsername, accountsUsernameSkeleton, passwordCredentialsAccount, totpEnrollmentsAccount,
        recoveryCodesCode
    case loginThrottleUsernameKey, appleLinksAccount, appleLinksSub, upgradeSessionsID, transferRecordsAccount
    case transferRecordsOldSub, transferRecordsTransferSub, auditEventsID, appleNotificationsJTI
    case usedSignInNoncesHash, jobLeasesJob, clientThrottleClientKey
    case upgradeTicketsHash, passwordChangesID
    case appleRevocationsID
    case accountProfilesAccount, importRunsID
    case webhookOutboxID, usernameSkeletonSourceID, hashParameterSetsID, adminTokenUsesToken, consoleSessionsHash
    case keyChecksKeyID
    case retiredTransferRecordsID, serveInstancesID

    var testDescription: String { rawValue }

    var constraint: StorageError.Constraint {
        switch self {
        case .accountsID: .accountsID
        case .accountsUsername: .accountsUsername
        case .accountsUsernameSkeleton: .accountsUsernameSkeleton
        case .passwordCredentialsAccount: .passwordCredentialsAccount
        case .totpEnrollmentsAccount: .totpEnrollmentsAccount
        case .recoveryCodesCode: .recoveryCodesCode
        case .loginThrottleUsernameKey: .loginThrottleUsernameKey
        case .appleLinksAccount: .appleLinksAccount
        case .appleLinksSub: .appleLinksSub
        case .upgradeSessionsID: .upgradeSessionsID
        case .transferRecordsAccount: .transferRecordsAccount
        case .transferRecordsOldSub: .transferRecordsOldSub
        case .transferRecordsTransferSub: .transferRecordsTransferSub
        case .auditEventsID: .auditEventsID
        case .appleNotificationsJTI: .appleNotificationsJTI
        case .usedSignInNoncesHash: .usedSignInNoncesHash
        case .jobLeasesJob: .jobLeasesJob
        case .clientThrottleClientKey: .clientThrottleClientKey
        case .upgradeTicketsHash: .upgradeTicketsHash
        case .appleRevocationsID: .appleRevocationsID
        case .passwordChangesID: .passwordChangesID
        case .accountProfilesAccount: .accountProfilesAccount
        case .importRunsID: .importRunsID
        case .webhookOutboxID: .webhookOutboxID
        case .usernameSkeletonSourceID: .usernameSkeletonSourceID
        case .hashParameterSetsID: .hashParameterSetsID
        case .adminTokenUsesToken: .adminTokenUsesToken
        case .consoleSessionsHash: .consoleSessionsHash
        case .keyChecksKeyID: .keyChecksKeyID
        case .retiredTransferRecordsID: .retiredTransferRecordsID
        case .serveInstancesID: .serveInstancesID
        }
    }

    func collide(_ tx: any StoreTransaction) throws {
        switch self {
        case .accountsID:
            try tx.insertAccount(Seed.account(Seed.alice, "s3cret-carol"))
        case .accountsUsername:
            try tx.insertAccount(Seed.account("s3cret-account-carol", "S3CRET-Alice"))
        case .accountsUsernameSkeleton:
            // The row alone, past the look-alike check: the partial unique index refuses it.
            try tx.insertAccountRows([Seed.account("s3cret-account-carol", "s3cret-\u{251}lice")])
        case .passwordCredentialsAccount:
            try Seed.raw(
                tx,
                "INSERT INTO password_credentials (account_id, hash, format, updated_at) VALUES (?, ?, 'argon2id', 1)",
                [.text(Seed.alice), .text("s3cret-other-hash")]
            )
        case .totpEnrollmentsAccount:
            try Seed.raw(
                tx,
                """
                INSERT INTO totp_enrollments (account_id, secret_ciphertext, algorithm, digits, period, created_at)
                VALUES (?, ?, 'SHA1', 6, 30, 1)
                """,
                [.text(Seed.alice), .blob(Array("s3cret-other".utf8))]
            )
        case .recoveryCodesCode:
            try tx.insertRecoveryCodes(accountID: Seed.alice, codeHashes: [Seed.codeHash])
        case .loginThrottleUsernameKey:
            try Seed.raw(
                tx,
                "INSERT INTO login_throttle (username_key, failures, last_failure_at) VALUES (?, 1, 1)",
                [.text("s3cret-alice")]
            )
        case .appleLinksAccount:
            try tx.insertAppleLink(Seed.link(Seed.alice, sub: "001.s3cret.other"))
        case .appleLinksSub:
            try tx.insertAppleLink(Seed.link(Seed.bob, sub: Seed.aliceSub))
        case .upgradeSessionsID:
            try tx.insertUpgradeSession(Seed.session(Seed.sessionID))
        case .transferRecordsAccount:
            // The store's insert reads this collision as a lost race (`.versionConflict`).
            try Seed.raw(
                tx,
                """
                INSERT INTO transfer_records (account_id, status, machine, old_sub, target_team_id, updated_at)
                VALUES (?, 'pending', '{}', ?, 'TEAMB12345', 1)
                """,
                [.text(Seed.alice), .text("001.s3cret.another")]
            )
        case .transferRecordsOldSub:
            try tx.upsertTransferRecord(
                Seed.transfer(Seed.bob, oldSub: Seed.oldSub, transferSub: "001.s3cret.bob"),
                expectedVersion: nil
            )
        case .transferRecordsTransferSub:
            try tx.upsertTransferRecord(
                Seed.transfer(Seed.bob, oldSub: "001.s3cret.bob", transferSub: Seed.transferSub),
                expectedVersion: nil
            )
        case .auditEventsID:
            try Seed.raw(
                tx,
                "INSERT INTO audit_events (id, at, event) SELECT id, 1, ? FROM audit_events LIMIT 1",
                [.text("s3cret.again")]
            )
        case .appleNotificationsJTI:
            try Seed.raw(
                tx,
                "INSERT INTO apple_notifications (jti, type, received_at) VALUES (?, 'x', 1)",
                [.text(Seed.jti)]
            )
        case .usedSignInNoncesHash:
            try Seed.raw(
                tx,
                "INSERT INTO used_sign_in_nonces (nonce_hash, expires_at) VALUES (?, 1)",
                [.text(Seed.nonceHash)]
            )
        case .jobLeasesJob:
            try Seed.raw(
                tx,
                "INSERT INTO job_leases (job, holder, token, acquired_at, heartbeat_at, expires_at) VALUES (?, 'h', 's3cret.token', 1, 1, 2)",
                [.text(Seed.job)]
            )
        case .clientThrottleClientKey:
            try Seed.raw(
                tx,
                "INSERT INTO client_throttle (client_key, paid_off_at) VALUES (?, 1)",
                [.text(Seed.clientKey)]
            )
        case .upgradeTicketsHash:
            try tx.insertUpgradeTicket(Seed.ticket(Seed.bob), now: Seed.now)
        case .appleRevocationsID:
            try tx.insertAppleRevocation(Seed.revocation(Seed.bob))
        case .passwordChangesID:
            try tx.insertPasswordChange(Seed.change(Seed.changeID))
        case .accountProfilesAccount:
            // The store upserts profiles; a second plain INSERT is what the constraint refuses.
            try tx.upsertAccountProfile(
                AccountProfileRecord(
                    accountID: Seed.alice,
                    email: nil,
                    displayName: nil,
                    importRun: nil,
                    importLine: nil,
                    updatedAt: Seed.now
                )
            )
            try Seed.raw(
                tx,
                "INSERT INTO account_profiles (account_id, email, updated_at) VALUES (?, ?, 1)",
                [.text(Seed.alice), .text("s3cret@example.com")]
            )
        case .importRunsID:
            try tx.upsertImportRun(
                ImportRunRecord(id: "s3cret-run", source: "s3cret.csv", lastLine: 0, startedAt: 1, updatedAt: 1)
            )
            try Seed.raw(
                tx,
                "INSERT INTO import_runs (id, source, last_line, started_at, updated_at) VALUES (?, ?, 0, 1, 1)",
                [.text("s3cret-run"), .text("s3cret.csv")]
            )
        case .webhookOutboxID:
            try tx.insertWebhookEvent(Seed.webhookEvent(Seed.bob))
        case .usernameSkeletonSourceID:
            // The store upserts the one row; a second plain INSERT is what the key refuses.
            try Seed.raw(tx, "INSERT INTO username_skeleton_source (id, version) VALUES (1, ?)", [.text("s3cret-icu")])
        case .hashParameterSetsID:
            let record = HashParameterSetRecord(id: 1, kind: "hmac", sealed: Array("s3cret".utf8), createdAt: Seed.now)
            try tx.insertHashParameterSet(record)
            try tx.insertHashParameterSet(record)
        case .adminTokenUsesToken:
            // The store upserts a token's row; a second plain INSERT is what the key refuses.
            try tx.recordAdminTokenUse(name: "s3cret-token", createdAt: 1, at: Seed.now)
            try Seed.raw(
                tx,
                "INSERT INTO admin_token_uses (name, created_at, last_used_at) VALUES (?, 1, 1)",
                [.text("s3cret-token")]
            )
        case .consoleSessionsHash:
            let session = ConsoleSessionRecord(
                hash: "s3cret-hash",
                tokenName: "s3cret-token",
                tokenFingerprint: "s3cret-fingerprint",
                createdAt: Seed.now,
                expiresAt: Seed.now + 900
            )
            try tx.insertConsoleSession(session)
            try tx.insertConsoleSession(session)
        case .keyChecksKeyID:
            // The store inserts with ON CONFLICT DO NOTHING; a second plain INSERT is what the key refuses.
            _ = try tx.insertKeyCheck(keyID: "k1", sealed: Array("s3cret".utf8), now: Seed.now)
            try Seed.raw(
                tx,
                "INSERT INTO key_checks (key_id, sealed, created_at) VALUES ('k1', ?, 1)",
                [.blob(Array("s3cret".utf8))]
            )
        case .retiredTransferRecordsID:
            // Ids come from the column; a second row given a taken id is what the key refuses.
            for _ in 0..<2 {
                try Seed.raw(
                    tx,
                    """
                    INSERT INTO retired_transfer_records (id, account_id, status, machine, old_sub, target_team_id,
                        attempts, updated_at, version, retired_at) VALUES (7, ?, 'transferred', '{}', 's3cret-sub',
                        'TEAMB67890', 2, 1, 3, 1)
                    """,
                    [.text(Seed.alice)]
                )
            }
        case .serveInstancesID:
            // The store upserts; a plain second insert of one id is what the key refuses.
            for _ in 0..<2 {
                try Seed.raw(
                    tx,
                    """
                    INSERT INTO serve_instances (instance_id, host, pid, listen, key_ids, started_at, seen_at)
                        VALUES ('i1', 'host-a', 42, '127.0.0.1:8080', 'k2,k1', 1, 1)
                    """,
                    []
                )
            }
        }
    }
}

extension StoreConformanceTests {
    @Test(
        "each unique constraint is reported as its typed value, and the write changes nothing",
        arguments: Backend.all,
        UniqueCollision.allCases
    )
    func uniqueConstraintIsTyped(_ backend: Backend, _ collision: UniqueCollision) throws {
        let db = try Seed.database(backend)
        let before = try db.store.read { try $0.auditTrail(accountID: Seed.alice, limit: 10) }
        do {
            try db.store.write { tx in
                try tx.appendAudit(
                    AuditEvent(at: Seed.now, accountID: Seed.alice, upgradeID: nil, event: "rolled.back")
                )
                try collision.collide(tx)
            }
            Issue.record("the colliding write was accepted")
        } catch let error as StorageError {
            #expect(error.code == .uniqueViolation, "\(error)")
            #expect(error.constraint == collision.constraint, "\(error)")
            #expect(!"\(error)".lowercased().contains(Seed.marker), "\(error)")
        }
        #expect(try db.store.read { try $0.auditTrail(accountID: Seed.alice, limit: 10) } == before)
    }

    @Test("a refused write's message names tables and codes, never a value the write bound", arguments: Backend.all)
    func messagesHoldNoBoundValues(_ backend: Backend) throws {
        let db = try Seed.database(backend)
        let writes: [(String, StorageError.Code, (any StoreTransaction) throws -> Void)] = [
            (
                "foreign key", .constraint,
                { try $0.insertAppleLink(Seed.link("s3cret-no-account", sub: "001.s3cret.x")) }
            ),
            (
                "check", .constraint,
                {
                    try Seed.raw(
                        $0,
                        "INSERT INTO accounts (id, username, credential_kind, created_at, updated_at) VALUES (?, ?, ?, 1, 1)",
                        [.text("s3cret-id"), .text("s3cret-name"), .text("s3cret-kind")]
                    )
                }
            ),
            (
                "not null", .constraint,
                {
                    try Seed.raw(
                        $0,
                        "INSERT INTO accounts (id, username, credential_kind, created_at, updated_at) VALUES (?, NULL, ?, 1, 1)",
                        [.text("s3cret-id"), .text("password")]
                    )
                }
            ),
            (
                "append-only trigger", .constraint,
                { try Seed.raw($0, "UPDATE audit_events SET event = ?", [.text("s3cret.rewritten")]) }
            ),
            (
                "version guard", .versionConflict,
                {
                    try $0.updateAccountCredentialKind(
                        id: Seed.alice,
                        kind: .appleOnly,
                        expectedVersion: 99,
                        now: Seed.now
                    )
                }
            ),
            ("refused username", .constraint, { try $0.insertAccount(Seed.account("s3cret-id", "s3cret\u{AD}carol")) }),
        ]
        for (name, code, write) in writes {
            do {
                try db.store.write(write)
                Issue.record("\(name): the write was accepted")
            } catch let error as StorageError {
                #expect(error.code == code, "\(name): \(error)")
                #expect(!"\(error)".lowercased().contains(Seed.marker), "\(name): \(error)")
            }
        }
        do {
            try db.store.read { try $0.insertAccount(Seed.account("s3cret-id", "s3cret-carol")) }
            Issue.record("a write inside a read transaction was accepted")
        } catch let error as StorageError {
            #expect(!"\(error)".lowercased().contains(Seed.marker), "\(error)")
        }
    }
}
