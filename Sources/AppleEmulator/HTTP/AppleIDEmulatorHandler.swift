import HTTPCore
import Synchronization
import UpgradeEngine

/// The Apple ID emulator on HTTP. Two sets of endpoints that cannot be mistaken for each other:
///
/// - Apple's, at Apple's paths and answering exactly as Apple does: `GET /auth/keys`,
///   `POST /auth/token`, `POST /auth/revoke`, `POST /auth/usermigrationinfo` — form-encoded
///   requests validated strictly, errors as HTTP 400 `{"error": "…"}`. An emulator-only
///   `X-Emulator-Reason` header says why a request was refused (Apple's body never does).
/// - The emulator's own, under `/emulator/`, with JSON bodies and RFC 9457 problem documents
///   (types `…/problems/emulator-…`): they play the device (authorize) and Apple's back office
///   (teams, keys, apps, users, consent, deletion, key rotation, transfers, notifications, time).
///
/// Requests run on the server's worker threads; the emulator itself is thread-safe.
public final class AppleIDEmulatorHandler: HTTPHandler {
    public struct Configuration: Sendable {
        /// `Cache-Control: max-age` on `/auth/keys`; nil sends none (Apple's header is not documented).
        public var keysMaxAge: Int?
        /// Where notifications go when an action queues them; nil keeps them queued until
        /// `POST /emulator/notifications/deliver`.
        public var notificationURL: String?
        /// Notification URLs must be loopback unless this is set.
        public var allowNonLoopbackNotificationURLs = false
        public var notificationTimeout: Duration = .seconds(5)
        /// Present when `POST /emulator/clock/advance` may move the emulator's time.
        public var clock: EmulatorClock?
        /// One line per refused Apple request (the reason) and per notification delivery.
        public var log: @Sendable (String) -> Void = { _ in }

        public init() {}
    }

    public let emulator: AppleIDEmulator
    let configuration: Configuration
    /// Notifications taken from the emulator and not yet delivered, oldest first.
    let undelivered = Mutex<[AppleServerNotification]>([])

    public init(emulator: AppleIDEmulator, configuration: Configuration = Configuration()) {
        self.emulator = emulator
        self.configuration = configuration
    }

    public func handle(_ request: HTTPRequest) throws -> HTTPResponse {
        let path = String(request.path)
        if path.hasPrefix("/auth/") {
            return appleEndpoint(request, path: path)
        }
        if path == "/emulator" || path.hasPrefix("/emulator/") {
            do {
                return try emulatorEndpoint(request, segments: path.split(separator: "/").map(String.init))
            } catch let error as AppleEmulatorError {
                throw Self.problem(error)
            }
        }
        throw HTTPProblem(
            status: 404,
            slug: "emulator-not-found",
            title: "Not found",
            detail: "Apple's endpoints are under /auth/, the emulator's own under /emulator/."
        )
    }

    /// A JSON body for the emulator-only endpoints.
    static func json(_ value: JSONValue, status: Int = 200) -> HTTPResponse {
        var response = HTTPResponse.json(status: status, value.serializedString)
        response.headers.append(name: "Cache-Control", value: "no-store")
        return response
    }

    static func problem(_ error: AppleEmulatorError) -> HTTPProblem {
        let status: Int
        switch error.code {
        case .unknownTeam, .unknownApp, .unknownUser, .unknownKey: status = 404
        case .alreadyExists, .notAllowed: status = 409
        default: status = 400
        }
        let slug = "emulator-" + String(describing: error.code).kebabCased
        return HTTPProblem(status: status, slug: slug, title: "Emulator: \(error.code)", detail: error.message)
    }

    static func methodNotAllowed(_ allowed: String) -> HTTPProblem {
        HTTPProblem(
            status: 405,
            slug: "emulator-method-not-allowed",
            title: "Method not allowed",
            detail: "This endpoint answers \(allowed).",
            headers: ["Allow": allowed]
        )
    }
}

extension String {
    /// `unknownUser` → `unknown-user`.
    fileprivate var kebabCased: String {
        var out = ""
        for character in self {
            if character.isUppercase {
                out += "-" + character.lowercased()
            } else {
                out.append(character)
            }
        }
        return out
    }
}

extension AppleIDEmulatorHandler {
    /// Why `url` cannot receive notifications, or nil if it can (for checking flags at start-up).
    public static func notificationURLProblem(_ url: String, allowNonLoopback: Bool) -> String? {
        switch EmulatorNotificationSender.validate(url, allowNonLoopback: allowNonLoopback) {
        case .success: nil
        case .failure(let failure): failure.reason
        }
    }
}

extension AppleIDEmulatorHandler {
    /// `POST /auth/usermigrationinfo` is answered from memory (no signing, no I/O; a client
    /// secret's signature is checked once per secret), so it is answered on the event loop, without
    /// a worker's thread hop: a transfer batch makes one such call per account. Every other
    /// endpoint goes to a worker.
    public func respondOnEventLoop(to request: HTTPRequest) -> HTTPResponse? {
        guard request.path == Self.migrationPath else { return nil }
        return appleEndpoint(request, path: Self.migrationPath)
    }

    static let migrationPath = "/auth/usermigrationinfo"
}
