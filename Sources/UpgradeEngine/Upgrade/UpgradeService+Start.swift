extension UpgradeService {
    /// `POST /v1/upgrades`: evaluates the existing password, or for an in-app upgrade the one-time
    /// `ticket` the app's backend minted (`issueTicket`) with an empty password. Synchronous on
    /// purpose: the password hash is CPU-bound work for the caller's (worker) thread, not for Swift's
    /// small cooperative pool. Answers `success` with a state and nonce,
    /// `twoFactorAuthRequired`, or throws a failure. The credential check (`checkCredential`,
    /// `settle`) is shared with password changes: a wrong password and an unknown username cost the
    /// same and look the same; both count against the username's enforced form (`Username`), so
    /// look-alike spellings share one lockout, and a refused ticket counts the same way; with a
    /// `clientKey` (the caller's address, `HTTPClientAddress.throttleKey`) they count against the
    /// client too (`ClientThrottle`). `received`: when the request arrived (the REST layer's
    /// `HTTPRequest.received`); a refusal is held to the floor from then, so time spent waiting for a
    /// worker, which other requests' checks decide, is inside the floor and tells nothing
    /// (docs/architecture.md §10.3). Nil: from this call's start. A second password for a username
    /// whose check is in flight, or whose refusal is not yet due, is refused `rate-limited` at once
    /// (`CredentialCheckGate`).
    public func start(
        username: String,
        password: String,
        ticket: String? = nil,
        serviceIdentifier: String,
        entry: FlowEntry? = nil,
        clientKey: String? = nil,
        received: ContinuousClock.Instant? = nil,
        now: Int64
    ) throws(ServiceFailure) -> UpgradeAnswer {
        let started = received ?? ContinuousClock.now
        let prepared = try Self.credentialFields(username: username, password: password, ticket: ticket)
        try Self.require(serviceIdentifier, "serviceIdentifier", maxBytes: Self.maxServiceIdentifierBytes)
        return try oneCheckAtATime(for: prepared, ticket: ticket) { () throws(ServiceFailure) in
            try startChecked(
                prepared,
                password: password,
                ticket: ticket,
                serviceIdentifier: serviceIdentifier,
                entry: entry,
                clientKey: clientKey,
                started: started,
                now: now
            )
        }
    }

    /// `start` once its fields are valid and no other check for the username is in flight.
    private func startChecked(
        _ prepared: Username,
        password: String,
        ticket: String?,
        serviceIdentifier: String,
        entry: FlowEntry?,
        clientKey: String?,
        started: ContinuousClock.Instant,
        now: Int64
    ) throws(ServiceFailure) -> UpgradeAnswer {
        let id = Self.newUpgradeID()
        let check = try checkCredential(
            prepared,
            password: password,
            ticket: ticket,
            clientKey: clientKey,
            use: .upgrade,
            for: id,
            now: now
        )
        let accountID = check.snapshot.account?.id
        let machine: UpgradeStateMachine
        let transition: UpgradeTransition
        let issued: EffectOutputs
        do {
            (machine, transition, issued) = try store.write { tx in
                var (verdict, detail) = try settle(check, for: id, in: tx, now: now)
                detail["serviceIdentifier"] = serviceIdentifier
                let event: UpgradeEvent
                switch verdict {
                case .password(let outcome): event = .passwordEvaluated(outcome)
                case .ticketAccepted(let secondFactor): event = .ticketAccepted(secondFactor: secondFactor)
                case .ticketRejected(let reason): event = .ticketRejected(reason: reason)
                case .changed: event = .passwordEvaluated(.rejected(reason: .credentialsChanged))
                }
                var machine = UpgradeStateMachine.start(now: now, policy: configuration.policy)
                let transition: UpgradeTransition
                do {
                    transition = try machine.apply(event, now: now)
                } catch {
                    throw ServiceFailure(.internalError, "the upgrade could not start")
                }
                var record = UpgradeSessionRecord(
                    id: id,
                    accountID: accountID,
                    usernameKey: prepared.value,
                    serviceIdentifier: serviceIdentifier,
                    status: machine.status.rawValue,
                    machine: Self.encode(machine),
                    stateHash: nil,
                    nonceHash: nil,
                    linkedSub: nil,
                    createdAt: now,
                    expiresAt: machine.deadline ?? now,
                    updatedAt: now,
                    entry: FlowEntry.of(declared: entry, ticket: ticket)?.rawValue
                )
                switch event {
                case .passwordEvaluated(.accepted), .ticketAccepted:
                    if let accountID { try supersedeOpenUpgrades(of: accountID, by: id, in: tx, now: now) }
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
            failure.retryAfter = check.retryAfter
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
    func lockedFor(_ snapshot: PasswordCheckSnapshot, now: Int64) throws(ServiceFailure) -> Int64? {
        let decision = configuration.lockout.decision(
            failures: snapshot.throttle?.failures ?? 0,
            lastFailureAt: snapshot.throttle?.lastFailureAt ?? 0,
            now: now
        )
        switch decision {
        case .delayed(let until):
            throw ServiceFailure(
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
