extension UpgradeService {
    /// `POST /v1/password-changes`: the extension's `changePasswordWithoutUserInteraction`. Replaces the
    /// account's password with `newPassword` (argon2id) once the current password, or a one-time
    /// `ticket` from `issueTicket` sent with an empty password, is accepted, and for a TOTP account once
    /// a code is (`stepUpPasswordChange`). Synchronous for the same reason as `start`.
    ///
    /// Order of checks (docs/architecture.md §4.7): the request's fields; the new password against the
    /// rules, and on the password path against the current password as sent (constant time): a
    /// refusal there is `passwordPolicy` and nothing is checked, counted, spent or stored. Then the
    /// current password with the upgrade's lockout and dummy work, so a wrong password and an unknown
    /// username cost and look the same, or the ticket: valid for the account, it is compared with the
    /// new password against the stored hash before it is spent, so an unchanged password leaves it
    /// unspent. An account without a password answers `invalidCredentials` on the password path
    /// (anything else would tell a stranger it exists) and `notEligible` with a valid ticket. The
    /// check itself, with the client's count, is the upgrade's (`checkCredential`, `settle`).
    public func startPasswordChange(
        username: String,
        password: String,
        ticket: String? = nil,
        newPassword: String,
        serviceIdentifier: String,
        entry: FlowEntry? = nil,
        clientKey: String? = nil,
        received: ContinuousClock.Instant? = nil,
        now: Int64
    ) throws(ServiceFailure) -> PasswordChangeAnswer {
        // Held to the floor from the request's arrival, as `start` is.
        let started = received ?? ContinuousClock.now
        let prepared = try Self.credentialFields(username: username, password: password, ticket: ticket)
        try Self.require(newPassword, "newPassword", maxBytes: Self.maxPasswordBytes)
        try Self.require(serviceIdentifier, "serviceIdentifier", maxBytes: Self.maxServiceIdentifierBytes)
        var machine = PasswordChangeStateMachine.start(now: now, policy: configuration.policy)
        if let violation = passwordRules.current.violation(of: newPassword) {
            try refuseNewPassword(violation, machine: &machine, now: now)
        }
        if ticket == nil, ConstantTime.equals(newPassword, password) {
            try refuseNewPassword(.sameAsCurrent, machine: &machine, now: now)
        }

        return try oneCheckAtATime(for: prepared, ticket: ticket) { () throws(ServiceFailure) in
            try startPasswordChangeChecked(
                prepared,
                password: password,
                ticket: ticket,
                newPassword: newPassword,
                serviceIdentifier: serviceIdentifier,
                entry: entry,
                clientKey: clientKey,
                machine: machine,
                started: started,
                now: now
            )
        }
    }

    /// `startPasswordChange` once its fields and new password pass and no other check for the
    /// username is in flight (`CredentialCheckGate`).
    private func startPasswordChangeChecked(
        _ prepared: Username,
        password: String,
        ticket: String?,
        newPassword: String,
        serviceIdentifier: String,
        entry: FlowEntry?,
        clientKey: String?,
        machine: PasswordChangeStateMachine,
        started: ContinuousClock.Instant,
        now: Int64
    ) throws(ServiceFailure) -> PasswordChangeAnswer {
        var machine = machine
        let id = Self.newPasswordChangeID()
        let check = try checkCredential(
            prepared,
            password: password,
            ticket: ticket,
            clientKey: clientKey,
            use: .passwordChange,
            for: id,
            now: now
        )
        var newHash: String?
        if case .password(.accepted) = check.known {
            newHash = try hashNewPassword(newPassword)
        } else if check.known == nil, check.ticketUsable, check.eligible, let credential = check.snapshot.credential {
            // Only the ticket's holder learns this, and before the ticket is spent.
            if (try? passwords.verify(password: newPassword, encodedHash: credential.hash)) == true {
                try refuseNewPassword(.sameAsCurrent, machine: &machine, now: now)
            }
            newHash = try hashNewPassword(newPassword)
        }

        let accountID = check.snapshot.account?.id
        let transition: PasswordChangeTransition
        do {
            (machine, transition) = try store.write { tx in
                var (verdict, detail) = try settle(check, for: id, in: tx, now: now)
                detail["serviceIdentifier"] = serviceIdentifier
                let event: PasswordChangeEvent
                switch verdict {
                case .password(let outcome): event = .passwordEvaluated(outcome)
                case .ticketAccepted(let secondFactor): event = .ticketAccepted(secondFactor: secondFactor)
                case .ticketRejected(let reason): event = .ticketRejected(reason: reason)
                case .changed: event = .accountChanged
                }
                var machine = PasswordChangeStateMachine.start(now: now, policy: configuration.policy)
                let transition: PasswordChangeTransition
                do {
                    transition = try machine.apply(event, now: now)
                } catch {
                    throw ServiceFailure(.internalError, "the password change could not start")
                }
                let record = PasswordChangeRecord(
                    id: id,
                    accountID: accountID,
                    usernameKey: prepared.value,
                    serviceIdentifier: serviceIdentifier,
                    status: machine.status.rawValue,
                    machine: Self.encode(machine),
                    newPasswordHash: machine.status.isTerminal ? nil : newHash,
                    createdAt: now,
                    expiresAt: machine.deadline ?? now,
                    updatedAt: now,
                    entry: FlowEntry.of(declared: entry, ticket: ticket)?.rawValue
                )
                switch event {
                case .passwordEvaluated(.accepted), .ticketAccepted:
                    if let accountID { try supersedeOpenPasswordChanges(of: accountID, by: id, in: tx, now: now) }
                default: break
                }
                try tx.insertPasswordChange(record)
                try tx.appendAudit(Self.audit(transition, change: record, now: now, detail: detail))
                try performPasswordChangeEffects(transition.effects, change: record, newHash: newHash, in: tx, now: now)
                return (machine, transition)
            }
        } catch {
            throw Self.storageFailure(error)
        }
        guard transition.problem == nil else {
            var failure = passwordChangeFailure(machine, id: id, problem: transition.problem)
            failure.retryAfter = check.retryAfter
            throw heldToFloor(failure, since: started)
        }
        return passwordChangeAnswer(machine, id: id)
    }

    /// `POST /v1/password-changes/{id}/step-up`: a TOTP or recovery code for a change waiting on one.
    /// As with an upgrade's step-up, the code's use, the attempt count, the new state and (on success)
    /// the new password commit in one transaction or not at all.
    public func stepUpPasswordChange(
        id: String,
        code: StepUpCode,
        clientKey: String? = nil,
        now: Int64
    ) throws(ServiceFailure) -> PasswordChangeAnswer {
        switch code {
        case .totp(let value): try Self.require(value, "code", maxBytes: 16)
        case .recoveryCode(let value): try Self.require(value, "recoveryCode", maxBytes: 64)
        }
        let notFound = ServiceFailure(.notFound, "no password change with this id")
        guard !id.isEmpty, id.utf8.count <= 64 else { throw notFound }
        let outcome: Result<PasswordChangeAnswer, ServiceFailure>
        do {
            outcome = try store.write { tx in
                try clientThrottled(clientKey, in: tx, now: now) {
                    () throws -> Result<PasswordChangeAnswer, ServiceFailure> in
                    guard let record = try tx.passwordChange(id: id) else { return .failure(notFound) }
                    var machine = try restore(record)
                    let event: PasswordChangeEvent
                    var countsAsFailure = false
                    switch machine.admission(of: .stepUpEvaluated, now: now) {
                    case .lapsed:
                        event = .deadlinePassed
                    case .refused, .replay:
                        // Nothing to check: the code is not touched.
                        return .failure(passwordChangeRefusal(machine, id: id))
                    case .proceed:
                        let throttle = try tx.throttle(usernameKey: record.usernameKey)
                        let decision = configuration.lockout.decision(
                            failures: throttle?.failures ?? 0,
                            lastFailureAt: throttle?.lastFailureAt ?? 0,
                            now: now
                        )
                        if case .delayed(let until) = decision {
                            var failure = ServiceFailure(
                                .rateLimited,
                                "too many wrong codes in a row; retry in \(max(1, until - now)) s",
                                result: .twoFactorAuthRequired,
                                upgradeID: id,
                                attemptsRemaining: machine.attemptsRemaining,
                                retryAfter: max(1, until - now)
                            )
                            failure.passwordChangeStatus = machine.status
                            return .failure(failure)
                        } else if case .locked = decision {
                            event = .stepUpEvaluated(.rejected(reason: .locked))
                        } else if try checkCode(code, accountID: record.accountID, tx: tx, now: now) {
                            event = try passwordStillCurrent(record, tx) ? .stepUpEvaluated(.accepted) : .accountChanged
                        } else {
                            event = .stepUpEvaluated(.rejected(reason: .invalidCode))
                            countsAsFailure = true
                        }
                    }
                    let transition: PasswordChangeTransition
                    do {
                        transition = try machine.apply(event, now: now)
                    } catch {
                        return .failure(passwordChangeRefusal(machine, id: id))
                    }
                    var next = record
                    next.status = machine.status.rawValue
                    next.machine = Self.encode(machine)
                    next.expiresAt = machine.deadline ?? record.expiresAt
                    next.updatedAt = now
                    if machine.status.isTerminal { next.newPasswordHash = nil }
                    if countsAsFailure {
                        _ = try tx.recordFailure(usernameKey: record.usernameKey, now: now)
                    } else if case .stepUpEvaluated(.accepted) = event {
                        try tx.clearFailures(usernameKey: record.usernameKey)
                    }
                    try tx.updatePasswordChange(next, expectedVersion: record.version)
                    var detail: [String: String] = [:]
                    if case .stepUpEvaluated(.accepted) = event {
                        if case .recoveryCode = code {
                            detail["factor"] = "recoveryCode"
                        } else {
                            detail["factor"] = "totp"
                        }
                    }
                    try tx.appendAudit(Self.audit(transition, change: record, now: now, detail: detail))
                    try performPasswordChangeEffects(
                        transition.effects,
                        change: record,
                        newHash: record.newPasswordHash,
                        in: tx,
                        now: now
                    )
                    if let problem = transition.problem {
                        return .failure(passwordChangeFailure(machine, id: id, problem: problem))
                    }
                    return .success(passwordChangeAnswer(machine, id: id))
                }
            }
        } catch {
            throw Self.storageFailure(error)
        }
        return try outcome.get()
    }

    /// `POST /v1/password-changes/{id}/cancel`: the extension cancelled the request. An open change
    /// ends as `cancelled` with the `ASExtensionError` code, its new password's hash forgotten; a
    /// cancelled one answers the same again; one that already ended otherwise (completed, failed,
    /// expired) is `not-allowed-in-state`, naming how it ended. A change cancelled with
    /// `userInteractionRequired` leaves its ticket to the interactive call (§5).
    public func cancelPasswordChange(
        id: String,
        reason: ASExtensionErrorCode,
        now: Int64
    ) throws(ServiceFailure) -> PasswordChangeAnswer {
        let notFound = ServiceFailure(.notFound, "no password change with this id")
        guard !id.isEmpty, id.utf8.count <= 64 else { throw notFound }
        let outcome: Result<PasswordChangeAnswer, ServiceFailure>
        do {
            outcome = try store.write { tx throws -> Result<PasswordChangeAnswer, ServiceFailure> in
                guard let record = try tx.passwordChange(id: id) else { return .failure(notFound) }
                var machine = try restore(record)
                let event: PasswordChangeEvent
                switch machine.admission(of: .cancel, now: now) {
                case .replay:
                    return .success(passwordChangeAnswer(machine, id: id))
                case .lapsed:
                    event = .deadlinePassed
                case .proceed:
                    event = .cancel(reason: reason)
                case .refused:
                    var failure = passwordChangeRefusal(machine, id: id)
                    if machine.status.isTerminal { failure.kind = .notAllowedInState }
                    return .failure(failure)
                }
                let transition: PasswordChangeTransition
                do {
                    transition = try machine.apply(event, now: now)
                } catch {
                    return .failure(passwordChangeRefusal(machine, id: id))
                }
                try Self.persist(transition, of: machine, to: record, detail: ["reason": reason.name], in: tx, now: now)
                if let problem = transition.problem {
                    return .failure(passwordChangeFailure(machine, id: id, problem: problem))
                }
                return .success(passwordChangeAnswer(machine, id: id))
            }
        } catch {
            throw Self.storageFailure(error)
        }
        return try outcome.get()
    }

    // MARK: Helpers

    /// Password change ids carry 128 random bits, like upgrade ids.
    static func newPasswordChangeID() -> String { "pwc_" + SecureRandom.token(byteCount: 16) }

    /// The machine keeps the state and the call answers `passwordPolicy` naming the rule. The change
    /// was never stored, so the answer carries no id: the corrected try is a new change.
    private func refuseNewPassword(
        _ violation: PasswordRuleViolation,
        machine: inout PasswordChangeStateMachine,
        now: Int64
    ) throws(ServiceFailure) -> Never {
        let problem = (try? machine.apply(.newPasswordRefused, now: now))?.problem ?? .passwordPolicy
        var failure = ServiceFailure(Self.passwordChangeKind(for: problem), violation.description)
        failure.rule = violation.rule
        throw failure
    }

    /// An account has at most one open password change: a newer one whose current password or ticket
    /// was accepted ends the older open ones (`superseded`, audited with the new change's id) in the
    /// transaction that stores it.
    private func supersedeOpenPasswordChanges(
        of accountID: String,
        by newID: String,
        in tx: any StoreTransaction,
        now: Int64
    ) throws {
        try Self.endOpenPasswordChanges(
            of: accountID,
            except: newID,
            with: .superseded,
            ["supersededBy": newID],
            configuration.policy,
            tx,
            now
        )
    }

    private func hashNewPassword(_ newPassword: String) throws(ServiceFailure) -> String {
        do {
            return try passwords.hash(password: newPassword, with: configuration.passwordHasher)
        } catch {
            throw ServiceFailure(.internalError, "the new password could not be hashed", cause: "\(error.code)")
        }
    }

    /// The account is still a password account. That its password is still the one the change was
    /// started with needs no clock: every credential change ends the open changes of the account in
    /// its own transaction (`endFlowsAuthorizedByEarlierCredentials`), so a change still open here was
    /// opened with the current password; two changes are ordered by their transactions, not by time.
    private func passwordStillCurrent(_ record: PasswordChangeRecord, _ tx: any StoreTransaction) throws -> Bool {
        guard let accountID = record.accountID, record.newPasswordHash != nil,
            try tx.account(id: accountID)?.credentialKind == .password
        else { return false }
        return try tx.passwordCredential(accountID: accountID) != nil
    }

    /// `storeNewPassword`, inside the transaction that persists `completed`: the new hash replaces the
    /// old one, with a `password.changed` audit row (no secret: the format and the change's id).
    private func performPasswordChangeEffects(
        _ effects: [PasswordChangeEffect],
        change: PasswordChangeRecord,
        newHash: String?,
        in tx: any StoreTransaction,
        now: Int64
    ) throws {
        for effect in effects {
            switch effect {
            case .storeNewPassword:
                guard let accountID = change.accountID, let newHash else {
                    throw ServiceFailure(
                        .internalError,
                        "the password change could not be completed; nothing changed",
                        cause: "storeNewPassword without an account or a new hash"
                    )
                }
                try tx.upsertPasswordCredential(
                    PasswordCredentialRecord(accountID: accountID, hash: newHash, format: "argon2id", updatedAt: now)
                )
                // What the old password opened ends with it, in this transaction.
                try Self.endFlowsAuthorizedByEarlierCredentials(
                    accountID: accountID,
                    cause: .passwordChanged,
                    except: change.id,
                    policy: configuration.policy,
                    in: tx,
                    now: now
                )
                try tx.appendAudit(
                    AuditEvent(
                        at: now,
                        accountID: accountID,
                        upgradeID: nil,
                        event: "password.changed",
                        detail: ["passwordChange": change.id, "format": "argon2id"]
                    )
                )
                try WebhookOutbox.enqueue(
                    .passwordChanged,
                    accountID: accountID,
                    data: [("accountId", .string(accountID)), ("passwordChangeId", .string(change.id))],
                    in: tx,
                    now: now
                )
            }
        }
    }

    /// The audit row for one password-change transition (statuses, event name, problem; no secrets).
    static func audit(
        _ transition: PasswordChangeTransition,
        change: PasswordChangeRecord,
        now: Int64,
        detail: [String: String]
    ) -> AuditEvent {
        var detail = detail
        detail["passwordChange"] = change.id
        if let entry = change.entry { detail["entry"] = entry }
        if let problem = transition.problem { detail["problem"] = problem.rawValue }
        return AuditEvent(
            at: now,
            accountID: change.accountID,
            upgradeID: nil,
            event: "passwordChange.\(transition.event)",
            fromStatus: transition.from.rawValue,
            toStatus: transition.to.rawValue,
            detail: detail
        )
    }

    /// The `machine` column: `PasswordChangeState.Persisted` as a JSON object with sorted keys.
    public static func encode(_ machine: PasswordChangeStateMachine) -> String {
        let state = machine.state.persisted
        return JSONValue.object([
            "cancelCode": state.cancelCode.map { .integer(Int64($0)) },
            "deadline": state.deadline.map { .integer($0) },
            "failedAttempts": state.failedAttempts.map { .integer(Int64($0)) },
            "failureReason": state.failureReason.map { .string($0) },
            "status": .string(state.status),
        ]).serializedString
    }

    func restore(_ record: PasswordChangeRecord) throws(ServiceFailure) -> PasswordChangeStateMachine {
        try Self.restore(record, policy: configuration.policy)
    }

    /// The machine stored in `record`, under `policy`; an unreadable column is an internal failure.
    static func restore(
        _ record: PasswordChangeRecord,
        policy: UpgradePolicy
    ) throws(ServiceFailure)
        -> PasswordChangeStateMachine
    {
        let unreadable = ServiceFailure(
            .internalError,
            "the stored password change could not be read",
            cause: "password change \(record.id): the machine column is not a state this version knows"
        )
        guard let json = try? JSONValue.parse(Array(record.machine.utf8)), json.members != nil,
            let status = json["status"]?.stringValue
        else { throw unreadable }
        let persisted = PasswordChangeState.Persisted(
            status: status,
            deadline: json["deadline"]?.int64Value,
            failedAttempts: json["failedAttempts"]?.int64Value.map { Int($0) },
            failureReason: json["failureReason"]?.stringValue,
            cancelCode: json["cancelCode"]?.int64Value.map { Int($0) }
        )
        do {
            return PasswordChangeStateMachine(
                state: try PasswordChangeState(persisted: persisted),
                policy: policy
            )
        } catch {
            throw unreadable
        }
    }

    func passwordChangeAnswer(_ machine: PasswordChangeStateMachine, id: String) -> PasswordChangeAnswer {
        PasswordChangeAnswer(
            id: id,
            status: machine.status,
            result: machine.result ?? .success,
            expiresAt: machine.status == .stepUpRequired ? machine.deadline : nil,
            attemptsRemaining: machine.attemptsRemaining
        )
    }

    /// The failure that answers a password change whose call reported `problem`.
    func passwordChangeFailure(
        _ machine: PasswordChangeStateMachine,
        id: String,
        problem: PasswordChangeFailureReason?
    ) -> ServiceFailure {
        let reason = problem ?? machine.state.problem ?? .notEligible
        var failure = ServiceFailure(
            Self.passwordChangeKind(for: reason),
            Self.passwordChangeMessage(for: reason),
            result: machine.result ?? .failure,
            upgradeID: id
        )
        failure.passwordChangeStatus = machine.status
        if reason == .invalidCode {
            failure.result = .twoFactorAuthRequired
            failure.attemptsRemaining = machine.attemptsRemaining
        }
        return failure
    }

    /// A call the change's state does not take: an ended change says how it ended.
    private func passwordChangeRefusal(_ machine: PasswordChangeStateMachine, id: String) -> ServiceFailure {
        switch machine.status {
        case .cancelled:
            var failure = ServiceFailure(
                .notAllowedInState,
                "this password change was cancelled; start a new one",
                result: .failure,
                upgradeID: id
            )
            failure.passwordChangeStatus = machine.status
            return failure
        case .failed, .expired:
            var failure = passwordChangeFailure(machine, id: id, problem: nil)
            failure.message = "this password change already ended as '\(machine.status.rawValue)' (\(failure.message))"
            return failure
        default:
            var failure = ServiceFailure(
                .notAllowedInState,
                "this call is not allowed while the password change is '\(machine.status.rawValue)'",
                upgradeID: id
            )
            failure.passwordChangeStatus = machine.status
            return failure
        }
    }

    static func passwordChangeKind(for reason: PasswordChangeFailureReason) -> ServiceFailure.Kind {
        switch reason {
        case .invalidCredentials: .invalidCredentials
        case .invalidTicket: .invalidTicket
        case .locked: .locked
        case .notEligible: .notEligible
        case .tooManyAttempts: .tooManyAttempts
        case .invalidCode: .invalidCode
        case .passwordPolicy: .passwordPolicy
        case .expired: .upgradeExpired
        case .credentialsChanged: .credentialsChanged
        case .superseded: .notAllowedInState
        }
    }

    static func passwordChangeMessage(for reason: PasswordChangeFailureReason) -> String {
        switch reason {
        case .invalidCredentials: "the username or password is not correct"
        case .invalidTicket: "the ticket is not valid for this username: wrong, expired or already used"
        case .locked: "too many failed attempts for this username; try again later"
        case .notEligible:
            "this account's password cannot be changed: it has none (it signs in with Apple), or it changed meanwhile"
        case .tooManyAttempts: "too many wrong codes; start a new password change"
        case .invalidCode: "the code is not correct or was already used"
        case .passwordPolicy: "the new password does not meet the password rules"
        case .expired: "the password change expired; start a new one"
        case .credentialsChanged:
            "the account's password or second factor changed after this password change began; nothing was stored, start a new one"
        case .superseded: "a newer password change of this account replaced this one; nothing was stored"
        }
    }
}
