import CCurl
import Foundation
import Synchronization

/// One HTTP exchange with Apple over libcurl, bounded in time and size, with redirects refused (a
/// redirected POST would carry the client secret to another URL). It does not retry;
/// `AppleClient` decides that from the outcome.
///
/// Each exchange is a blocking `curl_easy_perform` on an easy handle taken from a small pool, so
/// connections (and TLS sessions) are kept alive between calls. Called from a thread that may
/// block (`BlockingRunner`: the HTTP server's workers; `BlockingThreadPool`: a transfer batch's
/// rows), the exchange runs inline; from Swift's cooperative pool, it runs on a new thread so no
/// pool thread is held.
final class AppleClientTransport: Sendable {
    /// What is sent: the URL is already validated (`AppleClient.BaseURL`) and the header lines
    /// checked for characters that could split them.
    struct Request: Sendable {
        let method: String
        let url: String
        /// `Name: value` lines.
        let headers: [String]
        /// Sent with `POST`; any other method is sent as `GET`, without a body.
        let body: [UInt8]?
    }

    struct Response: Sendable {
        let status: Int
        /// Field names lower-cased; the last value wins (only single-valued fields are read).
        let headers: [String: String]
        let body: [UInt8]
    }

    enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// No connection could be made (refused, unreachable, name not resolved).
        case cannotConnect(String)
        /// The connection broke or the answer was not valid HTTP.
        case transport(String)
        case timedOut(Duration)
        /// TLS failed: an untrusted or expired certificate does not heal by retrying.
        case insecureConnection(String)
        /// The body passed `limit`; `status` is the answer's, when its head had arrived (a caller that
        /// needs only the status, as a webhook delivery does, may still act on it).
        case tooLarge(limit: Int, status: Int?)
        case redirected(status: Int)
        case cancelled

        var isRetryable: Bool {
            switch self {
            case .cannotConnect, .transport, .timedOut: true
            case .insecureConnection, .tooLarge, .redirected, .cancelled: false
            }
        }

        var description: String {
            switch self {
            case .cannotConnect(let why): "could not connect (\(why))"
            case .transport(let why): "the connection failed (\(why))"
            case .timedOut(let limit): "no complete answer within \(limit.seconds) s"
            case .insecureConnection(let why): "the TLS connection could not be trusted (\(why))"
            case .tooLarge(let limit, _): "the answer is larger than \(limit) bytes"
            case .redirected(let status): "answered a redirect (HTTP \(status)), which is not followed"
            case .cancelled: "the call was cancelled"
            }
        }
    }

    /// Idle handles kept for reuse, each with its live connection; more are made when needed.
    static let maximumIdleHandles = 8

    private let connectTimeout: Duration
    private let idle = Mutex<[EasyHandle]>([])

    init(connectTimeout: Duration) {
        self.connectTimeout = connectTimeout
    }

    /// Sends `request` and collects the answer, failing once the body passes `limit` bytes or the
    /// exchange takes longer than `timeout`. Cancelling the calling task cancels the exchange.
    func send(_ request: Request, limit: Int, timeout: Duration) async -> Result<Response, Failure> {
        let cancelled = CancellationFlag()
        return await withTaskCancellationHandler {
            guard !Task.isCancelled else { return .failure(.cancelled) }
            if BlockingRunner.mayBlock {
                return perform(request, limit: limit, timeout: timeout, cancelled: cancelled)
            }
            return await withCheckedContinuation { continuation in
                // A thread of its own per exchange: a dispatch queue would run only as many blocked
                // exchanges at once as there are cores, and a batch runs up to 64. Starting a thread
                // costs far less than the exchange.
                Thread.detachNewThread {
                    continuation.resume(
                        returning: self.perform(request, limit: limit, timeout: timeout, cancelled: cancelled)
                    )
                }
            }
        } onCancel: {
            cancelled.set()
        }
    }

    /// One exchange on the calling thread, which must be one that may block (a worker of the HTTP
    /// server): for a caller that is not async and must not hand the wait to another thread.
    func sendBlocking(_ request: Request, limit: Int, timeout: Duration) -> Result<Response, Failure> {
        perform(request, limit: limit, timeout: timeout, cancelled: CancellationFlag())
    }

    /// One blocking exchange. `cancelled` is polled by libcurl's progress callback.
    private func perform(
        _ request: Request,
        limit: Int,
        timeout: Duration,
        cancelled: CancellationFlag
    ) -> Result<Response, Failure> {
        let handle: EasyHandle
        if let reused = idle.withLock({ $0.popLast() }) {
            handle = reused
        } else {
            guard let made = EasyHandle(connectTimeout: connectTimeout) else {
                return .failure(.transport("libcurl could not make a handle"))
            }
            handle = made
        }
        let outcome = handle.perform(request, limit: limit, timeout: timeout, cancelled: cancelled)
        idle.withLock { handles in
            if handles.count < Self.maximumIdleHandles { handles.append(handle) }
        }
        return outcome
    }
}

/// Set when the calling task is cancelled; libcurl's progress callback polls it.
private final class CancellationFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func set() { value.store(true, ordering: .relaxed) }
}

/// A libcurl easy handle and what one exchange collects. Owned by one thread at a time: the
/// transport takes it from its pool for an exchange and puts it back after.
private final class EasyHandle: @unchecked Sendable {
    private static let globalInit: CURLcode = ccurl_global_init()

    /// Loopback plus the environment's `no_proxy` (or `NO_PROXY`), as libcurl reads it.
    static let noProxy: String = {
        let environment = ProcessInfo.processInfo.environment
        let extra = (environment["no_proxy"] ?? environment["NO_PROXY"] ?? "").trimmingCharacters(in: .whitespaces)
        // libcurl reads `*` (no proxy for any host) only as the whole value.
        if extra == "*" { return "*" }
        return "localhost,127.0.0.1,::1" + (extra.isEmpty ? "" : "," + extra)
    }()

    private let curl: UnsafeMutableRawPointer
    private var limit = 0
    private var body: [UInt8] = []
    private var headers: [String: String] = [:]
    private var tooLarge = false
    private var cancelled: CancellationFlag?

    init?(connectTimeout: Duration) {
        guard Self.globalInit == CURLE_OK, let curl = curl_easy_init() else { return nil }
        self.curl = curl
        // Signals are not for a library in a threaded server; name resolution times out anyway.
        ccurl_setopt_long(curl, CURLOPT_NOSIGNAL, 1)
        ccurl_setopt_string(curl, CURLOPT_PROTOCOLS_STR, "http,https")
        ccurl_setopt_long(curl, CURLOPT_FOLLOWLOCATION, 0)
        ccurl_setopt_long(curl, CURLOPT_CONNECTTIMEOUT_MS, connectTimeout.milliseconds)
        ccurl_setopt_long(curl, CURLOPT_SSL_VERIFYPEER, 1)
        ccurl_setopt_long(curl, CURLOPT_SSL_VERIFYHOST, 2)
        // The emulator on loopback is never reached through a proxy from the environment. Setting
        // the option replaces `no_proxy`, so the environment's list is kept in it.
        ccurl_setopt_string(curl, CURLOPT_NOPROXY, Self.noProxy)
        // libcurl's cookie engine and its alt-svc and HSTS caches stay off (their defaults): nothing
        // of Apple's answers is stored. The answer is collected by these callbacks.
        ccurl_setopt_write_function(
            curl,
            CURLOPT_WRITEFUNCTION,
            { data, size, count, context in
                EasyHandle.from(context).received(data, size * count)
            }
        )
        ccurl_setopt_write_function(
            curl,
            CURLOPT_HEADERFUNCTION,
            { data, size, count, context in
                EasyHandle.from(context).receivedHeader(data, size * count)
            }
        )
        ccurl_setopt_xferinfo_function(curl) { context, _, _, _, _ in
            EasyHandle.from(context).cancelled?.isSet == true ? 1 : 0
        }
        ccurl_setopt_long(curl, CURLOPT_NOPROGRESS, 0)
        let context = Unmanaged.passUnretained(self).toOpaque()
        ccurl_setopt_pointer(curl, CURLOPT_WRITEDATA, context)
        ccurl_setopt_pointer(curl, CURLOPT_HEADERDATA, context)
        ccurl_setopt_pointer(curl, CURLOPT_XFERINFODATA, context)
    }

    deinit { curl_easy_cleanup(curl) }

    private static func from(_ context: UnsafeMutableRawPointer?) -> EasyHandle {
        // Every callback is registered with this handle as its context.
        Unmanaged<EasyHandle>.fromOpaque(context!).takeUnretainedValue()
    }

    func perform(
        _ request: AppleClientTransport.Request,
        limit: Int,
        timeout: Duration,
        cancelled: CancellationFlag
    ) -> Result<AppleClientTransport.Response, AppleClientTransport.Failure> {
        self.limit = limit
        self.cancelled = cancelled
        body = []
        headers = [:]
        tooLarge = false
        defer { self.cancelled = nil }

        var list: UnsafeMutablePointer<curl_slist>?
        // libcurl would add `Expect: 100-continue` to larger bodies; an empty value removes it.
        for line in request.headers + ["Expect:"] { list = curl_slist_append(list, line) }
        defer { curl_slist_free_all(list) }
        ccurl_setopt_string(curl, CURLOPT_URL, request.url)
        ccurl_setopt_slist(curl, CURLOPT_HTTPHEADER, list)
        ccurl_setopt_long(curl, CURLOPT_TIMEOUT_MS, max(1, timeout.milliseconds))
        ccurl_setopt_offset(curl, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(limit))

        let code: CURLcode
        if request.method == "POST" {
            // One byte more than is sent, so the pointer is never nil even for an empty body (a nil
            // POSTFIELDS would make libcurl read the body from its read callback instead).
            let payload = (request.body ?? []) + [0]
            code = payload.withUnsafeBytes { bytes in
                ccurl_setopt_long(curl, CURLOPT_POST, 1)
                ccurl_setopt_offset(curl, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(bytes.count - 1))
                ccurl_setopt_pointer(curl, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress))
                defer { ccurl_setopt_pointer(curl, CURLOPT_POSTFIELDS, nil) }
                return curl_easy_perform(curl)
            }
        } else {
            ccurl_setopt_long(curl, CURLOPT_HTTPGET, 1)
            code = curl_easy_perform(curl)
        }
        if code != CURLE_OK { return .failure(failure(code, timeout: timeout)) }
        var status = 0
        ccurl_getinfo_long(curl, CURLINFO_RESPONSE_CODE, &status)
        if (300...399).contains(status) { return .failure(.redirected(status: status)) }
        guard (100...599).contains(status) else { return .failure(.transport("the answer is not HTTP")) }
        let response = AppleClientTransport.Response(status: status, headers: headers, body: body)
        body = []
        return .success(response)
    }

    private func received(_ data: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard body.count + count <= limit else {
            tooLarge = true
            body = []
            return 0  // anything but `count` ends the exchange with CURLE_WRITE_ERROR
        }
        if let data, count > 0 {
            body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: count))
        }
        return count
    }

    private func receivedHeader(_ data: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard let data, count > 0 else { return count }
        let line = UnsafeRawBufferPointer(start: data, count: count)
        // A status line starts each response (an interim 1xx too): keep only the last one's fields.
        if line.starts(with: "HTTP/".utf8) {
            headers = [:]
            return count
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return count }
        let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
        var value = line[(colon + 1)...]
        while let first = value.first, first == 0x20 || first == 0x09 { value = value.dropFirst() }
        while let last = value.last, last == 0x20 || last == 0x09 || last == 0x0d || last == 0x0a {
            value = value.dropLast()
        }
        headers[name] = String(decoding: value, as: UTF8.self)
        return count
    }

    /// libcurl's errors, sorted into what may heal by retrying and what will not. The
    /// descriptions carry libcurl's code and text, never the URL or a header.
    private func failure(_ code: CURLcode, timeout: Duration) -> AppleClientTransport.Failure {
        if tooLarge || code == CURLE_FILESIZE_EXCEEDED {
            var status = 0
            ccurl_getinfo_long(curl, CURLINFO_RESPONSE_CODE, &status)
            return .tooLarge(limit: limit, status: (100...599).contains(status) ? status : nil)
        }
        if code == CURLE_ABORTED_BY_CALLBACK, cancelled?.isSet == true {
            return .cancelled
        }
        let why = "libcurl \(code.rawValue): " + String(cString: curl_easy_strerror(code))
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            return .timedOut(timeout)
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_CONNECT:
            return .cannotConnect(why)
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
            CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CRL_BADFILE, CURLE_USE_SSL_FAILED:
            return .insecureConnection(why)
        default:
            return .transport(why)
        }
    }
}

extension Duration {
    /// The duration in (fractional) seconds.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// Whole milliseconds, rounded up, as libcurl's options take them.
    var milliseconds: Int {
        let (seconds, attoseconds) = components
        return Int(seconds) * 1000 + Int((attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }
}
