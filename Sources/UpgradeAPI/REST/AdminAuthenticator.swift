import UpgradeEngine

/// Bearer-token authentication for the admin routes (RFC 6750): the REST layer asks it before it
/// reads an admin request's body. A missing or wrong token is `401 unauthorized` with a
/// `WWW-Authenticate: Bearer` challenge, a token without the route's scope `403 insufficient-scope`.
/// A valid token is never refused by a throttle: it is recognised first (one SHA-256 and a
/// constant-time comparison with each stored hash, cheaper than the database read a throttle
/// costs), so nobody sharing the backend's address can lock it out, neither with wrong passwords
/// (which count on `UPGRADE_CLIENT_THROTTLE`, not here) nor with wrong tokens. Wrong tokens count
/// on a throttle of their own (`UPGRADE_ADMIN_THROTTLE`); a client over it has its wrong tokens
/// answered `rate-limited` without being counted. A token holds 256 random bits, so that limit
/// protects against nothing a guess could find; it bounds the database writes and log lines a
/// client can cause with bad tokens. The token is never logged or echoed; the log line names the
/// token that was used (`admin`), which is not a secret. An expired token is refused exactly as a
/// wrong one (same answer, same count); only the log line's cause names it (`expired-token NAME`).
struct AdminAuthenticator: Sendable {
    /// Read at start-up and replaced by each reload; nil when `UPGRADE_ADMIN_TOKENS_FILE` is unset
    /// (every request is refused). Each request reads it once.
    let tokens: Reloadable<AdminTokenSet?>
    /// Wrong tokens per client (`ClientThrottle.Namespace.adminTokens`); nil when turned off.
    let throttle: ClientThrottle?
    /// Records when each token was last used (at most a write a minute per token); nil: not recorded.
    var usage: AdminTokenUsage? = nil

    static let realm = "siwa-upgrade admin"

    /// Throws an `APIProblem` for a missing, wrong or under-scoped token, and an `ServiceFailure`
    /// for a wrong token from a client over its limit (`rate-limited`) or a database that cannot
    /// count the failure.
    func authorize(_ request: HTTPRequest, scope: AdminScope, now: Int64) throws -> AdminToken {
        let values = request.headers.values(for: "Authorization")
        guard !values.isEmpty else {
            throw Self.unauthorized(
                "send an admin token as 'Authorization: Bearer TOKEN'",
                challenge: "Bearer realm=\"\(Self.realm)\""
            )
        }
        guard values.count == 1, let presented = Self.bearerToken(values[0]) else {
            throw Self.unauthorized(
                "the Authorization header must be 'Bearer TOKEN', once",
                challenge: "Bearer realm=\"\(Self.realm)\", error=\"invalid_request\""
            )
        }
        let token = try authenticate(presented, client: request.client, now: now)
        guard token.allows(scope) else {
            var headers = HTTPHeaders()
            headers.replaceOrAppend(
                name: "WWW-Authenticate",
                value: "Bearer realm=\"\(Self.realm)\", error=\"insufficient_scope\", scope=\"\(scope.rawValue)\""
            )
            var problem = APIProblem(
                status: 403,
                slug: "insufficient-scope",
                detail: "this admin token lacks the '\(scope.rawValue)' scope",
                headers: headers
            )
            problem.cause = "token \(token.name)"
            throw problem
        }
        // A failed write of the last use must not refuse an admin who was let in.
        _ = try? usage?.record(token, now: now)
        return token
    }

    /// The token `presented` is, whatever its scopes; a wrong or expired one is refused and counted
    /// against `client` as `authorize` does; its use is not recorded. The support console's sign-in calls this with the
    /// token typed into its form, so a wrong token there costs what it costs on the REST routes.
    func authenticate(_ presented: String, client: HTTPClientAddress?, now: Int64) throws -> AdminToken {
        let current = tokens.current
        let verdict = current?.verdict(presented, now: now) ?? .unknown
        guard case .valid(let token) = verdict else {
            if let throttle, let clientKey = client.map({ $0.throttleKey.description }) {
                if let wait = try throttle.retryAfter(clientKey: clientKey, now: now) {
                    throw ServiceFailure(
                        .rateLimited,
                        "too many wrong admin tokens from this client; retry in \(wait) s",
                        retryAfter: wait
                    )
                }
                try throttle.recordFailure(clientKey: clientKey, now: now)
            }
            var problem = Self.unauthorized(
                "the admin token is not valid",
                challenge: "Bearer realm=\"\(Self.realm)\", error=\"invalid_token\""
            )
            switch verdict {
            case .expired(let name): problem.cause = "expired-token \(name)"
            default: problem.cause = current == nil ? "no-admin-tokens-configured" : "unknown-token"
            }
            throw problem
        }
        return token
    }

    /// The token of `Bearer TOKEN` (the scheme in any case, RFC 9110 §11.1), or nil. The token must
    /// be RFC 6750's b64token: nothing else can be one of ours.
    static func bearerToken(_ value: String) -> String? {
        let bytes = Array(value.utf8)
        guard bytes.count > 7, String(decoding: bytes[0..<6], as: UTF8.self).lowercased() == "bearer",
            bytes[6] == 0x20
        else { return nil }
        let token = bytes[7...].drop { $0 == 0x20 }
        guard !token.isEmpty, token.count <= AdminToken.maxPresentedBytes else { return nil }
        let allowed: (UInt8) -> Bool = { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || [0x2D, 0x2E, 0x5F, 0x7E, 0x2B, 0x2F].contains(byte)
        }
        var body = Array(token)
        while body.last == 0x3D { body.removeLast() }
        guard !body.isEmpty, body.allSatisfy(allowed) else { return nil }
        return String(decoding: token, as: UTF8.self)
    }

    private static func unauthorized(_ detail: String, challenge: String) -> APIProblem {
        var headers = HTTPHeaders()
        headers.replaceOrAppend(name: "WWW-Authenticate", value: challenge)
        return APIProblem(status: 401, slug: "unauthorized", detail: detail, headers: headers)
    }
}

extension AdminAuthenticator {
    /// Tokens that no reload replaces.
    init(tokens: AdminTokenSet?, throttle: ClientThrottle?) {
        self.init(tokens: Reloadable(tokens), throttle: throttle)
    }
}
