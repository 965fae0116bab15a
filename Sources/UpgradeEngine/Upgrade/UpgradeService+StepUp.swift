extension UpgradeService {
    /// A step-up code: either a TOTP code or a single-use recovery code.
    public enum StepUpCode: Sendable {
        case totp(String)
        case recoveryCode(String)
    }

    /// `POST /v1/upgrades/{id}/step-up`. TOTP and recovery-code checks are cheap, so the whole step
    /// runs inside one write transaction: the code's use (the TOTP step advanced, the recovery code
    /// marked used), the attempt count and the new state commit together or not at all, and with a
    /// `clientKey` the client's count (`clientThrottled`).
    public func stepUp(
        id: String,
        code: StepUpCode,
        clientKey: String? = nil,
        now: Int64
    ) throws(ServiceFailure) -> UpgradeAnswer {
        switch code {
        case .totp(let value): try Self.require(value, "code", maxBytes: 16)
        case .recoveryCode(let value): try Self.require(value, "recoveryCode", maxBytes: 64)
        }
        _ = try load(id)

        let outcome: Result<UpgradeAnswer, ServiceFailure>
        do {
            outcome = try store.write { tx in
                try clientThrottled(clientKey, in: tx, now: now) { () throws -> Result<UpgradeAnswer, ServiceFailure> in
                    guard let record = try tx.upgradeSession(id: id) else {
                        return .failure(ServiceFailure(.notFound, "no upgrade with this id"))
                    }
                    var machine = try restore(record)
                    let event: UpgradeEvent
                    var countsAsFailure = false
                    switch machine.admission(of: .stepUpEvaluated, now: now) {
                    case .lapsed:
                        event = .deadlinePassed
                    case .refused(let refusal):
                        // Nothing to check: the code is not touched.
                        return .failure(failure(for: refusal, machine: machine, id: id))
                    case .replay, .inProgress:
                        // The machine answers these only for Apple's credential and a cancel.
                        return .failure(failure(for: machine.refusal(of: .stepUpEvaluated), machine: machine, id: id))
                    case .proceed:
                        let throttle = try tx.throttle(usernameKey: record.usernameKey)
                        let decision = configuration.lockout.decision(
                            failures: throttle?.failures ?? 0,
                            lastFailureAt: throttle?.lastFailureAt ?? 0,
                            now: now
                        )
                        if case .delayed(let until) = decision {
                            // Between failures the user waits; the upgrade and its attempt count stay as they are.
                            return .failure(
                                ServiceFailure(
                                    .rateLimited,
                                    "too many wrong codes in a row; retry in \(max(1, until - now)) s",
                                    result: .twoFactorAuthRequired,
                                    upgradeID: id,
                                    status: machine.status,
                                    attemptsRemaining: machine.attemptsRemaining,
                                    retryAfter: max(1, until - now)
                                )
                            )
                        } else if case .locked = decision {
                            event = .stepUpEvaluated(.rejected(reason: .locked))
                        } else if try checkCode(code, accountID: record.accountID, tx: tx, now: now) {
                            event = .stepUpEvaluated(.accepted)
                        } else {
                            event = .stepUpEvaluated(.rejected(reason: .invalidCode))
                            countsAsFailure = true
                        }
                    }

                    let transition: UpgradeTransition
                    do {
                        transition = try machine.apply(event, now: now)
                    } catch let error as TransitionError {
                        return .failure(failure(for: error, machine: machine, id: id))
                    }
                    var next = updated(record, machine, now: now)
                    let issued = try performInTransaction(
                        transition.effects,
                        record: &next,
                        inputs: EffectInputs(),
                        in: tx,
                        now: now
                    )
                    if countsAsFailure {
                        _ = try tx.recordFailure(usernameKey: record.usernameKey, now: now)
                    } else if case .stepUpEvaluated(.accepted) = event {
                        try tx.clearFailures(usernameKey: record.usernameKey)
                    }
                    try tx.updateUpgradeSession(next, expectedVersion: record.version)
                    var detail: [String: String] = [:]
                    if case .recoveryCode = code, case .stepUpEvaluated(.accepted) = event {
                        detail["factor"] = "recoveryCode"
                    }
                    if case .totp = code, case .stepUpEvaluated(.accepted) = event { detail["factor"] = "totp" }
                    try tx.appendAudit(Self.audit(transition, record: record, now: now, detail: detail))
                    try Self.enqueueFailure(transition, machine: machine, record: record, in: tx, now: now)
                    if let problem = transition.problem {
                        return .failure(failure(for: machine, id: id, problem: problem))
                    }
                    var answer = answer(machine, id: id)
                    answer.state = issued.state
                    answer.nonce = issued.nonce
                    return .success(answer)
                }
            }
        } catch {
            throw Self.storageFailure(error)
        }
        return try outcome.get()
    }

    /// Checks and consumes a code inside the caller's transaction. A replayed TOTP code, one for a step
    /// at or before the last accepted one, or a used recovery code is simply wrong.
    func checkCode(_ code: StepUpCode, accountID: String?, tx: any StoreTransaction, now: Int64) throws -> Bool {
        guard let accountID else { return false }
        switch code {
        case .recoveryCode(let value):
            guard RecoveryCodes.isWellFormed(value) else { return false }
            return try tx.consumeRecoveryCode(accountID: accountID, codeHash: RecoveryCodes.hash(value), now: now)
        case .totp(let value):
            guard let enrollment = try tx.totpEnrollment(accountID: accountID) else { return false }
            let secret: [UInt8]
            do {
                secret = try secrets.open(enrollment.secretCiphertext, context: Self.totpContext(accountID: accountID))
            } catch {
                throw ServiceFailure(.internalError, "the second factor could not be checked; nothing changed")
            }
            let parameters: TOTPParameters
            do {
                parameters = try TOTPParameters(
                    algorithm: enrollment.algorithm,
                    digits: enrollment.digits,
                    period: enrollment.period
                )
            } catch {
                throw ServiceFailure(.internalError, "the stored second factor has unsupported parameters")
            }
            switch TOTP.verify(
                code: value,
                secret: secret,
                parameters: parameters,
                now: now,
                lastAcceptedStep: enrollment.lastAcceptedStep
            ) {
            case .accepted(let step):
                // Conditional update: if a concurrent request took this step first, this one loses.
                return try tx.advanceTOTPStep(accountID: accountID, step: step)
            case .rejected, .replayed:
                return false
            }
        }
    }

    /// Sealing context for an account's TOTP secret, so a ciphertext cannot be moved to another account.
    public static func totpContext(accountID: String) -> String { "totp-secret:\(accountID)" }

    /// Sealing context for an account's Apple refresh token.
    public static func refreshTokenContext(accountID: String) -> String { "apple-refresh-token:\(accountID)" }
}
