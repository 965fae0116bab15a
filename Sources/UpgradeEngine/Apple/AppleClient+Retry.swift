import Foundation

extension AppleClient {
    /// Sends `call`, retrying after 429, 5xx and transport failures within `configuration.retry`,
    /// and returns the first answer that is neither (a 2xx or another 4xx).
    func perform(_ call: Call) async throws(AppleEndpointError) -> Answer {
        let limit = call.limit ?? configuration.maximumResponseBytes
        let request = makeRequest(call)
        let policy = configuration.retry
        let started = ContinuousClock.now
        var attempt = 0
        while true {
            attempt += 1
            let remaining = policy.totalTime - (ContinuousClock.now - started)
            guard remaining > .zero else {
                throw unavailable(
                    call,
                    "no time left for attempt \(attempt) within \(policy.totalTime.seconds) s"
                )
            }
            let timeout = min(configuration.requestTimeout, remaining)
            let reason: String
            var retryAfter: Duration?
            switch await transport.send(request, limit: limit, timeout: timeout) {
            case .success(let response) where response.status == 429 || (500...599).contains(response.status):
                reason = "HTTP \(response.status)"
                retryAfter = response.headers["retry-after"].flatMap { Self.retryAfter($0, now: configuration.clock()) }
            case .success(let response):
                return try Answer(call: call, response: response, attempts: attempt)
            case .failure(let failure) where failure.isRetryable:
                reason = failure.description
            case .failure(let failure):
                throw unavailable(call, failure.description)
            }

            guard attempt < policy.maximumAttempts else {
                var error = unavailable(call, attempt == 1 ? reason : "\(reason) on each of \(attempt) attempts")
                error.retryAfter = retryAfter
                throw error
            }
            var delay = policy.backoff(afterAttempt: attempt)
            if let retryAfter {
                guard retryAfter <= policy.maximumRetryAfter else {
                    var error = unavailable(
                        call,
                        "\(reason) with Retry-After \(retryAfter.seconds) s, longer than the "
                            + "\(policy.maximumRetryAfter.seconds) s a call may wait"
                    )
                    error.retryAfter = retryAfter
                    throw error
                }
                delay = max(delay, retryAfter)
            }
            guard ContinuousClock.now - started + delay < policy.totalTime else {
                throw unavailable(
                    call,
                    "\(reason); no time left for another attempt within \(policy.totalTime.seconds) s"
                )
            }
            configuration.onEvent(
                .retrying(
                    endpoint: call.label,
                    attempt: attempt,
                    maximumAttempts: policy.maximumAttempts,
                    reason: reason,
                    delay: delay
                )
            )
            do {
                try await configuration.sleep(delay)
            } catch {
                throw unavailable(call, "cancelled while waiting to retry after \(reason)")
            }
        }
    }

    /// Every header value here is a constant, validated configuration (`userAgent`) or a bearer
    /// token checked by `bearer(_:)`, so none can split a header line.
    private func makeRequest(_ call: Call) -> AppleClientTransport.Request {
        var headers = ["Accept: application/json", "User-Agent: \(configuration.userAgent)"]
        var body: [UInt8]?
        if let form = call.form {
            headers.append("Content-Type: application/x-www-form-urlencoded")
            body = Self.formEncoded(form)
        }
        if let bearer = call.bearer { headers.append("Authorization: \(bearer)") }
        return AppleClientTransport.Request(
            method: call.method,
            url: configuration.baseURL.string + call.path,
            headers: headers,
            body: body
        )
    }

    func unavailable(_ call: Call, _ reason: String) -> AppleEndpointError {
        AppleEndpointError(
            code: .unavailable,
            httpStatus: nil,
            message: "\(call.label) to \(configuration.baseURL): \(reason)"
        )
    }

    /// `Retry-After` as delay-seconds or an HTTP-date (RFC 9110 §10.2.3); nil if it is neither.
    static func retryAfter(_ value: String, now: Int64) -> Duration? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) {
            // More than a day is as good as forever here; the cap keeps the arithmetic safe.
            return .seconds(min(Int64(text.prefix(6)) ?? 86_400, 86_400))
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        guard let date = formatter.date(from: text) else { return nil }
        return .seconds(max(0, min(Int64(date.timeIntervalSince1970) - now, 86_400)))
    }
}
