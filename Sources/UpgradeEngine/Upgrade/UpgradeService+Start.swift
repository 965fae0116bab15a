extension UpgradeService {
    /// `POST /v1/upgrades`: evaluates the existing password, or for an in-app upgrade the one-time
    /// `ticket` the app's backend minted (`issueTicket`) with an empty password. Synchronous on
    /// purpose: the password hash is CPU-bound work for the caller's (worker) thread, not for Swift's
    /// small cooperative pool. Answers `success` with a state and nonce,
    /// `twoFactorAuthRequired`, or throws a failure. A wrong password and an unknown username cost the
    /// same and look the same; both count against the username's enforced form (`Username`), so
    /// look-alike spellings share one lockout, and a refused ticket counts the same way. A string the
    /// username profile refuses is a `validation` failure naming the code point and rule: that depends
    /// on the string alone, so it reveals nothing about which accounts exist, and no account can be
    /// stored under such a name.
    public func start(
        username: String,
        password: String,
        ticket: String? = nil,
        serviceIdentifier: String,
        now: Int64
    ) throws(UpgradeFailure) -> UpgradeAnswer {
        let started = ContinuousClock.now
        try Self.require(username, "username", maxBytes: Self.maxUsernameBytes)
        if let ticket {
            guard password.isEmpty else {
                throw UpgradeFailure(
                    .validation,
                    "send a password or a ticket, not both; an in-app upgrade sends an empty password"
                )
            }
            try Self.require(ticket, "ticket", maxBytes: Self.maxTicketBytes)
        } else {
            try Self.require(password, "password", maxBytes: Self.maxPasswordBytes)
        }
        try Self.require(serviceIdentifier, "serviceIdentifier", maxBytes: Self.maxServiceIdentifierBytes)
        let prepared: Username
        do {
            prepared = try Username(username)
        } catch {
            throw UpgradeFailure(
                .validation,
                error.code == .empty ? "username is required" : "username: \(error.message)"
            )
        }
        let usernameKey = prepared.value

        let snapshot: PasswordCheckSnapshot
        do {
            snapshot = try store.read { tx in try tx.passwordCheckSnapshot(username: prepared) }
        } catch {
            throw Self.storageFailure(error)
        }

        // Throttled usernames are refused before any hash is computed, and without counting, so a
        // throttled client cannot extend its own lock (LockoutPolicy).
        // The event when it is known before the write: a password checked (slow, so outside any
        // transaction) or the lockout's refusal. A ticket is checked inside the write, where spending
        // it is one conditional update.
        var known: UpgradeEvent?
        var retryAfter: Int64?
        var auditDetail: [String: String] = [:]
        var rehashed: String?
        let lockedFor = try lockedFor(snapshot, now: now)
        switch lockedFor {
        case .some(let wait):
            known = ticket == nil ? .passwordEvaluated(.rejected(reason: .locked)) : .ticketRejected(reason: .locked)
            retryAfter = wait
        case nil where ticket != nil:
            break
        case nil:
            let outcome: UpgradeEvent.PasswordOutcome
            if let account = snapshot.account, let credential = snapshot.credential, account.credentialKind == .password
            {
                do {
                    let matches = try passwords.verify(password: password, encodedHash: credential.hash)
                    outcome =
                        matches
                        ? .accepted(secondFactor: snapshot.hasSecondFactor) : .rejected(reason: .invalidCredentials)
                    // A legacy hash (imported, or older parameters) is replaced once the password is
                    // known to be right, as Kratos and Keycloak do; the slow hash runs here, outside
                    // the transaction, and is stored by it only if the credential is still the one read.
                    if matches, !configuration.passwordHasher.isCurrent(credential.hash) {
                        rehashed = try? passwords.hash(password: password, with: configuration.passwordHasher)
                    }
                } catch {
                    // A stored hash we cannot check (unknown format, cost out of bounds) is an operator
                    // problem; the client sees the uniform failure and the audit trail says why.
                    passwords.verifyDummy(password: password)
                    outcome = .rejected(reason: .invalidCredentials)
                    auditDetail["hash"] = "\(error.code)"
                }
            } else {
                // Unknown username, or an account without a password: spend the same time as a real check.
                passwords.verifyDummy(password: password)
                outcome = .rejected(reason: .invalidCredentials)
            }
            known = .passwordEvaluated(outcome)
        }

        let id = Self.newUpgradeID()
        let accountID = snapshot.account?.id
        auditDetail["serviceIdentifier"] = serviceIdentifier
        if ticket != nil { auditDetail["credential"] = "ticket" }
        let ticketHash = ticket.map(Self.hashOneTimeValue)
        let machine: UpgradeStateMachine
        let transition: UpgradeTransition
        let issued: EffectOutputs
        do {
            (machine, transition, issued) = try store.write { tx in
                var detail = auditDetail
                var event: UpgradeEvent
                if let known {
                    event = known
                } else {
                    // Spent only if it is this account's and unexpired, and unused or still held by an
                    // upgrade that never got past needing the user (the silent call before this
                    // interactive one); an unknown username matches no ticket.
                    let spent = try spendTicket(hash: ticketHash ?? "", accountID: accountID, for: id, in: tx, now: now)
                    if let spent, let account = snapshot.account {
                        // Only a valid ticket learns that the account cannot be upgraded.
                        event =
                            account.credentialKind == .password && snapshot.credential != nil
                            ? .ticketAccepted(secondFactor: snapshot.hasSecondFactor && !spent.secondFactorVerified)
                            : .ticketRejected(reason: .notEligible)
                    } else {
                        event = .ticketRejected(reason: .invalidTicket)
                    }
                }
                // The password checked before this transaction must still be the account's: a
                // credential change committed meanwhile ends what the earlier password opens.
                // (A conversion deletes the password, so this read sees that too.)
                if case .passwordEvaluated(.accepted) = event, let accountID,
                    try tx.passwordCredential(accountID: accountID) != snapshot.credential
                {
                    event = .passwordEvaluated(.rejected(reason: .credentialsChanged))
                }
                var machine = UpgradeStateMachine.start(now: now, policy: configuration.policy)
                let transition: UpgradeTransition
                do {
                    transition = try machine.apply(event, now: now)
                } catch {
                    throw UpgradeFailure(.internalError, "the upgrade could not start")
                }
                var record = UpgradeSessionRecord(
                    id: id,
                    accountID: accountID,
                    usernameKey: usernameKey,
                    serviceIdentifier: serviceIdentifier,
                    status: machine.status.rawValue,
                    machine: Self.encode(machine),
                    stateHash: nil,
                    nonceHash: nil,
                    linkedSub: nil,
                    createdAt: now,
                    expiresAt: machine.deadline ?? now,
                    updatedAt: now
                )
                switch event {
                case .passwordEvaluated(.accepted), .ticketAccepted:
                    // Most sign-ins follow no failure: then there is no throttle row to clear.
                    if snapshot.throttle != nil { try tx.clearFailures(usernameKey: usernameKey) }
                    if let accountID { try supersedeOpenUpgrades(of: accountID, by: id, in: tx, now: now) }
                    if let rehashed, let old = snapshot.credential,
                        try tx.passwordCredential(accountID: old.accountID)?.hash == old.hash
                    {
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
                case .passwordEvaluated(.rejected(reason: .invalidCredentials)),
                    .ticketRejected(reason: .invalidTicket):
                    _ = try tx.recordFailure(usernameKey: usernameKey, now: now)
                default: break
                }
                let outputs = try performInTransaction(
                    transition.effects,
                    record: &record,
                    inputs: EffectInputs(),
                    in: tx,
                    now: now
                )
                try tx.insertUpgradeSession(record)
                try tx.appendAudit(Self.audit(transition, record: record, now: now, detail: detail))
                try Self.enqueueFailure(transition, machine: machine, record: record, in: tx, now: now)
                return (machine, transition, outputs)
            }
        } catch {
            throw Self.storageFailure(error)
        }

        guard transition.problem == nil else {
            var failure = self.failure(for: machine, id: id, problem: transition.problem)
            failure.retryAfter = retryAfter
            throw heldToFloor(failure, since: started)
        }
        var answer = self.answer(machine, id: id)
        answer.state = issued.state
        answer.nonce = issued.nonce
        return answer
    }

    /// An account has at most one open upgrade: a new one whose password was accepted cancels the
    /// older open ones (`superseded`, audited with the new upgrade's id) in the transaction that
    /// stores it. Without this, every correct password left one more open upgrade behind, without
    /// bound. A conversion in progress runs to its end; one whose claim lapsed is failed as interrupted.
    func supersedeOpenUpgrades(
        of accountID: String,
        by newID: String,
        in tx: any StoreTransaction,
        now: Int64
    ) throws {
        try Self.endOpenUpgrades(
            of: accountID,
            except: newID,
            with: .superseded,
            ["supersededBy": newID],
            configuration.policy,
            tx,
            now
        )
    }
}

extension UpgradeService {
    /// The username's lockout before any credential is checked, for upgrades and password changes
    /// alike: a short delay between failures is thrown as `rateLimited` (no session, no hash, no
    /// count); a lock returns the seconds until it ends, so the caller records a `locked` refusal;
    /// nil lets the check go on.
    func lockedFor(_ snapshot: PasswordCheckSnapshot, now: Int64) throws(UpgradeFailure) -> Int64? {
        let decision = configuration.lockout.decision(
            failures: snapshot.throttle?.failures ?? 0,
            lastFailureAt: snapshot.throttle?.lastFailureAt ?? 0,
            now: now
        )
        switch decision {
        case .delayed(let until):
            throw UpgradeFailure(
                .rateLimited,
                "too many failed attempts for this username; retry in \(max(1, until - now)) s",
                retryAfter: max(1, until - now)
            )
        case .locked(let until):
            return max(1, until - now)
        case .allowed:
            return nil
        }
    }
}
