import Foundation
import Synchronization

/// The daily check of every Apple link (docs/architecture.md, "The Apple link check"): each link
/// that is `linked` and has a stored refresh token is validated with Apple's `/auth/token`
/// (`grant_type=refresh_token`) at most once per `Policy.periodSeconds`, because a consent
/// revocation can happen while the notification endpoint is down and Apple never sends it again.
///
/// - **Spread.** A link's first check is scheduled at `now` plus a hash of its account id modulo
///   the period, so a million links do not fall due at once; after a valid check the next is due a
///   period later.
/// - **Shared.** A link is taken by a conditional claim in the database (`AppleLinkCheckStore`),
///   so of several instances on one database one checks it; a claim held by an instance that died
///   runs out after `claimSeconds`.
/// - **Outcomes.** Valid: `checked_at` recorded; Apple's new access and identity tokens are
///   dropped (never stored). `invalid_grant`: the link ends exactly as a `consent-revoked`
///   notification ends it (`TransferService.revokeAfterLinkCheck`). Anything else: nothing
///   changes, the link is tried again after a backoff of its own.
/// - **Never a flood.** At most `checksPerSecond` checks start per second on this instance, one at
///   a time; after Apple answered an error other than `invalid_grant` (a 429, a 5xx, no answer, a
///   refused client secret) the instance pauses all checks, for a backoff that doubles with each
///   such answer in a row and is at least Apple's `Retry-After`.
///
/// Time comes in as `clock` (Unix seconds), so tests move it; the pacing between checks is real
/// time. No token reaches an event, an error or the database.
public final class AppleLinkChecker: Sendable {
    public struct Policy: Sendable, Equatable {
        /// At most one check per link per this many seconds (`UPGRADE_APPLE_LINK_CHECK_SECONDS`).
        public var periodSeconds: Int64 = 86_400
        /// Checks started per second on one instance, at most (`UPGRADE_APPLE_LINK_CHECK_RATE`):
        /// one instance checks at most `checksPerSecond × periodSeconds` links per period.
        public var checksPerSecond: Double = 10
        /// How long a claim holds a link: longer than one check can take with Apple's timeouts.
        public var claimSeconds: Int64 = 120
        /// Links claimed at a time.
        public var batchSize = 20
        /// Unscheduled links given their first due time per pass, at most.
        public var schedulePerPass = 5000
        /// A pass stops claiming more links after this many seconds, so `stop()` is not held long.
        public var passSeconds: Double = 5
        /// The instance's pause after the first error answer from Apple, doubled for each further
        /// one in a row (then jittered), capped.
        public var initialPause: Int64 = 5
        public var maximumPause: Int64 = 900

        public init() {}

        /// The default policy at `checksPerSecond`. A slower rate claims fewer links at a time and
        /// holds its claims longer, so that a batch's paced checks end before its claim does and no
        /// other instance checks the same link again (docs/architecture.md §7.6).
        public init(checksPerSecond: Double) {
            self.checksPerSecond = checksPerSecond
            // A batch paces out within a quarter of the default claim: 20 links at 0.67/s and faster.
            batchSize = max(1, min(batchSize, Int(checksPerSecond * Double(claimSeconds) / 4)))
            // Plus 100 s for the answers: 20 checks at the client's 5 s timeout.
            let pacedSeconds = (Double(batchSize) / max(checksPerSecond, 0.001)).rounded(.up)
            claimSeconds = max(claimSeconds, Int64(pacedSeconds) + 100)
        }

        /// The wait before a link whose check failed `failures` times in a row is tried again:
        /// from a 96th of the period (15 minutes for a day) doubling up to the period.
        public func linkBackoff(failures: Int64, random: (ClosedRange<Int64>) -> Int64 = Int64.random(in:)) -> Int64 {
            let initial = min(900, max(1, periodSeconds / 96))
            return RetryBackoff(initial: initial, maximum: max(initial, periodSeconds))
                .delay(failedAttempts: failures, random: random)
        }

        /// The instance's pause after `errors` error answers in a row, at least `retryAfter`.
        public func pause(
            errors: Int64,
            retryAfter: Int64?,
            random: (ClosedRange<Int64>) -> Int64 = Int64.random(in:)
        )
            -> Int64
        {
            let backoff = RetryBackoff(initial: initialPause, maximum: maximumPause)
                .delay(failedAttempts: errors, random: random)
            return max(backoff, retryAfter ?? 0)
        }

        /// The first due time of a link scheduled at `now`: `now` plus the account id's hash
        /// modulo the period, the same for every instance.
        public func firstDue(accountID: String, now: Int64) -> Int64 {
            let digest = Digest.sha256(Array(accountID.utf8))
            let hash = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            return now + Int64(hash % UInt64(max(1, periodSeconds)))
        }
    }

    /// How one check ended, for metrics (`upgrade_apple_link_checks_total{outcome}`) and logs.
    public enum Outcome: String, Sendable, Equatable, CaseIterable {
        /// Apple accepted the refresh token.
        case valid
        /// Apple answered `invalid_grant`: the link was ended as a consent revocation ends it.
        case revoked
        /// Apple answered another error, or did not answer: tried again after a backoff.
        case error
        /// The sealed token could not be opened with this server's key: tried again after a
        /// backoff (the right key may come back); Apple was not called.
        case unreadable
    }

    /// What a checker did; never carries a token.
    public enum Event: Sendable, Equatable {
        /// One link checked. `changed` (for `revoked`): this check ended the link; false when a
        /// notification or another check ended it first. `reason` for `error` and `unreadable`.
        case checked(accountID: String, outcome: Outcome, changed: Bool, reason: String?, nextDueAt: Int64)
        /// The instance stops checking until `until` after an error answer from Apple.
        case paused(until: Int64, reason: String)
    }

    let store: any UpgradeStore
    let secrets: SecretBox
    let apple: (any AppleRefreshTokenValidating)?
    let transfers: TransferService
    public let policy: Policy
    let onEvent: @Sendable (Event) -> Void
    private let state = Mutex(Pacing())

    private struct Pacing {
        /// No check starts before this (Unix seconds): the pause after Apple's errors.
        var pausedUntil: Int64 = 0
        /// Error answers from Apple in a row.
        var errorsInARow: Int64 = 0
        /// When the next check may start, by the rate limit.
        var nextSlot: ContinuousClock.Instant?
    }

    /// `apple` nil (no Apple configuration): nothing is scheduled, claimed or checked.
    public init(
        store: any UpgradeStore,
        secrets: SecretBox,
        apple: (any AppleRefreshTokenValidating)?,
        transfers: TransferService,
        policy: Policy = Policy(),
        onEvent: @escaping @Sendable (Event) -> Void = { _ in }
    ) {
        self.store = store
        self.secrets = secrets
        self.apple = apple
        self.transfers = transfers
        self.policy = policy
        self.onEvent = onEvent
    }

    /// What one pass did.
    public struct PassSummary: Sendable, Equatable {
        public var scheduled = 0
        public var checked: [Outcome: Int] = [:]
        public var paused = false
        /// The pass stopped at `passSeconds` after a full batch: links may still be due, so the
        /// next pass should start at once.
        public var more = false
    }

    /// One pass: schedules links that have no check yet, then claims due links (`batchSize` at a
    /// time, for at most `passSeconds`) and checks each, paced by the rate limit. Nothing while the
    /// instance is paused. `clock` is read when the pass starts and after each exchange with Apple.
    @discardableResult
    public func checkDue(clock: @escaping @Sendable () -> Int64) async throws(StorageError) -> PassSummary {
        var summary = PassSummary()
        guard let apple else { return summary }
        summary.scheduled = try schedule(now: clock())
        let started = ContinuousClock.now
        while true {
            let now = clock()
            guard state.withLock({ $0.pausedUntil }) <= now else {
                summary.paused = true
                return summary
            }
            let token = SecureRandom.token(byteCount: 12)
            let claimed = try store.writeStorageErrors {
                try $0.claimDueAppleLinkChecks(
                    now: now,
                    token: token,
                    claimedUntil: now + policy.claimSeconds,
                    limit: policy.batchSize
                )
            }
            for (index, link) in claimed.enumerated() {
                if state.withLock({ $0.pausedUntil }) > clock() {
                    // Paused by this batch's error: the rest are due again when the pause ends.
                    try release(Array(claimed[index...]), token: token, dueAt: state.withLock { $0.pausedUntil })
                    summary.paused = true
                    return summary
                }
                await pace()
                let outcome = try await check(link, token: token, apple: apple, clock: clock)
                summary.checked[outcome, default: 0] += 1
            }
            guard claimed.count == policy.batchSize else { return summary }
            guard ContinuousClock.now - started < .milliseconds(Int64(policy.passSeconds * 1000)) else {
                summary.more = true
                return summary
            }
        }
    }

    /// Gives links that take part and have no check yet their first due time.
    func schedule(now: Int64) throws(StorageError) -> Int {
        var scheduled = 0
        while scheduled < policy.schedulePerPass {
            let limit = min(1000, policy.schedulePerPass - scheduled)
            let ids = try store.readStorageErrors { try $0.unscheduledAppleLinkChecks(limit: limit) }
            guard !ids.isEmpty else { break }
            let policy = self.policy
            scheduled += try store.writeStorageErrors { tx throws(StorageError) -> Int in
                var count = 0
                for id in ids
                where try tx.scheduleAppleLinkCheck(accountID: id, dueAt: policy.firstDue(accountID: id, now: now)) {
                    count += 1
                }
                return count
            }
            if ids.count < limit { break }
        }
        return scheduled
    }

    /// Waits for the rate limit's next slot.
    private func pace() async {
        let interval = Duration.seconds(1.0 / max(policy.checksPerSecond, 0.001))
        let wait = state.withLock { pacing -> Duration in
            let now = ContinuousClock.now
            let slot = max(now, pacing.nextSlot ?? now)
            pacing.nextSlot = slot + interval
            return slot - now
        }
        if wait > .zero { try? await Task.sleep(for: wait) }
    }

    private func check(
        _ link: AppleLinkCheck,
        token: String,
        apple: any AppleRefreshTokenValidating,
        clock: @Sendable () -> Int64
    ) async throws(StorageError) -> Outcome {
        guard let sealed = link.refreshTokenCiphertext else {
            // The claim takes linked links with a token only; kept for a row read otherwise.
            return try deferLink(
                link,
                token: token,
                now: clock(),
                outcome: .unreadable,
                reason: "no stored refresh token"
            )
        }
        let refreshToken: String
        do {
            let opened = try secrets.open(
                sealed,
                context: UpgradeService.refreshTokenContext(accountID: link.accountID)
            )
            refreshToken = String(decoding: opened, as: UTF8.self)
        } catch {
            return try deferLink(
                link,
                token: token,
                now: clock(),
                outcome: .unreadable,
                reason: "the sealed token cannot be opened with this key"
            )
        }
        do throws(AppleEndpointError) {
            try await apple.validateRefreshToken(refreshToken, clientID: link.clientID)
        } catch {
            let now = clock()
            guard error.code == .invalidGrant else {
                let reason = AppleRevocationSender.reason(error)
                let retryAfter = error.retryAfter.map { $0.components.seconds }
                let until = state.withLock { pacing -> Int64 in
                    pacing.errorsInARow += 1
                    pacing.pausedUntil = now + policy.pause(errors: pacing.errorsInARow, retryAfter: retryAfter)
                    return pacing.pausedUntil
                }
                onEvent(.paused(until: until, reason: reason))
                return try deferLink(link, token: token, now: now, outcome: .error, reason: reason, notBefore: until)
            }
            return try revoke(link, token: token, now: now)
        }
        let now = clock()
        state.withLock { $0.errorsInARow = 0 }
        let next = now + policy.periodSeconds
        if try store.writeStorageErrors({
            try $0.finishAppleLinkCheck(accountID: link.accountID, token: token, checkedAt: now, nextDueAt: next)
        }) {
            onEvent(.checked(accountID: link.accountID, outcome: .valid, changed: false, reason: nil, nextDueAt: next))
        }
        return .valid
    }

    /// `invalid_grant`: the link ends as a consent revocation ends it, then the claim ends.
    private func revoke(_ link: AppleLinkCheck, token: String, now: Int64) throws(StorageError) -> Outcome {
        state.withLock { $0.errorsInARow = 0 }
        let result: TransferNotificationResult
        do {
            result = try transfers.revokeAfterLinkCheck(accountID: link.accountID, now: now)
        } catch {
            // The database failed or the link kept changing: tried again after a backoff.
            return try deferLink(link, token: token, now: now, outcome: .error, reason: error.message)
        }
        let next = now + policy.periodSeconds
        _ = try store.writeStorageErrors {
            try $0.releaseAppleLinkCheck(accountID: link.accountID, token: token, dueAt: next)
        }
        onEvent(
            .checked(
                accountID: link.accountID,
                outcome: .revoked,
                changed: result.outcome == .changed,
                reason: nil,
                nextDueAt: next
            )
        )
        return .revoked
    }

    private func deferLink(
        _ link: AppleLinkCheck,
        token: String,
        now: Int64,
        outcome: Outcome,
        reason: String,
        notBefore: Int64 = 0
    ) throws(StorageError) -> Outcome {
        let next = max(now + policy.linkBackoff(failures: link.failures + 1), notBefore)
        let cut = String(reason.unicodeScalars.prefix(200).map(Character.init))
        if try store.writeStorageErrors({
            try $0.deferAppleLinkCheck(accountID: link.accountID, token: token, nextDueAt: next, error: cut)
        }) {
            onEvent(.checked(accountID: link.accountID, outcome: outcome, changed: false, reason: cut, nextDueAt: next))
        }
        return outcome
    }

    private func release(_ links: [AppleLinkCheck], token: String, dueAt: Int64) throws(StorageError) {
        _ = try store.writeStorageErrors { tx throws(StorageError) -> Int in
            var released = 0
            for link in links where try tx.releaseAppleLinkCheck(accountID: link.accountID, token: token, dueAt: dueAt)
            {
                released += 1
            }
            return released
        }
    }
}
