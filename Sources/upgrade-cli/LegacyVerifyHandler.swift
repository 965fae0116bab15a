import Foundation
import UpgradeAPI
import UpgradeEngine

/// Answers `password.verify` requests as a legacy login system does (docs/legacy-verification.md):
/// the Standard Webhooks signature and timestamp first (401 when either fails), then the body, then
/// the password against the account's hash: `match` (with the profile), `mismatch` or `unknown`.
struct LegacyVerifyHandler: HTTPHandler {
    /// How far `webhook-timestamp` may be from this clock, as the Standard Webhooks libraries allow.
    static let timestampTolerance: Int64 = 300

    let accounts: LegacyAccounts
    let secret: WebhookSecrets
    let verifier: PasswordVerifier
    /// Every verified answer is held this long (on the event loop, not a worker).
    let stall: Duration
    /// One line per request; never given the password.
    let log: @Sendable (String) -> Void

    func handle(_ request: HTTPRequest) throws -> HTTPResponse {
        guard request.method == "POST" else {
            log("\(request.method) \(request.path): 405")
            var response = Self.error(405, "only POST is answered")
            response.headers.append(name: "Allow", value: "POST")
            return response
        }
        let id = request.headers["webhook-id"] ?? ""
        if let refusal = refusal(request, id: id) {
            log("refused \(id.isEmpty ? "(no webhook-id)" : id): 401, \(refusal)")
            return Self.error(401, refusal)
        }
        guard let (username, password) = Self.credentials(request.body) else {
            log("\(id): 400, not a password.verify body")
            return Self.error(400, "the body is not {\"type\": \"password.verify\", \"data\": {username, password}}")
        }
        var answer: [String: Any]
        if let account = accounts[username] {
            let matched: Bool
            do {
                matched = try verifier.verify(password: password, encodedHash: account.passwordHash)
            } catch {
                // A password the hash cannot take (too long, say) matches nothing.
                matched = false
            }
            answer = ["result": matched ? "match" : "mismatch"]
            if matched {
                var profile: [String: String] = [:]
                profile["email"] = account.email
                profile["displayName"] = account.displayName
                if !profile.isEmpty { answer["profile"] = profile }
            }
        } else {
            answer = ["result": "unknown"]
        }
        log("\(id) \(username): \(answer["result"] ?? "")")
        var response = HTTPResponse(
            status: 200,
            headers: ["Content-Type": "application/json"],
            body: Array((try? JSONSerialization.data(withJSONObject: answer, options: [.sortedKeys])) ?? Data())
        )
        if stall > .zero { response.notBefore = .now + stall }
        return response
    }

    /// Why the request is not signed by the server, or nil when it is.
    private func refusal(_ request: HTTPRequest, id: String) -> String? {
        guard !id.isEmpty, let timestampText = request.headers["webhook-timestamp"],
            let signature = request.headers["webhook-signature"]
        else { return "webhook-id, webhook-timestamp and webhook-signature are required" }
        guard let timestamp = Int64(timestampText) else { return "webhook-timestamp is not Unix seconds" }
        let now = Int64(Date().timeIntervalSince1970)
        guard abs(now - timestamp) <= Self.timestampTolerance else {
            return "webhook-timestamp is more than 5 minutes from this clock"
        }
        guard secret.isValidSignature(signature, id: id, timestamp: timestamp, body: request.body) else {
            return "webhook-signature does not verify with any of the secrets"
        }
        return nil
    }

    private static func credentials(_ body: [UInt8]) -> (username: String, password: String)? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            object["type"] as? String == "password.verify", let data = object["data"] as? [String: Any],
            let username = data["username"] as? String, let password = data["password"] as? String
        else { return nil }
        return (username, password)
    }

    private static func error(_ status: Int, _ message: String) -> HTTPResponse {
        let body = (try? JSONSerialization.data(withJSONObject: ["error": message])) ?? Data()
        return HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: Array(body))
    }
}
