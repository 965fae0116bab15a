extension UpgradeService {
    /// What a checked credential opens: an upgrade keeps the account's password (and rehashes a
    /// legacy one), a password change replaces it.
    enum CredentialUse { case upgrade, passwordChange }

    /// The one credential check of `start` and `startPasswordChange` (docs/architecture.md §5),
    /// between its two halves: `checkCredential` read and did the slow work; `settle` runs in the
    /// flow's write. A wrong password costs one read and one write transaction.
    struct CredentialCheck {
        let use: CredentialUse
        let username: Username
        let clientKey: String?
        var snapshot: PasswordCheckSnapshot
        /// The ticket's hash; nil on the password path.
        let ticketHash: String?
        /// A password change's ticket was usable for the account when read (the write spends it).
        let ticketUsable: Bool
        /// A lock's refusal or the password's outcome, known before the write; nil for a ticket,
        /// which the write decides by spending it.
        var known: CheckVerdict?
        /// Seconds until the username's lock ends, for the refusal's `Retry-After`.
        var retryAfter: Int64?
        /// The password hashed with the current parameters, for an upgrade whose stored hash is legacy.
        var rehashed: String?
        /// For the audit row: the credential (`ticket`), a stored hash that could not be checked.
        var detail: [String: String] = [:]

        /// The account has a password: what an upgrade or a password change needs.
        var eligible: Bool { snapshot.account?.credentialKind == .password && snapshot.credential != nil }
    }

    enum CheckVerdict: Hashable {
        case password(UpgradeEvent.PasswordOutcome)
        case ticketAccepted(secondFactor: Bool)
        case ticketRejected(UpgradeEvent.TicketRejection)
        /// Accepted when checked, but the account's credentials changed before the write.
        case changed

        /// A credential checked (or tried on a locked username) and found wrong: it counts against
        /// the client (`ClientThrottle`).
        var countsAgainstClient: Bool {
            switch self {
            case .password(.rejected(reason: .invalidCredentials)), .password(.rejected(reason: .locked)),
                .ticketRejected(.invalidTicket), .ticketRejected(.locked):
                true
            default: false
            }
        }
    }

    /// The fields every credential check takes, checked before any work; the username in its
    /// enforced form (`Username`). A string the profile refuses is a `validation` failure naming
    /// the code point and rule: that depends on the string alone, so it reveals no account.
    static func credentialFields(
        username: String,
        password: String,
        ticket: String?
    ) throws(ServiceFailure)
        -> Username
    {
        try require(username, "username", maxBytes: maxUsernameBytes)
        if let ticket {
            guard password.isEmpty else {
                throw ServiceFailure(
                    .validation,
                    "send a password or a ticket, not both; a ticket comes with an empty password"
                )
            }
            try require(ticket, "ticket", maxBytes: maxTicketBytes)
        } else {
            try require(password, "password", maxBytes: maxPasswordBytes)
        }
        do {
            return try Username(username)
        } catch {
            throw ServiceFailure(
                .validation,
                error.code == .empty ? "username is required" : "username: \(error.message)"
            )
        }
    }

    /// The check's first half: one read (the client's count, the username's lockout, the account,
    /// and for a password change whether the ticket is usable), then the slow work outside any
    /// transaction. A client over its limit and a username in its short delay are refused here,
    /// before any hash and without counting, so neither can extend its own wait (LockoutPolicy); a
    /// locked username is refused without a hash too. A wrong password and an unknown username cost
    /// the same. A ticket is checked by `settle`, where spending it is one conditional update.
    func checkCredential(
        _ username: Username,
        password: String,
        ticket: String?,
        clientKey: String?,
        use: CredentialUse,
        for id: String,
        now: Int64
    ) throws(ServiceFailure) -> CredentialCheck {
        let started = ContinuousClock.now
        let ticketHash = ticket.map(Self.hashOneTimeValue)
        let read: (clientWait: Int64?, snapshot: PasswordCheckSnapshot?, ticketUsable: Bool)
        do {
            read = try store.read { tx in
                if let clientThrottle, let clientKey,
                    let wait = try clientThrottle.retryAfter(clientKey: clientKey, in: tx, now: now)
                {
                    return (wait, nil, false)
                }
                let snapshot = try tx.passwordCheckSnapshot(username: username)
                guard use == .passwordChange, let ticketHash, let account = snapshot.account else {
                    return (nil, snapshot, false)
                }
                return (
                    nil, snapshot,
                    try usableTicket(hash: ticketHash, accountID: account.id, for: id, in: tx, now: now) != nil
                )
            }
        } catch {
            throw Self.storageFailure(error)
        }
        guard let snapshot = read.snapshot else {
            let wait = read.clientWait ?? 1
            throw ServiceFailure(
                .rateLimited,
                "too many failed attempts from this client; retry in \(wait) s",
                retryAfter: wait
            )
        }
        var check = CredentialCheck(
            use: use,
            username: username,
            clientKey: clientKey,
            snapshot: snapshot,
            ticketHash: ticketHash,
            ticketUsable: read.ticketUsable
        )
        if ticket != nil { check.detail["credential"] = "ticket" }
        if let wait = try lockedFor(snapshot, now: now) {
            check.known = ticket == nil ? .password(.rejected(reason: .locked)) : .ticketRejected(.locked)
            check.retryAfter = wait
            return check
        }
        guard ticket == nil else { return check }
        if snapshot.account == nil, let legacy = configuration.legacyVerifier {
            // docs/legacy-verification.md: with UPGRADE_LEGACY_CREATE the legacy system is asked about
            // an unknown username too; without it, while the legacy system is down, an unknown
            // username gets the outage's answer in the time a legacy account's check takes.
            if configuration.legacyCreate {
                try checkUnknownWithLegacySystem(&check, legacy: legacy, password: password, started: started, now: now)
                return check
            }
            if let hold = legacy.outageHold { throw Self.legacyUnavailable(heldFor: hold, since: started) }
        }
        guard check.eligible, let credential = snapshot.credential else {
            // Unknown username, or an account without a password: spend the same time as a real check.
            passwords.verifyDummy(password: password)
            check.known = .password(.rejected(reason: .invalidCredentials))
            return check
        }
        if credential.isLegacy {
            try checkWithLegacySystem(&check, password: password, started: started)
            return check
        }
        do {
            let matches = try passwords.verify(password: password, encodedHash: credential.hash)
            check.known = .password(
                matches ? .accepted(secondFactor: snapshot.hasSecondFactor) : .rejected(reason: .invalidCredentials)
            )
            // A legacy hash (imported, or older parameters) is replaced once the password is known to
            // be right, as Kratos and Keycloak do; `settle` stores it only if the credential is still
            // the one read.
            if matches, use == .upgrade, !configuration.passwordHasher.isCurrent(credential.hash) {
                check.rehashed = try? passwords.hash(password: password, with: configuration.passwordHasher)
            }
        } catch {
            // A stored hash we cannot check (unknown format, cost out of bounds) is an operator
            // problem; the client sees the uniform failure and the audit trail says why.
            passwords.verifyDummy(password: password)
            check.known = .password(.rejected(reason: .invalidCredentials))
            check.detail["hash"] = "\(error.code)"
        }
        return check
    }

    /// The check's second half, inside the flow's write for `id`: spends the ticket (only if it is
    /// the account's and unexpired, and unused or still held by a flow that never got past needing
    /// the user; an unknown username matches none), re-reads the credential that was accepted (a
    /// change committed meanwhile ends what the earlier one opens), stores a rehash, and counts or
    /// clears the username's failures and counts the client's. Returns the verdict and the audit
    /// detail; it may run more than once (`UpgradeStore.write`), so it changes nothing else.
    func settle(
        _ check: CredentialCheck,
        for id: String,
        in tx: any StoreTransaction,
        now: Int64
    ) throws -> (verdict: CheckVerdict, detail: [String: String]) {
        var detail = check.detail
        let account = check.snapshot.account
        var verdict: CheckVerdict
        if let known = check.known {
            verdict = known
        } else if let spent = try spendTicket(
            hash: check.ticketHash ?? "",
            accountID: account?.id,
            for: id,
            in: tx,
            now: now
        ), account != nil {
            // Only a valid ticket learns that the account cannot be upgraded or changed.
            verdict =
                check.eligible && (check.use == .upgrade || check.ticketUsable)
                ? .ticketAccepted(secondFactor: check.snapshot.hasSecondFactor && !spent.secondFactorVerified)
                : .ticketRejected(.notEligible)
        } else {
            verdict = .ticketRejected(.invalidTicket)
        }
        // A password change also re-checks an accepted ticket, and that the account still has a
        // password (a conversion deletes it, so an upgrade's read of the password sees that too).
        let recheck: Bool
        switch verdict {
        case .password(.accepted): recheck = true
        case .ticketAccepted: recheck = check.use == .passwordChange
        default: recheck = false
        }
        if recheck, let accountID = account?.id,
            try tx.passwordCredential(accountID: accountID) != check.snapshot.credential
                || (check.use == .passwordChange && tx.account(id: accountID)?.credentialKind != .password)
        {
            verdict = .changed
        }
        switch verdict {
        // A password change clears them for a right credential even when the account changed since.
        case .password(.accepted), .ticketAccepted,
            .changed where check.use == .passwordChange:
            // Most sign-ins follow no failure: then there is no throttle row to clear.
            if check.snapshot.throttle != nil { try tx.clearFailures(usernameKey: check.username.value) }
            // The re-read above found the credential unchanged, so the rehash replaces the hash checked.
            if verdict != .changed, let rehashed = check.rehashed, let old = check.snapshot.credential {
                try tx.upsertPasswordCredential(
                    PasswordCredentialRecord(
                        accountID: old.accountID,
                        hash: rehashed,
                        format: PasswordHashFormat.argon2id.rawValue,
                        updatedAt: now
                    )
                )
                detail["passwordRehashedFrom"] = old.format
            }
        case .password(.rejected(reason: .invalidCredentials)), .ticketRejected(.invalidTicket):
            _ = try tx.recordFailure(usernameKey: check.username.value, now: now)
        default: break
        }
        if verdict.countsAgainstClient, let clientThrottle, let clientKey = check.clientKey {
            try clientThrottle.recordFailure(clientKey: clientKey, in: tx, now: now)
        }
        return (verdict, detail)
    }

    /// A step-up's write under the per-client limit: a client over it is refused before its code is
    /// read, and a wrong code is counted in the same transaction.
    func clientThrottled<Answer>(
        _ clientKey: String?,
        in tx: any StoreTransaction,
        now: Int64,
        _ body: () throws -> Result<Answer, ServiceFailure>
    ) throws -> Result<Answer, ServiceFailure> {
        guard let clientThrottle, let clientKey else { return try body() }
        if let wait = try clientThrottle.retryAfter(clientKey: clientKey, in: tx, now: now) {
            return .failure(
                ServiceFailure(
                    .rateLimited,
                    "too many failed attempts from this client; retry in \(wait) s",
                    retryAfter: wait
                )
            )
        }
        let outcome = try body()
        if case .failure(let failure) = outcome, [.invalidCode, .tooManyAttempts, .locked].contains(failure.kind) {
            try clientThrottle.recordFailure(clientKey: clientKey, in: tx, now: now)
        }
        return outcome
    }
}
