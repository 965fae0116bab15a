import Testing

@testable import UpgradeMachines

/// Per-account throttling: free attempts, a doubling delay, then a lock; all from values passed in.
@Suite("Lockout policy")
struct StateMachineLockoutPolicyTests {
    static let last: Int64 = 1_700_000_000

    /// (consecutive failures, seconds since the latest failure, decision) with the defaults:
    /// 3 free failures, 1 s doubling to 60 s, locked 15 minutes from the 10th.
    @Test(
        "default policy",
        arguments: [
            (0, 0, LockoutPolicy.Decision.allowed),
            (1, 0, .allowed),
            (2, 0, .allowed),
            (3, 0, .delayed(until: last + 1)),
            (3, 1, .allowed),
            (4, 0, .delayed(until: last + 2)),
            (4, 1, .delayed(until: last + 2)),
            (4, 2, .allowed),
            (5, 0, .delayed(until: last + 4)),
            (6, 0, .delayed(until: last + 8)),
            (7, 0, .delayed(until: last + 16)),
            (8, 0, .delayed(until: last + 32)),
            (9, 0, .delayed(until: last + 60)),
            (9, 59, .delayed(until: last + 60)),
            (9, 60, .allowed),
            (10, 0, .locked(until: last + 900)),
            (10, 899, .locked(until: last + 900)),
            (10, 900, .allowed),
            (25, 100, .locked(until: last + 900)),
        ]
    )
    func defaults(failures: Int, elapsed: Int64, expected: LockoutPolicy.Decision) {
        let decision = LockoutPolicy.default.decision(
            failures: failures,
            lastFailureAt: Self.last,
            now: Self.last + elapsed
        )
        #expect(decision == expected)
    }

    @Test("after a lock ends one attempt is allowed, and its failure locks again")
    func relockAfterExpiry() {
        let policy = LockoutPolicy.default
        #expect(policy.decision(failures: 10, lastFailureAt: Self.last, now: Self.last + 900) == .allowed)
        let next = Self.last + 900
        #expect(policy.decision(failures: 11, lastFailureAt: next, now: next + 1) == .locked(until: next + 900))
        #expect(policy.decision(failures: 0, lastFailureAt: next, now: next + 1) == .allowed, "a success resets")
    }

    @Test("custom values; the delay is capped without overflowing")
    func customPolicy() throws {
        let policy = try LockoutPolicy(
            failuresBeforeDelay: 1,
            firstDelay: 5,
            maxDelay: 30,
            failuresBeforeLock: .max,
            lockDuration: 60
        )
        #expect(policy.delay(afterFailures: 1) == 5)
        #expect(policy.delay(afterFailures: 2) == 10)
        #expect(policy.delay(afterFailures: 3) == 20)
        #expect(policy.delay(afterFailures: 4) == 30)
        #expect(policy.delay(afterFailures: 1_000_000) == 30)

        let huge = try LockoutPolicy(firstDelay: 3, maxDelay: .max)
        #expect(huge.delay(afterFailures: 9) == 3 << 6)
        let wide = try LockoutPolicy(failuresBeforeDelay: 1, firstDelay: 3, maxDelay: .max, failuresBeforeLock: .max)
        #expect(wide.delay(afterFailures: 200) == .max)
        #expect(wide.decision(failures: 200, lastFailureAt: Self.last, now: Self.last) == .delayed(until: .max))
    }

    @Test("a lock computed near the end of time saturates")
    func saturation() {
        #expect(
            LockoutPolicy.default.decision(failures: 10, lastFailureAt: .max - 1, now: .max - 1) == .locked(until: .max)
        )
    }

    @Test("values that cannot work are refused with the setting named")
    func validation() {
        #expect(
            throws: PolicyError(setting: "LockoutPolicy.failuresBeforeDelay", value: 0, requirement: "at least 1")
        ) { try LockoutPolicy(failuresBeforeDelay: 0) }
        #expect(throws: PolicyError(setting: "LockoutPolicy.firstDelay", value: 0, requirement: "at least 1")) {
            try LockoutPolicy(firstDelay: 0)
        }
        #expect(throws: PolicyError(setting: "LockoutPolicy.lockDuration", value: -1, requirement: "at least 1")) {
            try LockoutPolicy(lockDuration: -1)
        }
        #expect(
            throws: PolicyError(setting: "LockoutPolicy.maxDelay", value: 4, requirement: "at least firstDelay (5)")
        ) { try LockoutPolicy(firstDelay: 5, maxDelay: 4) }
        #expect(
            throws: PolicyError(
                setting: "LockoutPolicy.failuresBeforeLock",
                value: 2,
                requirement: "at least failuresBeforeDelay (3)"
            )
        ) { try LockoutPolicy(failuresBeforeLock: 2) }
        #expect((try? LockoutPolicy()) == LockoutPolicy.default)
    }
}
