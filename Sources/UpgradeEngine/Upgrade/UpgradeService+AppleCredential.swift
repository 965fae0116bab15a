import Foundation

extension UpgradeService {
    /// Apple's credential as the extension received it.
    public struct AppleCredential: Sendable {
        public var identityToken: String
        public var authorizationCode: String
        /// The `state` we issued, echoed back by Apple's request.
        public var state: String
        /// Apple's user identifier as the device saw it; if given it must equal the token's `sub`.
        public var user: String?
        /// What Apple gave the device on the first authorization only, forwarded unverified: kept as
        /// the account's contact email and display name where it has none (`DeviceGivenProfile`).
        public var email: String?
        public var fullName: PersonName?

        public init(
            identityToken: String,
            authorizationCode: String,
            state: String,
            user: String? = nil,
            email: String? = nil,
            fullName: PersonName? = nil
        ) {
            self.identityToken = identityToken
            self.authorizationCode = authorizationCode
            self.state = state
            self.user = user
            self.email = email
            self.fullName = fullName
        }
    }

    /// `POST /v1/upgrades/{id}/apple-credential`: verifies the credential, claims the upgrade by moving
    /// it to `converting` (only one racing request can), exchanges the code with Apple, and converts the
    /// account in one transaction. A retry of a completed upgrade with the same `state` returns the same
    /// answer and changes nothing.
    public func submitAppleCredential(
        id: String,
        _ credential: AppleCredential,
        now: Int64
    ) async throws(ServiceFailure)
        -> UpgradeAnswer
    {
        try Self.require(credential.identityToken, "identityToken", maxBytes: Self.maxIdentityTokenBytes)
        try Self.require(credential.authorizationCode, "authorizationCode", maxBytes: Self.maxAuthorizationCodeBytes)
        try Self.require(credential.state, "state", maxBytes: Self.maxStateBytes)
        if let user = credential.user { try Self.require(user, "user", maxBytes: 256) }
        let given: DeviceGivenProfile
        do {
            given = try DeviceGivenProfile(email: credential.email, fullName: credential.fullName)
        } catch {
            throw ServiceFailure(.validation, error.description)
        }

        let loaded = try loadSettled(id, now: now)
        if loaded.interruptedNow { throw failure(for: loaded.machine, id: id, problem: nil) }
        let record = loaded.record
        var machine = loaded.machine
        let stateMatches = Self.stateMatches(credential.state, record)

        // The machine says whether this call can change anything before any token is verified.
        switch machine.admission(of: .appleCredentialEvaluated, now: now) {
        case .replay:
            // The extension's retry of the call that completed the upgrade: the same `state` and a
            // token of the Apple account it linked get the same answer, and nothing changes.
            guard stateMatches else {
                throw ServiceFailure(
                    .stateMismatch,
                    Self.message(for: .stateMismatch),
                    upgradeID: id,
                    status: machine.status
                )
            }
            try await checkReplay(credential, machine: machine, id: id, now: now)
            return answer(machine, id: id, accountID: record.accountID)
        case .inProgress:
            return try await awaitConversion(id: id, state: credential.state)
        case .lapsed:
            throw try commitRejection(.deadlinePassed, detail: [:], record: record, machine: &machine, now: now)
        case .refused(let refusal):
            throw failure(for: refusal, machine: machine, id: id)
        case .proceed:
            break
        }

        // Checks in order of cost; the first that fails ends the upgrade.
        let verdict = await evaluate(credential, record: record, stateMatches: stateMatches, now: now)
        let claims: AppleIdentityClaims
        switch verdict {
        case .rejected(let reason, let detail):
            let event = UpgradeEvent.appleCredentialEvaluated(.rejected(reason: reason))
            throw try commitRejection(event, detail: detail, record: record, machine: &machine, now: now)
        case .verified(let verified):
            claims = verified
        case .undecided(let why):
            // A transient outage on Apple's side must not fail the user's upgrade: answer and keep it open.
            throw ServiceFailure(
                .appleUnavailable,
                "Apple's signing keys could not be fetched to check the identity token; retry shortly",
                upgradeID: id,
                status: machine.status,
                cause: why
            )
        }

        // Claim the upgrade: persist `converting` guarded by the version we read, in the same
        // transaction that checks the account may still convert and the `sub` is not another
        // account's (so nothing can change between the check and the claim). A concurrent request
        // with the same credential loses here and waits for this one's result instead of reaching Apple.
        // The password the claim was made with: the conversion commits only if it is still the
        // account's (a password change committed meanwhile wins; docs/architecture.md §4.4).
        var claimedCredential: PasswordCredentialRecord?
        let claim: (record: UpgradeSessionRecord, transition: UpgradeTransition)
        do {
            claim = try commit(
                .appleCredentialEvaluated(.verified(sub: claims.subject)),
                detail: ["sub": claims.subject],
                record: record,
                machine: &machine,
                now: now,
                unless: { tx in
                    switch try Self.claimRefusal(of: record, for: claims.subject, in: tx) {
                    case .refused(let refusal): return refusal
                    case .eligible(let credential):
                        claimedCredential = credential
                        return nil
                    }
                }
            )
        } catch let failure where failure.kind == .inProgress {
            return try await awaitConversion(id: id, state: credential.state)
        }

        // The claim's effects, in the machine's order: the code exchange, whose outcome is the next
        // event; that event's own effects (the conversion) commit with it.
        var inputs = EffectInputs(claims: claims, claimedCredential: claimedCredential, given: given)
        for effect in claim.transition.effects {
            guard case .exchangeAuthorizationCode = effect else { continue }
            configuration.onEffect(effect, id)
            inputs.tokens = try await exchange(credential.authorizationCode, claim: claim.record, machine, claims, now)
        }
        return try convert(claim.record, machine: machine, inputs: inputs, now: now)
    }

    /// `exchangeAuthorizationCode`: the code goes to Apple only as the identity token's (its `c_hash`
    /// was checked before the claim, and the `id_token` Apple answers with must name the same user:
    /// `AuthorizationCodeExchange`). A refusal ends the upgrade with `conversionFailed`.
    private func exchange(
        _ code: String,
        claim: UpgradeSessionRecord,
        _ machine: UpgradeStateMachine,
        _ claims: AppleIdentityClaims,
        _ now: Int64
    ) async throws(ServiceFailure) -> AppleTokenResponse {
        do {
            return try await AuthorizationCodeExchange(apple: apple, identityTokens: identityTokens)
                .exchange(code, for: claims, now: now)
        } catch {
            let (reason, kind): (UpgradeEvent.ConversionFailure, ServiceFailure.Kind) =
                switch error.code {
                case .notForThisToken: (.codeMismatch, .invalidAuthorizationCode)
                case .refused: (.appleExchangeFailed, .invalidAuthorizationCode)
                default: (.appleUnavailable, .appleUnavailable)
                }
            var detail = ["apple": error.appleCode?.rawValue ?? "\(error.code)"]
            if let revoked = error.grantRevoked { detail["grantRevoked"] = revoked ? "true" : "false" }
            let ended = await commitConversionFailure(reason, detail: detail, record: claim, machine: machine, now: now)
            throw ServiceFailure(
                kind,
                error.message + "; start a new upgrade",
                upgradeID: claim.id,
                status: ended.status == .converting ? .converting : .failed,
                cause: "apple \(error.appleCode?.rawValue ?? "-"): \(error)"
            )
        }
    }

    /// A rejection found inside a transaction, committed instead of the event that was tried.
    struct Refusal: Error {
        let reason: UpgradeEvent.AppleCredentialRejection
        let detail: [String: String]
    }

    /// What the claim's transaction found: a refusal, or the account's password the claim is made
    /// with (which the conversion requires to be still the account's).
    enum ClaimCheck {
        case refused(Refusal)
        case eligible(PasswordCredentialRecord?)
    }

    /// Inside the claim's transaction: the `sub` must not be linked to another account, and the
    /// account must still have a password to convert; the account and its password in one read.
    static func claimRefusal(
        of record: UpgradeSessionRecord,
        for sub: String,
        in tx: any StoreTransaction
    ) throws -> ClaimCheck {
        if let existing = try tx.appleLink(sub: sub), existing.accountID != record.accountID {
            return .refused(Refusal(reason: .subConflict, detail: ["sub": sub]))
        }
        guard let accountID = record.accountID, let snapshot = try tx.accountSnapshot(id: accountID),
            snapshot.account.credentialKind == .password
        else {
            return .refused(Refusal(reason: .notEligible, detail: [:]))
        }
        return .eligible(snapshot.credential)
    }

    enum CredentialVerdict {
        case verified(AppleIdentityClaims)
        /// Apple's keys could not be fetched: nothing was decided about the credential.
        case undecided(String)
        case rejected(UpgradeEvent.AppleCredentialRejection, detail: [String: String])
    }

    private func evaluate(
        _ credential: AppleCredential,
        record: UpgradeSessionRecord,
        stateMatches: Bool,
        now: Int64
    ) async -> CredentialVerdict {
        guard stateMatches else { return .rejected(.stateMismatch, detail: [:]) }
        guard let nonceHash = record.nonceHash else {
            return .rejected(.nonceMismatch, detail: ["nonce": "not-issued"])
        }
        let claims: AppleIdentityClaims
        do {
            claims = try await identityTokens.verifyIdentityToken(
                credential.identityToken,
                nonce: .sha256Hex(nonceHash),
                now: now
            )
        } catch  where error.code == .keysUnavailable {
            return .undecided(error.message)
        } catch  where error.code == .nonceMissing || error.code == .nonceMismatch {
            // We always issue a nonce, so a token without one fails whatever `nonce_supported` says.
            return .rejected(.nonceMismatch, detail: ["token": "\(error.code)"])
        } catch {
            return .rejected(.invalidIdentityToken, detail: ["token": "\(error.code)"])
        }
        if let user = credential.user, !ConstantTime.equals(user, claims.subject) {
            return .rejected(.invalidIdentityToken, detail: ["token": "user-does-not-match-sub"])
        }
        // Before the code is spent: a token that names its code (`c_hash`) must name this one.
        guard AuthorizationCodeExchange.codeMatchesToken(credential.authorizationCode, claims) else {
            return .rejected(.codeMismatch, detail: ["code": "c_hash-differs"])
        }
        return .verified(claims)
    }

    /// The code was exchanged: `authorizationCodeExchanged` moves the claim to `completed`, and its
    /// effect (`convertAccount`) commits in the same transaction: the link, the password deleted, the
    /// account Apple-only, the refresh token sealed, audit rows. Any failure rolls all of it back and
    /// ends the upgrade with the matching `conversionFailed`.
    private func convert(
        _ claimed: UpgradeSessionRecord,
        machine: UpgradeStateMachine,
        inputs: EffectInputs,
        now: Int64
    ) throws(ServiceFailure) -> UpgradeAnswer {
        var machine = machine
        let transition: UpgradeTransition
        do {
            transition = try machine.apply(.authorizationCodeExchanged, now: now)
        } catch {
            throw failure(for: error, machine: machine, id: claimed.id)
        }
        var next = updated(claimed, machine, now: now)
        next.linkedSub = inputs.claims?.subject
        // The state and nonce are single use: forget their hashes... except the state's, which lets the
        // extension's retry of this call be recognised and answered idempotently.
        next.nonceHash = nil
        do {
            try store.write { tx in
                _ = try performInTransaction(transition.effects, record: &next, inputs: inputs, in: tx, now: now)
                try tx.updateUpgradeSession(next, expectedVersion: claimed.version)
                try tx.appendAudit(
                    Self.audit(transition, record: claimed, now: now, detail: ["sub": inputs.claims?.subject ?? ""])
                )
            }
        } catch {
            let reason: UpgradeEvent.ConversionFailure
            if let storage = error as? StorageError, storage.code == .versionConflict {
                // The claim lapsed while Apple answered and another call failed the upgrade as
                // interrupted: nothing was linked; answer with what is stored.
                let current = try load(claimed.id)
                throw failure(for: try restore(current), id: claimed.id, problem: nil)
            } else if let storage = error as? StorageError, storage.constraint == .appleLinksSub {
                reason = .subConflict
            } else if let failure = error as? ServiceFailure, failure.kind == .notEligible {
                reason = .notEligible
            } else if let failure = error as? ServiceFailure, failure.kind == .credentialsChanged {
                reason = .credentialsChanged
            } else {
                throw Self.storageFailure(error)
            }
            // The link did not happen. The refresh token is dropped, not revoked: revoking ends the Apple
            // user's authorization for the whole app, which would sign out the account that owns the sub.
            var converting = try restore(claimed)
            throw try commitRejection(
                .conversionFailed(reason),
                detail: [:],
                record: claimed,
                machine: &converting,
                now: now
            )
        }
        return answer(machine, id: claimed.id, accountID: claimed.accountID)
    }

    /// A retry of the call that completed the upgrade must bring a token of the Apple account the
    /// upgrade linked: the machine refuses another `sub` (`conflict`, answered `sub-conflict`), so a
    /// device that switched Apple accounts between its tries is not told it is linked as the second.
    /// The token is verified without its nonce, which the conversion forgot; the matching `state`
    /// already shows the call comes from the upgrade's device. Nothing is written either way.
    private func checkReplay(
        _ credential: AppleCredential,
        machine: UpgradeStateMachine,
        id: String,
        now: Int64
    ) async throws(ServiceFailure) {
        let claims: AppleIdentityClaims
        do {
            claims = try await identityTokens.verifyIdentityToken(credential.identityToken, nonce: nil, now: now)
        } catch  where error.code == .keysUnavailable {
            throw ServiceFailure(
                .appleUnavailable,
                "Apple's signing keys could not be fetched to check the identity token; retry shortly",
                upgradeID: id,
                status: machine.status,
                cause: error.message
            )
        } catch {
            throw ServiceFailure(
                .invalidIdentityToken,
                "the identity token is not valid (\(error.code)); the upgrade completed before and nothing changed",
                upgradeID: id,
                status: machine.status
            )
        }
        if let user = credential.user, !ConstantTime.equals(user, claims.subject) {
            throw ServiceFailure(
                .invalidIdentityToken,
                "user does not match the identity token's sub; the upgrade completed before and nothing changed",
                upgradeID: id,
                status: machine.status
            )
        }
        var probe = machine
        do {
            _ = try probe.apply(.appleCredentialEvaluated(.verified(sub: claims.subject)), now: now)
        } catch {
            throw failure(for: error, machine: machine, id: id)
        }
    }

    /// Whether `state` is the one issued for this upgrade (its SHA-256 equals the stored hash).
    static func stateMatches(_ state: String, _ record: UpgradeSessionRecord) -> Bool {
        guard let stored = record.stateHash else { return false }
        return ConstantTime.equals(hashOneTimeValue(state), stored)
    }

    /// A request that lost the race to the converting one waits, bounded, for its outcome.
    private func awaitConversion(id: String, state: String) async throws(ServiceFailure) -> UpgradeAnswer {
        let deadline =
            DispatchTime.now().uptimeNanoseconds + UInt64(configuration.convertingWaitMilliseconds) * 1_000_000
        while DispatchTime.now().uptimeNanoseconds < deadline {
            let record = try load(id)
            let machine = try restore(record)
            switch machine.status {
            case .converting:
                try? await Task.sleep(nanoseconds: 20_000_000)
            case .completed:
                guard Self.stateMatches(state, record) else {
                    throw ServiceFailure(
                        .stateMismatch,
                        Self.message(for: .stateMismatch),
                        upgradeID: id,
                        status: .completed
                    )
                }
                return answer(machine, id: id, accountID: record.accountID)
            default:
                throw failure(for: machine, id: id, problem: nil)
            }
        }
        throw ServiceFailure(
            .inProgress,
            "another request is converting this upgrade; retry shortly for its result",
            upgradeID: id,
            status: .converting
        )
    }

    /// Applies one event and persists the new state with its audit row, guarded by `record.version`.
    /// A lost race (the version moved) throws `inProgress`; a refused event throws its failure.
    /// `unless` runs first inside the write transaction: when it finds a refusal, that transaction
    /// is rolled back, the rejection is committed instead, and its failure is thrown.
    func commit(
        _ event: UpgradeEvent,
        detail: [String: String],
        record: UpgradeSessionRecord,
        machine: inout UpgradeStateMachine,
        now: Int64,
        unless refusal: ((any StoreTransaction) throws -> Refusal?)? = nil
    ) throws(ServiceFailure) -> (record: UpgradeSessionRecord, transition: UpgradeTransition) {
        let original = machine
        let transition: UpgradeTransition
        do {
            transition = try machine.apply(event, now: now)
        } catch {
            throw failure(for: error, machine: machine, id: record.id)
        }
        let next: UpgradeSessionRecord
        do {
            next = try store.write { tx in
                if let refused = try refusal?(tx) { throw refused }
                return try persist(transition, of: machine, to: record, detail: detail, in: tx, now: now)
            }
        } catch let refused as Refusal {
            machine = original
            throw try commitRejection(
                .appleCredentialEvaluated(.rejected(reason: refused.reason)),
                detail: refused.detail,
                record: record,
                machine: &machine,
                now: now
            )
        } catch let error as StorageError where error.code == .versionConflict {
            throw ServiceFailure(.inProgress, "another request changed this upgrade", upgradeID: record.id)
        } catch {
            throw Self.storageFailure(error)
        }
        return (next, transition)
    }

    /// Inside a write transaction: stores the machine's new state over `record` (guarded by its
    /// version) with the transition's audit row, and returns the record as stored. A state that ends
    /// the upgrade forgets the nonce's hash.
    func persist(
        _ transition: UpgradeTransition,
        of machine: UpgradeStateMachine,
        to record: UpgradeSessionRecord,
        detail: [String: String],
        in tx: any StoreTransaction,
        now: Int64
    ) throws -> UpgradeSessionRecord {
        try Self.persist(transition, of: machine, to: record, detail: detail, in: tx, now: now)
    }

    /// `persist`, for callers without a service (a credential change made by an import).
    static func persist(
        _ transition: UpgradeTransition,
        of machine: UpgradeStateMachine,
        to record: UpgradeSessionRecord,
        detail: [String: String],
        in tx: any StoreTransaction,
        now: Int64
    ) throws -> UpgradeSessionRecord {
        var next = updated(record, machine, now: now)
        if machine.status.isTerminal {
            next.nonceHash = nil
        }
        try tx.updateUpgradeSession(next, expectedVersion: record.version)
        try tx.appendAudit(Self.audit(transition, record: record, now: now, detail: detail))
        try Self.enqueueFailure(transition, machine: machine, record: record, in: tx, now: now)
        next.version = record.version + 1
        return next
    }

    /// Commits an event that ends in a failure and returns the failure the client sees.
    func commitRejection(
        _ event: UpgradeEvent,
        detail: [String: String],
        record: UpgradeSessionRecord,
        machine: inout UpgradeStateMachine,
        now: Int64
    ) throws(ServiceFailure) -> ServiceFailure {
        let (_, transition) = try commit(event, detail: detail, record: record, machine: &machine, now: now)
        return failure(for: machine, id: record.id, problem: transition.problem)
    }
}
