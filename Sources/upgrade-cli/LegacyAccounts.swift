import Foundation
import UpgradeEngine

/// The accounts `legacy verify` answers for, read from its `--accounts` file: JSONL or a JSON array of
/// `{"username", "passwordHash", "email"?, "displayName"?}`. Every hash is inspected when the file is
/// read, so a bad one stops the command (exit 2, one line) instead of turning into wrong answers later.
struct LegacyAccounts: Sendable {
    struct Account: Sendable {
        let passwordHash: String
        let email: String?
        let displayName: String?
    }

    /// Keyed by the username as the server stores it (PRECIS-normalised), so `Alice` in the file
    /// answers for the `alice` the server sends; a name the server would refuse is kept as written.
    private let accounts: [String: Account]

    var count: Int { accounts.count }

    init(path: String, verifier: PasswordVerifier) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CommandFailure.configuration("--accounts \(path): cannot read the file")
        }
        var rows: [(where: String, object: Any)] = []
        if let document = try? JSONSerialization.jsonObject(with: data), let array = document as? [Any] {
            rows = array.enumerated().map { ("element \($0.offset + 1)", $0.element) }
        } else {
            for (index, line) in String(decoding: data, as: UTF8.self).split(separator: "\n").enumerated() {
                guard !line.allSatisfy(\.isWhitespace) else { continue }
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) else {
                    throw CommandFailure.configuration("--accounts \(path): line \(index + 1) is not JSON")
                }
                rows.append(("line \(index + 1)", object))
            }
        }
        var accounts: [String: Account] = [:]
        for (place, object) in rows {
            let name = "--accounts \(path) \(place)"
            guard let row = object as? [String: Any], let username = row["username"] as? String,
                let passwordHash = row["passwordHash"] as? String
            else {
                throw CommandFailure.configuration(
                    "\(name): needs an object with string fields \"username\" and \"passwordHash\""
                )
            }
            do {
                _ = try verifier.inspect(passwordHash)
            } catch {
                throw CommandFailure.configuration("\(name) (\(username)): passwordHash: \(error.message)")
            }
            let key = Self.key(username)
            guard accounts[key] == nil else {
                throw CommandFailure.configuration("\(name): username \(username) appears twice")
            }
            accounts[key] = Account(
                passwordHash: passwordHash,
                email: row["email"] as? String,
                displayName: row["displayName"] as? String
            )
        }
        self.accounts = accounts
    }

    subscript(username: String) -> Account? { accounts[Self.key(username)] }

    private static func key(_ username: String) -> String {
        (try? Username(username).value) ?? username
    }
}
