/// Why an identity token was rejected: a stable `code` for programs (and HTTP problem types) and
/// a specific `message` for people.
///
/// Messages may quote the header's `alg` and `kid`, the `iss` and `aud` values and timestamps,
/// which identify a misconfiguration; they never contain the token, its signature, the nonce or
/// personal claims (`sub`, `email`). Quoted values are cut short and stripped of anything but
/// printable ASCII, so a hostile token cannot forge log lines.
public struct IdentityTokenError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case malformed, unsupportedAlgorithm, unknownKeyID, badSignature, expired, issuedInFuture, notYetValid,
                wrongIssuer, audienceNotAllowed, nonceMissing, nonceMismatch, missingSubject, invalidClaim,
                keysUnavailable
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Not three base64url parts, or a header / payload that is not a JSON object.
        public static let malformed = Code(.malformed)
        /// Header `alg` is anything but `RS256` (`none`, `HS256`, `ES256`, `RS512`, …).
        public static let unsupportedAlgorithm = Code(.unsupportedAlgorithm)
        /// Header `kid` missing or not in the key set (Apple may have rotated: refetch once).
        public static let unknownKeyID = Code(.unknownKeyID)
        /// The RS256 signature does not verify with the key named by `kid`.
        public static let badSignature = Code(.badSignature)
        /// `exp` is not after `now - leeway`.
        public static let expired = Code(.expired)
        /// `iat` is after `now + leeway`.
        public static let issuedInFuture = Code(.issuedInFuture)
        /// `nbf` is after `now + leeway`.
        public static let notYetValid = Code(.notYetValid)
        /// `iss` missing or not exactly the configured issuer.
        public static let wrongIssuer = Code(.wrongIssuer)
        /// `aud` missing, not one of the configured client ids, or naming several audiences.
        public static let audienceNotAllowed = Code(.audienceNotAllowed)
        /// A nonce was issued for this sign-in but the token carries none.
        public static let nonceMissing = Code(.nonceMissing)
        /// The token's nonce differs from the one issued.
        public static let nonceMismatch = Code(.nonceMismatch)
        /// `sub` missing or empty.
        public static let missingSubject = Code(.missingSubject)
        /// A claim has the wrong JSON type or appears twice.
        public static let invalidClaim = Code(.invalidClaim)
        /// Apple's key set could not be fetched, so nothing could be verified: not the token's fault,
        /// and worth retrying (callers answer 502/503 and change nothing).
        public static let keysUnavailable = Code(.keysUnavailable)

        /// The stable name, e.g. `badSignature`.
        public var description: String { base.rawValue }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    /// `value` in double quotes, at most 64 characters of printable ASCII (others become `?`).
    package static func quoted(_ value: String) -> String {
        var out = "\""
        var count = 0
        for scalar in value.unicodeScalars {
            if count == 64 {
                out += "…"
                break
            }
            out.unicodeScalars.append((0x20..<0x7f).contains(scalar.value) && scalar != "\"" ? scalar : "?")
            count += 1
        }
        return out + "\""
    }
}
