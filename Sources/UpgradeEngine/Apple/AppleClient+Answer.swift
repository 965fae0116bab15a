import Foundation

extension AppleClient {
    /// A final answer from Apple (2xx or a 4xx other than 429), read strictly. A 4xx becomes an
    /// `AppleEndpointError` at once; the accessors read the 2xx bodies of each endpoint.
    struct Answer {
        let call: Call
        let response: AppleClientTransport.Response
        let attempts: Int

        init(call: Call, response: AppleClientTransport.Response, attempts: Int) throws(AppleEndpointError) {
            self.call = call
            self.response = response
            self.attempts = attempts
            switch response.status {
            case 200...299: return
            case 400...499: throw endpointError()
            default: throw unexpected("answered HTTP \(response.status)")
            }
        }

        /// Apple's `{"error": "…"}`; an unknown value is kept as its own code. A 4xx without one
        /// (an HTML page from a proxy, say) is `unavailable`.
        private func endpointError() -> AppleEndpointError {
            guard let json = try? JSONValue.parse(response.body), let value = json["error"]?.stringValue else {
                return unexpected("answered HTTP \(response.status) without an error code")
            }
            // Apple's codes are short snake_case words; anything else is not echoed into our logs.
            guard (1...64).contains(value.utf8.count),
                value.utf8.allSatisfy({ AppleClient.isUnreserved($0) && $0 != UInt8(ascii: "~") })
            else {
                return unexpected("answered HTTP \(response.status) with an unreadable error code")
            }
            let code = AppleEndpointError.Code(value)
            var message = "\(call.label): Apple answered \(value) (HTTP \(response.status)): \(Self.explanation(code))"
            if attempts > 1, call.consumesGrant, code == .invalidGrant || code == .invalidRequest {
                message += "; this was attempt \(attempts), so an earlier attempt may have reached Apple and used it"
            }
            return AppleEndpointError(code: code, httpStatus: response.status, message: message)
        }

        /// The usual causes of each of Apple's codes (docs/apple-protocol.md §2.3, TN3107), so a log line says
        /// where to look.
        static func explanation(_ code: AppleEndpointError.Code) -> String {
            switch code {
            case .invalidRequest:
                "a parameter is missing, repeated or unsupported, the access token does not belong to this "
                    + "client_id and team, or the user revoked the app's authorization"
            case .invalidClient:
                "client authentication failed: the client secret is expired or malformed, is signed with a key "
                    + "Apple does not have for this team, or its sub is not exactly the client_id; or the "
                    + "redirect_uri does not match"
            case .invalidGrant:
                "the code, refresh token or access token is expired, already used or revoked, or was issued "
                    + "to a different client_id"
            case .unauthorizedClient:
                "this client_id may not use this grant"
            case .unsupportedGrantType:
                "Apple does not support this grant_type"
            case .invalidScope:
                "the requested scope is not valid (client_credentials needs scope=user.migration)"
            default:
                "a code Apple does not document"
            }
        }

        func unexpected(_ what: String) -> AppleEndpointError {
            AppleEndpointError(code: .unavailable, httpStatus: response.status, message: "\(call.label): \(what)")
        }

        private func json() throws(AppleEndpointError) -> JSONValue {
            guard let json = try? JSONValue.parse(response.body), json.members != nil else {
                throw unexpected("answered HTTP \(response.status) with a body that is not a JSON object")
            }
            return json
        }

        private func string(_ json: JSONValue, _ name: String, required: Bool) throws(AppleEndpointError) -> String? {
            guard let member = json[name] else {
                if required { throw unexpected("the answer has no \(name)") }
                return nil
            }
            guard let value = member.stringValue, !value.isEmpty else {
                throw unexpected("the answer's \(name) is not a non-empty string")
            }
            return value
        }

        func tokenResponse(
            requiringRefreshToken: Bool,
            requiringIDToken: Bool
        ) throws(AppleEndpointError)
            -> AppleTokenResponse
        {
            let json = try json()
            let accessToken = try string(json, "access_token", required: true)!
            let tokenType = try string(json, "token_type", required: true)!
            // Documented as `bearer`, shown as `Bearer` in Apple's examples.
            guard tokenType.lowercased() == "bearer" else {
                throw unexpected("token_type is \(IdentityTokenError.quoted(tokenType)), not bearer")
            }
            guard let expiresIn = json["expires_in"]?.int64Value, expiresIn > 0, expiresIn <= Int64(Int32.max) else {
                throw unexpected("the answer's expires_in is not a positive number of seconds")
            }
            return AppleTokenResponse(
                accessToken: accessToken,
                tokenType: tokenType,
                expiresIn: Int(expiresIn),
                refreshToken: try string(json, "refresh_token", required: requiringRefreshToken),
                idToken: try string(json, "id_token", required: requiringIDToken)
            )
        }

        func transferSub() throws(AppleEndpointError) -> String {
            try string(try json(), "transfer_sub", required: true)!
        }

        func migratedUser() throws(AppleEndpointError) -> AppleMigratedUser {
            let json = try json()
            let sub = try string(json, "sub", required: true)!
            let email = try string(json, "email", required: false)
            let isPrivateEmail: Bool?
            // A JSON boolean in Apple's example; the string form other booleans take is accepted too.
            switch json["is_private_email"] {
            case nil, .null?: isPrivateEmail = nil
            case .bool(let value)?: isPrivateEmail = value
            case .string("true")?: isPrivateEmail = true
            case .string("false")?: isPrivateEmail = false
            default: throw unexpected("the answer's is_private_email is not a boolean")
            }
            return AppleMigratedUser(sub: sub, email: email, isPrivateEmail: isPrivateEmail)
        }

        func keySet() throws(AppleEndpointError) -> AppleFetchedKeySet {
            let keys: JWKSet
            do {
                keys = try JWKSet(json: response.body)
            } catch {
                throw unexpected("the key set is unusable: \(error.message)")
            }
            return AppleFetchedKeySet(keys: keys, maxAge: response.headers["cache-control"].flatMap(Self.maxAge))
        }

        /// `max-age` from `Cache-Control`; `no-store` and `no-cache` count as 0.
        static func maxAge(_ cacheControl: String) -> Int64? {
            var result: Int64?
            for directive in cacheControl.split(separator: ",") {
                let parts = directive.split(separator: "=", maxSplits: 1)
                let name = parts[0].trimmingCharacters(in: .whitespaces).lowercased()
                if name == "no-store" || name == "no-cache" { return 0 }
                if name == "max-age", parts.count == 2 {
                    let value = parts[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: ["\""])
                    if let seconds = Int64(value.prefix(12)), seconds >= 0 { result = seconds }
                }
            }
            return result
        }
    }
}
