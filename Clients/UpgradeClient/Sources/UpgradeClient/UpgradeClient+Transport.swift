import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension UpgradeClient {
    enum Method: String {
        case get = "GET"
        case post = "POST"
    }

    /// A 2xx answer's JSON object.
    struct Answer {
        let status: Int
        let object: [String: Any]
        let requestID: String?

        func string(_ key: String) -> String? { object[key] as? String }
        func integer(_ key: String) -> Int? { (object[key] as? NSNumber)?.intValue }

        func unexpected(_ wanted: String) -> UpgradeClientError {
            UpgradeClientError(
                kind: .unexpectedAnswer,
                status: status,
                detail: "the server's answer is not \(wanted)",
                requestID: requestID
            )
        }
    }

    /// What one attempt came to: an answer, or a failure and whether a repeatable call may try again.
    enum Attempt {
        case answer(Answer)
        case failure(UpgradeClientError, transient: Bool)
    }

    /// The longest answer read; the API's answers are a few hundred bytes.
    static let maxAnswerBytes = 64 * 1024

    /// Transport failures worth another attempt: the network or the server was briefly away. A bad
    /// URL or an untrusted certificate will not heal within a deadline.
    static let transientURLErrors: Set<URLError.Code> = [
        .timedOut, .cannotFindHost, .cannotConnectToHost, .networkConnectionLost, .dnsLookupFailed,
        .notConnectedToInternet, .badServerResponse,
    ]

    func url(_ segments: [String]) -> URL {
        var url = baseURL
        for segment in segments { url.appendPathComponent(segment) }
        return url
    }

    /// Sends the request once, or (`repeatable`) until it is answered with anything but a transient
    /// failure or the policy's deadline would pass.
    func send(
        _ method: Method,
        _ segments: [String],
        _ body: [String: Any]?,
        repeatable: Bool = false
    ) async throws -> Answer {
        let data = try body.map { try JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys]) }
        let started = Self.uptime()
        var attempt = 0
        while true {
            try Task.checkCancellation()
            attempt += 1
            // A repeated call's attempt ends with the deadline (give or take a second, so that the
            // last attempt is not cut short to nothing).
            let remaining = retryPolicy.deadline - (Self.uptime() - started)
            let timeout =
                repeatable && retryPolicy.deadline > 0
                ? min(retryPolicy.attemptTimeout, max(remaining, 1)) : retryPolicy.attemptTimeout
            var request = URLRequest(url: url(segments), timeoutInterval: timeout)
            request.httpMethod = method.rawValue
            request.setValue("application/json, application/problem+json", forHTTPHeaderField: "Accept")
            if let data {
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                request.httpBody = data
            }
            switch try await self.attempt(request) {
            case .answer(let answer):
                return answer
            case .failure(let error, let transient):
                guard repeatable, transient else { throw error }
                let wait = max(retryPolicy.backoff(afterAttempt: attempt), Double(error.retryAfter ?? 0))
                guard Self.uptime() - started + wait < retryPolicy.deadline else { throw error }
                try await Task.sleep(nanoseconds: UInt64(wait * 1_000_000_000))
            }
        }
    }

    private func attempt(_ request: URLRequest) async throws -> Attempt {
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await transport(request)
        } catch {
            if Task.isCancelled || error is CancellationError { throw CancellationError() }
            let code = (error as? URLError)?.code
            return .failure(
                UpgradeClientError(
                    kind: .unreachable,
                    detail: "no answer from the server: \(error.localizedDescription)"
                ),
                transient: code.map(Self.transientURLErrors.contains) ?? false
            )
        }
        let http = response as? HTTPURLResponse
        let status = http?.statusCode ?? 0
        let requestID = http?.value(forHTTPHeaderField: "X-Request-Id")
        let object =
            data.count <= Self.maxAnswerBytes
            ? (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] : nil
        guard (200..<300).contains(status) else {
            let error = Self.problem(
                status: status,
                object,
                requestID: requestID,
                retryAfterHeader: http?.value(forHTTPHeaderField: "Retry-After")
            )
            return .failure(error, transient: Self.isTransient(error))
        }
        guard let object else {
            let error = UpgradeClientError(
                kind: .unexpectedAnswer,
                status: status,
                detail: "the server's answer is not a JSON object",
                requestID: requestID
            )
            return .failure(error, transient: false)
        }
        return .answer(Answer(status: status, object: object, requestID: requestID))
    }

    /// A refusal a repeatable call may try again: a `503` (the server or its database briefly away),
    /// `409 upgrade-in-progress` (another request is converting the upgrade, whose outcome the next
    /// attempt gets), and `502 apple-unavailable` while the upgrade still awaits the credential (Apple's
    /// signing keys could not be fetched; the server keeps the upgrade open for the retry). A `502`
    /// that ended the upgrade (Apple refused the code exchange: `upgradeStatus` `failed`) is final.
    static func isTransient(_ error: UpgradeClientError) -> Bool {
        error.status == 503 || error.slug == "upgrade-in-progress"
            || (error.status == 502 && error.slug == "apple-unavailable"
                && error.upgradeStatus == "awaitingAppleCredential")
    }

    /// A refusal with every member the server sent. An error without a problem document keeps its
    /// status and request id.
    static func problem(
        status: Int,
        _ object: [String: Any]?,
        requestID: String?,
        retryAfterHeader: String?
    ) -> UpgradeClientError {
        let headerWait = retryAfterHeader.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard let object, let type = object["type"] as? String else {
            return UpgradeClientError(
                kind: .unexpectedAnswer,
                status: status,
                detail: "the server answered \(status) without a problem document",
                retryAfter: headerWait,
                requestID: requestID
            )
        }
        func string(_ key: String) -> String? { object[key] as? String }
        func integer(_ key: String) -> Int? { (object[key] as? NSNumber)?.intValue }
        return UpgradeClientError(
            kind: .refused,
            status: status,
            problemType: type,
            title: string("title"),
            detail: string("detail"),
            result: string("result"),
            attemptsRemaining: integer("attemptsRemaining"),
            retryAfter: integer("retryAfter") ?? headerWait,
            rule: string("rule"),
            upgradeID: string("id"),
            upgradeStatus: string("upgradeStatus"),
            passwordChangeStatus: string("changeStatus"),
            requestID: requestID
        )
    }

    /// Seconds on a clock that never goes back (a deadline must not move when the wall clock does).
    static func uptime() -> TimeInterval { ProcessInfo.processInfo.systemUptime }
}
