extension UpgradeService {
    /// The floor refused credential checks are answered at: the configured one, or one derived from
    /// the verifier's limits.
    var failureFloor: Duration {
        configuration.failureFloor ?? passwords.limits.failureFloor
    }

    /// `failure`, to be answered no sooner than the floor after `started` (the request's arrival, or
    /// the call's start, on the monotonic clock): a refused password costs what its stored hash costs (bcrypt 12 about 7
    /// times the dummy check of an unknown username), so without the floor the answer's timing would
    /// tell which usernames exist and which hashes they hold. The floor is raised for a while after a
    /// check overran it (`FailureFloorTracker`). The caller holds the answer; nothing here waits.
    func heldToFloor(_ failure: ServiceFailure, since started: ContinuousClock.Instant) -> ServiceFailure {
        let now = ContinuousClock.now
        let elapsed = now - started
        let (floor, overran) = failureFloors.floor(configured: failureFloor, elapsed: elapsed, now: now)
        if overran { configuration.onFailureFloorOverrun(elapsed) }
        var failure = failure
        failure.notBefore = started.advanced(by: floor)
        return failure
    }
}
