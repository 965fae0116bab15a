import HTTPCore
import UpgradeEngine

/// Apple's REST endpoints (docs/apple-protocol.md §2), at Apple's paths, with Apple's validation and answers.
extension AppleIDEmulatorHandler {
    func appleEndpoint(_ request: HTTPRequest, path: String) -> HTTPResponse {
        switch path {
        case "/auth/keys":
            guard request.method == "GET" || request.method == "HEAD" else { return Self.notAllowed("GET") }
            var response = HTTPResponse.json(emulator.keySet.json.serializedString)
            if let maxAge = configuration.keysMaxAge {
                response.headers.append(name: "Cache-Control", value: "public, max-age=\(maxAge)")
            }
            return response
        case "/auth/token":
            return formEndpoint(request) { form throws(AppleEndpointError) in
                var response = HTTPResponse.json(try emulator.token(form: form).json.serializedString)
                // RFC 6749 §5.1: token answers must not be cached.
                response.headers.append(name: "Cache-Control", value: "no-store")
                response.headers.append(name: "Pragma", value: "no-cache")
                return response
            }
        case "/auth/revoke":
            return formEndpoint(request) { form throws(AppleEndpointError) in
                try emulator.revoke(form: form)
                return HTTPResponse(status: 200)
            }
        case "/auth/usermigrationinfo":
            return formEndpoint(request) { form throws(AppleEndpointError) in
                let authorizations = request.headers.values(for: "Authorization")
                guard authorizations.count <= 1 else {
                    throw AppleFormBody.refuse(.invalidRequest, "the Authorization header is repeated")
                }
                let answer = try emulator.userMigrationInfo(form: form, authorization: authorizations.first)
                var response = HTTPResponse.json(answer.json.serializedString)
                response.headers.append(name: "Cache-Control", value: "no-store")
                return response
            }
        default:
            return HTTPResponse(status: 404)
        }
    }

    /// A POST endpoint taking Apple's form: checks the method, reads the form strictly, runs
    /// `body`, and turns a refusal into Apple's error answer.
    private func formEndpoint(
        _ request: HTTPRequest,
        _ body: ([(name: String, value: String)]) throws(AppleEndpointError) -> HTTPResponse
    ) -> HTTPResponse {
        guard request.method == "POST" else { return Self.notAllowed("POST") }
        do {
            return try body(try AppleFormBody.parameters(request))
        } catch {
            configuration.log("\(request.method) \(request.path): \(error.code): \(error.message)")
            var response = HTTPResponse.json(status: error.httpStatus ?? 400, error.json.serializedString)
            response.headers.append(name: "Cache-Control", value: "no-store")
            response.headers.append(name: "X-Emulator-Reason", value: Self.headerSafe(error.message))
            return response
        }
    }

    private static func notAllowed(_ allowed: String) -> HTTPResponse {
        HTTPResponse(status: 405, headers: ["Allow": allowed])
    }

    /// Printable ASCII only, so a reason can never split the response.
    private static func headerSafe(_ text: String) -> String {
        String(text.unicodeScalars.prefix(300).map { (0x20..<0x7f).contains($0.value) ? Character($0) : "?" })
    }
}
