/// Retries an Apple call that failed with ``AppleEndpointError/Code/unavailable`` (429, 5xx,
/// transport): exponential backoff with jitter, a bounded number of tries. Apple's 4xx answers are
/// returned at once: repeating them cannot change the answer.
struct AppleRetry: Sendable {
    var maxAttempts: Int
    var baseDelayMilliseconds: UInt64
    var maxDelayMilliseconds: UInt64

    init(_ options: TransferBatchOptions) {
        maxAttempts = options.maxAttempts
        baseDelayMilliseconds = options.retryBaseDelayMilliseconds
        maxDelayMilliseconds = options.retryMaxDelayMilliseconds
    }

    func run<T: Sendable>(
        _ call: () async throws(AppleEndpointError) -> T
    ) async throws(AppleEndpointError) -> T {
        var attempt = 1
        while true {
            do {
                return try await call()
            } catch  where error.code == .unavailable && attempt < maxAttempts && !Task.isCancelled {
                do {
                    try await Task.sleep(nanoseconds: delay(afterAttempt: attempt) * 1_000_000)
                } catch {
                    // Cancelled while waiting: give up with the answer we have.
                    throw AppleEndpointError(code: .unavailable, httpStatus: nil, message: "interrupted while retrying")
                }
                attempt += 1
            }
        }
    }

    /// Full doubling up to the cap, then a random point in its upper half: parallel rows spread out
    /// while each still waits at least half the nominal delay.
    func delay(afterAttempt attempt: Int) -> UInt64 {
        let (doubled, overflow) = baseDelayMilliseconds.multipliedReportingOverflow(
            by: 1 << UInt64(min(attempt - 1, 30))
        )
        let nominal = overflow ? maxDelayMilliseconds : min(doubled, maxDelayMilliseconds)
        guard nominal > 1 else { return nominal }
        return UInt64.random(in: (nominal / 2)...nominal)
    }
}
