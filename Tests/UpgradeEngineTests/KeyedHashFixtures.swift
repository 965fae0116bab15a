import Foundation

@testable import UpgradeEngine

/// `Fixtures/passwords/keyed-hashes.json`, written by `generate-keyed.py` with PyPI's
/// `firebase-scrypt` and Python's `hmac`: hashes whose parameters are the project's
/// (`HashParameterSet`), with the sets they name.
struct KeyedHashFixtures: Decodable {
    struct Entry: Decodable, Sendable, CustomStringConvertible {
        let format: String
        let scheme: String
        let set: Int64
        let password: String
        let hash: String
        /// The hash without `p=<id>`, as an import file holds it.
        let importForm: String
        let generator: String
        var index = 0

        enum CodingKeys: String, CodingKey {
            case format, scheme, set, password, hash, importForm, generator
        }

        var description: String { "#\(index) \(scheme) set \(set) (\(generator))" }
    }

    let fixtures: [Entry]

    static let loaded: KeyedHashFixtures? = try? Fixtures.json(KeyedHashFixtures.self, "passwords/keyed-hashes.json")

    static var entries: [Entry] {
        (loaded?.fixtures ?? []).enumerated().map { index, entry in
            var entry = entry
            entry.index = index
            return entry
        }
    }

    /// The raw file, for tests that build a `--hash-parameters` file from it.
    static var fileBytes: [UInt8] {
        (try? Array(Data(contentsOf: Fixtures.url("passwords/keyed-hashes.json")))) ?? []
    }

    /// The sets by id, parsed as a parameters file's members would be.
    static var sets: [Int64: HashParameterSet] {
        guard let json = try? JSONValue.parse(fileBytes), let members = json["parameterSets"]?.members else {
            return [:]
        }
        var sets: [Int64: HashParameterSet] = [:]
        for member in members {
            guard let id = Int64(member.key), let kindName = member.value["kind"]?.stringValue,
                let kind = HashParameterSet.Kind(rawValue: kindName)
            else { continue }
            let fields = (member.value.members ?? []).filter { $0.key != "kind" }
            sets[id] = try? HashParameterSet.parse(kind: kind, .object(fields))
        }
        return sets
    }

    /// A `--hash-parameters` file giving set `id` as the import's set of its kind.
    static func parametersFile(_ ids: Int64...) -> String {
        guard let json = try? JSONValue.parse(fileBytes), let members = json["parameterSets"]?.members else {
            return "{}"
        }
        var out: [JSONValue.Member] = []
        for id in ids {
            guard let member = members.first(where: { $0.key == String(id) }),
                let kind = member.value["kind"]?.stringValue
            else { continue }
            out.append(JSONValue.Member(kind, .object((member.value.members ?? []).filter { $0.key != "kind" })))
        }
        return JSONValue.object(out).serializedString
    }
}
