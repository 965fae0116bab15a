import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The app's own backend, as the app reaches it with the signed-in user's session. For an in-app upgrade the
/// backend, never the app, asks siwa-upgrade for the ticket: it holds the admin token (scope `tickets`), calls
/// `POST /v1/upgrade-tickets` with `{"username": ...}` for the user it has authenticated, and returns only the
/// ticket (docs/ios-extension.md §6). The admin token never reaches a device.
struct AppBackend: Sendable {
    /// Where the app's own API is served, e.g. `https://app.example.com`.
    let baseURL: URL
    /// The signed-in user's credential for the app's own API.
    let sessionToken: String
    let session: URLSession

    init(baseURL: URL, sessionToken: String, session: URLSession = .shared) {
        self.baseURL = baseURL
        self.sessionToken = sessionToken
        self.session = session
    }

    /// `POST /account/upgrade-ticket` on the app's backend: a one-time ticket for the signed-in user, valid
    /// 5 minutes, to pass to the extension as `userInfo["upgradeTicket"]`.
    func fetchUpgradeTicket() async throws -> String {
        var request = URLRequest(url: baseURL.appendingPathComponent("account/upgrade-ticket"), timeoutInterval: 15)
        request.httpMethod = "POST"
        request.setValue("Bearer \(sessionToken)", forHTTPHeaderField: "Authorization")
        let (data, response) = try await session.data(for: request)
        guard (response as? HTTPURLResponse)?.statusCode == 200,
            let answer = try? JSONDecoder().decode(TicketAnswer.self, from: data), !answer.ticket.isEmpty
        else { throw NoTicket() }
        return answer.ticket
    }

    /// What the backend answers: siwa-upgrade's ticket, nothing else.
    private struct TicketAnswer: Decodable {
        let ticket: String
    }

    /// The backend refused or did not answer with a ticket (the user signed out, the account is Apple-only).
    struct NoTicket: Error {}
}
