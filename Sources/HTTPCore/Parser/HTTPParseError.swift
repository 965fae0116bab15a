/// Why a request could not be parsed: an HTTP status, a stable slug (the last part of the problem
/// `type` URI, safe to match on) and a detail sentence for the client. The detail never echoes the
/// offending bytes, so hostile input cannot reach logs or response bodies through it.
/// Every parse error ends the connection: after malformed framing nothing later in the stream
/// can be trusted.
public struct HTTPParseError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of failure. A struct over a private enum so that kinds can be added without breaking
    /// exhaustive switches in callers.
    public struct Code: Hashable, Sendable, CaseIterable, CustomStringConvertible {
        private enum Base: Hashable, Sendable, CaseIterable {
            case bareLineFeed
            case bareCarriageReturn
            case invalidRequestLine
            case invalidMethod
            case invalidTarget
            case unsupportedVersion
            case obsoleteLineFolding
            case whitespaceBeforeColon
            case invalidHeaderField
            case invalidHeaderValue
            case headTooLarge
            case tooManyHeaderFields
            case invalidContentLength
            case duplicateContentLength
            case contentLengthWithTransferEncoding
            case invalidTransferEncoding
            case unsupportedTransferEncoding
            case invalidChunkedBody
            case missingHost
            case duplicateHost
            case invalidHost
            case bodyTooLarge
            case unsupportedExpectation
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Every kind, so each slug the parser can cause is known (and documented).
        public static var allCases: [Code] { Base.allCases.map(Code.init) }

        /// A line ended with LF alone; HTTP/1.1 lines end with CRLF.
        public static let bareLineFeed = Code(.bareLineFeed)
        /// A CR not followed by LF.
        public static let bareCarriageReturn = Code(.bareCarriageReturn)
        public static let invalidRequestLine = Code(.invalidRequestLine)
        public static let invalidMethod = Code(.invalidMethod)
        /// Not an origin-form target (`/path?query`) of allowed characters.
        public static let invalidTarget = Code(.invalidTarget)
        /// A well-formed version other than HTTP/1.0 and HTTP/1.1 (505).
        public static let unsupportedVersion = Code(.unsupportedVersion)
        /// A header line starting with whitespace (RFC 9112 §5.2 obs-fold).
        public static let obsoleteLineFolding = Code(.obsoleteLineFolding)
        /// `Name : value`, the shape behind request smuggling through lenient proxies.
        public static let whitespaceBeforeColon = Code(.whitespaceBeforeColon)
        public static let invalidHeaderField = Code(.invalidHeaderField)
        public static let invalidHeaderValue = Code(.invalidHeaderValue)
        /// Request line and headers exceed the configured size (431).
        public static let headTooLarge = Code(.headTooLarge)
        /// More header (or trailer) fields than configured (431).
        public static let tooManyHeaderFields = Code(.tooManyHeaderFields)
        public static let invalidContentLength = Code(.invalidContentLength)
        /// Two `Content-Length` fields, even with equal values.
        public static let duplicateContentLength = Code(.duplicateContentLength)
        public static let contentLengthWithTransferEncoding = Code(.contentLengthWithTransferEncoding)
        /// `Transfer-Encoding` repeated, or sent in an HTTP/1.0 request.
        public static let invalidTransferEncoding = Code(.invalidTransferEncoding)
        /// A transfer coding other than exactly `chunked` (501).
        public static let unsupportedTransferEncoding = Code(.unsupportedTransferEncoding)
        public static let invalidChunkedBody = Code(.invalidChunkedBody)
        public static let missingHost = Code(.missingHost)
        public static let duplicateHost = Code(.duplicateHost)
        public static let invalidHost = Code(.invalidHost)
        /// The declared or received body exceeds the configured size (413), decided before reading it.
        public static let bodyTooLarge = Code(.bodyTooLarge)
        /// An `Expect` other than `100-continue` (417).
        public static let unsupportedExpectation = Code(.unsupportedExpectation)

        /// The HTTP status this failure is answered with.
        public var status: Int {
            switch base {
            case .unsupportedVersion: 505
            case .headTooLarge, .tooManyHeaderFields: 431
            case .bodyTooLarge: 413
            case .unsupportedTransferEncoding: 501
            case .unsupportedExpectation: 417
            default: 400
            }
        }

        /// The stable, URL-safe name of this failure.
        public var slug: String {
            switch base {
            case .bareLineFeed: "bare-lf"
            case .bareCarriageReturn: "bare-cr"
            case .invalidRequestLine: "invalid-request-line"
            case .invalidMethod: "invalid-method"
            case .invalidTarget: "invalid-target"
            case .unsupportedVersion: "unsupported-http-version"
            case .obsoleteLineFolding: "obs-fold"
            case .whitespaceBeforeColon: "whitespace-before-colon"
            case .invalidHeaderField: "invalid-header-field"
            case .invalidHeaderValue: "invalid-header-value"
            case .headTooLarge: "header-section-too-large"
            case .tooManyHeaderFields: "too-many-header-fields"
            case .invalidContentLength: "invalid-content-length"
            case .duplicateContentLength: "duplicate-content-length"
            case .contentLengthWithTransferEncoding: "content-length-with-transfer-encoding"
            case .invalidTransferEncoding: "invalid-transfer-encoding"
            case .unsupportedTransferEncoding: "unsupported-transfer-encoding"
            case .invalidChunkedBody: "invalid-chunked-body"
            case .missingHost: "missing-host"
            case .duplicateHost: "duplicate-host"
            case .invalidHost: "invalid-host"
            case .bodyTooLarge: "body-too-large"
            case .unsupportedExpectation: "unsupported-expectation"
            }
        }

        /// A short, fixed summary of the failure kind (the problem document's `title`).
        public var title: String {
            switch base {
            case .bareLineFeed: "Line ended with a bare LF"
            case .bareCarriageReturn: "Bare CR in request"
            case .invalidRequestLine: "Malformed request line"
            case .invalidMethod: "Malformed method"
            case .invalidTarget: "Malformed request target"
            case .unsupportedVersion: "HTTP version not supported"
            case .obsoleteLineFolding: "Obsolete line folding"
            case .whitespaceBeforeColon: "Whitespace before colon"
            case .invalidHeaderField: "Malformed header field"
            case .invalidHeaderValue: "Malformed header value"
            case .headTooLarge: "Request header section too large"
            case .tooManyHeaderFields: "Too many header fields"
            case .invalidContentLength: "Malformed Content-Length"
            case .duplicateContentLength: "Duplicate Content-Length"
            case .contentLengthWithTransferEncoding: "Content-Length with Transfer-Encoding"
            case .invalidTransferEncoding: "Malformed Transfer-Encoding"
            case .unsupportedTransferEncoding: "Transfer coding not supported"
            case .invalidChunkedBody: "Malformed chunked body"
            case .missingHost: "Missing Host"
            case .duplicateHost: "Duplicate Host"
            case .invalidHost: "Malformed Host"
            case .bodyTooLarge: "Request body too large"
            case .unsupportedExpectation: "Expectation not supported"
            }
        }

        public var description: String { slug }
    }

    public let code: Code
    /// What was wrong and how a client fixes it; never contains request bytes.
    public let detail: String

    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var status: Int { code.status }
    public var slug: String { code.slug }

    public var description: String { "\(code.status) \(code.slug): \(detail)" }
}
