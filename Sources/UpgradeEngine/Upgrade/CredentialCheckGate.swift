import Synchronization

/// At most one password check per username at a time on this instance, until its answer is due.
///
/// Without it, simultaneous guesses for one username all pass the lockout's read before any of
/// their failures is written, and they share the CPU: four at once for an account whose admitted
/// hash is costly stretch each check past the failure floor, so that account's refusals answer
/// later than an unknown name's, and every refusal's floor is raised for a minute
/// (`FailureFloorTracker`). A second check for a username whose check is in flight is refused
/// `rate-limited` at once, for every username alike, known or not (docs/architecture.md §10.3).
///
/// The username stays busy until the first check's answer may leave: for a refusal, its
/// `notBefore` (the request's arrival plus the floor), not the end of its check. Were it freed
/// when the check ended, a second request sent meanwhile would time the hash by when it stopped
/// being refused. An accepted password frees it at once: its caller knows the password already.
///
/// Entries are dropped once their answer is due; a sweep runs when the table has doubled since the
/// last one, so its size stays within twice the usernames answered within one floor.
final class CredentialCheckGate: Sendable {
    private struct State {
        /// Per username key: nil while its check runs, then when its answer is due.
        var busy: [String: ContinuousClock.Instant?] = [:]
        var sweepAt = CredentialCheckGate.minimumSweep
    }

    static let minimumSweep = 1024
    private let state = Mutex(State())

    init() {}

    /// Takes `key` for a check; false when a check for it is in flight or its answer is not yet due.
    func enter(_ key: String, now: ContinuousClock.Instant) -> Bool {
        state.withLock { state in
            if let entry = state.busy[key] {
                guard let due = entry, due <= now else { return false }
            }
            state.busy[key] = .some(nil)
            if state.busy.count >= state.sweepAt {
                state.busy = state.busy.filter { _, due in due.map { $0 > now } ?? true }
                state.sweepAt = max(Self.minimumSweep, state.busy.count * 2)
            }
            return true
        }
    }

    /// Gives `key` back: free from `due` on (now or earlier: at once).
    func leave(_ key: String, due: ContinuousClock.Instant, now: ContinuousClock.Instant) {
        state.withLock { state in
            if due > now { state.busy[key] = .some(due) } else { state.busy[key] = nil }
        }
    }

    /// Usernames held (for tests).
    var count: Int { state.withLock { $0.busy.count } }
}

extension UpgradeService {
    /// `body`, a credential check for `username` and the flow it opens, with no other check for the
    /// same username running or waiting for its answer on this instance (`CredentialCheckGate`). A
    /// ticket is not gated: spending it is one conditional update, with no hash to stretch.
    func oneCheckAtATime<Answer>(
        for username: Username,
        ticket: String?,
        _ body: () throws(ServiceFailure) -> Answer
    ) throws(ServiceFailure) -> Answer {
        guard ticket == nil else { return try body() }
        guard credentialChecks.enter(username.value, now: .now) else {
            // Constant: the time left would tell how far the other check has got.
            let wait = max(1, Int64((failureFloor + .milliseconds(999)).components.seconds))
            throw ServiceFailure(
                .rateLimited,
                "another attempt for this username is in progress; retry in \(wait) s",
                retryAfter: wait
            )
        }
        do {
            let answer = try body()
            credentialChecks.leave(username.value, due: .now, now: .now)
            return answer
        } catch {
            let now = ContinuousClock.now
            credentialChecks.leave(username.value, due: error.notBefore ?? now, now: now)
            throw error
        }
    }
}
