import Foundation

/// What a row whose username is already taken does (`--on-conflict`).
public enum ImportConflictPolicy: String, Sendable, CaseIterable {
    /// Leave the stored account alone and report the row `skipped`.
    case skip
    /// Replace the stored account's password, TOTP, recovery codes and profile fields the row gives.
    case update
}

/// What happened to one input row.
public enum ImportAction: String, Sendable {
    case created, updated, skipped, error
}

/// One input row's outcome, as the `--report` file has it.
public struct ImportRowReport: Sendable, Equatable {
    public var line: Int64
    /// The username in its enforced form when it was valid, else as given (nil when absent).
    public var username: String?
    public var action: ImportAction
    /// Why the row was skipped or refused: the field and a specific reason.
    public var reason: String?

    /// The report's JSON line (without the newline).
    public var jsonLine: String {
        JSONValue.object([
            "line": .integer(line),
            "username": username.map { .string($0) } ?? .null,
            "action": .string(action.rawValue),
            "reason": reason.map { .string($0) } ?? .null,
        ]).serializedString
    }
}

/// Counts of one run (not of earlier runs of the same import).
public struct ImportSummary: Sendable, Equatable {
    public var created = 0
    public var updated = 0
    public var skipped = 0
    public var failed = 0
    /// Rows an earlier, interrupted run of this import had already committed.
    public var alreadyCommitted = 0
    /// The line after which this run resumed (0 for a fresh import).
    public var resumedAfterLine: Int64 = 0
    /// Rows earlier runs of this import refused: a resumed import still has them to fix.
    public var failedInEarlierRuns: Int64 = 0

    public var rows: Int { created + updated + skipped + failed + alreadyCommitted }
}

/// Who writes an import's rows, which decides what its audit rows, profiles and reasons say.
public enum ImportOrigin: Sendable, Equatable {
    /// `accounts import`: rows are input lines; profiles record the import and line.
    case file
    /// `PUT /v1/admin/accounts/{username}` and `POST /v1/admin/accounts/batch` by the named admin
    /// token: rows are a batch's indexes (line 1 is index 0), profiles keep what an import recorded,
    /// and an existing account that already holds every value the row gives is `skipped`, unwritten
    /// and unaudited, so sending the same row again changes nothing (docs/architecture.md §7.5).
    case api(by: String)
}

/// How an import runs, besides its input.
public struct AccountImportOptions: Sendable {
    /// The import's identity (`import_runs.id`): a hash of the input and the arguments that change
    /// what a row does, so running it again resumes it and a different input starts afresh.
    public var runID: String
    /// For people: the file and format.
    public var source: String
    public var onConflict: ImportConflictPolicy = .skip
    /// Rows per transaction. Each transaction also moves the run's progress.
    public var batchSize = 1000
    /// Threads that check a batch's rows (`--concurrency`), each a share of the batch, before one
    /// writer decides and writes them in input order; 1 checks them on the calling thread.
    public var concurrency = 1
    public static let concurrencyRange = 1...64
    /// Seals imported TOTP secrets; rows with `totp` are refused without it.
    public var secrets: SecretBox?
    /// Recorded on imported Apple links; rows with `appleSub` are refused without them.
    public var appleTeamID: String?
    public var appleClientID: String?
    /// Who writes the rows: an import file, or the provisioning API.
    public var origin: ImportOrigin = .file
    /// The stored parameter set (`HashParameterSet`) each kind's hashes in import form (no `p=`)
    /// are bound to: `--hash-parameters`. The importer's verifier needs a source that resolves them.
    public var hashParameterSets: [HashParameterSet.Kind: Int64] = [:]

    public init(runID: String, source: String) {
        self.runID = runID
        self.source = source
    }
}

/// Imports accounts from an `ImportReader` in batched transactions, resumably.
///
/// Each batch is one write transaction that stores its rows and moves the run's `import_runs` row
/// to the batch's last input line. A run killed at any point has committed whole batches only, and
/// the progress row says which: run again with the same input and arguments, it reads past those
/// lines without writing and continues with the first uncommitted one, so every row is written
/// exactly once (docs/architecture.md, Importing accounts). Rows are reported once their batch
/// has committed.
///
/// Memory is bounded by one batch: a username repeated in the file is found through the
/// database, where the account the earlier line created carries its import and line
/// (`account_profiles`), or, within a batch, through what the batch's earlier rows took; the later
/// line is reported as the duplicate.
public final class AccountImporter: Sendable {
    public let store: any UpgradeStore
    /// For a dry run: the real database, read only, while `store` is a scratch database.
    public let reference: (any UpgradeStore)?
    public let options: AccountImportOptions
    public let validator: ImportRowValidator

    public init(
        store: any UpgradeStore,
        reference: (any UpgradeStore)? = nil,
        options: AccountImportOptions,
        passwords: PasswordVerifier = PasswordVerifier()
    ) {
        self.store = store
        self.reference = reference
        self.options = options
        self.validator = ImportRowValidator(
            passwords: passwords,
            canSealTOTP: options.secrets != nil,
            canLinkApple: options.appleTeamID != nil && options.appleClientID != nil,
            hashParameterSets: options.hashParameterSets
        )
    }

    fileprivate struct Pending {
        var line: Int64
        var typedUsername: String?
        var row: Result<ValidatedImportRow, ImportRowError>
    }

    /// A source row as the writer decides it: validated if it could be read, named as it was typed.
    private func pending(_ source: ImportSourceRow) -> Pending {
        Pending(
            line: source.line,
            typedUsername: source.row.typedUsername,
            row: source.row.flatMap { validator.validate($0) }
        )
    }

    /// `pending(_:)` of each row, in order. With `concurrency` above 1 the rows are split into
    /// that many contiguous shares, each checked on a thread of its own: a row's checks read
    /// nothing but the row (what depends on other rows or the database is decided by the writer).
    private func pending(_ sources: [ImportSourceRow]) -> [Pending] {
        let shares = min(options.concurrency, sources.count / Self.rowsPerShare)
        guard shares > 1 else { return sources.map(pending) }
        var slots = [Pending?](repeating: nil, count: sources.count)
        slots.withUnsafeMutableBufferPointer { slots in
            let slots = SharedSlots(base: slots.baseAddress!)
            DispatchQueue.concurrentPerform(iterations: shares) { share in
                let range = (sources.count * share / shares)..<(sources.count * (share + 1) / shares)
                for index in range { slots.base[index] = pending(sources[index]) }
            }
        }
        return slots.map { $0! }
    }

    /// Below this many rows a share's thread costs more than it saves.
    private static let rowsPerShare = 64

    /// The batch's result slots, written by the shares' threads at disjoint indices.
    private struct SharedSlots: @unchecked Sendable {
        let base: UnsafeMutablePointer<Pending?>
    }

    /// Reads `reader` to its end. `onRow` gets every row's outcome in input order; `onBatch` is
    /// called after each commit with this run's counts and the bytes read; a true `shouldStop`
    /// (checked between batches) ends the run with `ImportFailure` after its last commit.
    public func run(
        _ reader: inout ImportReader,
        now: () -> Int64,
        onRow: (ImportRowReport) -> Void = { _ in },
        onBatch: (ImportSummary, Int64) -> Void = { _, _ in },
        shouldStop: () -> Bool = { false }
    ) throws -> ImportSummary {
        let startedAt = now()
        let stored = try store.read { try $0.importRun(id: options.runID) }
        var progress =
            stored
            ?? ImportRunRecord(
                id: options.runID,
                source: options.source,
                lastLine: 0,
                startedAt: startedAt,
                updatedAt: startedAt
            )
        var summary = ImportSummary(resumedAfterLine: progress.lastLine, failedInEarlierRuns: progress.failed)
        var batch: [ImportSourceRow] = []
        batch.reserveCapacity(options.batchSize)
        var lastLine = progress.lastLine
        var ids = AccountIDGenerator()

        func commit(finished: Bool) throws {
            if batch.isEmpty && (!finished || progress.finishedAt != nil) { return }
            if shouldStop() {
                throw ImportFailure("the import was stopped; run it again to resume after line \(progress.lastLine)")
            }
            let at = now()
            var next = progress
            next.lastLine = max(lastLine, progress.lastLine)
            next.updatedAt = at
            if finished { next.finishedAt = at }
            let pending = self.pending(batch)
            ids.reserve(pending.count)
            let written: ([ImportRowReport], ImportRunRecord)?
            do {
                written = try writeBatch(pending, next: next, at: at, ids: &ids)
            } catch let error as StorageError where error.code == .unavailable {
                // The connection broke, perhaps during COMMIT (a failover). The progress row is
                // written in the batch's transaction, so reading it back says whether the batch
                // committed: if not, it is written again; if so, its rows are what a rerun would
                // call committed by an earlier run. The read waits out the outage as writes do.
                let after = try store.read { try $0.importRun(id: options.runID) }
                if let after, after.lastLine == next.lastLine, after.lastLine > progress.lastLine || finished {
                    if finished && after.finishedAt == nil {
                        written = try writeBatch([], next: next, at: at, ids: &ids)
                    } else {
                        written = nil
                    }
                    progress = written?.1 ?? after
                    for item in pending {
                        summary.alreadyCommitted += 1
                        onRow(
                            ImportRowReport(
                                line: item.line,
                                username: item.typedUsername,
                                action: .skipped,
                                reason: "committed, but the reply to COMMIT was lost with the connection"
                            )
                        )
                    }
                    batch.removeAll(keepingCapacity: true)
                    onBatch(summary, reader.bytesRead)
                    return
                }
                written = try writeBatch(pending, next: next, at: at, ids: &ids)
            }
            guard let reports = written else { return }
            progress = reports.1
            for report in reports.0 {
                switch report.action {
                case .created: summary.created += 1
                case .updated: summary.updated += 1
                case .skipped: summary.skipped += 1
                case .error: summary.failed += 1
                }
                onRow(report)
            }
            batch.removeAll(keepingCapacity: true)
            onBatch(summary, reader.bytesRead)
        }

        /// One batch's rows and the run's progress, in one transaction.
        func writeBatch(
            _ pending: [Pending],
            next: ImportRunRecord,
            at: Int64,
            ids: inout AccountIDGenerator
        ) throws -> ([ImportRowReport], ImportRunRecord) {
            try store.write { tx in
                var writes = try BatchWrites(pending, in: tx, reference: reference)
                var reports: [ImportRowReport] = []
                reports.reserveCapacity(pending.count)
                var counts = next
                for item in pending {
                    let report = try apply(item, in: tx, now: at, writes: &writes, ids: &ids)
                    switch report.action {
                    case .created: counts.created += 1
                    case .updated: counts.updated += 1
                    case .skipped: counts.skipped += 1
                    case .error: counts.failed += 1
                    }
                    reports.append(report)
                }
                try writes.write(in: tx, now: at)
                try tx.upsertImportRun(counts)
                return (reports, counts)
            }
        }

        while let source = try Self.read(&reader) {
            lastLine = source.line
            if source.line <= summary.resumedAfterLine {
                summary.alreadyCommitted += 1
                onRow(
                    ImportRowReport(
                        line: source.line,
                        username: source.row.typedUsername,
                        action: .skipped,
                        reason: "committed by an earlier run of this import"
                    )
                )
                continue
            }
            batch.append(source)
            if batch.count >= options.batchSize { try commit(finished: false) }
        }
        try commit(finished: true)
        return summary
    }

    /// Writes `rows` (lines from 1) in one transaction, without an import run's progress: the
    /// provisioning API's rows, decided and written exactly as an import's batch.
    public func write(_ rows: [ImportSourceRow], now: Int64) throws -> [ImportRowReport] {
        let pending = rows.map(pending)
        var ids = AccountIDGenerator()
        ids.reserve(pending.count)
        return try store.write { tx in
            var writes = try BatchWrites(pending, in: tx, reference: reference)
            var reports: [ImportRowReport] = []
            for item in pending {
                reports.append(try apply(item, in: tx, now: now, writes: &writes, ids: &ids))
            }
            try writes.write(in: tx, now: now)
            return reports
        }
    }

    /// How a reason names another row: its input line, or its index in a provisioning batch.
    private func otherRow(_ line: Int64) -> String {
        options.origin == .file ? "line \(line) in this file" : "index \(line - 1) in this batch"
    }

    private static func read(_ reader: inout ImportReader) throws -> ImportSourceRow? {
        do {
            return try reader.next()
        } catch {
            throw ImportFailure(error.message, isInputError: true)
        }
    }

    /// Decides one row inside the batch's transaction: skipped, refused, or what it writes, added
    /// to `writes` (written when the batch's rows are all decided).
    private func apply(
        _ item: Pending,
        in tx: any StoreTransaction,
        now: Int64,
        writes: inout BatchWrites,
        ids: inout AccountIDGenerator
    ) throws -> ImportRowReport {
        let row: ValidatedImportRow
        switch item.row {
        case .failure(let error):
            return ImportRowReport(
                line: item.line,
                username: item.typedUsername,
                action: .error,
                reason: error.description
            )
        case .success(let valid):
            row = valid
        }
        let username = row.username.value
        func report(_ action: ImportAction, _ reason: String? = nil) -> ImportRowReport {
            ImportRowReport(line: item.line, username: username, action: action, reason: reason)
        }

        if let earlier = writes.takenUsernames[username] {
            return report(.error, "username: duplicate of \(otherRow(earlier))")
        }
        var existing = writes.stored[username]
        var fromReference = false
        if let found = existing {
            if options.origin == .file, let profile = writes.states[found.id]?.profile,
                profile.importRun == options.runID,
                let earlier = profile.importLine, earlier < item.line
            {
                return report(.error, "username: duplicate of line \(earlier) in this file")
            }
        } else if let found = writes.inReference[username] {
            existing = found
            fromReference = true
        }

        if let existing {
            guard options.onConflict == .update else {
                return report(.skipped, "username: an account with this username already exists")
            }
            // What the batch read of the account up front; a dry run's account from the real database
            // has only its link read there (nothing else of it is in the scratch database).
            var state = fromReference ? StoredAccountState() : writes.states[existing.id] ?? StoredAccountState()
            if fromReference { state.appleLink = try reference?.read { try $0.appleLink(accountID: existing.id) } }
            let link = state.appleLink
            if options.origin != .file, isUnchanged(existing, state, by: row) {
                writes.takenUsernames[username] = item.line
                return report(.skipped, "unchanged: the account already holds every value the row gives")
            }
            guard existing.credentialKind == .password, link == nil else {
                return report(.error, "username: the account signs in with Apple; an import does not change it")
            }
            guard row.appleSub == nil else {
                return report(.error, "appleSub: an import links new accounts only, not existing ones")
            }
            if fromReference {
                // Dry run: the scratch database records that this line took the username, so a
                // later line with it is reported as the duplicate it is.
                insertAccount(row, line: item.line, kind: .password, now: now, event: nil, into: &writes, ids: &ids)
                return report(.updated)
            }
            try update(existing, state, with: row, line: item.line, now: now, into: &writes)
            return report(.updated)
        }

        guard row.passwordHash != nil || row.appleSub != nil else {
            return report(.error, ImportRowValidator.missingCredential)
        }
        if let refusal = try lookAlikeRefusal(row.username, line: item.line, in: tx, writes: writes) {
            return report(.error, refusal)
        }
        if let sub = row.appleSub {
            let taken =
                try writes.linkedSubs.contains(sub) || tx.appleLink(sub: sub) != nil
                || (reference.map { r in try r.read { try $0.appleLink(sub: sub) } } ?? nil) != nil
            if taken { return report(.error, "appleSub: already linked to another account") }
        }
        insertAccount(
            row,
            line: item.line,
            kind: row.appleSub == nil ? .password : .appleOnly,
            now: now,
            event: options.origin == .file ? "account.imported" : "account.provisioned",
            into: &writes,
            ids: &ids
        )
        return report(.created)
    }

    /// Why a new account under `username` would be a look-alike (the same confusable skeleton,
    /// UTS #39) of another: an earlier line of this file, or a stored account, named. An import is
    /// an operator's, so naming the stored look-alike tells nobody else anything.
    private func lookAlikeRefusal(
        _ username: Username,
        line: Int64,
        in tx: any StoreTransaction,
        writes: BatchWrites
    ) throws -> String? {
        let skeleton = username.skeleton
        if let earlier = writes.takenSkeletons[skeleton] {
            return "username: looks like the username of \(otherRow(earlier)) (the same confusable skeleton)"
        }
        let stored = (writes.storedBySkeleton[skeleton] ?? []).filter { !username.isStored(as: $0.username) }
        let found = stored.isEmpty ? writes.inReferenceBySkeleton[skeleton] ?? [] : stored
        guard let other = found.first else { return nil }
        if options.origin == .file, !stored.isEmpty, let profile = try tx.accountProfile(accountID: other.id),
            profile.importRun == options.runID, let earlier = profile.importLine, earlier < line
        {
            return "username: looks like the username of line \(earlier) in this file (the same confusable skeleton)"
        }
        return "username: looks like the existing account '\(UsernameCheck.escaped(other.username))' "
            + "(the same confusable skeleton); an account's look-alike is refused"
    }

    private func insertAccount(
        _ row: ValidatedImportRow,
        line: Int64,
        kind: CredentialKind,
        now: Int64,
        event: String?,
        into writes: inout BatchWrites,
        ids: inout AccountIDGenerator
    ) {
        let account = AccountRecord(
            id: ids.next(now: now),
            username: row.username.value,
            credentialKind: kind,
            createdAt: now,
            updatedAt: now
        )
        writes.accounts.append(account)
        writes.takenUsernames[account.username] = line
        writes.takenSkeletons[row.username.skeleton] = line
        var detail = auditDetail(line: line)
        // For the migration report's accounts per day (docs/architecture.md §7.7).
        detail["credentialKind"] = kind.rawValue
        writeCredentials(row, accountID: account.id, replacing: false, detail: &detail, into: &writes, now: now)
        if let sub = row.appleSub, let team = options.appleTeamID, let client = options.appleClientID {
            writes.appleLinks.append(
                AppleLinkRecord(
                    accountID: account.id,
                    sub: sub,
                    teamID: team,
                    clientID: client,
                    email: nil,
                    isPrivateEmail: nil,
                    refreshTokenCiphertext: nil,
                    status: .linked,
                    linkedAt: now,
                    updatedAt: now
                )
            )
            writes.linkedSubs.insert(sub)
            detail["apple"] = "linked"
        }
        writes.profiles.append(
            AccountProfileRecord(
                accountID: account.id,
                email: row.email,
                displayName: row.displayName,
                importRun: options.origin == .file ? options.runID : nil,
                importLine: options.origin == .file ? line : nil,
                updatedAt: now,
                emailSource: row.email.map { _ in .import },
                displayNameSource: row.displayName.map { _ in .import }
            )
        )
        if let event {
            writes.audit.append(
                AuditEvent(at: now, accountID: account.id, upgradeID: nil, event: event, detail: detail)
            )
        }
    }

    private func update(
        _ account: AccountRecord,
        _ stored: StoredAccountState,
        with row: ValidatedImportRow,
        line: Int64,
        now: Int64,
        into writes: inout BatchWrites
    ) throws {
        writes.takenUsernames[account.username] = line
        var detail = auditDetail(line: line)
        var row = row
        if row.passwordHash?.format == PasswordCredentialRecord.legacyFormat, stored.password != nil {
            // A password the account already has (a hash, or the legacy marker) is never replaced
            // by the marker: a first match's hash, or a password changed here, would be lost.
            row.passwordHash = nil
            detail["legacyPassword"] = "kept"
        }
        writeCredentials(row, accountID: account.id, replacing: true, detail: &detail, into: &writes, now: now)
        let profile = stored.profile
        let isFile = options.origin == .file
        writes.profiles.append(
            AccountProfileRecord(
                accountID: account.id,
                email: row.email ?? profile?.email,
                displayName: row.displayName ?? profile?.displayName,
                // Provisioning is no import: the profile keeps naming the import that wrote it, if any.
                importRun: isFile ? options.runID : profile?.importRun,
                importLine: isFile ? line : profile?.importLine,
                updatedAt: now,
                // What the row gives is the import's; what it leaves out keeps its value and source.
                emailSource: row.email == nil ? profile?.emailSource : .import,
                displayNameSource: row.displayName == nil ? profile?.displayNameSource : .import,
                fullName: profile?.fullName,
                realUserStatus: profile?.realUserStatus
            )
        )
        writes.audit.append(
            AuditEvent(
                at: now,
                accountID: account.id,
                upgradeID: nil,
                event: isFile ? "account.import-updated" : "account.provision-updated",
                detail: detail
            )
        )
    }

    /// An audit row's start: the import line, or the batch index and the admin token that wrote it.
    private func auditDetail(line: Int64) -> [String: String] {
        switch options.origin {
        case .file: ["line": String(line)]
        case .api(let by): ["index": String(line - 1), "by": by]
        }
    }

    /// Whether `account` already holds every value `row` gives: the same Apple `sub` (or none), the
    /// same password hash, TOTP secret and parameters, recovery codes and profile fields. Fields the
    /// row leaves out are kept by an update, so they cannot differ.
    private func isUnchanged(_ account: AccountRecord, _ stored: StoredAccountState, by row: ValidatedImportRow) -> Bool
    {
        if let sub = row.appleSub {
            guard let link = stored.appleLink, link.sub == sub else { return false }
        } else if account.credentialKind != .password || stored.appleLink != nil {
            return false
        }
        if let hash = row.passwordHash {
            guard let password = stored.password,
                password.hash == hash.hash || hash.format == PasswordCredentialRecord.legacyFormat
            else {
                return false
            }
        }
        if let totp = row.totp {
            guard let secrets = options.secrets, let enrollment = stored.totp,
                enrollment.algorithm == totp.parameters.algorithm, enrollment.digits == totp.parameters.digits,
                enrollment.period == totp.parameters.period,
                let secret = try? secrets.open(
                    enrollment.secretCiphertext,
                    context: UpgradeService.totpContext(accountID: account.id)
                ),
                ConstantTime.equals(secret, totp.secret)
            else { return false }
        }
        if !row.recoveryCodeHashes.isEmpty, Set(stored.recoveryCodeHashes) != Set(row.recoveryCodeHashes) {
            return false
        }
        if let email = row.email, stored.profile?.email != email { return false }
        if let name = row.displayName, stored.profile?.displayName != name { return false }
        return true
    }

    /// The row's credentials into `writes`, and what the audit row says of them into `detail`.
    private func writeCredentials(
        _ row: ValidatedImportRow,
        accountID: String,
        replacing: Bool,
        detail: inout [String: String],
        into writes: inout BatchWrites,
        now: Int64
    ) {
        let credentials = AccountCredentials(
            accountID: accountID,
            passwordHash: row.passwordHash,
            totp: row.totp,
            secrets: options.secrets,
            recoveryCodeHashes: row.recoveryCodeHashes,
            now: now
        )
        if let password = credentials.password { writes.passwords.append(password) }
        if let totp = credentials.totp { writes.totp.append(totp) }
        if !credentials.recoveryCodeHashes.isEmpty {
            writes.recoveryCodes.append((accountID, credentials.recoveryCodeHashes, replacing))
        }
        detail.merge(credentials.auditDetail) { _, new in new }
        if replacing, !credentials.isEmpty { writes.credentialChanges.append(accountID) }
    }
}

/// What one batch writes, gathered while its rows are decided and then written table by table: a
/// few multi-row statements per table instead of several statements per row. Also what the rows
/// are decided against: the accounts already stored under the batch's usernames (one query), and
/// the usernames and Apple subs earlier rows of the batch took.
private struct BatchWrites {
    /// Stored accounts by username, in the database written to and, for a dry run, the real one.
    let stored: [String: AccountRecord]
    let inReference: [String: AccountRecord]
    /// Stored accounts by username skeleton, likewise: what a new username must not look like.
    let storedBySkeleton: [String: [AccountRecord]]
    let inReferenceBySkeleton: [String: [AccountRecord]]
    /// What is stored of each account in `stored` (link, credentials, profile), read in a few
    /// statements for the whole batch rather than several for each row: the batch's writes wait
    /// until every row is decided, so each row is decided against what the transaction read.
    let states: [String: StoredAccountState]
    /// The line of this batch that created or updated each username.
    var takenUsernames: [String: Int64] = [:]
    /// The line of this batch that created an account under each skeleton.
    var takenSkeletons: [String: Int64] = [:]
    var linkedSubs: Set<String> = []

    var accounts: [AccountRecord] = []
    var passwords: [PasswordCredentialRecord] = []
    var totp: [TOTPEnrollmentRecord] = []
    var recoveryCodes: [(accountID: String, hashes: [String], replacing: Bool)] = []
    var appleLinks: [AppleLinkRecord] = []
    var profiles: [AccountProfileRecord] = []
    var audit: [AuditEvent] = []
    /// Existing accounts whose password, TOTP or recovery codes this batch replaces.
    var credentialChanges: [String] = []

    init(_ pending: [AccountImporter.Pending], in tx: any StoreTransaction, reference: (any UpgradeStore)?) throws {
        let usernames = pending.compactMap { try? $0.row.get().username }
        var stored: [String: AccountRecord] = [:]
        for account in try tx.accounts(usernames: usernames) { stored[account.username] = account }
        var inReference: [String: AccountRecord] = [:]
        if let reference {
            let missing = usernames.filter { stored[$0.value] == nil }
            for account in try reference.read({ try $0.accounts(usernames: missing) }) {
                inReference[account.username] = account
            }
        }
        self.stored = stored
        self.inReference = inReference
        states = try tx.storedStates(accountIDs: stored.values.map(\.id))
        // Skeletons another ICU release computed would miss look-alikes: refuse to compare against them.
        try UsernameSkeletons.requireCurrent(tx)
        let skeletons = Array(Set(usernames.map(\.skeleton)))
        storedBySkeleton = try Self.bySkeleton(tx.accounts(usernameSkeletons: skeletons))
        inReferenceBySkeleton =
            try reference.map { reference in
                try Self.bySkeleton(
                    reference.read { tx in
                        try UsernameSkeletons.requireCurrent(tx)
                        return try tx.accounts(usernameSkeletons: skeletons)
                    }
                )
            } ?? [:]
        accounts.reserveCapacity(pending.count)
        passwords.reserveCapacity(pending.count)
        profiles.reserveCapacity(pending.count)
        audit.reserveCapacity(pending.count)
    }

    private static func bySkeleton(_ accounts: [AccountRecord]) -> [String: [AccountRecord]] {
        Dictionary(grouping: accounts) { Username.skeleton(ofStored: $0.username) }
    }

    /// Accounts first: the rest refer to them. Then, for each account whose credentials were
    /// replaced, the flows its earlier credentials opened end (docs/architecture.md §4.4).
    func write(in tx: any StoreTransaction, now: Int64) throws {
        try tx.insertAccountRows(accounts)
        try tx.upsertPasswordCredentials(passwords)
        for enrollment in totp { try tx.upsertTOTPEnrollment(enrollment) }
        for codes in recoveryCodes {
            if codes.replacing { try tx.deleteRecoveryCodes(accountID: codes.accountID) }
            try tx.insertRecoveryCodes(accountID: codes.accountID, codeHashes: codes.hashes)
        }
        for link in appleLinks { try tx.insertAppleLink(link) }
        try tx.upsertAccountProfiles(profiles)
        try tx.appendAudit(audit)
        for accountID in credentialChanges {
            // Only ending flows: the policy's lifetimes play no part.
            try UpgradeService.endFlowsAuthorizedByEarlierCredentials(
                accountID: accountID,
                cause: .imported,
                policy: .default,
                in: tx,
                now: now
            )
        }
    }
}

/// Why an import stopped before its end: the input could not be read (`isInputError`), the store
/// failed, or the run was told to stop. Committed batches stay; running it again resumes.
public struct ImportFailure: Error, Sendable, CustomStringConvertible {
    public let message: String
    public let isInputError: Bool

    public init(_ message: String, isInputError: Bool = false) {
        self.message = message
        self.isInputError = isInputError
    }

    public var description: String { message }
}

extension Result<ImportRawRow, ImportRowError> {
    /// The row's `username` as typed, read or refused.
    var typedUsername: String? {
        switch self {
        case .success(let raw): raw.values[.username]
        case .failure(let error): error.typedUsername
        }
    }
}
