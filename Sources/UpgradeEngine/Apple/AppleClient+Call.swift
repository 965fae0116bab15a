extension AppleClient {
    /// One request to one of Apple's endpoints, described without its secrets for messages.
    struct Call: Sendable {
        let method: String
        let path: String
        /// Which variant (grant type, migration direction), for messages.
        let detail: String?
        let form: [(name: String, value: String)]?
        let bearer: String?
        /// The request uses up a single-use grant (authorization code, per-user access token), so
        /// after a retry a refusal may mean an earlier attempt reached Apple and used it.
        let consumesGrant: Bool
        /// Bytes an answer may have; nil means `Configuration.maximumResponseBytes`.
        var limit: Int?

        init(
            post path: String,
            detail: String?,
            form: [(name: String, value: String)],
            bearer: String? = nil,
            consumesGrant: Bool = false
        ) {
            self.method = "POST"
            self.path = path
            self.detail = detail
            self.form = form
            self.bearer = bearer
            self.consumesGrant = consumesGrant
        }

        init(get path: String) {
            self.method = "GET"
            self.path = path
            self.detail = nil
            self.form = nil
            self.bearer = nil
            self.consumesGrant = false
        }

        /// `POST /auth/token (authorization_code)`: what logs and errors name.
        var label: String {
            "\(method) \(path)" + (detail.map { " (\($0))" } ?? "")
        }
    }
}
