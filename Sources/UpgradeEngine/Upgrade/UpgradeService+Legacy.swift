extension UpgradeService {
    /// An outage of the legacy login system: `503 legacy-unavailable`, nothing counted or stored.
    /// Within the pause after an outage it is answered no sooner than `hold` (what that outage took,
    /// `LegacyPasswordVerifier.outageHold`) after the check began: a check refused as busy, or an
    /// unknown username that is not asked, then takes as long as a legacy account's asked check.
    static func legacyUnavailable(heldFor hold: Duration?, since started: ContinuousClock.Instant) -> ServiceFailure {
        var failure = ServiceFailure(
            .legacyUnavailable,
            "the password cannot be checked right now; retry in \(LegacyPasswordVerifier.retryAfterSeconds) s",
            retryAfter: LegacyPasswordVerifier.retryAfterSeconds
        )
        if let hold { failure.notBefore = started.advanced(by: hold + legacyHoldMargin) }
        return failure
    }

    /// Added to every held outage answer, so that both kinds are written by the event loop's timer
    /// (whose sleeps are whole milliseconds, rounded up): without it a legacy account's answer, whose
    /// own call used up `hold`, was due at once and left about a millisecond before an unknown
    /// username's, which waited for the timer.
    static let legacyHoldMargin = Duration.milliseconds(2)

    /// A `legacyPassword` account's password, checked by the legacy login system
    /// (docs/legacy-verification.md), once the lockout and the client's limit let the check go on. A
    /// match is accepted and the password hashed with the current parameters, stored by `settle` in
    /// the flow's write, so the legacy system is not asked about this account again; a mismatch or
    /// `unknown` is a wrong password; an outage throws before anything is counted.
    func checkWithLegacySystem(
        _ check: inout CredentialCheck,
        password: String,
        started: ContinuousClock.Instant
    ) throws(ServiceFailure) {
        guard let legacy = configuration.legacyVerifier, let account = check.snapshot.account else {
            // Imported for a legacy system that is not configured: the password cannot be checked.
            passwords.verifyDummy(password: password)
            check.known = .password(.rejected(reason: .invalidCredentials))
            check.detail["hash"] = "legacy password, but UPGRADE_LEGACY_VERIFY_URL is not set"
            return
        }
        switch legacy.verify(username: account.username, password: password) {
        case .match:
            check.known = .password(.accepted(secondFactor: check.snapshot.hasSecondFactor))
            check.detail["legacy"] = "match"
            do {
                check.rehashed = try passwords.hash(password: password, with: configuration.passwordHasher)
            } catch {
                throw ServiceFailure(.internalError, "the password could not be stored", cause: "\(error)")
            }
        case .mismatch, .unknown:
            check.known = .password(.rejected(reason: .invalidCredentials))
            check.detail["legacy"] = "mismatch"
        case .unavailable:
            throw Self.legacyUnavailable(heldFor: legacy.outageHold, since: started)
        }
    }

    /// With `UPGRADE_LEGACY_CREATE`, an unknown username is asked about too: a match creates the
    /// account just in time, with the profile the legacy system gave and the password hashed with the
    /// current parameters, and the check goes on as a right password for it. Anything else is the
    /// uniform wrong password; an outage throws.
    func checkUnknownWithLegacySystem(
        _ check: inout CredentialCheck,
        legacy: LegacyPasswordVerifier,
        password: String,
        started: ContinuousClock.Instant,
        now: Int64
    ) throws(ServiceFailure) {
        check.known = .password(.rejected(reason: .invalidCredentials))
        let profile: LegacyProfile
        switch legacy.verify(username: check.username.value, password: password) {
        case .match(let given): profile = given
        case .mismatch, .unknown:
            check.detail["legacy"] = "mismatch"
            return
        case .unavailable:
            throw Self.legacyUnavailable(heldFor: legacy.outageHold, since: started)
        }
        check.detail["legacy"] = "match"
        let creator = AccountCreationService(store: store, secrets: nil, hasher: configuration.passwordHasher)
        var created = false
        do {
            var request = try AccountCreationService.Request(
                username: check.username,
                password: password,
                origin: "legacy"
            )
            request.profile = profile
            _ = try creator.create(request, now: now)
            created = true
        } catch let error as AccountCreationError {
            switch error {
            case .usernameTaken:
                // Created meanwhile (another check of the same new user): check against what it holds.
                break
            case .lookAlike:
                // A look-alike of an account here must not be created (docs/usernames.md).
                check.detail["legacyCreate"] = "refused: looks like an existing account"
                return
            default:
                check.detail["legacyCreate"] = "refused: \(error)"
                return
            }
        } catch {
            throw Self.storageFailure(error)
        }
        let snapshot: PasswordCheckSnapshot
        do {
            snapshot = try store.read { tx in try tx.passwordCheckSnapshot(username: check.username) }
        } catch {
            throw Self.storageFailure(error)
        }
        check.snapshot = snapshot
        guard check.eligible, let credential = snapshot.credential else { return }
        // The account was created from this very password, or by a concurrent check of the same
        // user: then its stored hash decides.
        if created || (try? passwords.verify(password: password, encodedHash: credential.hash)) == true {
            check.known = .password(.accepted(secondFactor: snapshot.hasSecondFactor))
            check.detail["legacyCreate"] = created ? "created" : "created by a concurrent check"
        }
    }
}
