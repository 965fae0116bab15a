// The parameters file (`accounts import --hash-parameters`) and the sealed form a set is stored in;
// the value itself, which the hash parser needs alone, is in HashParameterSet.swift.

extension HashParameterSet {
    /// Reads a `--hash-parameters` file: a JSON object with a `firebase-scrypt` member
    /// (`signerKey`, `saltSeparator` in standard base64, `rounds`, `memCost`, as the Firebase
    /// console shows them) and/or an `hmac` member (`key` in standard base64, optional
    /// `saltPosition` `before` (default) or `after`). Unknown members are refused. No message
    /// repeats a value.
    public static func parseFile(_ bytes: [UInt8]) throws(PasswordHashError) -> [HashParameterSet] {
        guard let json = try? JSONValue.parse(bytes), let members = json.members else {
            throw invalid("the file must hold one JSON object")
        }
        var sets: [HashParameterSet] = []
        for member in members {
            guard let kind = Kind(rawValue: member.key) else {
                throw invalid("unknown member '\(member.key)'; expected firebase-scrypt or hmac")
            }
            guard !sets.contains(where: { $0.kind == kind }) else { throw invalid("'\(member.key)' is given twice") }
            sets.append(try parse(kind: kind, member.value))
        }
        guard !sets.isEmpty else { throw invalid("give a firebase-scrypt or an hmac member") }
        return sets
    }

    /// One set from its JSON object, as a parameters file member or as sealed.
    static func parse(kind: Kind, _ json: JSONValue) throws(PasswordHashError) -> HashParameterSet {
        let name = kind.rawValue
        guard let members = json.members else { throw invalid("\(name) must be an object") }
        let allowed: Set<String> =
            kind == .firebaseScrypt ? ["signerKey", "saltSeparator", "rounds", "memCost"] : ["key", "saltPosition"]
        if let extra = members.first(where: { !allowed.contains($0.key) }) {
            throw invalid(
                "\(name) has an unknown member '\(extra.key)'; expected \(allowed.sorted().joined(separator: ", "))"
            )
        }
        func bytes(_ field: String, _ range: ClosedRange<Int>) throws(PasswordHashError) -> [UInt8] {
            guard let text = json[field]?.stringValue else { throw invalid("\(name).\(field) is required (base64)") }
            guard let value = PasswordHashBase64.decode(text.utf8, .standardPadded), range.contains(value.count) else {
                throw invalid(
                    "\(name).\(field) must be canonical padded base64 of \(range.lowerBound)...\(range.upperBound) bytes"
                )
            }
            return value
        }
        func integer(_ field: String, _ range: ClosedRange<Int>) throws(PasswordHashError) -> Int {
            guard let value = json[field]?.int64Value, range.contains(Int(value)) else {
                throw invalid("\(name).\(field) must be an integer in \(range.lowerBound)...\(range.upperBound)")
            }
            return Int(value)
        }
        switch kind {
        case .firebaseScrypt:
            return HashParameterSet(
                .firebaseScrypt(
                    signerKey: try bytes("signerKey", 1...maxKeyBytes),
                    saltSeparator: try bytes("saltSeparator", 0...maxSaltSeparatorBytes),
                    rounds: try integer("rounds", firebaseRounds),
                    memoryCost: try integer("memCost", firebaseMemoryCost)
                )
            )
        case .hmac:
            let position: SaltPosition
            if let given = json["saltPosition"] {
                guard let text = given.stringValue, let value = SaltPosition(rawValue: text) else {
                    throw invalid("hmac.saltPosition must be before or after")
                }
                position = value
            } else {
                position = .before
            }
            return HashParameterSet(.hmac(key: try bytes("key", 1...maxKeyBytes), saltPosition: position))
        }
    }

    /// The set as the JSON object `parse(kind:_:)` reads: what is sealed.
    var json: JSONValue {
        func base64(_ bytes: [UInt8]) -> JSONValue { .string(PasswordHashBase64.encode(bytes, .standardPadded)) }
        switch values {
        case .firebaseScrypt(let signerKey, let saltSeparator, let rounds, let memoryCost):
            return .object([
                "signerKey": base64(signerKey), "saltSeparator": base64(saltSeparator),
                "rounds": .integer(Int64(rounds)), "memCost": .integer(Int64(memoryCost)),
            ])
        case .hmac(let key, let saltPosition):
            return .object(["key": base64(key), "saltPosition": .string(saltPosition.rawValue)])
        }
    }

    /// The set sealed for storage under `id`.
    public func sealed(with secrets: SecretBox, id: Int64) -> [UInt8] {
        var plaintext = Array(json.serializedString.utf8)
        defer { PasswordKDF.wipe(&plaintext) }
        return secrets.seal(plaintext, context: Self.sealingContext(id: id))
    }

    /// A stored set, opened. Throws `.parametersUnavailable` when it does not open with `secrets`
    /// or does not read as its kind, without saying more than that.
    public static func open(
        _ record: HashParameterSetRecord,
        with secrets: SecretBox
    ) throws(PasswordHashError)
        -> HashParameterSet
    {
        guard let kind = Kind(rawValue: record.kind) else {
            throw PasswordHashError(
                .parametersUnavailable,
                "hash parameter set \(record.id) has the unknown kind '\(record.kind)'"
            )
        }
        guard var plaintext = try? secrets.open(record.sealed, context: sealingContext(id: record.id)) else {
            throw PasswordHashError(
                .parametersUnavailable,
                "hash parameter set \(record.id) does not open with the configured secret key "
                    + "(UPGRADE_SECRET_KEY_FILE); restore the key it was stored with"
            )
        }
        defer { PasswordKDF.wipe(&plaintext) }
        guard let json = try? JSONValue.parse(plaintext), let set = try? parse(kind: kind, json) else {
            throw PasswordHashError(.parametersUnavailable, "hash parameter set \(record.id) is not readable")
        }
        return set
    }

    private static func invalid(_ problem: String) -> PasswordHashError {
        PasswordHashError(.malformed, "hash parameters: \(problem)")
    }
}
